"""Interrupts (compat/stages/interrupts.py): ``interrupt-request``, ``interrupt-reply``,
``interrupt-terminal``; cbc 2.163.0's real sessions (``mockoai_interrupt-*``,
``nomodel_*``) through the whole ``cbc-to-claude`` profile, both sides replayed, against
Claude Code 2.1.220's twins."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.contract import check_lines

from .control_support import cr, engine, label, records, replay, reply_to, user

CLAUDE_CTL = (
    "claude-2.1.220_nocreds_idle-interrupt_session-id_cancel-queued_unsupported-subtype_"
    "cancel-request_reinit_bad-json-exit1"
)
CLAUDE_IDLE = "claude-2.1.220_mockapi_idle-interrupt-kills-bg-workflow-keeps-bg-bash"
IDLE = "mockoai_interrupt-idle-workflow-2-running-agents"
MIDTURN = "mockoai_interrupt-midturn-workflow-2-running-agents"
WF_AND_BASH = "mockoai_interrupt-idle-with-bg-workflow-and-bash"
RULES = {
    "interrupt-terminal",
    "interrupt-reply",
    "terminal-guarantee",
    "late-progress",
    "unsupported-control",
    "task-fields",
}


def violations(frames: list[Any]) -> list[str]:
    raw = [json.dumps(f).encode() for f in frames]
    return [f"{v.rule}: {v.message}" for v in check_lines(raw) if v.rule in RULES]


def after(run_client: list[tuple[float, Any]], t0: float) -> list[str]:
    return [label(f) for t, f in run_client if t >= t0 and label(f) != "system/task_progress"]


def receipt_index(frames: list[Any], rid: str) -> int:
    return next(i for i, f in enumerate(frames) if label(f) == f"control_response:{rid}")


# -- interrupt-request ---------------------------------------------------------------------


def test_interrupt_request_gets_cbcs_session_id_and_a_reason() -> None:
    eng = engine()
    eng.state.session_id = "sid-1"
    run = replay(
        eng,
        extra=[
            (0.0, "client", cr("a", subtype="interrupt")),
            (0.0, "client", cr("b", subtype="interrupt", session_id="whatever-session")),
            (0.0, "client", cr("c", subtype="interrupt", cancel_queued=True, reason="stop")),
        ],
    )
    assert run.frames("backend") == [
        cr("a", subtype="interrupt", session_id="sid-1", reason="User interrupt"),
        cr("b", subtype="interrupt", session_id="sid-1", reason="User interrupt"),
        cr("c", subtype="interrupt", session_id="sid-1", reason="stop"),
    ]
    assert eng.state.control.interrupts["c"].cancel_queued


def test_before_the_session_an_interrupt_is_answered_at_once() -> None:
    """cbc: ``Session not found: current`` 2.5 s later (nomodel_interrupt-before-session);
    Claude: ``{still_queued: []}`` (``cancelled: []`` too with cancel_queued) at once."""
    eng = engine()
    run = replay(
        eng,
        extra=[
            (2.0, "client", cr("stop-1", subtype="interrupt")),
            (2.0, "client", cr("stop-3", subtype="interrupt", cancel_queued=True)),
        ],
    )
    claude = {rid: reply_to(CLAUDE_CTL, rid) for rid in ("stop-1", "stop-3")}
    assert run.client == [(2.0, claude["stop-1"]), (2.0, claude["stop-3"])]
    assert run.frames("backend") == []


def test_an_interrupt_racing_the_first_turn_is_sent_once_the_session_exists() -> None:
    name = "nomodel_interrupt-before-session"
    eng = engine()
    run = replay(eng, name)
    # answered at once, not with cbc's "Session not found: current" at 7.5 s
    [reply] = [
        (t, f)
        for t, f in run.client
        if f.get("type") == "control_response" and f["response"]["request_id"] == "int1"
    ]
    assert reply == (
        5.014,
        {
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": "int1",
                "response": {"still_queued": []},
            },
        },
    )
    held = [f for f in run.frames("backend") if f.get("request_id", "").startswith("ccbridge")]
    sid = records(name)[-3].obj["session_id"]
    assert held == [
        cr("ccbridge-held-1", subtype="interrupt", reason="User interrupt", session_id=sid)
    ]
    assert "int1" not in [
        f["request_id"] for f in run.frames("backend") if f.get("type") == "control_request"
    ]


# -- interrupt-reply -----------------------------------------------------------------------


def test_cbcs_receipt_becomes_claudes() -> None:
    eng = engine()
    eng.state.session_id = "01a226db-6de9-7158-9e55-d5205b00368c"
    run = replay(
        eng,
        extra=[
            (1.9, "client", cr("int_sid", subtype="interrupt", cancel_queued=True)),
            (1.938, "backend", reply_to("nomodel_controls-after-session", "int_sid")),
        ],
    )
    assert run.frames() == [
        reply_to(CLAUDE_CTL, "stop-3")
        | {
            "response": {
                "subtype": "success",
                "request_id": "int_sid",
                "response": {"still_queued": [], "cancelled": []},
            }
        }
    ]


def test_still_queued_lists_user_lines_not_started() -> None:
    """A user line written during a turn waits (cbc runs it after the interrupted turn,
    ``mockoai_interrupt-during-slow-fg-bash-with-session-id``); Claude names it in
    ``still_queued`` (``dummykey_interrupt-midturn_still-queued-receipt_…``)."""
    name = "mockoai_interrupt-during-slow-fg-bash-with-session-id"
    run = replay(engine(), name)
    [receipt] = [f for f in run.frames() if label(f) == "control_response:stop-1"]
    assert receipt["response"]["response"] == {
        "still_queued": ["aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"]
    }
    # and the queued line's turn runs afterwards: it is the client's, kept
    results = [f for f in run.frames() if f.get("type") == "result"]
    assert len(results) == 2  # the interrupted turn's, then the queued line's
    assert results[-1]["result"] == "done."


def test_session_not_found_becomes_success() -> None:
    eng = engine()
    eng.state.session_id = "x"
    run = replay(
        eng,
        extra=[
            (0.0, "client", cr("int0", subtype="interrupt")),
            (0.1, "backend", reply_to("nomodel_controls-before-session-then-eof", "int0")),
        ],
    )
    assert run.frames()[0]["response"] == {
        "subtype": "success",
        "request_id": "int0",
        "response": {"still_queued": []},
    }
    assert eng.state.control.interrupts["int0"].backend_error == "Session not found: current"


# -- interrupt-terminal ---------------------------------------------------------------------


def test_idle_interrupt_ends_the_workflow_before_the_receipt_like_claude() -> None:
    eng = engine()
    run = replay(eng, IDLE)
    fs = run.frames()
    i = receipt_index(fs, "stop-1")
    claude = [r.obj for r in records(CLAUDE_IDLE) if r.kind == "stdout"]
    ci = receipt_index(claude, "stop-idle")
    # Claude: snapshot, task_updated{killed}, task_notification{stopped}, receipt
    assert [label(f) for f in claude[ci - 3 : ci + 1]] == [
        "background_tasks_changed:1",
        "task_updated:killed",
        "task_notification:stopped",
        "control_response:stop-idle",
    ]
    tail = [label(f) for f in fs[i - 3 : i + 1]]
    assert tail == [
        "background_tasks_changed:0",
        "task_updated:killed",
        "task_notification:stopped",
        "control_response:stop-1",
    ]
    note = fs[i - 1]
    assert note["summary"] == note_started(fs)["description"]  # Claude: bare description
    assert note["tool_use_id"] == "call_mock_9cf269b19be5"
    assert note["output_file"] == ""
    assert fs[i - 2]["patch"] == {"status": "killed", "end_time": 1_800_000_007_341}
    # cbc's own report 27 s later, and the model turn it then ran, never reach the client
    assert after(run.client, 7.35) == []
    stats = eng.statistics()["rules"]["interrupt-terminal"]
    assert stats["late-duplicate"] == 2
    assert stats["auto-turn"] == 1
    assert violations(fs) == []


def note_started(fs: list[Any]) -> dict[str, Any]:
    return next(f for f in fs if f.get("subtype") == "task_started")


def test_midturn_interrupt_keeps_the_interrupted_turn_and_drops_cbcs_own() -> None:
    eng = engine()
    run = replay(eng, MIDTURN)
    fs = run.frames()
    i = receipt_index(fs, "stop-1")
    assert [label(f) for f in fs[i - 3 : i + 1]] == [
        "background_tasks_changed:0",
        "task_updated:killed",
        "task_notification:stopped",
        "control_response:stop-1",
    ]
    # then the interrupted turn's own end (interrupted-turn may add Claude's user frame)
    assert [label(f) for f in fs[i + 1 :] if label(f) != "user"][:1] == ["result"]
    # cbc's own turn (init, status, the model re-running the Bash for 20 s, result): gone
    assert after(run.client, 6.79) == []
    assert eng.statistics()["rules"]["interrupt-terminal"]["auto-turn"] == 1
    assert violations(fs) == []


def test_a_real_completion_after_the_interrupt_keeps_its_turn() -> None:
    """The background shell survives the interrupt and finishes; Claude answers that with
    a turn (``ok``), so the turn cbc runs for it is kept, after the notification."""
    run = replay(engine(), WF_AND_BASH)
    fs = run.frames()
    i = receipt_index(fs, "stop-idle")
    assert [label(f) for f in fs[i - 3 : i + 1]] == [
        "background_tasks_changed:1",
        "task_updated:killed",
        "task_notification:stopped",
        "control_response:stop-idle",
    ]
    assert fs[i - 3]["tasks"][0]["task_type"] == "local_bash"  # the shell keeps running
    claude = [(r.t, r.obj) for r in records(CLAUDE_IDLE) if r.kind == "stdout"]
    expected = [x for x in after(claude, 8.01) if x != "command_lifecycle"]
    assert expected == [
        "background_tasks_changed:0",
        "task_updated:completed",
        "task_notification:completed",
        "system/init",
        "assistant",
        "result",
    ]
    assert after(run.client, 8.03) == expected  # (cbc's null status: dropped, vocabulary)
    assert violations(fs) == []


def test_keep_mode_forwards_cbcs_own_turn() -> None:
    run = replay(engine(["interrupt-terminal=keep"]), IDLE)
    assert after(run.client, 7.35) == ["system/init", "assistant", "result"]


def test_a_client_line_after_the_interrupt_is_the_clients_turn() -> None:
    eng = engine()
    run = replay(eng, IDLE, extra=[(20.0, "client", user("again", "u-9"))])
    # cbc's poll (34.4 s) then runs that line: the same frames are the client's turn now
    assert "assistant" in after(run.client, 7.35)
    assert "result" in after(run.client, 7.35)
    assert "auto-turn" not in eng.statistics()["rules"]["interrupt-terminal"]


def test_without_tasks_to_end_nothing_is_synthesized_or_dropped() -> None:
    name = "mockoai_interrupt-during-slow-fg-bash-with-session-id"
    eng = engine()
    run = replay(eng, name)
    assert "interrupt-terminal" not in eng.statistics()["rules"]
    raw = replay(engine(["interrupt-terminal=off"]), name)
    assert run.frames() == raw.frames()


def test_tasks_and_prompts_of_a_dropped_turn_stay_hidden() -> None:
    eng = engine(stdio=True)
    sid = "01a226ef-85a9-7f4e-a45d-9189913b211f"  # IDLE's session
    extra = [
        (
            34.5,
            "backend",
            {
                "type": "control_request",
                "request_id": "perm-x",
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": "Bash",
                    "input": {"command": "ls"},
                    "tool_use_id": "call-x",
                },
            },
        ),
        (
            34.5,
            "backend",
            {
                "type": "system",
                "subtype": "task_started",
                "task_id": "bg-x",
                "tool_use_id": "call-x",
                "description": "d",
                "task_type": "Bash",
                "uuid": "u",
                "session_id": sid,
            },
        ),
        (
            34.5,
            "backend",
            {
                "type": "system",
                "subtype": "task_notification",
                "task_id": "bg-x",
                "status": "completed",
                "uuid": "u2",
                "session_id": sid,
            },
        ),
    ]
    run = replay(eng, IDLE, extra=extra, until=34.5)
    assert after(run.client, 7.35) == []
    assert run.frames("backend")[-1]["response"]["response"]["allowed"] is False
    assert eng.state.control.permissions == {}


def test_the_window_closes_and_held_frames_are_released() -> None:
    eng = engine(["interrupt-terminal.window=10"])
    sid = "01a226ef-85a9-7f4e-a45d-9189913b211f"
    # a between-turn frame that reaches interrupt-terminal (a null status would not:
    # vocabulary drops it)
    status = {
        "type": "system",
        "subtype": "status",
        "status": "compacting",
        "uuid": "s",
        "session_id": sid,
    }
    run = replay(
        eng, IDLE, extra=[(8.0, "backend", status), (30.0, "client", user("x"))], until=30.0
    )
    assert [(t, label(f)) for t, f in run.client if t > 7.35] == [(17.341, "system/status")]


def _old_cancel_echoes(ctx: Any, queued: list[Any]) -> list[str]:
    """What ``_cancel_queued`` did with each queued line before: a search and a removal in
    ``unsent_queued`` per line (lines x 1,024); the uuids it echoed ``cancelled``."""
    control = ctx.state.control
    echoed: list[str] = []
    for f in queued:
        obj = f.obj
        uuid = obj.get("uuid") if isinstance(obj, dict) else None
        if not isinstance(uuid, str) or not uuid:
            continue
        if uuid in control.unsent_queued:
            control.unsent_queued.remove(uuid)
        elif ctx.state.session_id is not None:
            echoed.append(uuid)
    return echoed


def _queued_lines(uuids: list[str | None]) -> list[Any]:
    from compat.frames import Frame

    return [
        Frame(raw=json.dumps({"type": "user", "uuid": u, "message": {}}).encode()) for u in uuids
    ]


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "", None]), max_size=8),
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=8),
    st.sampled_from([None, "s1"]),
)
def test_cancelled_queued_lines_are_echoed_and_forgotten_as_before(
    queued: list[str | None], unsent: list[str], sid: str | None
) -> None:
    from compat.stages.interrupts import InterruptRequest

    results = []
    for old in (False, True):
        eng = engine()
        ctx = eng.ctx
        ctx.state.session_id = sid
        control = ctx.state.control
        control.unsent_queued.extend(unsent)
        frames = _queued_lines(queued)
        control.queued_lines.extend(frames)
        if old:
            control.queued_lines.clear()
            echoed = _old_cancel_echoes(ctx, frames)
        else:
            InterruptRequest()._cancel_queued(ctx)
            out = b"".join(eng._pending["client"]).splitlines()
            echoed = [json.loads(x)["command_uuid"] for x in out if x.strip()]
        results.append((echoed, list(control.unsent_queued)))
    assert results[0] == results[1]


def test_many_queued_lines_are_cancelled_at_once() -> None:
    """100,000 client lines queued in a turn, cancelled: each was looked for in the 1,024
    uuids not echoed yet (2 s; a client may write any number); this returns."""
    from compat.stages.interrupts import InterruptRequest

    eng = engine()
    control = eng.ctx.state.control
    control.unsent_queued.extend(f"u{k}" for k in range(1024))
    control.queued_lines.extend(_queued_lines([f"q{k}" for k in range(100_000)]))
    InterruptRequest()._cancel_queued(eng.ctx)
    assert len(control.unsent_queued) == 1024
    assert not control.queued_lines
