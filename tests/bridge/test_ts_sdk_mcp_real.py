"""The TypeScript SDK's in-process MCP server (``createSdkMcpServer`` + ``tool``) through
``claude-on-cbc`` to a real cbc 2.163.0, the model being the scripted stand-in
(``harness.model``); the script is ``tests/js/ts_sdk_mcp.mjs``, run with every SDK of
``tests/js/package.json`` (the pinned 0.3.220 and the newer one).

Unlike the Python SDK (``--mcp-config`` ``{"type": "sdk"}``), the TypeScript SDK names its
servers only in ``initialize.sdkMcpServers`` (0.3.332 adds ``sdkMcpServerManifests``);
cbc takes that and asks the server through ``mcp_message`` as Claude does. What Claude
Code 2.1.220 wrote for the same session (real binary, the stand-in model, 2026-12-02) is
what is asserted: each handler's request names the model's call
(``_meta["claudecode/toolUseId"]``), the calls' ``tool_use_meta``, the results as Claude
writes them, the init's server and tools, ``mcpServerStatus()`` (rules ``sdk-mcp``,
``sdk-mcp-reply``).
"""

from __future__ import annotations

import json
import secrets
import shlex
import shutil
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.backends import find_backend
from harness import runner
from harness.model import ModelScript, ModelServer, Rule

from ..conftest import REPO
from .test_ts_sdk import REAL_DEADLINE, Run, Sdk, node_or_skip, pythonpath, run_script
from .test_ts_sdk import sdk as sdk  # noqa: F401  (the fixture: every SDK of package.json)

pytestmark = [pytest.mark.client, pytest.mark.real_backend]
RULES = (
    Rule(when="TRIGGER_MCP", tool="mcp__probe__echo", input={"text": "hi there"}),
    Rule(when="echo: hi", tool="mcp__probe__boom", input={"text": "x"}),
)


#: a stdio MCP server (``harness/mcp_server.py``) as the SDK's ``mcpServers`` entry ``ext``
EXTERNAL = {
    "type": "stdio",
    "command": sys.executable,
    "args": [str(REPO / "harness" / "mcp_server.py"), "--tool", "ping=pong {args}"],
}
EXTERNAL_RULES = (
    *RULES,
    Rule(when="the boom failed", tool="mcp__ext__ping", input={"n": 1}),
)


def run_on_real_cbc(
    sdk: Sdk, rules: tuple[Rule, ...] = RULES, args: Sequence[str] = ()
) -> tuple[Run, list[dict[str, Any]]]:
    node = node_or_skip(sdk)
    cbc = find_backend("cbc")
    if cbc is None:
        pytest.skip("cbc not installed: run `ccbridge backends install`")
    return trio.run(_drive, node, cbc, sdk, rules, args)


async def _drive(
    node: str, cbc: list[str], sdk: Sdk, rules: tuple[Rule, ...], args: Sequence[str]
) -> tuple[Run, list[dict[str, Any]]]:
    dirs = runner.make_root()
    mark = secrets.token_hex(8)
    server = ModelServer(ModelScript(rules=rules))
    try:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(server.serve)
            env = runner.backend_env("cbc", url, dirs, mark)
            env.update(
                CCBRIDGE_BACKEND=shlex.join(cbc),
                CCBRIDGE_LOG_LEVEL="info" if args else "warning",
                CCBRIDGE_LOG=str(Path(dirs["ROOT"], "bridge.log")),
                PYTHONPATH=pythonpath(),
            )
            try:
                run = await trio.to_thread.run_sync(
                    partial(
                        run_script,
                        node,
                        "ts_sdk_mcp.mjs",
                        list(args),
                        cwd=Path(dirs["CWD"]),
                        env=env,
                        deadline=REAL_DEADLINE,
                        sdk=sdk,
                    )
                )
            finally:
                nursery.cancel_scope.cancel()
        log = trio.Path(dirs["ROOT"], "bridge.log")
        run.summary["bridge_log"] = await log.read_text() if await log.exists() else ""
    finally:
        runner.sweep(mark)
        shutil.rmtree(dirs["ROOT"], ignore_errors=True)
    return run, list(server.log)


