"""``max-turns``: ``--max-turns N`` ends the turn as Claude Code 2.1.220 ends it when cbc
2.163.0 does not: a model that keeps calling a tool the session denies (no permission
prompts, the tool not in ``--allowedTools``) makes cbc ask the model again at once, forever
(issue 26). Claude: N model requests, then ``error_max_turns``, ``num_turns`` N + 1.

The frames are cbc's as a real run through the bridge wrote them (tests/bridge/
test_max_turns_real.py; ``_requestId`` one per turn; after the bridge's interrupt cbc writes
a ``system/status`` and its receipt, no result, and what is left of the turn, an
"Interrupted by user" notice and a ``success``, only when the next line comes)."""

from __future__ import annotations

import json
from typing import Any

from compat.engine import Engine, Write
from compat.profiles import PROFILES

from .session_support import Run, drive, full, line
from .tasks_support import SID, init
from .test_max_turns import frames_of

DENIED = "Claude requested permissions to use Bash, but you haven't granted it yet."
CMD = {"command": "touch made-by-model", "description": "Make a file"}


def status(rq: str) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "status",
        "status": None,
        "session_id": SID,
        "uuid": f"s-{rq}",
        "_requestId": rq,
    }


def prompt(n: int) -> dict[str, Any]:
    body = {"subtype": "can_use_tool", "tool_name": "Bash", "input": CMD, "tool_use_id": f"c{n}"}
    return {"type": "control_request", "request_id": f"perm_{n}", "request": body}


def call(n: int, rq: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": f"a{n}",
        "session_id": SID,
        "parent_tool_use_id": None,
        "_requestId": rq,
        "message": {
            "id": f"m{n}",
            "type": "message",
            "role": "assistant",
            "model": "default-model",
            "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": f"c{n}", "name": "Bash", "input": CMD}],
            "usage": {"input_tokens": 12, "output_tokens": 3},
        },
    }


def denied(n: int, rq: str) -> dict[str, Any]:
    block = {
        "type": "tool_result",
        "tool_use_id": f"c{n}",
        "is_error": True,
        "content": [{"type": "text", "text": DENIED}],
    }
    return {
        "type": "user",
        "uuid": f"u{n}",
        "session_id": SID,
        "parent_tool_use_id": None,
        "_requestId": rq,
        "message": {"role": "user", "content": [block]},
    }


def text(n: int, rq: str, words: str) -> dict[str, Any]:
    frame = call(n, rq)
    frame["message"] = {
        **frame["message"],
        "stop_reason": None,
        "content": [{"type": "text", "text": words}],
    }
    return frame


def result(rq: str, **over: Any) -> dict[str, Any]:
    r = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "",
        "uuid": "r",
        "session_id": SID,
        "duration_ms": 1,
        "duration_api_ms": 1,
        "num_turns": 4,
        "total_cost_usd": 0,
        "usage": {"input_tokens": 12, "output_tokens": 3},
        "permission_denials": [],
        "modelUsage": {},
        "_requestId": rq,
    }
    r.update(over)
    return r


def receipt(rid: str) -> dict[str, Any]:
    body = {"session_id": SID, "interrupted": True, "reason": "x"}
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": rid, "response": body},
    }


def user_line(words: str) -> dict[str, Any]:
    return {
        "type": "user",
        "session_id": "",
        "parent_tool_use_id": None,
        "message": {"role": "user", "content": words},
    }


def engine(limit: int | None, *rules: str) -> Engine:
    eng = full(rules)
    eng.state.max_turns = limit
    return eng


def loop(rq: str, first: int, last: int, t0: float) -> list[tuple[float, str, bytes]]:
    """cbc's denied loop, messages ``first`` .. ``last``: prompt, call, denial, next init."""
    out: list[tuple[float, str, bytes]] = []
    for i, n in enumerate(range(first, last + 1)):
        t = t0 + 0.1 * i
        out += [
            (t, "backend", line(prompt(n))),
            (t + 0.01, "backend", line(call(n, rq))),
            (t + 0.02, "backend", line(denied(n, rq))),
            (t + 0.03, "backend", line(init())),
        ]
    return out


