"""User lines written while a turn runs wait in the bridge (user-line's queue) until the
turn ends, one line per turn, and ``interrupt{cancel_queued}`` takes them back as Claude
Code 2.1.220 does (frames shaped as in the raw runs of scenarios queued-lines-cancel and
queued-line-cancel-one, 2026-12-01)."""

from __future__ import annotations

from typing import Any

from tests.compat.control_support import advance, cbc_init, engine, replay

SID = "01a231cc-0000-7000-8000-000000000001"
FIRST = "639c61a1-35db-56d3-9627-e398c1e7d68a"
ONE = "11111111-1111-4111-8111-111111111111"
TWO = "22222222-2222-4222-8222-222222222222"


def user(text: str, uuid: str) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": None,
        "session_id": "",
        "uuid": uuid,
    }


def init() -> dict[str, Any]:
    return cbc_init(SID)


STATUS = {"type": "system", "subtype": "status", "status": None, "uuid": "s", "session_id": SID}


def assistant(uuid: str, block: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "session_id": SID,
        "message": {"id": uuid, "content": [block], "model": "default-model", "role": "assistant"},
        "parent_tool_use_id": None,
    }


def result(uuid: str) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "",
        "uuid": uuid,
        "session_id": SID,
        "num_turns": 2,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }


def slow_turn() -> list[tuple[float, str, Any]]:
    call = {
        "type": "tool_use",
        "id": "call_mock_0002",
        "name": "Bash",
        "input": {"command": "sleep 8; echo slow-done"},
    }
    return [
        (0.0, "client", user("please TRIGGER_SLOW_BASH", FIRST)),
        (1.0, "backend", init()),
        (1.0, "backend", STATUS),
        (1.1, "backend", assistant("a1", call)),
        (1.2, "client", user("queued line one", ONE)),
        (1.7, "client", user("queued line two", TWO)),
    ]


def receipt(rid: str) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": rid,
            "response": {"session_id": SID, "interrupted": True, "reason": "SDK request"},
        },
    }


def sent_lines(run: Any) -> list[str]:
    return [f["uuid"] for f in run.frames("backend") if f.get("type") == "user"]


def test_cancel_queued_takes_back_both_lines_and_cbc_never_gets_them() -> None:
    eng = engine()
    interrupt = {
        "type": "control_request",
        "request_id": "cancel-1",
        "request": {"subtype": "interrupt", "cancel_queued": True},
    }
    run = replay(
        eng,
        extra=[
            *slow_turn(),
            (2.7, "client", interrupt),
            (2.8, "backend", receipt("cancel-1")),
            (2.9, "backend", result("r1")),
        ],
    )
    advance(eng, run, 10.0)
    run.take(eng.eof("client", 10.0), 10.0)
    advance(eng, run, 40.0)
    assert sent_lines(run) == [FIRST]  # neither queued line reached cbc, not even at EOF
    frames = run.frames()
    reply_at = next(
        i
        for i, f in enumerate(frames)
        if f.get("type") == "control_response" and f["response"]["request_id"] == "cancel-1"
    )
    assert frames[reply_at]["response"]["response"] == {
        "still_queued": [],
        "cancelled": [ONE, TWO],
    }
    cancelled = [
        (i, f["command_uuid"])
        for i, f in enumerate(frames)
        if f.get("type") == "command_lifecycle" and f["state"] == "cancelled"
    ]
    assert [u for i, u in cancelled if i < reply_at] == [ONE, TWO]  # before the receipt
    assert not eng.state.control.pending_user  # nothing for the wind-down to wait for
    for uuid in (ONE, TWO):
        states = [
            f["state"]
            for f in frames
            if f.get("type") == "command_lifecycle" and f["command_uuid"] == uuid
        ]
        assert states == ["queued", "cancelled"]


def test_without_cancel_queued_the_lines_stay_queued_and_run_one_turn_each() -> None:
    eng = engine()
    interrupt = {
        "type": "control_request",
        "request_id": "stop-1",
        "request": {"subtype": "interrupt"},
    }
    run = replay(
        eng,
        extra=[
            *slow_turn(),
            (2.7, "client", interrupt),
            (2.8, "backend", receipt("stop-1")),
            (2.9, "backend", result("r1")),
        ],
    )
    reply = next(
        f
        for f in run.frames()
        if f.get("type") == "control_response" and f["response"]["request_id"] == "stop-1"
    )
    assert reply["response"]["response"] == {"still_queued": [ONE, TWO]}
    advance(eng, run, 3.5)
    assert sent_lines(run) == [FIRST, ONE]  # line one after the result, two still waits
    sent_at = [t for t, f in run.backend if f.get("type") == "user" and f["uuid"] == ONE]
    assert sent_at[0] >= 2.9 + 0.2 - 1e-9  # (and after user-line's settle)
    more = replay(
        eng,
        extra=[
            (4.0, "backend", init()),
            (4.1, "backend", assistant("a2", {"type": "text", "text": "ok"})),
            (4.2, "backend", result("r2")),
        ],
    )
    assert sent_lines(more) == []  # (the settle after r2)
    advance(eng, more, 5.0)
    assert sent_lines(more) == [TWO]


def test_a_line_written_while_idle_passes_at_once() -> None:
    eng = engine()
    run = replay(
        eng,
        extra=[
            (0.0, "client", user("hi", FIRST)),
            (1.0, "backend", init()),
            (1.1, "backend", result("r1")),
            (2.0, "client", user("next", ONE)),
        ],
    )
    assert [(t, f["uuid"]) for t, f in run.backend if f.get("type") == "user"] == [
        (0.0, FIRST),
        (2.0, ONE),
    ]