def test_sdk_mcp_server_real_cbc(sdk: Sdk) -> None:  # noqa: F811
    run, model_log = run_on_real_cbc(sdk)
    assert run["failures"] == [], run.describe()
    assert run.returncode == 0, run.describe()
    calls = run["calls"]
    assert [(c["tool"], c["args"]) for c in calls] == [
        ("echo", {"text": "hi there"}),
        ("boom", {"text": "x"}),
    ], run.describe()
    uses = {
        b["name"]: b["id"]
        for m in run["messages"]
        if m["type"] == "assistant"
        for b in m["blocks"]
        if b["type"] == "tool_use"
    }
    # Claude's request names the model's call
    assert [c["meta"]["claudecode/toolUseId"] for c in calls] == [
        uses["mcp__probe__echo"],
        uses["mcp__probe__boom"],
    ], run.describe()
    # Claude labels each call: the tool's title or its name as a label, the server's name
    assert run["tool_use_meta"] == [
        {"id": uses["mcp__probe__echo"], "display_name": "Echo", "server_display_name": "probe"},
        {
            "id": uses["mcp__probe__boom"],
            "display_name": "Boom Tool",
            "server_display_name": "probe",
        },
    ], run.describe()
    echo, boom = run["tool_results"]
    assert echo["block"]["content"] == [{"type": "text", "text": "echo: hi there"}]
    assert "is_error" not in echo["block"]
    assert echo["tool_use_result"] == [{"type": "text", "text": "echo: hi there"}]
    assert (boom["block"]["content"], boom["block"]["is_error"], boom["tool_use_result"]) == (
        "the boom failed",
        True,
        "Error: the boom failed",
    ), run.describe()
    assert run["init"] == {
        "mcp_servers": [{"name": "probe", "status": "connected"}],
        "mcp_tools": ["mcp__probe__boom", "mcp__probe__echo"],
    }, run.describe()
    assert run["status"] == [
        {
            "name": "probe",
            "status": "connected",
            "scope": "dynamic",
            "tools": [
                {"name": "echo", "annotations": {}},
                {"name": "boom", "annotations": {"readOnly": True}},
            ],
        }
    ], run.describe()
    [result] = run["results"]
    assert (result["subtype"], result["result"]) == ("success", "done."), run.describe()
    seen = [str(e.get("latest", "")) for e in model_log if e.get("agent") != "utility"]
    assert any("echo: hi there" in s for s in seen)  # (as JSON text: cbc's, a known gap)
    assert "sdk-mcp" not in run["bridge_log"], run["bridge_log"]


def test_a_stdio_mcp_server_of_the_sdk_reaches_cbc(sdk: Sdk) -> None:  # noqa: F811
    """An external (stdio) server in ``mcpServers``: TypeScript SDK 0.3.220 puts it on the
    command line (``--mcp-config``); 0.3.337 sends it inside ``initialize`` with
    ``--await-initialize`` and ends the session unless the reply says whether it was
    applied (``mcp_servers_applied``): the bridge read that request before it started cbc
    and gave cbc the server. Either way cbc starts it: the model's call of its tool is
    answered by it, and the init lists it connected."""
    run, _ = run_on_real_cbc(sdk, EXTERNAL_RULES, ["--external", json.dumps(EXTERNAL)])
    assert run["failures"] == [], run.describe()
    assert run.returncode == 0, run.describe()
    assert {"name": "ext", "status": "connected"} in run["init"]["mcp_servers"], run.describe()
    assert "mcp__ext__ping" in run["init"]["mcp_tools"], run.describe()
    ping = run["tool_results"][-1]
    assert "pong" in json.dumps(ping["block"]["content"]), run.describe()
    [result] = run["results"]
    assert result["subtype"] == "success", run.describe()
    log = run["bridge_log"]  # (at info)
    assert "dropped" not in log, log
    if "--await-initialize" in log:  # the SDK sent the server inside initialize
        assert "initialize mcpServers: given to cbc at launch" in log, log
