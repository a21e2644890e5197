"""terminal-guarantee, late-progress, tasks-snapshot (PROTOCOL.md §1-2, seed 000)."""

from __future__ import annotations

import json

import pytest

from compat.session import TaskPhase
from tests.compat.tasks_support import (
    DATA,
    EPOCH_MS,
    SID,
    agent,
    engine,
    init,
    line,
    lines,
    notification,
    out,
    progress,
    started,
    tags,
    tool_result,
    updated,
)

CLAUDE = [
    json.loads(x) for x in (DATA / "claude-2.1.220_task-frames.jsonl").read_text().splitlines()
]


def claude_frames(capture: str) -> list[dict[str, object]]:
    return [r["frame"] for r in CLAUDE if r["capture"].endswith(capture)]


def open_task(
    eng: object,
    tid: str = "b1",
    ttype: str = "local_bash",
    desc: str = "Sleep",
    use: str = "call_b",
) -> None:
    eng.feed("backend", lines(init(), started(tid, ttype, desc, use)), 0.0)  # type: ignore[attr-defined]


# -- terminal-guarantee -----------------------------------------------------------------------


def test_missing_notification_synthesized_after_exactly_grace() -> None:
    eng = engine("terminal-guarantee")
    open_task(eng)
    assert tags(out(eng.feed("backend", line(updated("b1", "killed", 42)), 10.0))) == [
        "task_updated:killed"
    ]
    assert eng.next_deadline() == 15.0
    assert out(eng.advance(14.999)) == []
    got = out(eng.advance(15.0))
    assert got == [
        {
            "type": "system",
            "subtype": "task_notification",
            "task_id": "b1",
            "tool_use_id": "call_b",
            "status": "stopped",
            "output_file": "",
            "summary": "Sleep",
            "uuid": "uuid-1",
            "session_id": SID,
        }
    ]
    info = eng.state.tasks["b1"]
    assert info.phase is TaskPhase.NOTIFIED  # started, ended, notified, in that order
    assert info.end_time == 42
    # cbc's own notification, late: dropped, never a second one
    assert out(eng.feed("backend", line(notification("b1", "stopped", "x")), 20.0)) == []
    assert eng.statistics()["rules"]["terminal-guarantee"]["synthesized"] == 1


def test_grace_option_and_completed_wording() -> None:
    eng = engine(("terminal-guarantee", {"grace": "0.5"}))
    open_task(eng, "w1", "local_workflow", "Mock flow", "call_w")
    eng.feed("backend", line(updated("w1", "completed", 1)), 1.0)
    got = out(eng.advance(1.5))
    assert got[0]["status"] == "completed"
    assert got[0]["summary"] == 'Dynamic workflow "Mock flow" completed'


def test_notification_in_time_cancels_the_timer() -> None:
    eng = engine("terminal-guarantee")
    open_task(eng)
    eng.feed("backend", line(updated("b1", "completed", 1)), 1.0)
    got = out(eng.feed("backend", line(notification("b1", "completed", "ok")), 2.0))
    assert tags(got) == ["task_notification:completed"]
    assert eng.next_deadline() is None
    assert out(eng.advance(100.0)) == []


def test_duplicates_and_frames_after_the_end_are_dropped() -> None:
    # what cbc sends up to 30 s after an interrupt already ended the task (interrupt-terminal)
    eng = engine("terminal-guarantee")
    open_task(eng)
    got = out(
        eng.feed(
            "backend",
            lines(
                updated("b1", "killed", 1),
                updated("b1", "killed", 2),
                updated("b1", "running"),
                notification("b1", "stopped", "a"),
                updated("b1", "killed", 3),
                notification("b1", "stopped", "b"),
                started("b1", "local_bash", "Sleep", "call_b"),
            ),
            1.0,
        )
    )
    assert tags(got) == ["task_updated:killed", "task_notification:stopped"]
    assert got[0]["patch"]["end_time"] == 1
    assert got[1]["summary"] == "a"


