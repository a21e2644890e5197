"""In-process MCP servers (the SDK's ``create_sdk_mcp_server`` / ``createSdkMcpServer``) as
Claude Code shows them: the shapes ``sdk-mcp``, ``sdk-mcp-reply`` and
``unsupported-control``'s ``mcp_status`` write (the rules: ``compat/stages/sdk_mcp.py``,
``control.py``).

Pure functions of the frames' values; the rules keep the facts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import orjson

from compat import controlkit as ck
from compat.session import ControlState
from compat.taskkit import remember


#: who Claude Code says it is to an MCP server (``initialize``'s ``clientInfo``; raw run
#: of a Python SDK ``create_sdk_mcp_server`` session, 2026-12-02); cbc names itself after
#: the server (``{"name": "probe", "version": "1.0.0"}``)
def claude_client_info(version: str) -> dict[str, str]:
    return {
        "name": "claude-code",
        "title": "Claude Code",
        "version": version,
        "description": "Anthropic's agentic coding tool",
        "websiteUrl": "https://claude.com/claude-code",
    }


# -- cbc's requests to a server ----------------------------------------------------------
def mcp_message(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(server name, MCP message) of an ``mcp_message`` request's body; None for any other
    request, or one without a server name or a message with a ``method``."""
    server, msg = body.get("server_name"), body.get("message")
    if (
        body.get("subtype") != "mcp_message"
        or not isinstance(server, str)
        or not isinstance(msg, dict)
        or not isinstance(msg.get("method"), str)
    ):
        return None
    return server, msg


def claude_initialize(params: dict[str, Any], version: str) -> dict[str, Any] | None:
    """``initialize``'s params with Claude's ``clientInfo``; None: they have it already."""
    info = claude_client_info(version)
    return None if params.get("clientInfo") == info else {**params, "clientInfo": info}


def with_tool_use_id(params: dict[str, Any], use_id: str) -> dict[str, Any] | None:
    """``tools/call``'s params with Claude's ``_meta["claudecode/toolUseId"]`` (the model's
    call it runs; cbc's own ``_meta`` keys kept); None: no call, or it has that id."""
    meta = params.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    if not use_id or meta.get("claudecode/toolUseId") == use_id:
        return None
    meta["claudecode/toolUseId"] = use_id
    return {**params, "_meta": meta}


# -- the client's answers (sdk-mcp-reply): what is kept of each method's result ----------
def _keep_server_name(control: ControlState, server: str, use_id: str, result: Any) -> None:
    info = result.get("serverInfo")
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        control.sdk_mcp_server_names[server] = info["name"]


def _keep_tools(control: ControlState, server: str, use_id: str, result: Any) -> None:
    if isinstance(result.get("tools"), list):
        control.sdk_mcp_tools[server] = [t for t in result["tools"] if isinstance(t, dict)]


def _keep_call_result(control: ControlState, server: str, use_id: str, result: Any) -> None:
    if use_id and isinstance(result.get("content"), list):
        remember(control.sdk_mcp_results, use_id, result, cap=64)


#: per MCP method, how its result is kept: ``(control, server, the model's call id, result)``
KEEP: dict[str, Callable[[ControlState, str, str, dict[str, Any]], None]] = {
    "initialize": _keep_server_name,
    "tools/list": _keep_tools,
    "tools/call": _keep_call_result,
}


# -- mcp_status (unsupported-control) ----------------------------------------------------
#: MCP tool annotations as Claude's ``mcp_status`` names them (its ``McpToolAnnotations``)
_ANNOTATIONS = (
    ("readOnlyHint", "readOnly"),
    ("destructiveHint", "destructive"),
    ("openWorldHint", "openWorld"),
)


def claude_tool_info(tool: dict[str, Any]) -> dict[str, Any]:
    """One ``tools/list`` entry as Claude's ``mcp_status`` lists it: the name and the
    annotations it knows (``{}`` for none); no description."""
    ann = tool.get("annotations")
    ann = ann if isinstance(ann, dict) else {}
    known = {c: ann[m] for m, c in _ANNOTATIONS if m in ann}
    return {"name": tool.get("name"), "annotations": known}


