"""``eof-wind-down`` (PROTOCOL.md §5): after the client's EOF the bridge does what Claude
Code 2.1.220 does before cbc's stdin is closed, with exact times (engine timers, no clock).

Claude's reference: ``claude-2.1.220/mockapi_eof-with-bg-bash_5s-grace-then-stopped-exit0``
(result 1.878, EOF 1.923, the shell killed at 7.053: 5 s after the EOF, exit 0) and
``dummykey_eof-midturn_turn-finishes-then-exit1`` (EOF during the turn, the turn ends with
an error result, exit 1).
"""

from __future__ import annotations

from typing import Any

import pytest

from compat.engine import CloseBackendInput, TerminateBackend
from compat.playbook import Out, Playbook, Timer
from compat.session import Interrupt
from compat.taskkit import LiveTask

from .session_support import Run, advance, drive, full, line, take
from .tasks_support import (
    EPOCH_MS,
    SID,
    init,
    notification,
    result,
    started,
    tags,
    tool_result,
    tool_use,
    updated,
)

USER = (
    b'{"type":"user","message":{"role":"user","content":"hi"},"session_id":"",'
    b'"parent_tool_use_id":null}\n'
)


def status() -> dict[str, Any]:
    return {"type": "system", "subtype": "status", "status": None, "uuid": "st", "session_id": SID}


def turn(t: float, *frames: dict[str, Any], step: float = 0.01) -> list[tuple[float, str, bytes]]:
    return [(t + i * step, "backend", line(f)) for i, f in enumerate(frames)]


def first_turn(t: float = 1.0) -> list[tuple[float, str, bytes]]:
    return turn(
        t, init(), tool_use("u1", "Bash", {"command": "ls"}), tool_result("u1", "ok"), result()
    )


def at(run: Run, kind: type) -> list[float]:
    return [round(t, 6) for t, c in run.commands if isinstance(c, kind)]


def settled(run: Run) -> list[bool]:
    """Per close of cbc's stdin: did the session settle there (a -p run prints then)?"""
    return [c.settled for _, c in run.commands if isinstance(c, CloseBackendInput)]


def test_immediate_eof_closes_at_once_and_exits_0() -> None:
    """``claude-2.1.220/immediate-eof_no-frames_exit0``."""
    eng = full()
    run = drive(eng, [(0.5, "eof", b"")], until=0.5)
    assert at(run, CloseBackendInput) == [0.5]
    assert settled(run) == [False]  # no result: what a -p run prints waits for the exit
    run = drive(eng, [(0.7, "exit", b"0")], run=run)
    assert at(run, TerminateBackend) == []
    assert eng.exit_status() == 0
    assert eng.eof_budget() == 600.2


def test_eof_after_the_last_result_closes_at_once_and_terminates_an_idle_cbc() -> None:
    """Claude exits within 0.2 s of the EOF once its last result is out and nothing runs;
    cbc may linger ~20 s after its stdin closes: it gets close_wait (0.2 s), then SIGTERM."""
    eng = full()
    run = drive(eng, [*first_turn(1.0), (1.5, "eof", b"")], until=100)
    assert at(run, CloseBackendInput) == [1.5]  # nothing can follow a result: no settle
    assert settled(run) == [True]  # Claude would print and exit here
    assert at(run, TerminateBackend) == [1.7]  # + close_wait 0.2
    drive(eng, [(5.1, "exit", b"143")], run=run)
    assert eng.exit_status() == 0  # cbc exits on SIGTERM; Claude's status


def test_eof_during_a_turn_lets_it_finish_and_exits_1_after_an_error() -> None:
    eng = full()
    events = [
        (0.0, "client", USER),
        (0.3, "eof", b""),
        *turn(1.0, init(), status()),
        *turn(4.0, result(True, result="API Error")),
    ]
    run = drive(eng, events[:-1], until=3.9)
    assert at(run, CloseBackendInput) == []  # the turn runs
    run = drive(eng, events[-1:], run=run, until=4.5)
    assert run.frames()[-1]["type"] == "result"
    assert at(run, CloseBackendInput) == [4.0]  # at its result
    assert settled(run) == [True]
    run = drive(eng, [(6.0, "exit", b"0")], run=run, until=6.0)
    assert eng.exit_status() == 1


def test_a_user_line_not_yet_started_is_waited_for() -> None:
    eng = full()
    if not hasattr(eng.state, "control"):
        pytest.skip("the user-line rule (ControlState.pending_user) is not installed")
    events = [(0.0, "client", USER), (0.0, "eof", b""), *first_turn(3.0)]
    run = drive(eng, events, until=100)
    assert at(run, CloseBackendInput) == [3.03]