def test_notification_without_terminal_update_gets_one_first() -> None:
    eng = engine("terminal-guarantee")
    open_task(eng)
    got = out(eng.feed("backend", line(notification("b1", "stopped", "s")), 3.0))
    assert tags(got) == ["task_updated:killed", "task_notification:stopped"]
    assert got[0]["patch"] == {"status": "killed", "end_time": EPOCH_MS + 3000}


def test_backend_exit_ends_every_open_task_once() -> None:
    eng = engine("terminal-guarantee")
    open_task(eng, "a1", "local_agent", "Agent job", "call_a")
    open_task(eng, "b1")
    open_task(eng, "w1", "local_workflow", "Flow", "call_w")
    eng.feed("backend", lines(updated("w1", "completed", 5)), 4.0)  # ended, not notified
    open_task(eng, "b2")
    eng.feed(
        "backend", lines(updated("b2", "completed", 6), notification("b2", "completed", "ok")), 5.0
    )
    got = out(eng.backend_exited(0, 7.0))
    assert tags(got) == [
        "task_updated:killed",
        "task_notification:stopped",
        "task_updated:killed",
        "task_notification:stopped",
        "task_notification:completed",
    ]
    assert [f["task_id"] for f in got] == ["a1", "a1", "b1", "b1", "w1"]
    assert got[0]["patch"] == {"status": "killed", "end_time": EPOCH_MS + 7000}
    assert got[1]["summary"] == "Agent job"
    assert got[1]["tool_use_id"] == "call_a"
    assert got[4]["summary"] == 'Dynamic workflow "Flow" completed'
    assert eng.state.open_tasks() == []
    assert eng.next_deadline() is None


def test_tasks_never_started_are_not_policed() -> None:
    eng = engine("terminal-guarantee")
    raw = line(updated("x", "completed", 1))
    got = eng.feed("backend", raw, 0)
    assert tags(out(got)) == ["task_updated:completed"]
    assert eng.next_deadline() is None
    assert out(eng.backend_exited(0, 1.0)) == []


# -- late-progress ----------------------------------------------------------------------------

LATE = progress("w1", [agent(1, "slow-a", "error", error="subagent aborted: interrupted")])


def ended(*rules: object) -> object:
    eng = engine(*rules)  # type: ignore[arg-type]
    open_task(eng, "w1", "local_workflow", "Flow", "call_w")
    eng.feed("backend", line(progress("w1", [agent(1, "slow-a")])), 1.0)
    return eng


def test_late_progress_dropped_by_default_and_counted() -> None:
    eng = ended("late-progress")
    got = out(eng.feed("backend", lines(notification("w1", "stopped", "s"), LATE, LATE), 2.0))  # type: ignore[attr-defined]
    assert tags(got) == ["task_notification:stopped"]
    assert eng.statistics()["rules"]["late-progress"]["dropped"] == 2  # type: ignore[attr-defined]


def test_late_progress_pass() -> None:
    eng = ended(("late-progress", {"mode": "pass"}))
    got = out(eng.feed("backend", lines(notification("w1", "stopped", "s"), LATE), 2.0))  # type: ignore[attr-defined]
    assert tags(got) == ["task_notification:stopped", "task_progress"]


def test_late_progress_fold_emits_it_before_the_held_notification() -> None:
    eng = ended(("late-progress", {"mode": "fold", "grace": "5"}))
    assert out(eng.feed("backend", line(notification("w1", "stopped", "s")), 2.0)) == []  # type: ignore[attr-defined]
    assert eng.next_deadline() == 7.0  # type: ignore[attr-defined]
    got = out(eng.feed("backend", line(LATE), 6.0))  # type: ignore[attr-defined]
    assert tags(got) == ["task_progress"]
    assert out(eng.advance(6.999)) == []  # type: ignore[attr-defined]
    assert tags(out(eng.advance(7.0))) == ["task_notification:stopped"]  # type: ignore[attr-defined]
    # after the window, late progress is dropped again
    assert out(eng.feed("backend", line(LATE), 8.0)) == []  # type: ignore[attr-defined]