def start(t: float = 0.0) -> list[tuple[float, str, bytes]]:
    return [
        (t, "client", line(user_line("run it"))),
        (t + 0.5, "backend", line(init())),
        (t + 0.51, "backend", line(status("rq1"))),
    ]


def to_backend(run: Run) -> list[dict[str, Any]]:
    out = []
    for _, c in run.commands:
        if isinstance(c, Write) and c.side == "backend":
            out += [json.loads(x) for x in c.data.splitlines() if x.strip()]
    return out


def interrupts(run: Run) -> list[dict[str, Any]]:
    return [
        f
        for f in to_backend(run)
        if f.get("type") == "control_request" and f["request"].get("subtype") == "interrupt"
    ]


def kinds(run: Run, *types: str) -> list[dict[str, Any]]:
    return [f for f in run.frames() if f.get("type") in types]


def assert_max_turns_result(res: dict[str, Any], n: int) -> None:
    """Claude 2.1.220's result at ``--max-turns n`` after a tool call (runs of 2026-12-04,
    arg-max-turns); the real-cbc tests share it."""
    assert res["type"] == "result"
    assert res["subtype"] == "error_max_turns"
    assert res["is_error"] is True
    assert res["errors"] == [f"Reached maximum number of turns ({n})"]
    assert res["terminal_reason"] == "max_turns"
    assert res["num_turns"] == n + 1
    assert res["stop_reason"] == "tool_use"


def assert_claudes_end(res: dict[str, Any], n: int) -> None:
    assert_max_turns_result(res, n)
    assert "result" not in res
    assert res["session_id"] == SID


def test_a_denied_loop_past_the_limit_is_interrupted_and_ends_as_claudes() -> None:
    """-p: the line, EOF; cbc's first denial; the bridge interrupts; cbc's status and
    receipt; cbc then exits when its stdin closes. One assistant frame, Claude's result."""
    eng = engine(1)
    events = [*start(), (0.55, "eof", b""), *loop("rq1", 1, 1, 1.0)]
    events += [
        (1.2, "backend", line(status("rq1"))),
        (1.21, "backend", line(receipt("ccbridge-max-turns-1"))),
    ]
    run = drive(eng, events)
    (stop,) = interrupts(run)
    assert stop["request"]["session_id"] == SID
    assert stop["request_id"] == "ccbridge-max-turns-1"
    assert [f["message"]["content"][0]["id"] for f in kinds(run, "assistant")] == ["c1"]
    (res,) = kinds(run, "result")
    assert_claudes_end(res, 1)
    assert [d["tool_use_id"] for d in res["permission_denials"]] == ["c1"]  # as Claude's
    assert res["usage"]["input_tokens"] == 12
    assert not [f for f in kinds(run, "control_response") if "interrupted" in json.dumps(f)]
    assert run.frames()[-1] == res
    drive(eng, [(2.0, "exit", b"0")], run=run)
    assert eng.exit_status() == 1


def test_cbc_running_on_past_the_limit_leaks_nothing() -> None:
    """cbc asked the model twice more before the interrupt reached it: its messages, its
    prompts and denials are dropped (the prompt denied with an interrupt), the loop's own
    result replaced, at --max-turns 2."""
    eng = engine(2)
    events = [*start(), *loop("rq1", 1, 4, 1.0)]
    events += [
        (2.0, "backend", line(result("rq1", subtype="error_during_execution", is_error=True))),
        (2.1, "backend", line(receipt("ccbridge-max-turns-1"))),
    ]
    run = drive(eng, events, until=30.0)
    assert len(interrupts(run)) == 1
    assert [f["message"]["content"][0]["id"] for f in kinds(run, "assistant")] == ["c1", "c2"]
    assert [f["message"]["content"][0]["tool_use_id"] for f in kinds(run, "user")] == ["c1", "c2"]
    (res,) = kinds(run, "result")
    assert_claudes_end(res, 2)
    assert not [f for f in kinds(run, "control_request") if "c3" in json.dumps(f)]
    denials = [f for f in to_backend(run) if f.get("type") == "control_response"]
    stopped = [
        d["response"]["request_id"] for d in denials if d["response"]["response"]["interrupt"]
    ]
    assert stopped == ["perm_3", "perm_4"]  # permission-routing denied the first two
    assert eng.statistics()["rules"]["max-turns"]["dropped"] >= 6