def test_a_slow_first_frame_is_waited_for_while_cbc_lives() -> None:
    """A slow start or a slow model: cbc writes nothing for 35 s after the line; idle_wait
    (30 s) does not give the line up, only the ceiling would."""
    eng = full()
    events = [(0.0, "client", USER), (0.0, "eof", b""), *first_turn(35.0)]
    run = drive(eng, events, until=100)
    assert at(run, CloseBackendInput) == [35.03]
    assert [f["type"] for f in run.frames()][-1] == "result"
    assert at(run, TerminateBackend) == [35.23]


def test_a_line_that_never_starts_a_turn_is_bounded_by_the_ceiling() -> None:
    eng = full(["eof-wind-down.ceiling=50"])
    run = drive(eng, [(0.0, "client", USER), (0.0, "eof", b"")], until=100)
    assert at(run, CloseBackendInput) == [50.0]


def test_a_line_cbc_may_have_folded_is_given_up_after_idle_wait() -> None:
    """Two lines during a turn; cbc answers both in one turn: the second stays pending
    after that turn's result, and is waited for only idle_wait (10 s) of silence."""
    eng = full(["eof-wind-down.idle_wait=10"])
    events = [(0.0, "client", USER), (0.1, "client", USER), (0.2, "eof", b""), *first_turn(1.0)]
    run = drive(eng, events, until=100)
    assert at(run, CloseBackendInput) == [11.03]


def test_background_shells_get_5s_then_are_killed_like_claude() -> None:
    """The Claude twin: result 1.878, EOF 1.923, killed at 6.923 (Claude: 7.053)."""
    eng = full()
    events = [
        *turn(
            1.0,
            init(),
            tool_use("u1", "Bash", {"command": "sleep 20", "run_in_background": True}),
            started("bx1", "Bash", "Slow background sleep", "u1"),
            updated("bx1", "running"),
            tool_result("u1", "running in background"),
            result(),
        ),
        (1.923, "eof", b""),
    ]
    run = drive(eng, events, until=100)
    killed = [
        (t, f)
        for t, f in run.out
        if f.get("subtype") in ("background_tasks_changed", "task_updated", "task_notification")
    ]
    assert [round(t, 3) for t, _ in killed][-3:] == [6.923] * 3
    assert tags([f for _, f in killed]) == [
        "background_tasks_changed:1",
        "background_tasks_changed:0",
        "task_updated:killed",
        "task_notification:stopped",
    ]
    upd, note = killed[-2][1], killed[-1][1]
    assert upd["patch"] == {"status": "killed", "end_time": EPOCH_MS + 6923}
    assert note["tool_use_id"] == "u1"
    assert note["summary"] == "Slow background sleep"  # Claude: a stopped task's description
    assert note["output_file"] == ""
    assert at(run, CloseBackendInput) == [6.923]
    assert settled(run) == [True]  # the last result stands: the shells were Claude's kills
    assert at(run, TerminateBackend) == [7.123]
    # cbc's own report of the shell, later, is not shown (terminal-guarantee)
    late = drive(eng, turn(9.0, updated("bx1", "completed"), notification("bx1", "completed")))
    assert late.frames() == []
    assert [v for v in run.violations() if v.rule != "frame-fields"] == []  # (hand-made)


def test_a_shell_that_ends_within_the_grace_is_not_killed() -> None:
    eng = full()
    events = [
        *turn(1.0, init(), started("bx1", "Bash", "quick", "u1"), result()),
        (2.0, "eof", b""),
        *turn(
            4.0,
            status(),
            updated("bx1", "completed"),
            notification("bx1", "completed"),
            init(),
            tool_use("u2", "Read", {}),
            result(),
        ),
    ]
    run = drive(eng, events, until=100)
    assert not any(
        f.get("subtype") == "task_updated" and f["patch"]["status"] == "killed"
        for f in run.frames()
    )
    assert at(run, CloseBackendInput) == [4.05]  # at the notification's turn's result


def agent_turn(t: float = 1.0) -> list[tuple[float, str, bytes]]:
    """A turn that starts a background agent (``ag1``) and ends."""
    return turn(
        t,
        init(),
        tool_use("a1", "Agent", {"prompt": "p", "run_in_background": True}),
        started("ag1", "Agent", "research", "a1"),
        result(),
    )


