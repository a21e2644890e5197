"""Whole cbc 2.163.0 captures through the full ``cbc-to-claude`` profile: the task lifecycle
the client sees is Claude Code 2.1.220's (its twins in claude-2.1.220/), and the contract
checker finds nothing to blame on the task rules.

The by-path captures run a script file that is not part of the capture set
(``flows/par-slow-flow.js``, ``flows/mock-flow.js``); the tests serve stand-ins through
``Env.read_script`` and also run without them (cbc's names are then kept).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from analysis.contract import check_lines
from tests.compat.tasks_support import DATA, full_engine, line, replay, tags

INLINE_SCRIPT_START = "export const meta = {\n  name: 'mock-flow',"
PAR_SLOW = """export const meta = {
  name: 'par-slow-flow',
  description: 'Two slow agents in parallel',
  phases: [{ title: 'Fan' }],
}
phase('Fan')
await Promise.all([agent('MOCK_SLOW a', {label: 'slow-a'}),
                   agent('MOCK_SLOW b', {label: 'slow-b'})])
"""
MOCK_FLOW = """export const meta = { name: 'mock-flow', description: 'Mock two-phase workflow',
  phases: [ { title: 'Scan' }, { title: 'Sum' } ] }
"""
SCRIPTS = {"flows/par-slow-flow.js": PAR_SLOW, "flows/mock-flow.js": MOCK_FLOW}
#: the rules this suite is about (the contract checker also reports other engineers')
TASK_RULES = frozenset(
    {
        "task-type",
        "task-status",
        "task-fields",
        "task-noise",
        "task-correlation",
        "terminal-guarantee",
        "late-progress",
        "progress-final",
    }
)
CLAUDE = [
    json.loads(x) for x in (DATA / "claude-2.1.220_task-frames.jsonl").read_text().splitlines()
]


#: the task and workflow rules in their cbc-to-claude order
TASK_ORDER = (
    "task-correlation",
    "task-type",
    "workflow-name",
    "workflow-prompt",
    "task-noise",
    "task-status",
    "progress-snapshot",
    "progress-final",
    "terminal-guarantee",
    "late-progress",
    "tasks-snapshot",
    "task-fields",
)


def run(
    name: str,
    rules: tuple[str, ...] = (),
    scripts: dict[str, str] | None = SCRIPTS,
    extra: list[tuple[float, bytes]] | None = None,
) -> list[tuple[float, dict[str, Any]]]:
    return replay(full_engine(rules, scripts), DATA / f"{name}.transcript.jsonl", extra or [])


def frames(got: list[tuple[float, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [f for _, f in got]


def lifecycle(fs: list[dict[str, Any]], tid: str) -> list[str]:
    """One task's lifecycle and the snapshots, consecutive progress frames collapsed."""
    return [k for k, _ in itertools.groupby(tags(fs, tid))]


def claude_twin(capture: str) -> list[dict[str, Any]]:
    return [r["frame"] for r in CLAUDE if r["capture"].endswith(capture)]


def task_violations(fs: list[dict[str, Any]]) -> list[str]:
    raw = [json.dumps(f).encode() for f in fs]
    return [f"{v.rule}: {v.message}" for v in check_lines(raw) if v.rule in TASK_RULES]


def only(fs: list[dict[str, Any]], subtype: str, tid: str) -> list[dict[str, Any]]:
    return [f for f in fs if f.get("subtype") == subtype and f.get("task_id") == tid]


# -- a workflow from start to finish ----------------------------------------------------------

WF = "7335ab89-a3c3-4a6a-a0b8-41ec8f69d58d"


def test_inline_workflow_claude_lifecycle() -> None:
    fs = frames(run("mockoai_workflow-inline"))
    (st,) = only(fs, "task_started", WF)
    assert st["task_type"] == "local_workflow"
    assert st["workflow_name"] == "mock-flow"
    assert st["prompt"].startswith(INLINE_SCRIPT_START)
    assert st["prompt"].endswith("return {a, b}\n")
    assert st["description"] == "Mock two-phase workflow"
    (note,) = only(fs, "task_notification", WF)
    assert note["status"] == "completed"
    # Claude's exact wording (mockapi_workflow_local-workflow-task-progress)
    twin = claude_twin("mockapi_workflow_local-workflow-task-progress")
    assert note["summary"] == twin[-1]["summary"]
    assert note["summary"] == 'Dynamic workflow "Mock two-phase workflow" completed'
    # nothing for the task after its notification
    after = fs[fs.index(note) + 1 :]
    assert not [f for f in after if f.get("task_id") == WF]
    # the same lifecycle as Claude's twin
    assert (
        lifecycle(fs, WF)
        == lifecycle(twin, twin[1]["task_id"])
        == [
            "background_tasks_changed:1",
            "task_started:local_workflow",
            "task_progress",
            "background_tasks_changed:0",
            "task_updated:completed",
            "task_notification:completed",
        ]
    )
    # the last snapshot before the end: scanner done, every declared phase listed
    last = only(fs, "task_progress", WF)[-1]
    assert [e.get("title") or e.get("state") for e in last["workflow_progress"]] == [
        "Scan",
        "Sum",
        "done",
    ]
    assert fs.index(last) < fs.index(only(fs, "task_updated", WF)[-1])
    assert task_violations(fs) == []