def test_without_a_receipt_the_result_comes_after_receipt_wait() -> None:
    eng = engine(1, "max-turns.receipt_wait=2")
    run = drive(eng, [*start(), *loop("rq1", 1, 1, 1.0)], until=10.0)
    (res,) = kinds(run, "result")
    assert_claudes_end(res, 1)
    t = next(t for t, f in run.out if f.get("type") == "result")
    assert 3.0 <= t <= 3.1


def test_a_session_goes_on_and_the_stopped_turns_tail_is_dropped() -> None:
    """stream-json session: turn 1 stopped; line 2: cbc first writes what is left of turn 1
    (its "Interrupted by user" notice and a success, under turn 1's _requestId), then
    answers "ok"; turn 3 loops again and is stopped again, its count fresh."""
    eng = engine(1)
    events = [
        *start(),
        *loop("rq1", 1, 1, 1.0),
        (1.2, "backend", line(receipt("ccbridge-max-turns-1"))),
    ]
    events += [
        (3.0, "client", line(user_line("hello"))),
        (3.5, "backend", line(init())),
        (3.51, "backend", line(text(90, "rq1", "Interrupted by user"))),
        (3.52, "backend", line(result("rq1"))),
        (3.53, "backend", line(init())),
        (3.54, "backend", line(status("rq2"))),
        (3.6, "backend", line(text(91, "rq2", "ok"))),
        (3.7, "backend", line(result("rq2", result="ok", num_turns=6))),
    ]
    events += [
        (5.0, "client", line(user_line("LOOP again"))),
        (5.5, "backend", line(init())),
        (5.51, "backend", line(status("rq3"))),
        *loop("rq3", 92, 93, 6.0),
        (6.5, "backend", line(receipt("ccbridge-max-turns-2"))),
    ]
    run = drive(eng, events, until=20.0)
    assert [f["request_id"] for f in interrupts(run)] == [
        "ccbridge-max-turns-1",
        "ccbridge-max-turns-2",
    ]
    results = kinds(run, "result")
    assert [r["subtype"] for r in results] == ["error_max_turns", "success", "error_max_turns"]
    assert_claudes_end(results[0], 1)
    assert_claudes_end(results[2], 1)
    assert results[1]["result"] == "ok"
    assert not [f for f in run.frames() if "Interrupted by user" in json.dumps(f)]
    assert [f["message"]["id"] for f in kinds(run, "assistant")] == ["m1", "m91", "m92"]
    assert len([f for f in run.frames() if f.get("subtype") == "init"]) == 3  # one a turn


def test_cbcs_own_late_tail_at_its_exit_is_dropped() -> None:
    """-p with a tool cbc allows: the bridge's interrupt won the race against cbc's own
    max-turns check; when its stdin closes cbc writes the turn's tail: dropped."""
    eng = engine(1)
    ok = denied(1, "rq1")
    ok["message"]["content"][0].update(is_error=False, content=[{"type": "text", "text": "ok"}])
    events = [
        *start(),
        (0.55, "eof", b""),
        (1.0, "backend", line(call(1, "rq1"))),
        (1.1, "backend", line(ok)),
        (1.2, "backend", line(receipt("ccbridge-max-turns-1"))),
        (1.3, "backend", line(init())),
        (1.31, "backend", line(text(90, "rq1", "Interrupted by user"))),
        (1.32, "backend", line(result("rq1"))),
        (1.4, "exit", b"0"),
    ]
    run = drive(eng, events)
    (res,) = kinds(run, "result")
    assert_claudes_end(res, 1)
    assert [f["message"]["id"] for f in kinds(run, "assistant")] == ["m1"]
    assert eng.exit_status() == 1


