"""The legacy Python SDK ``claude-code-sdk`` (0.0.25, the package before it was renamed
``claude-agent-sdk``) through ``claude-on-cbc`` over the real cbc 2.163.0 and the stand-in
model. It finds ``claude`` on PATH (``shutil.which``), so the test puts a ``claude`` shim
that runs the drop-in first on PATH. Its string ``query()`` is a headless run
(``--print -- PROMPT``, stdin closed at once, stream-json out), its ``ClaudeSDKClient`` a
stream-json session, and its ``can_use_tool`` answer has a shape of its own
(``{allow, reason}``, rule ``permission-reply``). Skipped with a reason when the SDK or cbc
is missing."""

from __future__ import annotations

import os
import secrets
import shlex
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.backends import find_backend
from harness import runner
from harness.brain import ModelScript, Rule
from harness.model import ModelServer

from .sdk_support import DROPIN, SDK_GC_WARNINGS

legacy = pytest.importorskip(
    "claude_code_sdk", reason="claude-code-sdk not installed (pip install -e '.[test]')"
)

pytestmark = [pytest.mark.real_backend, pytest.mark.client, *SDK_GC_WARNINGS]
REASON = "no shell for you today"
SCRIPT = ModelScript(
    rules=(
        Rule(
            when="TRIGGER_TOOL",
            tool="Bash",
            input={"command": "echo hi", "description": "Say hi"},
            times=1,
        ),
    )
)


@pytest.fixture
def cbc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    if not DROPIN.exists():
        pytest.skip(f"{DROPIN} not installed (pip install -e .)")
    argv = find_backend("cbc")
    if argv is None:
        pytest.skip("cbc not installed: run `ccbridge backends install`")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "claude").write_text(f'#!/bin/sh\nexec {shlex.quote(str(DROPIN))} "$@"\n')
    (shim / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ.get('PATH', '')}")
    return argv


async def options(
    cbc: list[str], tmp_path: Path, nursery: trio.Nursery, **kw: Any
) -> tuple[Any, ModelServer, str]:
    server = ModelServer(SCRIPT)
    url = await nursery.start(server.serve)
    dirs = {k: tmp_path / k for k in ("work", "home", "tmp")}
    for d in dirs.values():
        d.mkdir()
    mark = secrets.token_hex(8)
    env = {
        "CCBRIDGE_BACKEND": shlex.join(cbc),
        "CODEBUDDY_BASE_URL": url,
        "CODEBUDDY_API_KEY": "dummy",
        "HOME": str(dirs["home"]),
        "TMPDIR": str(dirs["tmp"]),
        "DISABLE_AUTOUPDATER": "1",
        "CCBRIDGE_LOG": str(tmp_path / "bridge.log"),
        runner.MARK: mark,
    }
    return legacy.ClaudeCodeOptions(cwd=str(dirs["work"]), env=env, **kw), server, mark


def texts(messages: list[Any]) -> list[str]:
    return [
        b.text
        for m in messages
        if isinstance(m, legacy.AssistantMessage)
        for b in m.content
        if isinstance(b, legacy.TextBlock)
    ]


async def test_string_query_answers(cbc: list[str], tmp_path: Path, nursery: trio.Nursery) -> None:
    opts, server, mark = await options(cbc, tmp_path, nursery)
    msgs: list[Any] = []
    try:
        with trio.fail_after(120):
            async for m in legacy.query(prompt="hello", options=opts):
                msgs.append(m)
    finally:
        runner.sweep(mark)
    assert texts(msgs) == ["ok"]
    [result] = [m for m in msgs if isinstance(m, legacy.ResultMessage)]
    assert not result.is_error
    assert result.result == "ok"
    assert any("hello" in str(e.get("latest", "")) for e in server.log)


async def test_streaming_client_answers(
    cbc: list[str], tmp_path: Path, nursery: trio.Nursery
) -> None:
    opts, _, mark = await options(cbc, tmp_path, nursery)
    msgs: list[Any] = []
    try:
        with trio.fail_after(120):
            async with legacy.ClaudeSDKClient(opts) as client:
                await client.query("hello")
                async for m in client.receive_response():
                    msgs.append(m)
    finally:
        runner.sweep(mark)
    assert texts(msgs) == ["ok"]
    assert isinstance(msgs[-1], legacy.ResultMessage)


async def test_can_use_tool_deny_reason_reaches_cbc(
    cbc: list[str], tmp_path: Path, nursery: trio.Nursery
) -> None:
    asked: list[str] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any], _ctx: Any) -> Any:
        asked.append(name)
        return legacy.PermissionResultDeny(message=REASON)

    opts, server, mark = await options(cbc, tmp_path, nursery, can_use_tool=can_use_tool)
    msgs: list[Any] = []
    try:
        with trio.fail_after(120):
            async with legacy.ClaudeSDKClient(opts) as client:
                await client.query("TRIGGER_TOOL run it")
                async for m in client.receive_response():
                    msgs.append(m)
    finally:
        runner.sweep(mark)
    assert asked == ["Bash"]
    # the model is told the client's reason, not a generic "Permission denied"
    after_tool = [str(e.get("latest", "")) for e in server.log if e.get("agent") == "main"]
    assert any(REASON in t for t in after_tool), after_tool
    assert isinstance(msgs[-1], legacy.ResultMessage)