def test_inline_workflow_raw_cbc_breaks_the_contract() -> None:
    # the oracle is not blind: the same capture without the task rules fails it
    off = tuple(f"{r}=off" for r in TASK_ORDER)
    fs = frames(run("mockoai_workflow-inline", off))
    rules = {v.split(":")[0] for v in task_violations(fs)}
    assert {"task-noise", "task-status", "progress-final"} <= rules


@pytest.mark.parametrize("scripts", [SCRIPTS, {}], ids=["script-known", "script-unknown"])
def test_workflow_via_deferexecutetool(scripts: dict[str, str]) -> None:
    fs = frames(run("mockoai_workflow-by-path-via-deferexecutetool", scripts=scripts))
    (st,) = [f for f in fs if f.get("subtype") == "task_started"]
    assert st["tool_use_id"] == "call_mock_f68ae803ac2c"
    if scripts:
        assert (st["workflow_name"], st["description"]) == ("mock-flow", "Mock two-phase workflow")
        assert st["prompt"] == MOCK_FLOW
    else:
        assert st["workflow_name"] == st["description"] == "path:mock-flow.js"
        assert "prompt" not in st
    assert len([f for f in fs if f.get("subtype") == "task_notification"]) == 1
    assert task_violations(fs) == []


# -- an interrupt while a workflow runs -------------------------------------------------------

IWF = "3a597ff3-a2a0-478f-b80d-49c27071fb78"
# seed 000 §delivery: cbc "may send more task_progress flipping in-flight agents start->error"
# after the stopped notification. This run's capture shows none, so one is added at 34.5 s.
LATE = {
    "type": "system",
    "subtype": "task_progress",
    "task_id": IWF,
    "tool_use_id": "call_mock_9cf269b19be5",
    "description": "path:par-slow-flow.js",
    "usage": {"total_tokens": 0, "tool_uses": 0, "duration_ms": 3400},
    "workflow_progress": [
        {"type": "workflow_phase", "index": 1, "title": "Fan"},
        {
            "type": "workflow_agent",
            "index": 1,
            "agentId": "v2:a",
            "state": "error",
            "startedAt": 1795949562365,
            "label": "slow-a",
            "phaseTitle": "Fan",
            "phaseIndex": 1,
            "error": "subagent aborted: interrupted",
        },
    ],
    "uuid": "late-1",
    "session_id": "01a226ef-85a9-7f4e-a45d-9189913b211f",
}


def test_interrupted_workflow_stopped_final_snapshot_and_late_progress_dropped() -> None:
    got = run("mockoai_interrupt-idle-workflow-2-running-agents", extra=[(34.5, line(LATE))])
    fs = frames(got)
    (note,) = only(fs, "task_notification", IWF)
    assert note["status"] == "stopped"
    assert note["summary"] == "Two slow agents in parallel"  # Claude: a stopped task's description
    (st,) = only(fs, "task_started", IWF)
    assert st["workflow_name"] == "par-slow-flow"
    assert lifecycle(fs, IWF) == [
        "background_tasks_changed:1",
        "task_started:local_workflow",
        "task_progress",
        "background_tasks_changed:0",
        "task_updated:killed",
        "task_notification:stopped",
    ]
    # the corrected snapshot: both running agents ended in error
    final = only(fs, "task_progress", IWF)[-1]
    agents = [e for e in final["workflow_progress"] if e["type"] == "workflow_agent"]
    assert [(a["label"], a["state"]) for a in agents] == [("slow-a", "error"), ("slow-b", "error")]
    assert all(a["error"].startswith("subagent aborted: ") for a in agents)
    # the late progress at 34.5 s was dropped, and counted
    assert fs.index(note) == max(i for i, f in enumerate(fs) if f.get("task_id") == IWF)
    assert all(f.get("uuid") != "late-1" for f in fs)
    assert task_violations(fs) == []