def test_a_task_that_ends_last_leaves_the_session_unsettled() -> None:
    """An agent ends after the last result and no turn follows within ``settle``: the
    close comes, but the session did not settle on a result (the notification may still
    start a turn cbc writes later): a -p run prints only at cbc's exit."""
    eng = full()
    events = [
        *agent_turn(),
        (2.0, "eof", b""),
        *turn(5.0, updated("ag1", "completed"), notification("ag1", "completed")),
    ]
    run = drive(eng, events, until=100)
    assert at(run, CloseBackendInput) == [6.01]  # settle (1 s) after the notification
    assert settled(run) == [False]


def test_agents_are_waited_for_and_the_turn_their_notification_starts_runs() -> None:
    eng = full()
    events = [
        *agent_turn(),
        (2.0, "eof", b""),
        # cbc starts the follow-up turn itself: status first, init held by init-once
        *turn(
            40.0,
            status(),
            updated("ag1", "completed"),
            notification("ag1", "completed"),
            init(),
            tool_use("x", "Read", {}),
            result(True),
        ),
    ]
    run = drive(eng, events, until=200)
    assert at(run, CloseBackendInput) == [40.05]
    assert run.frames()[-1]["type"] == "result"
    drive(eng, [(41.5, "exit", b"0")], run=run)
    assert eng.exit_status() == 1


def test_shells_get_their_grace_after_the_last_turn_once_agents_are_done() -> None:
    """The Claude twin eof-with-bg-work (captures/twins/eof-with-bg-work.claude.jsonl): a
    shell, an agent and a workflow run at the EOF; the agent's notification (22.61) and the
    workflow's (24.74) start turns whose results come at 24.83; the shell is killed at
    29.88, 5 s after that last turn, not 5 s after the EOF. Here: the agent alone."""
    eng = full()
    events = [
        *turn(
            1.0,
            init(),
            tool_use("u1", "Bash", {"command": "sleep 60", "run_in_background": True}),
            started("bx1", "Bash", "Slow background sleep", "u1"),
            tool_result("u1", "running in background"),
            result(),
        ),
        *turn(
            2.5,
            init(),
            tool_use("a1", "Agent", {"prompt": "p", "run_in_background": True}),
            started("ag1", "Agent", "Slow mock subagent", "a1"),
            result(),
        ),
        (5.0, "eof", b""),
        *turn(
            22.61,
            updated("ag1", "completed"),
            notification("ag1", "completed"),
            status(),
            init(),
            tool_use("x", "Read", {}),
            result(),
            step=0.0442,
        ),
    ]
    run = drive(eng, events, until=200)
    last = max(t for t, f in run.out if f.get("type") == "result")
    assert round(last, 2) == 22.83
    killed = [
        round(t, 2)
        for t, f in run.out
        if f.get("subtype") == "task_updated" and f["patch"].get("status") == "killed"
    ]
    assert killed == [27.83]  # 5 s after the last turn (Claude: 24.83 -> 29.88)
    assert [round(t, 2) for t in at(run, CloseBackendInput)] == [27.83]


def test_a_turn_during_the_shell_grace_starts_it_over() -> None:
    eng = full()
    events = [
        *turn(1.0, init(), started("bx1", "Bash", "sleep", "u1"), result()),
        (2.0, "eof", b""),
        *turn(4.0, status(), init(), tool_use("x", "Read", {}), result()),
    ]
    run = drive(eng, events, until=100)
    killed = [
        round(t, 2)
        for t, f in run.out
        if f.get("subtype") == "task_updated" and f["patch"].get("status") == "killed"
    ]
    assert killed == [9.03]  # 5 s after the result at 4.03, not 5 s after the EOF


@pytest.mark.parametrize(
    ("rules", "ceiling"),
    [((), 600.0), (("eof-wind-down.ceiling=30",), 30.0), (("eof-wind-down.ceiling=0",), 0.0)],
)
def test_a_workflow_that_never_ends_is_bounded_by_the_ceiling(
    rules: tuple[str, ...], ceiling: float
) -> None:
    eng = full(list(rules))
    events = [
        *turn(
            1.0,
            init(),
            tool_use("w1", "Workflow", {"script": "x"}),
            started("wf1", "local_workflow", "flow", "w1"),
            result(),
        ),
        (2.0, "eof", b""),
    ]
    run = drive(eng, events, until=10_000)
    assert at(run, CloseBackendInput) == [2.0 + ceiling]
    assert settled(run) == [False]  # forced: the workflow still runs
    assert at(run, TerminateBackend) == [round(2.0 + ceiling + 0.2, 6)]
    run = drive(eng, [(2.0 + ceiling + 3.5, "exit", b"143")], run=run)
    ends = [f for f in run.frames() if f.get("task_id") == "wf1"]
    assert tags(ends)[-2:] == ["task_updated:killed", "task_notification:stopped"]
    assert eng.exit_status() == 0
    assert [v for v in run.violations() if v.rule != "frame-fields"] == []  # (hand-made)


