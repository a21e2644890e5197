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

import pytest

from bridge.backends import find_backend
from bridge.testing import runner
from bridge.testing.scenario import load

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


async def _run(name: str, backend: str, tmp_path: Path, via: str | None = None,
               time_limit: float | None = None) -> runner.RunResult:
    argv = find_backend(backend)
    assert argv is not None
    target = runner.Target(backend, tuple(argv))
    out = tmp_path / f"{name}-{backend}.jsonl"
    res = await runner.run(load(SCENARIOS / f"{name}.toml"), target, out, via=via,
                           time_limit=time_limit)
    assert out.exists()
    return res


def _of(frames: list[dict[str, Any]], type_: str, subtype: str | None = None
        ) -> list[dict[str, Any]]:
    return [f for f in frames if f.get("type") == type_
            and (subtype is None or f.get("subtype") == subtype)]


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
    assert [e["latest"].rsplit("say ", 1)[-1][:10] for e in res.model_log
            if e.get("agent") == "sub"] == ["scan-resul", "sum-result"]


async def test_permission_prompt_allowed(backend: str, tmp_path: Path) -> None:
    res = await _run("permission-allow", backend, tmp_path)
    (req,) = [f for f in _of(res.frames, "control_request")
              if f["request"].get("subtype") == "can_use_tool"]
    assert req["request"]["tool_name"] == "Bash"
    assert _of(res.frames, "result")[-1]["subtype"] == "success"


async def test_bridge_maps_cbc_task_type(cbc: str, tmp_path: Path) -> None:
    """Through ``bridge run --profile cbc-to-claude`` the client sees Claude's name."""
    res = await _run("bg-bash", cbc, tmp_path, via="cbc-to-claude")
    (started,) = _of(res.frames, "system", "task_started")
    assert started["task_type"] == "local_bash"
    assert _of(res.frames, "system", "task_notification")
