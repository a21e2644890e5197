"""A turn cbc starts by itself (a background task ended): what opens it (issue 12).

Frame shapes and order from the raw cbc run of ``scenarios/bg-task-failed-turn`` (cbc
2.163.0): after the first turn's ``result``, cbc writes the self-started turn's
``system/init``, a ``system/status`` with ``status: null``, then the task's
``task_updated{failed}`` and ``task_notification{failed}``, then the turn's messages.
Claude 2.1.220 opens the same turn with ``background_tasks_changed``, ``task_updated``,
``task_notification`` and then the turn's ``init``.
"""

from __future__ import annotations

from typing import Any

from tests.compat.tasks_support import (
    SID,
    full_engine,
    init,
    lines,
    notification,
    out,
    result,
    started,
    tags,
    tool_result,
    tool_use,
    updated,
)


def _status_null() -> dict[str, Any]:
    return {"type": "system", "subtype": "status", "status": None, "uuid": "st", "session_id": SID}


def _text(text: str, mid: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": "a-" + mid,
        "session_id": SID,
        "message": {
            "id": mid,
            "role": "assistant",
            "type": "message",
            "content": [{"type": "text", "text": text}],
        },
        "parent_tool_use_id": None,
    }


def _first_turn(tid: str, use: str) -> list[dict[str, Any]]:
    return [
        init(),
        _status_null(),
        tool_use(use, "Bash", {"command": "sleep 2; exit 4", "run_in_background": True}),
        started(tid, "Bash", "sleep 2; exit 4", use),
        updated(tid, "running"),
        tool_result(use, "Command running in background with ID: " + tid),
        _text("done.", "m1"),
        result(),
    ]


def test_self_started_turn_opens_with_the_task_frames_then_init() -> None:
    eng = full_engine()
    frames = [
        *_first_turn("7X4BZc", "call_1"),
        init(),
        _status_null(),
        updated("7X4BZc", "failed", end_time=1_796_125_339_316),
        notification("7X4BZc", "failed", "Background command failed", "call_1"),
        _text("ok", "m2"),
        result(uuid="r2"),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    first = [i for i, f in enumerate(got) if f["type"] == "result"][0]
    second_turn = tags(got[first + 1 :])
    # command_lifecycle of the first line's turn may follow its result; skip it
    second_turn = [t for t in second_turn if t != "command_lifecycle"]
    assert second_turn == [
        "background_tasks_changed:0",
        "task_updated:failed",
        "task_notification:failed",
        "init",
        "assistant",
        "result",
    ]
    # the first turn keeps init first (its status-null is dropped, not reordered)
    assert tags(got[:first])[0] == "init"


def test_status_with_a_real_state_still_starts_the_turn() -> None:
    eng = full_engine()
    frames = [
        init(),
        {"type": "system", "subtype": "status", "status": "compacting", "session_id": SID},
        _text("ok", "m1"),
        result(),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    kinds = [f.get("subtype") or f["type"] for f in got]
    assert kinds[:2] == ["init", "status"]


def test_a_self_started_init_waits_at_most_open_wait_for_the_task_frames() -> None:
    eng = full_engine()
    got = out(eng.feed("backend", lines(*_first_turn("T1", "call_1"), init(), _status_null()), 0.0))
    assert tags(got)[-1] != "init"  # held: the ended task's frames may come first
    deadline = eng.next_deadline()
    assert deadline is not None
    assert deadline <= 0.5
    assert "init" in tags(out(eng.advance(deadline)))


def test_a_client_turn_starts_at_the_status_as_before() -> None:
    """A turn a client line asked for: the init goes out at cbc's status (an interrupt may
    come before the model writes anything), whatever tasks run."""
    eng = full_engine()
    eng.feed("backend", lines(*_first_turn("T1", "call_1")), 0.0)
    line = {"type": "user", "message": {"role": "user", "content": "next"}, "uuid": "l2"}
    eng.feed("client", lines(line), 0.1)
    got = out(eng.feed("backend", lines(init(), _status_null()), 0.2))
    assert "init" in tags(got)