def test_cbcs_own_max_turns_result_passes_for_result_shape() -> None:
    """cbc stopped first (its notice and error_during_execution before the receipt): its
    result is converted by result-shape as without the rule, the receipt swallowed; the
    client sees what it sees with the rule off."""
    notice = text(90, "rq1", "Max turns (1) exceeded")
    own = result(
        "rq1", subtype="error_during_execution", is_error=True, errors=["Max turns (1) exceeded"]
    )
    del own["result"]
    ok = denied(1, "rq1")
    ok["message"]["content"][0].update(is_error=False, content=[{"type": "text", "text": "hi"}])
    events = [
        *start(),
        (1.0, "backend", line(call(1, "rq1"))),
        (1.1, "backend", line(ok)),
        (1.2, "backend", line(init())),
        (1.21, "backend", line(notice)),
        (1.22, "backend", line(own)),
        (1.3, "backend", line(receipt("ccbridge-max-turns-1"))),
    ]
    on = drive(engine(1), events, until=20.0)
    off = drive(engine(1, "max-turns=off"), events[:-1], until=20.0)
    assert on.frames() == off.frames()
    assert len(interrupts(on)) == 1
    (res,) = kinds(on, "result")
    assert_claudes_end(res, 1)


def test_cbcs_max_turns_capture_is_unchanged_by_the_rule() -> None:
    """The real run of cbc honouring --max-turns 1 (tests/bridge/data/headless): the
    client's frames with the rule as without it; cbc was sent the interrupt all the same
    (the race is cbc's to win)."""
    events = [(0.1 * i, "backend", line(f)) for i, f in enumerate(frames_of("cbc-2.163.0"))]
    on = drive(engine(1), [*events, (9.0, "exit", b"0")], until=20.0)
    off = drive(engine(1, "max-turns=off"), [*events, (9.0, "exit", b"0")], until=20.0)
    assert on.frames() == off.frames()
    assert len(interrupts(on)) == 1
    assert kinds(on, "result")[-1]["subtype"] == "error_max_turns"


def test_under_the_limit_nothing_changes() -> None:
    """--max-turns 2, one call and an answer: no interrupt, the frames as without the rule."""
    events = [
        *start(),
        *loop("rq1", 1, 1, 1.0),
        (2.0, "backend", line(text(2, "rq1", "done."))),
        (2.1, "backend", line(result("rq1", result="done."))),
    ]
    on = engine(2)
    run = drive(on, events, until=20.0)
    off = drive(engine(2, "max-turns=off"), events, until=20.0)
    assert run.frames() == off.frames()
    assert not interrupts(run)
    assert kinds(run, "result")[0]["subtype"] == "success"
    assert "dropped" not in on.statistics()["rules"].get("max-turns", {})


def test_without_max_turns_the_rule_reads_nothing() -> None:
    eng = engine(None)
    run = drive(eng, [*start(), *loop("rq1", 1, 3, 1.0)])
    assert not interrupts(run)
    assert len(kinds(run, "assistant")) == 3


def test_it_stops_the_turn_before_any_rule_sees_it() -> None:
    down = list(PROFILES["cbc-to-claude"]["down"])
    pos = {r: down.index(r) for r in down}
    assert pos["session"] < pos["max-turns"] < pos["init-once"]
    for later in (
        "control-reply",
        "control-state",
        "interrupt-reply",
        "interrupted-turn",
        "result-shape",
        "eof-wind-down",
    ):
        assert pos["max-turns"] < pos[later], later
