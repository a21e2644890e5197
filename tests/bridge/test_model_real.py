"""The stand-in model's new capabilities against the real CLIs (Claude Code 2.1.220, cbc
2.163.0), through bundled scenarios. A handful, each a few seconds: that both CLIs accept
what the stand-in sends (parallel calls, thinking, HTTP errors, a resumed session, an MCP
server) is the point; the frame-level comparison belongs to the A/B tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.backends import find_backend
from harness import runner
from harness.scenario import load

pytestmark = pytest.mark.real_backend

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios" / "issue12"


def _scenario(name: str) -> Path:
    """A scenario still in issue12/, or one moved up into the conformance corpus."""
    here = SCENARIOS / f"{name}.toml"
    return here if here.exists() else SCENARIOS.parent / f"{name}.toml"


@pytest.fixture(params=["claude", "cbc"])
def backend(request: pytest.FixtureRequest) -> str:
    if find_backend(request.param) is None:
        pytest.skip(f"{request.param} not installed: run `ccbridge backends install`")
    return str(request.param)


async def _run(name: str, backend: str, tmp_path: Path) -> runner.RunResult:
    argv = find_backend(backend)
    assert argv is not None
    return await runner.run(
        load(_scenario(name)),
        runner.Target(backend, tuple(argv)),
        tmp_path / "out.jsonl",
    )


def _of(
    frames: list[dict[str, Any]], type_: str, subtype: str | None = None
) -> list[dict[str, Any]]:
    return [
        f
        for f in frames
        if f.get("type") == type_ and (subtype is None or f.get("subtype") == subtype)
    ]


def _tool_uses(frames: list[dict[str, Any]]) -> list[str]:
    return [
        c["name"]
        for f in _of(frames, "assistant")
        for c in f["message"]["content"]
        if c.get("type") == "tool_use"
    ]


async def test_parallel_tool_calls(backend: str, tmp_path: Path) -> None:
    res = await _run("parallel-tools", backend, tmp_path)
    assert _tool_uses(res.frames) == ["Read", "Bash"]
    results = [
        c
        for f in _of(res.frames, "user")
        for c in f["message"]["content"]
        if isinstance(c, dict) and c.get("type") == "tool_result"
    ]
    assert len(results) == 2
    # both results went back in one request, answered "done."
    assert [e["decision"] for e in res.model_log if e.get("agent") == "main"] == [
        ["tool_use", "Read", "Bash"],
        ["text", "done."],
    ]


async def test_thinking_block_reaches_the_client(backend: str, tmp_path: Path) -> None:
    res = await _run("thinking", backend, tmp_path)
    kinds = [c["type"] for f in _of(res.frames, "assistant") for c in f["message"]["content"]]
    if backend == "claude":
        assert kinds == ["thinking", "text"]
    else:  # cbc 2.163.0 often (3 runs in 4) drops the text block's assistant frame after a
        # thinking one; its result still holds the text (scenarios/README.md, `thinking`)
        assert kinds in (["thinking"], ["thinking", "text"])
    assert _of(res.frames, "result")[-1]["result"] == "brief answer"


async def test_overloaded_then_retried(backend: str, tmp_path: Path) -> None:
    res = await _run("api-retry-overloaded", backend, tmp_path)
    errors = [e for e in res.model_log if e.get("status") == 529]
    assert len(errors) == 2
    if backend == "claude":
        retries = _of(res.frames, "system", "api_retry")
        assert [(r["attempt"], r["error_status"]) for r in retries] == [(1, 529), (2, 529)]
        assert _of(res.frames, "result")[-1]["result"] == "ok"
    else:  # cbc 2.163.0 retries a 529 once, then gives up (error_during_execution)
        assert _of(res.frames, "result")[-1]["subtype"] == "error_during_execution"


async def test_resumed_session(backend: str, tmp_path: Path) -> None:
    res = await _run("resume-session", backend, tmp_path)
    results = _of(res.frames, "result")
    assert [r["result"] for r in results] == ["ok", "you said BLUE"]
    assert results[0]["session_id"] == results[1]["session_id"]


async def test_mcp_server_tools(backend: str, tmp_path: Path) -> None:
    res = await _run("mcp-tool", backend, tmp_path)
    (init, *_) = _of(res.frames, "system", "init")
    assert {"name": "probe", "status": "connected"} in init["mcp_servers"]
    assert _tool_uses(res.frames) == ["mcp__probe__lookup", "mcp__probe__broken"]