def test_a_turn_cut_by_the_ceiling_gets_an_error_result_and_exit_1() -> None:
    eng = full(["eof-wind-down.ceiling=20"])
    events = [
        (0.0, "client", USER),
        *turn(1.0, init(), tool_use("u1", "Bash", {})),
        (2.0, "eof", b""),
    ]
    run = drive(eng, events, until=200)
    assert at(run, CloseBackendInput) == [22.0]
    assert at(run, TerminateBackend) == [22.2]  # the ceiling: close_wait whatever runs
    assert not any(f["type"] == "result" for f in run.frames())
    run = drive(eng, [(22.3, "exit", b"143")], run=run)
    last = run.frames()[-1]
    assert last["type"] == "result"
    assert last["is_error"] is True
    assert last["subtype"] == "error_during_execution"
    assert eng.exit_status() == 1


def test_what_cbc_writes_after_its_stdin_closed_reaches_the_client() -> None:
    """Nothing is lost at the EOF: frames after the close pass (counted), and each one
    starts an idle cbc's close_wait over; a turn in progress is not terminated at all."""
    eng = full()
    run = drive(eng, [(0.0, "eof", b"")], until=0.0)
    assert at(run, CloseBackendInput) == [0.0]
    events = [
        *turn(0.5, init(), status()),
        *turn(3.0, tool_use("u1", "Read", {})),
        # (result "": the turn's answer frame is not this test's subject; final-answer
        # would add one for a "done." no assistant frame carried)
        *turn(9.0, tool_result("u1", "x"), result(result="")),
    ]
    run = drive(eng, events, run=run, until=8.9)
    assert at(run, TerminateBackend) == []  # in a turn: never terminated here
    run = drive(eng, [], run=run, until=100)
    assert at(run, TerminateBackend) == [9.21]  # 0.2 s after the result, its last frame
    assert [f["type"] for f in run.frames()] == ["system", "assistant", "user", "result"]
    # (cbc's status null is dropped before this rule by vocabulary)
    assert eng.statistics()["rules"]["eof-wind-down"]["passed-after-close"] == 4


def test_the_grace_starts_when_the_close_is_done_not_when_it_is_asked() -> None:
    eng = full()
    run = Run()
    for t, _kind, data in first_turn(1.0):
        take(run, eng.feed("backend", data, t), t)  # (no input_closed reported)
    take(run, eng.eof("client", 2.0), 2.0)
    assert at(run, CloseBackendInput) == [2.0]
    advance(eng, run, 50.0)
    assert at(run, TerminateBackend) == []  # the writer has not closed cbc's stdin yet
    take(run, eng.input_closed(50.0), 50.0)
    advance(eng, run, 100.0)
    assert at(run, TerminateBackend) == [50.2]


def test_a_backend_crash_before_the_close_keeps_its_status() -> None:
    eng = full()
    run = drive(eng, [*turn(1.0, init(), status()), (2.0, "eof", b""), (3.0, "exit", b"2")])
    assert at(run, CloseBackendInput) == []
    assert eng.exit_status() is None  # the driver reports the backend's 2
    assert run.frames()[-1]["subtype"] == "error_during_execution"


def test_switched_off_the_eof_closes_at_once() -> None:
    eng = full(["eof-wind-down=off"])
    run = drive(eng, [*first_turn(1.0), (1.05, "eof", b"")], until=100)
    assert at(run, CloseBackendInput) == [1.05]
    assert eng.eof_budget() is None
    drive(eng, [(2.0, "exit", b"0")], run=run)
    assert eng.exit_status() is None


def test_no_wind_down_before_the_eof() -> None:
    eng = full()
    run = drive(eng, [*first_turn(1.0), (5.0, "exit", b"0")], until=100)
    assert at(run, CloseBackendInput) == []
    assert eng.exit_status() is None


