"""workflow-name, workflow-prompt, progress-snapshot, progress-final (PROTOCOL.md §2)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat.tasks_support import (
    CWD,
    EPOCH_MS,
    agent,
    capture_frames,
    engine,
    init,
    line,
    lines,
    logs,
    notification,
    out,
    phase,
    pick,
    progress,
    started,
    tags,
    tool_use,
    updated,
)

# cbc-2.163.0/mockoai_workflow-inline, verbatim
WF = capture_frames("mockoai_workflow-inline")
WF_TASK = "7335ab89-a3c3-4a6a-a0b8-41ec8f69d58d"
WF_CALL = "call_mock_3f055c587f22"
WF_CALL_FRAME = next(f for f in WF if f["type"] == "assistant" and "tool_use" in str(f))
SCRIPT = WF_CALL_FRAME["message"]["content"][0]["input"]["script"]
WF_INIT = pick(WF, "init")
WF_STARTED = pick(WF, "task_started")
WF_PROGRESS = [f for f in WF if f.get("subtype") == "task_progress"]
WF_DONE = pick(WF, "task_updated", status="completed")
WF_NOTE = pick(WF, "task_notification")

# cbc-2.163.0/mockoai_workflow-by-path-via-deferexecutetool, verbatim
DEFER = capture_frames("mockoai_workflow-by-path-via-deferexecutetool")
DEFER_CALL = next(f for f in DEFER if f["type"] == "assistant" and "tool_use" in str(f))
MOCK_FLOW = "export const meta = {\n  name: 'mock-flow',\n  description: 'Mock flow by path',\n}\n"

WF_RULES = ("workflow-name", "workflow-prompt", "progress-snapshot", "progress-final")


def launch(*rules: Any, scripts: dict[str, str] | None = None) -> Any:
    eng = engine(*rules, scripts=scripts)
    got = out(eng.feed("backend", lines(WF_INIT, WF_CALL_FRAME, WF_STARTED), 2.99))
    return eng, got


# -- workflow-name / workflow-prompt ----------------------------------------------------------


def test_inline_script_gives_claude_name_prompt_and_description() -> None:
    assert WF_STARTED["workflow_name"] == "inline-7d0e95"
    assert "prompt" not in WF_STARTED
    _, got = launch("workflow-name", "workflow-prompt")
    s = got[-1]
    assert s["workflow_name"] == "mock-flow"
    assert s["prompt"] == SCRIPT
    assert s["description"] == "Mock two-phase workflow"
    # Claude's key order (mockapi_workflow_local-workflow-task-progress)
    assert [k for k in s if not k.startswith("_")] == [
        "type",
        "subtype",
        "task_id",
        "tool_use_id",
        "description",
        "task_type",
        "workflow_name",
        "prompt",
        "uuid",
        "session_id",
    ]


def test_resolved_name_kept_on_later_frames_that_carry_it() -> None:
    eng, _ = launch("workflow-name")
    later = {**WF_PROGRESS[0], "workflow_name": "inline-7d0e95"}
    assert out(eng.feed("backend", line(later), 3.0))[0]["workflow_name"] == "mock-flow"


def test_script_by_path_through_deferexecutetool() -> None:
    eng = engine("workflow-name", "workflow-prompt", scripts={"flows/mock-flow.js": MOCK_FLOW})
    s0 = pick(DEFER, "task_started")
    assert s0["workflow_name"] == "path:mock-flow.js"
    got = out(eng.feed("backend", lines(pick(DEFER, "init"), DEFER_CALL, s0), 3.9))
    assert got[-1]["workflow_name"] == "mock-flow"
    assert got[-1]["description"] == "Mock flow by path"
    assert got[-1]["prompt"] == MOCK_FLOW
    assert got[-1]["tool_use_id"] == DEFER_CALL["message"]["content"][0]["id"]
    cwd = pick(DEFER, "init")["cwd"]
    assert eng.ctx.env.read_script.reads == [(cwd, "flows/mock-flow.js")]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("call_input", "scripts", "why"),
    [
        ({"scriptPath": "flows/x.js"}, {}, "could not read"),
        ({"script": "export const meta = makeMeta()"}, {}, "not readable"),
        ({"name": "deep-research"}, {}, None),
    ],
)
def test_unknown_or_unreadable_script_keeps_backend_values(
    call_input: dict[str, Any], scripts: dict[str, str], why: str | None
) -> None:
    eng = engine("workflow-name", "workflow-prompt", scripts=scripts)
    s0 = started("wf", "local_workflow", "path:x.js", "call_w", workflow_name="path:x.js")
    cmds = eng.feed("backend", lines(init(), tool_use("call_w", "Workflow", call_input), s0), 0)
    got = out(cmds)[-1]
    assert got["workflow_name"] == "path:x.js"
    if "script" in call_input:  # the script is known, its meta is not
        assert got["description"] == "Dynamic workflow"
        assert got["prompt"] == call_input["script"]
    else:
        assert got["description"] == "path:x.js"
        assert "prompt" not in got
    if why:
        assert sum(why in lg.message for lg in logs(cmds)) == 1


def test_agent_prompt_and_subagent_type_from_the_agent_call() -> None:
    bg = capture_frames("mockoai_bg-agent-then-user-turn")
    call = next(f for f in bg if f["type"] == "assistant" and "tool_use" in str(f))
    tid = pick(bg, "task_started")["task_id"]
    eng = engine("task-correlation", "task-type", "workflow-prompt")
    start = bg.index(call)
    end = next(i for i, f in enumerate(bg) if f["type"] == "user")
    got = out(eng.feed("backend", lines(pick(bg, "init"), *bg[start : end + 1]), 0))
    s = next(f for f in got if f.get("subtype") == "task_started")
    assert s["task_id"] == tid
    assert s["prompt"] == "say hi from subagent"
    assert s["subagent_type"] == "general-purpose"
    assert s["description"] == "Mock subagent"


def test_shell_description_from_the_bash_call() -> None:
    bash = capture_frames("mockoai_bg-bash")
    call = next(f for f in bash if f["type"] == "assistant" and "tool_use" in str(f))
    s0 = pick(bash, "task_started")
    assert s0["description"] == "sleep 3; echo bg-done"  # cbc puts the command there
    eng = engine("task-type", "workflow-prompt")
    got = out(eng.feed("backend", lines(pick(bash, "init"), call, s0), 0))
    assert got[-1]["description"] == "Sleep then echo"
    assert "prompt" not in got[-1]


# -- progress-snapshot -------------------------------------------------------------------------


def test_snapshot_lists_declared_phases_first_and_claude_titles() -> None:
    eng, _ = launch("workflow-prompt", "progress-snapshot")
    got = out(eng.feed("backend", lines(*WF_PROGRESS[:2]), 3.16))
    assert got[0]["workflow_progress"] == [phase(1, "Scan"), phase(2, "Sum")]
    assert "last_tool_name" not in got[0]
    p = got[1]
    assert [e["type"] for e in p["workflow_progress"]] == [
        "workflow_phase",
        "workflow_phase",
        "workflow_agent",
    ]
    assert p["workflow_progress"][2] == WF_PROGRESS[1]["workflow_progress"][1]
    assert p["description"] == "Scan: scanner"
    assert p["last_tool_name"] == "scanner"
    assert p["summary"] == "Mock two-phase workflow"


def test_snapshot_keeps_unknown_entries_cached_and_undeclared_phases() -> None:
    eng, _ = launch("progress-snapshot")
    odd = [
        phase(1, "Scan"),
        {"type": "workflow_note", "text": "x"},
        agent(1, "a", "cached"),
        phase(2, "Surprise"),
    ]
    got = out(eng.feed("backend", line(progress(WF_TASK, odd)), 3.2))[0]
    assert got["workflow_progress"] == odd  # phase 2 disagrees with meta: order untouched
    assert got["description"] == "Scan: a"


# cbc-2.163.0/mockoai_workflow-by-path-progress-during-live-turn, verbatim: cbc's snapshot
# once "scanner" is done carries endedAt, a key no Claude 2.1.220 workflow_agent entry has
# (twins workflow-inline.claude.jsonl, eof-with-bg-work.claude.jsonl)
LIVE = capture_frames("mockoai_workflow-by-path-progress-during-live-turn")


def test_snapshot_drops_cbc_ended_at_from_agent_entries() -> None:
    eng = engine("progress-snapshot")
    snap = next(f for f in LIVE if f.get("subtype") == "task_progress" and "endedAt" in str(f))
    start = pick(LIVE, "task_started", task_id=snap["task_id"])
    got = out(eng.feed("backend", lines(start, snap), 3.0))
    entries = got[1]["workflow_progress"]
    done = next(e for e in entries if e.get("label") == "scanner")
    assert done["state"] == "done"
    assert "endedAt" not in done
    want = {k: v for k, v in snap["workflow_progress"][1].items() if k != "endedAt"}
    assert done == want
    assert not any("endedAt" in e for e in entries)


def test_snapshot_ignores_non_workflow_progress() -> None:
    eng = engine("progress-snapshot")
    raw = line(started("b", "local_bash", "d", "c")) + line(progress("b"))
    assert b"".join(c.data for c in eng.feed("backend", raw, 0) if hasattr(c, "data")) == raw


# -- progress-final ----------------------------------------------------------------------------


def test_final_snapshot_before_the_terminal_update_from_real_frames() -> None:
    eng, _ = launch(*WF_RULES)
    out(eng.feed("backend", lines(*WF_PROGRESS[:2]), 3.16))
    # cbc: terminal update, a stale snapshot (scanner still "start"), the notification
    assert WF_PROGRESS[2]["workflow_progress"][1]["state"] == "start"
    got = out(eng.feed("backend", lines(WF_DONE, WF_PROGRESS[2], WF_NOTE), 3.88))
    assert tags(got) == ["task_progress", "task_updated:completed", "task_notification:completed"]
    snap = got[0]["workflow_progress"]
    assert snap[:2] == [phase(1, "Scan"), phase(2, "Sum")]
    assert snap[2]["state"] == "done"
    assert "endedAt" not in snap[2]  # no Claude 2.1.220 entry has it (twins workflow-inline)
    assert "error" not in snap[2]
    assert got[0]["uuid"].startswith("uuid-")
    assert got[0]["usage"]["duration_ms"] == 780
    assert got[0]["description"] == "Scan: scanner"
    assert eng.state.tasks[WF_TASK].last_progress == got[0]


@pytest.mark.parametrize("mode", ["all", "completed-only"])
def test_final_snapshot_of_a_stopped_workflow(mode: str) -> None:
    eng, _ = launch(("progress-final", {"mode": mode}))
    entries = [
        phase(1, "Fan"),
        agent(1, "slow-a"),
        agent(2, "slow-b", "cached"),
        agent(3, "slow-c", "done"),
    ]
    eng.feed("backend", line(progress(WF_TASK, entries)), 4.0)
    got = out(
        eng.feed(
            "backend",
            lines(
                updated(WF_TASK, "killed", EPOCH_MS + 5000), notification(WF_TASK, "stopped", "s")
            ),
            7.0,
        )
    )
    if mode == "completed-only":  # Claude 2.1.220 leaves killed agents at "start"
        assert tags(got) == ["task_updated:killed", "task_notification:stopped"]
        return
    assert tags(got) == ["task_progress", "task_updated:killed", "task_notification:stopped"]
    a, cached, done = got[0]["workflow_progress"][1:]
    assert a["state"] == "error"
    assert a["error"].startswith("subagent aborted: ")
    assert "endedAt" not in a
    assert cached == entries[2]
    assert done == entries[3]


def test_final_hold_is_bounded_by_wait() -> None:
    eng, _ = launch(("progress-final", {"wait": "1.5"}))
    eng.feed("backend", line(WF_PROGRESS[1]), 3.0)
    assert out(eng.feed("backend", line(updated(WF_TASK, "completed")), 10.0)) == []
    assert eng.next_deadline() == 11.5
    assert out(eng.advance(11.49)) == []
    got = out(eng.advance(11.5))
    assert tags(got) == ["task_progress", "task_updated:completed"]
    assert got[0]["workflow_progress"][1]["state"] == "done"
    assert "endedAt" not in got[0]["workflow_progress"][1]
    # the notification that comes later passes alone, and later progress is not touched
    late = progress(WF_TASK, [agent(1, "scanner", "error", error="x")])
    got = out(eng.feed("backend", lines(notification(WF_TASK, "completed", "s"), late), 12.0))
    assert tags(got) == ["task_notification:completed", "task_progress"]
    assert got[1]["workflow_progress"] == late["workflow_progress"]


def test_final_nothing_to_correct_emits_nothing_extra() -> None:
    eng, _ = launch("progress-final")
    eng.feed("backend", line(progress(WF_TASK, [phase(1, "Scan"), agent(1, "a", "done")])), 3)
    got = out(
        eng.feed(
            "backend",
            lines(updated(WF_TASK, "completed", 9), notification(WF_TASK, "completed", "s")),
            4,
        )
    )
    assert tags(got) == ["task_updated:completed", "task_notification:completed"]


def test_final_at_backend_exit_for_open_workflows() -> None:
    eng, _ = launch(*WF_RULES)
    eng.feed("backend", line(WF_PROGRESS[1]), 3.0)
    got = out(eng.backend_exited(0, 20.0))
    assert tags(got) == ["task_progress"]  # terminal-guarantee (not in this pipeline) ends it
    assert got[0]["workflow_progress"][2]["state"] == "error"


def test_only_workflows_are_held() -> None:
    eng = engine("progress-final")
    raw = lines(init(), started("b", "local_bash", "d", "c"), updated("b", "completed", 1))
    cmds = eng.feed("backend", raw, 0)
    assert tags(out(cmds))[-1] == "task_updated:completed"
    assert eng.next_deadline() is None
    assert CWD  # the cwd the scripts are resolved against comes from init
