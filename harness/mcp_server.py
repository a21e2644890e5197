"""A scripted MCP server on stdio for scenarios (``mcp_servers`` in a scenario file).

Standalone (stdlib only, so the CLI can start it with ``{PYTHON} {REPO}/harness/
mcp_server.py``): newline-delimited JSON-RPC 2.0 as the MCP stdio transport has it.
Answers ``initialize`` (echoing the client's protocol version), ``ping``, ``tools/list``
and ``tools/call``; notifications get no reply; other methods get ``-32601``.

Tools come from the command line: ``--tool NAME=TEXT`` answers every call of ``NAME``
with ``TEXT`` (``{args}`` in it is replaced by the call's arguments as JSON);
``--error-tool NAME=TEXT`` answers with ``isError: true``. Each tool takes any object.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

SERVER_INFO = {"name": "ccbridge-scenario-mcp", "version": "1.0.0"}
DEFAULT_PROTOCOL = "2025-06-18"


def parse_tools(specs: list[str], is_error: bool) -> dict[str, tuple[str, bool]]:
    tools: dict[str, tuple[str, bool]] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        if not sep or not name:
            raise SystemExit(f"mcp_server: --tool wants NAME=TEXT, not {spec!r}")
        tools[name] = (text, is_error)
    return tools


def handle(msg: Any, tools: dict[str, tuple[str, bool]]) -> dict[str, Any] | None:
    """The reply to one JSON-RPC message (None for a notification)."""
    if not isinstance(msg, dict) or "id" not in msg:
        return None
    mid, method = msg["id"], msg.get("method")
    raw = msg.get("params")
    params: dict[str, Any] = raw if isinstance(raw, dict) else {}

    def ok(result: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": mid, "result": result}

    if method == "initialize":
        version = params.get("protocolVersion")
        return ok(
            {
                "protocolVersion": version if isinstance(version, str) else DEFAULT_PROTOCOL,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": SERVER_INFO,
            }
        )
    if method == "ping":
        return ok({})
    if method == "tools/list":
        return ok(
            {
                "tools": [
                    {
                        "name": n,
                        "description": f"scripted tool {n}",
                        "inputSchema": {"type": "object", "additionalProperties": True},
                    }
                    for n in tools
                ]
            }
        )
    if method == "tools/call":
        name = params.get("name")
        if name not in tools:
            return {
                "jsonrpc": "2.0",
                "id": mid,
                "error": {"code": -32602, "message": f"unknown tool: {name}"},
            }
        text, is_error = tools[name]
        args = json.dumps(params.get("arguments") or {}, sort_keys=True)
        return ok(
            {
                "content": [{"type": "text", "text": text.replace("{args}", args)}],
                "isError": is_error,
            }
        )
    return {
        "jsonrpc": "2.0",
        "id": mid,
        "error": {"code": -32601, "message": f"method not found: {method}"},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--tool", action="append", default=[])
    ap.add_argument("--error-tool", action="append", default=[])
    ns = ap.parse_args(argv)
    tools = parse_tools(ns.tool, False) | parse_tools(ns.error_tool, True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            reply: dict[str, Any] | None = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "parse error"},
            }
        else:
            reply = handle(msg, tools)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
