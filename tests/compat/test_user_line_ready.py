"""When ``user-line`` gives cbc the client's next line (compat/stages/user_line.py, issue 27):
right after a result that restarts cbc 2.163.0's drain poll (the first cbc writes itself
for a client turn, or a turn cbc ran by itself) only ``margin`` after cbc answered the
bridge's readiness probe written after that result (at the latest ``settle`` after it);
after any other result at once. Frames in, frames out: no clock but the engine's (every
timer fires at its exact deadline)."""

from __future__ import annotations

from typing import Any

from compat.engine import Engine

from .control_support import Run, advance, cbc_init, engine, replay, user

SID = "01a24378-0000-7000-8000-00000000abcd"
INTERRUPT = {"subtype": "interrupt"}


def init() -> dict[str, Any]:
    return cbc_init(SID)


def answer(text: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": f"a-{text}",
        "session_id": SID,
        "parent_tool_use_id": None,
        "message": {"id": f"m-{text}", "role": "assistant", "content": [], "model": "m"},
    }


def result(uuid: str) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "ok",
        "uuid": uuid,
        "session_id": SID,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }


def turn(t: float, name: str) -> list[tuple[float, str, Any]]:
    """One turn of cbc's: init, an answer, the result (``name`` its uuid)."""
    return [
        (t, "backend", init()),
        (t + 0.01, "backend", answer(name)),
        (t + 0.02, "backend", result(name)),
    ]


def probe_reply(rid: str) -> dict[str, Any]:
    """cbc's answer to ``get_available_modes`` (nomodel_controls-before-session-then-eof)."""
    modes = [{"id": "default", "name": "Always Ask"}]
    return {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": rid,
            "response": {"availableModes": modes},
        },
    }


def sent(run: Run) -> list[tuple[float, str]]:
    """What cbc got: user lines by text, control requests by subtype and id."""
    out = []
    for t, f in run.backend:
        if f.get("type") == "user":
            out.append((round(t, 6), f["message"]["content"]))
        elif f.get("type") == "control_request":
            out.append((round(t, 6), f"{f['request']['subtype']} {f['request_id']}"))
    return out


def first_turn(eng: Engine) -> Run:
    """The client's first line and cbc's turn for it: its result at 1.02."""
    return replay(eng, extra=[(0.0, "client", user("one", "u-1")), *turn(1.0, "r1")])


def test_after_the_first_result_a_line_waits_for_the_probes_answer() -> None:
    eng = engine()
    run = first_turn(eng)
    more = replay(
        eng,
        extra=[
            (1.021, "client", user("two", "u-2")),
            (1.022, "client", {"type": "control_request", "request_id": "i", "request": INTERRUPT}),
            (1.0265, "backend", probe_reply("ccbridge-ready-1")),
        ],
    )
    advance(eng, more, 1.05)
    assert sent(run) == [(0.0, "one")]
    # the probe at once; the line (and what followed it) ``margin`` (0.02 s) after the
    # answer was seen (the first look after it, every ms)
    assert sent(more) == [
        (1.021, "get_available_modes ccbridge-ready-1"),
        (1.047, "two"),
        (1.047, "interrupt i"),
    ]
    # the answer is the bridge's own: the client never sees it
    assert not [f for f in more.frames() if f.get("type") == "control_response"]
    assert eng.statistics()["rules"]["user-line"]["held-after-result"] == 1


def second_turn() -> list[tuple[float, str, Any]]:
    """After ``first_turn``: the second line (its wait answered), and cbc's turn for it."""
    return [
        (1.05, "client", user("two", "u-2")),
        (1.05, "backend", probe_reply("ccbridge-ready-1")),
        *turn(2.0, "r2"),
    ]


def test_after_a_later_client_turn_the_line_passes_at_once() -> None:
    eng = engine()
    first_turn(eng)
    run = replay(
        eng,
        extra=[
            *second_turn(),
            (2.0201, "client", user("three", "u-3")),
        ],
    )
    advance(eng, run, 2.5)
    # no probe after the second client turn's result: cbc's poll was parked long before
    assert [x for x in sent(run) if x[1] in ("two", "three")] == [(1.071, "two"), (2.0201, "three")]
    assert [x for x in sent(run) if "ccbridge-ready" in x[1]] == [
        (1.05, "get_available_modes ccbridge-ready-1")
    ]