def test_requests_the_client_can_no_longer_answer_are_answered_after_the_eof() -> None:
    """``mockoai_can-use-tool-pending-then-eof``: cbc itself rejects a pending prompt when
    its stdin closes; the bridge keeps that stdin open, so it answers in the client's stead."""

    from compat.stages.turns import REJECTED

    eng = full()
    if not hasattr(eng.state, "stdio_permissions"):
        pytest.skip("permission-routing is not installed")
    eng.state.stdio_permissions = True  # --permission-prompt-tool stdio

    def request(rid: str, subtype: str) -> dict[str, Any]:
        body: dict[str, Any] = {"subtype": subtype}
        if subtype == "can_use_tool":
            body.update(tool_name="Bash", input={"command": "touch x"}, tool_use_id="u1")
        return {"type": "control_request", "request_id": rid, "request": body}

    events = [
        (0.0, "client", USER),
        *turn(1.0, init(), tool_use("u1", "Bash", {}), request("perm-1", "can_use_tool")),
        (2.0, "eof", b""),
        *turn(3.0, request("perm-2", "can_use_tool"), request("hook-1", "hook_callback")),
    ]
    run = drive(eng, events)
    up = [f for f in run.to_backend() if f.get("type") == "control_response"]
    answers = {r["response"]["request_id"]: r["response"] for r in up}
    assert answers["perm-1"]["response"] == {
        "allowed": False,
        "reason": REJECTED,
        "interrupt": False,
    }
    assert answers["perm-2"]["response"]["allowed"] is False
    assert answers["hook-1"] == {
        "subtype": "error",
        "request_id": "hook-1",
        "error": "Stream closed",
    }
    # the client saw the first prompt (before its EOF), not the later ones
    asked = [f["request_id"] for f in run.frames() if f["type"] == "control_request"]
    assert asked == ["perm-1"]


# -- the running tasks are the shared task phase (one rule alone: Playbook) -------------------


def _running(pb: Playbook, tid: str, task_type: str) -> None:
    """``tid`` runs as terminal-guarantee (not in a one-rule playbook) would have left it."""
    info = pb.state.task(tid)
    info.shown = LiveTask(task_type, f"{task_type} {tid}", f"u-{tid}")
    info.start()


def _closes(records: list[Any]) -> list[bool]:
    return [r.settled for r in records if isinstance(r, CloseBackendInput)]


def test_the_wind_down_waits_for_the_tasks_the_shared_phase_says_run() -> None:
    """No task frame passes the rule: the running shell is terminal-guarantee's fact; its
    grace, its kill from what the client was shown of it, then the settled close."""
    pb = Playbook("eof-wind-down", facts={"session_id": SID})
    _running(pb, "sh1", "local_bash")
    pb.frame(result(), at=1.0)
    assert _closes(pb.client_eof(at=1.5)) == []  # a shell runs: its 5 s grace
    fired = pb.timer()
    kills = [r.frame for r in fired if isinstance(r, Out)]
    assert tags(kills) == ["task_updated:killed", "task_notification:stopped"]
    assert kills[1]["tool_use_id"] == "u-sh1"
    assert kills[1]["summary"] == "local_bash sh1"  # the description the client was shown
    assert _closes(fired) == [True]  # the kill is applied at once, though no rule wrote it


def test_the_frame_that_ends_the_last_task_counts_before_the_phase_says_so() -> None:
    """The notification of the last running agent passes the rule before terminal-guarantee
    writes the phase: the wind-down counts it ended (settle 1 s, then the close), it does
    not wait for the ceiling."""
    pb = Playbook("eof-wind-down", facts={"session_id": SID})
    _running(pb, "ag1", "local_agent")
    pb.frame(result(), at=1.0)
    assert _closes(pb.client_eof(at=1.5)) == []
    # the phase still says running (terminal-guarantee comes later): the frame counts
    assert Timer("settle", 6.0) in pb.frame(updated("ag1", "completed"), at=5.0)
    pb.state.task("ag1").end("completed", EPOCH_MS + 5000)  # what terminal-guarantee writes
    assert _closes(pb.advance(6.0)) == [False]  # settle after the task's end; no result last


def test_an_interrupt_ends_the_agents_the_shared_phase_says_run() -> None:
    """interrupt-terminal ends the running agents and workflows (not the shells) that
    terminal-guarantee's phase lists, with what the client was shown of them."""
    pb = Playbook("interrupt-terminal", facts={"session_id": SID})
    _running(pb, "ag1", "local_agent")
    _running(pb, "sh1", "local_bash")
    _running(pb, "wf1", "local_workflow")
    pb.state.task("wf1").end("completed", EPOCH_MS)  # ended already: not ended again
    pb.state.control.interrupts["i1"] = Interrupt("i1")
    receipt = {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": "i1", "response": {}},
    }
    out = [r.frame for r in pb.frame(receipt, at=2.0) if isinstance(r, Out)]
    assert [(f.get("task_id"), f.get("subtype")) for f in out[:-1]] == [
        ("ag1", "task_updated"),
        ("ag1", "task_notification"),
    ]
    assert out[1]["tool_use_id"] == "u-ag1"
    assert out[-1] == receipt