def test_late_progress_fold_releases_when_the_stream_moves_on() -> None:
    eng = ended(("late-progress", {"mode": "fold"}))
    eng.feed("backend", line(notification("w1", "stopped", "s")), 2.0)  # type: ignore[attr-defined]
    nxt = {"type": "assistant", "session_id": SID, "message": {"content": []}}
    got = out(eng.feed("backend", line(nxt), 2.5))  # type: ignore[attr-defined]
    assert tags(got) == ["task_notification:stopped", "assistant"]
    assert eng.next_deadline() is None  # type: ignore[attr-defined]


def test_late_progress_fold_releases_at_exit() -> None:
    eng = ended(("late-progress", {"mode": "fold"}))
    eng.feed("backend", line(notification("w1", "stopped", "s")), 2.0)  # type: ignore[attr-defined]
    assert tags(out(eng.backend_exited(0, 3.0))) == ["task_notification:stopped"]  # type: ignore[attr-defined]


def test_progress_before_the_notification_passes_in_every_mode() -> None:
    for mode in ("drop", "pass", "fold"):
        eng = ended(("late-progress", {"mode": mode}))
        assert tags(out(eng.feed("backend", line(LATE), 1.5))) == ["task_progress"]  # type: ignore[attr-defined]


# -- tasks-snapshot ---------------------------------------------------------------------------


def test_snapshots_match_claude_interrupt_capture() -> None:
    claude = claude_frames("mockapi_idle-interrupt-kills-bg-workflow-keeps-bg-bash")
    wf, sh = "w1", "b1"
    eng = engine("tasks-snapshot")
    stream = [
        init(),
        started(wf, "local_workflow", "Slow mock workflow", "c1", workflow_name="slow-flow"),
        progress(wf, [agent(1, "waiter")]),
        started(sh, "local_bash", "Slow background sleep", "c2"),
        updated(wf, "killed", 1),
        notification(wf, "stopped", "Slow mock workflow"),
        updated(sh, "completed", 2),
        notification(sh, "completed", "x"),
    ]
    got = out(eng.feed("backend", lines(*stream), 0))
    ours = [f for f in got if f.get("subtype") not in ("task_progress", "init")]
    theirs = [f for f in claude if f.get("subtype") != "task_progress"]
    assert tags(ours) == tags(theirs)
    ids = {wf: theirs[1]["task_id"], sh: theirs[3]["task_id"]}
    for a, b in zip(ours, theirs, strict=True):
        if a["subtype"] == "background_tasks_changed":
            assert [{**e, "task_id": ids[e["task_id"]]} for e in a["tasks"]] == b["tasks"]
            assert list(a) == list(b)


def test_snapshot_on_notification_without_update_and_untracked_tasks() -> None:
    eng = engine("tasks-snapshot")
    got = out(
        eng.feed(
            "backend",
            lines(
                init(),
                updated("ghost", "completed", 1),
                started("a1", "local_agent", "Job", "c"),
                notification("a1", "completed", "ok"),
                notification("a1", "completed", "ok"),
            ),
            0,
        )
    )
    assert tags(got)[1:] == [
        "task_updated:completed",
        "background_tasks_changed:1",
        "task_started:local_agent",
        "background_tasks_changed:0",
        "task_notification:completed",
        "task_notification:completed",
    ]


@pytest.mark.parametrize("rule", ["terminal-guarantee", "late-progress", "tasks-snapshot"])
def test_lifecycle_rules_ignore_other_frames(rule: str) -> None:
    eng = engine(rule)
    raw = lines(
        init(), tool_result("c", "task_id: x"), {"type": "assistant", "message": {"content": []}}
    )
    data = b"".join(c.data for c in eng.feed("backend", raw, 0) if hasattr(c, "data"))
    assert data == raw