def test_interrupted_workflow_late_progress_fold_and_completed_only() -> None:
    got = run(
        "mockoai_interrupt-idle-workflow-2-running-agents",
        ("late-progress=fold", "progress-final=completed-only"),
        extra=[(34.5, line(LATE))],
    )
    fs = frames(got)
    # completed-only: no corrected snapshot for a killed workflow (Claude 2.1.220 leaves its
    # agents at "start"); cbc's stale one between update and notification is folded away;
    # the notification waited, and the late progress went out before it
    assert lifecycle(fs, IWF)[-4:] == [
        "background_tasks_changed:0",
        "task_updated:killed",
        "task_progress",
        "task_notification:stopped",
    ]
    ((t_note, note),) = [(t, f) for t, f in got if f.get("subtype") == "task_notification"]
    # released by the next turn's first frame (34.544 s), before the 5 s window (39.412 s)
    assert t_note == 34.544
    late = [f for f in fs if f.get("uuid") == "late-1"]
    assert late
    assert fs.index(late[0]) < fs.index(note)


# -- background agents and shells against their Claude twins ----------------------------------


def test_background_agent_like_claude() -> None:
    fs = frames(run("mockoai_bg-agent-then-user-turn"))
    tid = "agent-42486abc-7cf2-4ab7-b7f7-ac05764a23fe"
    twin = claude_twin("mockapi_background-agent_local-agent-frames")
    ours = [k for k in lifecycle(fs, tid) if k != "task_progress"]
    assert ours == lifecycle(twin, twin[1]["task_id"])
    (st,) = only(fs, "task_started", tid)
    assert {k: st[k] for k in ("tool_use_id", "task_type", "prompt", "subagent_type")} == {
        "tool_use_id": "call_mock_c22a94538e1e",
        "task_type": "local_agent",
        "prompt": "say hi from subagent",
        "subagent_type": "general-purpose",
    }
    assert [k for k in st if not k.startswith("_")] == [k for k in twin[1]]
    (note,) = only(fs, "task_notification", tid)
    assert note["output_file"] == ""
    assert note["tool_use_id"] == "call_mock_c22a94538e1e"
    assert task_violations(fs) == []


@pytest.mark.parametrize(
    ("name", "twin"),
    [
        ("mockoai_bg-bash", "mockapi_background-bash_task-started-updated-notification"),
        ("mockoai_taskstop-bg-bash", "mockapi_taskstop-background-bash_killed-stopped"),
    ],
)
def test_background_shell_like_claude(name: str, twin: str) -> None:
    fs = frames(run(name))
    claude = claude_twin(twin)
    (st,) = [f for f in fs if f.get("subtype") == "task_started"]
    assert lifecycle(fs, st["task_id"]) == lifecycle(claude, claude[1]["task_id"])
    assert st["description"] == claude[1]["description"]
    (note,) = [f for f in fs if f.get("subtype") == "task_notification"]
    if note["status"] == "stopped":
        assert note["summary"] == claude[-1]["summary"]
    else:  # Claude adds " (exit code 0)", which cbc does not report
        assert claude[-1]["summary"].startswith(note["summary"])
    assert task_violations(fs) == []


def test_backend_exit_with_a_workflow_running_ends_it() -> None:
    got = run("mockoai_eof-with-bg-workflow-running")
    fs = frames(got)
    tid = "d9e6c6d0-c9ac-4a22-8a18-c4ea9868921f"
    assert lifecycle(fs, tid)[-3:] == [
        "background_tasks_changed:0",
        "task_updated:killed",
        "task_notification:stopped",
    ]
    t_end = max(t for t, f in got if f.get("task_id") == tid)
    assert t_end == 55.065  # the exit the transcript recorded (after SIGTERM)
    assert task_violations(fs) == []


def test_workflow_and_shell_interleaved() -> None:
    fs = frames(run("mockoai_interrupt-idle-with-bg-workflow-and-bash"))
    snaps = [len(f["tasks"]) for f in fs if f.get("subtype") == "background_tasks_changed"]
    assert snaps == [1, 2, 1, 0]
    assert task_violations(fs) == []


def test_task_rules_order_in_the_profile() -> None:
    """Pinned on purpose (compat/stages/lifecycle.py): the rules that hold or drop lifecycle
    frames come before the ones that must see what the client will see."""
    from compat.profiles import PROFILES

    down = PROFILES["cbc-to-claude"]["down"]
    assert down[:13] == (
        "session",
        "foreign-init",
        "max-turns",
        "init-once",
        "tool-errors",
        "hook-deny",
        "bash-output",
        "task-tool-results",
        "task-output-records",
        "file-tool-results",
        "agent-tool-result",
        "exit-plan-mode",
        "private-fields",
    )
    task = [
        r
        for r in down
        if r
        in TASK_RULES | {"workflow-name", "workflow-prompt", "progress-snapshot", "tasks-snapshot"}
    ]
    assert task == list(TASK_ORDER)