def test_after_a_turn_cbc_ran_by_itself_the_line_waits_again() -> None:
    """A turn no client line started (a background task's notification: cbc answers it
    over its drain poll, which it then starts again) is like the first one."""
    eng = engine()
    first_turn(eng)
    run = replay(
        eng,
        extra=[
            *second_turn(),
            *turn(5.0, "r3"),  # cbc's own turn: no line pending
            (5.0205, "client", user("three", "u-3")),
            (5.0236, "backend", probe_reply("ccbridge-ready-2")),
        ],
    )
    advance(eng, run, 6.0)
    assert sent(run)[-2:] == [(5.0205, "get_available_modes ccbridge-ready-2"), (5.0445, "three")]
    assert not eng.state.control.turn_from_client


def test_without_an_answer_the_line_goes_settle_after_the_result() -> None:
    eng = engine()
    run = first_turn(eng)
    run = replay(eng, extra=[(1.021, "client", user("two", "u-2"))])
    advance(eng, run, 1.5)
    assert sent(run) == [(1.021, "get_available_modes ccbridge-ready-1"), (1.22, "two")]
    # a line later than settle after that result is not held (nor probed)
    eng2 = engine()
    first_turn(eng2)
    late = replay(eng2, extra=[(1.3, "client", user("two", "u-2"))])
    assert sent(late) == [(1.3, "two")]


def test_a_line_queued_during_the_first_turn_waits_for_the_answer_too() -> None:
    eng = engine()
    run = replay(
        eng,
        extra=[
            (0.0, "client", user("one", "u-1")),
            (1.0, "backend", init()),
            (1.005, "client", user("two", "u-2")),  # the turn runs: queued in the bridge
            (1.01, "backend", answer("r1")),
            (1.02, "backend", result("r1")),
            (1.0235, "backend", probe_reply("ccbridge-ready-1")),
        ],
    )
    advance(eng, run, 1.5)
    assert sent(run) == [
        (0.0, "one"),
        (1.02, "get_available_modes ccbridge-ready-1"),
        (1.044, "two"),
    ]


def test_without_the_probe_the_line_waits_settle_after_such_a_result_only() -> None:
    eng = engine(["user-line.probe=false", "user-line.settle=0.05"])
    run = first_turn(eng)
    run = replay(eng, extra=[(1.021, "client", user("two", "u-2")), *turn(2.0, "r2")])
    run2 = replay(eng, extra=[(2.021, "client", user("three", "u-3"))])
    advance(eng, run2, 3.0)
    assert sent(run) == [(1.07, "two")]
    assert sent(run2) == [(2.021, "three")]  # after the second client turn: at once


def test_settle_zero_never_holds_or_probes() -> None:
    eng = engine(["user-line.settle=0"])
    first_turn(eng)
    run = replay(eng, extra=[(1.021, "client", user("two", "u-2"))])
    assert sent(run) == [(1.021, "two")]


def test_the_clients_eof_releases_a_line_waiting_for_the_answer() -> None:
    eng = engine()
    first_turn(eng)
    run = replay(eng, extra=[(1.021, "client", user("two", "u-2"))])
    assert sent(run) == [(1.021, "get_available_modes ccbridge-ready-1")]
    cmds = eng.eof("client", 1.022)
    assert any(b'"two"' in getattr(c, "data", b"") for c in cmds)
    assert "settle" not in {key for _, key in eng._timers}


def tool_call(call: str) -> list[dict[str, Any]]:
    """cbc's model message calling a tool, and the call's (denied) result."""
    message = {
        "id": f"m-{call}",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": call, "name": "Bash", "input": {}}],
    }
    block = {"type": "tool_result", "tool_use_id": call, "content": "denied", "is_error": True}
    return [
        {"type": "assistant", "session_id": SID, "parent_tool_use_id": None, "message": message},
        {
            "type": "user",
            "session_id": SID,
            "parent_tool_use_id": None,
            "message": {"role": "user", "content": [block]},
        },
    ]