def mcp_status_entry(server: dict[str, Any], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """One of ``mcp_status``'s ``mcpServers``: the init's entry (``status`` ``pending`` when
    it has none); an in-process server's (``tools``: its ``tools/list``, sdk-mcp-reply) as
    Claude lists it, ``scope`` ``dynamic`` and its tools."""
    entry = {"name": server["name"], "status": server.get("status") or "pending"}
    entry.update((k, v) for k, v in server.items() if k not in entry)
    if tools is not None:
        entry.setdefault("scope", "dynamic")
        entry["tools"] = [claude_tool_info(t) for t in tools]
    return entry


# -- an assistant frame's calls (sdk-mcp's tool_use_meta) --------------------------------
def _mcp_call(block: Any) -> tuple[str, str, str] | None:
    """(tool name, server, the server's tool) of a ``tool_use`` block calling an MCP
    server's tool (``mcp__<server>__<tool>``)."""
    name = (
        block.get("name") if isinstance(block, dict) and block.get("type") == "tool_use" else None
    )
    if not isinstance(name, str) or not name.startswith("mcp__") or "__" not in name[5:]:
        return None
    server, _, tool_name = name[5:].partition("__")
    return name, server, tool_name


def _title(listed: list[dict[str, Any]], tool_name: str) -> str:
    """The tool's ``annotations.title`` in ``tools/list`` (whitespace collapsed), else ``""``."""
    ann = next((t.get("annotations") for t in listed if t.get("name") == tool_name), None)
    title = ann.get("title") if isinstance(ann, dict) else None
    return " ".join(title.split()) if isinstance(title, str) else ""


def _meta_of(
    block: Any, tools: dict[str, list[dict[str, Any]]], names: dict[str, str]
) -> dict[str, str] | None:
    """``tool_use_meta``'s entry for one block; None: not a call of a listed server's tool."""
    call = _mcp_call(block)
    if call is None:
        return None
    name, server, tool_name = call
    listed = tools.get(server)
    if listed is None or not isinstance(block.get("id"), str):
        return None
    return {
        "id": block["id"],
        "display_name": _title(listed, tool_name) or ck.tool_display_name(name),
        "server_display_name": names.get(server) or server,
    }


def tool_use_meta(
    blocks: list[Any], tools: dict[str, list[dict[str, Any]]], names: dict[str, str]
) -> list[dict[str, str]]:
    """Claude's ``tool_use_meta`` of an assistant frame's calls of in-process servers'
    tools: ``{id, display_name, server_display_name}``, the tool's ``annotations.title``
    (else ``controlkit.tool_display_name``) and the server's ``serverInfo.name`` (else its name)."""
    meta = (_meta_of(b, tools, names) for b in blocks)
    return [m for m in meta if m is not None]


# -- a call's tool_result (sdk-mcp) ------------------------------------------------------
def _cbc_block(c: Any) -> Any:
    """How cbc copies one MCP content block into its JSON text: an image as
    ``{type: image, image: <data>}`` (its ``mimeType`` lost), the rest as it is."""
    if isinstance(c, dict) and c.get("type") == "image" and "data" in c:
        return {"type": "image", "image": c["data"]}
    return c


def _copied(block_content: Any) -> list[Any] | None:
    """The list cbc wrote as JSON in a ``tool_result``'s one text block; None: not such a
    block."""
    if not (isinstance(block_content, list) and len(block_content) == 1):
        return None
    only = block_content[0]
    text = only.get("text") if isinstance(only, dict) and only.get("type") == "text" else None
    if not isinstance(text, str) or not text.startswith("["):
        return None
    try:
        return cast("list[Any]", orjson.loads(text))  # (a "[" starts a list)
    except orjson.JSONDecodeError:
        return None


def _blank_text(c: Any) -> bool:
    return isinstance(c, dict) and c.get("type") == "text" and not str(c.get("text")).strip()


def cbc_copy(block_content: Any, content: list[Any]) -> bool:
    """cbc's ``tool_result`` content for an in-process server's result ``content``: one
    text block holding that list as JSON (its empty text blocks left out, images as
    ``_cbc_block``)."""
    copied = _copied(block_content)
    if copied is None:
        return False
    kept = [_cbc_block(c) for c in content if not _blank_text(c)]
    return bool(copied == kept or copied == content)


def claude_block(c: dict[str, Any]) -> dict[str, Any]:
    """One MCP content block as Claude writes it in a ``tool_result``: a text block type
    first, an image as a base64 ``source`` (raw run, 2026-12-02); the rest as it is."""
    t = c.get("type")
    if t == "text":
        return {"type": "text", "text": c.get("text"), **c}
    if t == "image" and isinstance(c.get("data"), str):
        source = {"type": "base64", "media_type": c.get("mimeType"), "data": c["data"]}
        return {"type": "image", "source": source}
    return c


def _text_block(c: Any) -> bool:
    return isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)


def _claude_error(block: dict[str, Any], content: list[Any]) -> tuple[dict[str, Any], Any]:
    """A failure: its text (content of text blocks only) with ``Error: <text>``, else the
    content as it is; ``is_error`` either way."""
    if not content or not all(_text_block(c) for c in content):
        return {**block, "content": content, "is_error": True}, content
    text = "\n".join(c["text"] for c in content)
    return {**block, "content": text, "is_error": True}, f"Error: {text}"


def claude_result(block: dict[str, Any], result: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """An in-process server's ``tools/call`` result as Claude writes its ``tool_result``
    block and the frame's ``tool_use_result``: the content the tool returned (both;
    ``claude_block``); a failure (``isError``) as its text, ``is_error: true`` and
    ``Error: <text>``."""
    content = result.get("content")
    content = content if isinstance(content, list) else []
    if result.get("isError") is True:
        return _claude_error(block, content)
    kept = {k: v for k, v in block.items() if k != "is_error"}
    blocks = [claude_block(c) for c in content if isinstance(c, dict)]
    return {**kept, "content": blocks}, blocks
