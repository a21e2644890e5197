"""A few bundled scenarios on the real CLIs (Claude Code 2.1.220, cbc 2.163.0), their
model API being the stand-in. Skipped, with the way to install them, when a CLI is not
found (``ccbridge backends install``; ``CCBRIDGE_BACKENDS_DIR`` points at another cache).

Only basic facts are asserted (an init, a result, a task_started of the right type): the
point is that the stand-in, the scenarios and the runner work with the real binaries; the
frame-level comparisons belong to the A/B tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from bridge.backends import find_backend
from harness import runner
from harness.scenario import load

pytestmark = pytest.mark.real_backend

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
#: what each CLI calls the task a background Bash starts (PROTOCOL.md `task-type`)
BASH_TASK = {"claude": "local_bash", "cbc": "Bash"}


def _need(name: str) -> str:
    # a sync fixture skips: a skip raised inside the trio test loses its reason
    if find_backend(name) is None:
        pytest.skip(f"{name} not installed: run `ccbridge backends install`")
    return name


@pytest.fixture(params=["claude", "cbc"])
def backend(request: pytest.FixtureRequest) -> str:
    return _need(request.param)


@pytest.fixture
def cbc() -> str:
    return _need("cbc")


async def _run(
    name: str, backend: str, tmp_path: Path, via: str | None = None, time_limit: float | None = None
) -> runner.RunResult:
    argv = find_backend(backend)
    assert argv is not None
    target = runner.Target(backend, tuple(argv))
    out = tmp_path / f"{name}-{backend}.jsonl"
    res = await runner.run(
        load(SCENARIOS / f"{name}.toml"), target, out, via=via, time_limit=time_limit
    )
    assert out.exists()
    return res


def _of(
    frames: list[dict[str, Any]], type_: str, subtype: str | None = None
) -> list[dict[str, Any]]:
    return [
        f
        for f in frames
        if f.get("type") == type_ and (subtype is None or f.get("subtype") == subtype)
    ]


async def test_simple_success(backend: str, tmp_path: Path) -> None:
    res = await _run("simple-success", backend, tmp_path)
    assert res.exit == "0"
    assert _of(res.frames, "system", "init")
    (result,) = _of(res.frames, "result")
    assert result["subtype"] == "success"
    assert result["result"] == "ok"
    assert any(e.get("decision") == ["text", "ok"] for e in res.model_log)
    assert res.backend_version == {"claude": "2.1.220", "cbc": "2.163.0"}[backend]


async def test_background_bash(backend: str, tmp_path: Path) -> None:
    res = await _run("bg-bash", backend, tmp_path)
    (started,) = _of(res.frames, "system", "task_started")
    assert started["task_type"] == BASH_TASK[backend]
    (note,) = _of(res.frames, "system", "task_notification")
    assert note["status"] == "completed"
    assert len(_of(res.frames, "result")) == 2  # the turn, and the one the notification ran


async def test_inline_workflow(backend: str, tmp_path: Path) -> None:
    res = await _run("workflow-inline", backend, tmp_path)
    (started,) = _of(res.frames, "system", "task_started")
    assert started["task_type"] == "local_workflow"
    assert _of(res.frames, "system", "task_progress")
    (note,) = _of(res.frames, "system", "task_notification")
    assert note["status"] == "completed"
    # both workflow agents asked the model, as sub-agents
    assert [
        e["latest"].rsplit("say ", 1)[-1][:10] for e in res.model_log if e.get("agent") == "sub"
    ] == ["scan-resul", "sum-result"]


async def test_permission_prompt_allowed(backend: str, tmp_path: Path) -> None:
    res = await _run("permission-allow", backend, tmp_path)
    (req,) = [
        f
        for f in _of(res.frames, "control_request")
        if f["request"].get("subtype") == "can_use_tool"
    ]
    assert req["request"]["tool_name"] == "Bash"
    assert _of(res.frames, "result")[-1]["subtype"] == "success"


async def test_bridge_maps_cbc_task_type(cbc: str, tmp_path: Path) -> None:
    """Through ``bridge run --profile cbc-to-claude`` the client sees Claude's name."""
    res = await _run("bg-bash", cbc, tmp_path, via="cbc-to-claude")
    (started,) = _of(res.frames, "system", "task_started")
    assert started["task_type"] == "local_bash"
    assert _of(res.frames, "system", "task_notification")


INITIALIZE = {
    "subtype": "initialize",
    "hooks": {},
    "capabilities": {},
    "settings": {"model": "fast-model", "permissions": {"allow": ["Bash"]}},
    "disallowedTools": ["WebFetch"],
}
INIT_WITH_SETTINGS = f"""
name = "initialize-settings"
description = "options a newer TypeScript SDK sends inside initialize"
time_limit = 90
initialize = false

[[steps]]
line = '''{
    orjson.dumps({"type": "control_request", "request_id": "init", "request": INITIALIZE}).decode()
}'''

[[steps]]
after = {{ type = "control_response" }}

[[steps]]
user = "hello"

[[steps]]
after = {{ type = "result" }}
"""


async def test_initialize_settings_reach_cbc_as_set_config(cbc: str, tmp_path: Path) -> None:
    """``settings.model`` sent inside ``initialize`` (TS SDK 0.3.332) is the model cbc
    asks; what cbc has no equivalent for is named in one warning; the reply to the bridge's
    own ``set_config`` never reaches the client."""
    scenario = tmp_path / "initialize-settings.toml"
    scenario.write_text(INIT_WITH_SETTINGS)
    argv = find_backend(cbc)
    assert argv is not None
    out = tmp_path / "out.jsonl"
    res = await runner.run(
        load(scenario), runner.Target(cbc, tuple(argv)), out, via="cbc-to-claude"
    )
    assert res.exit == "0"
    asked = {e["model"] for e in res.model_log if e.get("model") and e.get("agent") != "utility"}
    assert asked == {"fast-model"}
    replies = _of(res.frames, "control_response")
    assert [r["response"]["request_id"] for r in replies] == ["init"]
    (result,) = _of(res.frames, "result")
    assert result["subtype"] == "success"
    stderr = "".join(
        rec["text"]
        for rec in map(orjson.loads, out.read_bytes().splitlines()[1:])
        if rec.get("kind") == "stderr"
    )
    assert "settings.permissions" in stderr
    assert "disallowedTools" in stderr