def test_a_first_turn_the_bridge_ended_does_not_count_as_cbcs_first_result() -> None:
    """``max-turns`` ends cbc's first turn with a result of the bridge's own: cbc's
    request for that line has not returned, so its drain poll starts after the next
    turn's result, the first cbc writes itself (real cbc: with that turn counted, the
    line after the second result was lost in 3 of 5 sessions)."""
    eng = engine()
    eng.state.max_turns = 1
    call, denied = tool_call("c1")
    run = replay(
        eng,
        extra=[
            (0.0, "client", user("one", "u-1")),
            (1.0, "backend", init()),
            (1.01, "backend", call),
            (1.02, "backend", denied),
            (1.03, "backend", ck_success("ccbridge-max-turns-1")),
            (1.031, "client", user("two", "u-2")),
            *turn(2.0, "r2"),
            (2.021, "client", user("three", "u-3")),
            (2.023, "backend", probe_reply("ccbridge-ready-1")),
        ],
    )
    advance(eng, run, 3.0)
    results = [f["subtype"] for f in run.frames() if f.get("type") == "result"]
    assert results == ["error_max_turns", "success"]
    assert eng.state.control.backend_results == 1
    lines = [x for x in sent(run) if "interrupt" not in x[1]]
    assert lines == [
        (0.0, "one"),
        (1.031, "two"),  # at once: cbc wrote no result yet
        (2.021, "get_available_modes ccbridge-ready-1"),
        (2.044, "three"),  # margin after the answer, seen at the next look
    ]


def ck_success(rid: str) -> dict[str, Any]:
    """cbc's answer to an ``interrupt``."""
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": rid, "response": {}},
    }


def _stopped_turn_frames(request_id: str) -> list[dict[str, Any]]:
    """cbc's tool call and its denied result, of one ``_requestId`` (cbc's id of a turn)."""
    return [{**f, "_requestId": request_id} for f in tool_call("c1")]


def _leftover(request_id: str) -> list[dict[str, Any]]:
    """What cbc writes of a turn ``max-turns`` stopped once it is aborted."""
    notice = {**answer("Interrupted by user"), "_requestId": request_id}
    return [notice, {**result("r-left"), "_requestId": request_id}]


def _went_on(after: list[tuple[float, str, Any]]) -> tuple[Engine, Run]:
    """A first turn max-turns stopped as cbc went on (its init after the stop), the
    client's next line right after, then ``after``."""
    eng = engine()
    eng.state.max_turns = 1
    call, denied = _stopped_turn_frames("req-1")
    run = replay(
        eng,
        extra=[
            (0.0, "client", user("one", "u-1")),
            (1.0, "backend", init()),
            (1.01, "backend", call),
            (1.02, "backend", denied),
            (1.021, "backend", init()),  # cbc goes on
            (1.03, "backend", ck_success("ccbridge-max-turns-1")),
            (1.031, "client", user("two", "u-2")),
            *after,
        ],
    )
    return eng, run


def test_a_line_waits_while_cbc_is_still_to_end_a_turn_it_went_on_with() -> None:
    """cbc had asked the model again when ``max-turns`` stopped it (its init after the
    stop): it ends that turn by itself a little later, and a line given to it before
    then is lost (real cbc, ``--max-turns 2``: about 1 session in 8). The line waits for
    that end (dropped), then for cbc's readiness after it, its first result."""
    left = _leftover("req-1")
    eng, run = _went_on(
        [
            (1.13, "backend", left[0]),
            (1.131, "backend", left[1]),
            (1.133, "backend", probe_reply("ccbridge-ready-1")),
        ]
    )
    advance(eng, run, 2.0)
    results = [f["subtype"] for f in run.frames() if f.get("type") == "result"]
    assert results == ["error_max_turns"]  # (cbc's leftover is dropped)
    assert not [f for f in run.frames() if "Interrupted by user" in str(f)]
    lines = [x for x in sent(run) if "interrupt" not in x[1]]
    assert lines == [
        (0.0, "one"),
        (1.132, "get_available_modes ccbridge-ready-1"),  # at the next look after that end
        (1.154, "two"),  # margin after the answer, seen at the next look
    ]
    assert eng.state.control.leftover_due is None


def test_a_line_waits_for_that_end_at_most_leftover_wait() -> None:
    eng, run = _went_on([])
    advance(eng, run, 3.0)
    lines = [x for x in sent(run) if "interrupt" not in x[1]]
    assert lines == [(0.0, "one"), (2.021, "two")]  # leftover_wait (1 s) after cbc's init
