"""``compat.playbook``: one rule fed frames with a scripted context, and what it does read
back as records. First the harness itself (with rules made here), then rule tests in its
style: ``max-turns``, ``user-line``'s readiness probe and queue, ``tool-parent``."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import pytest

from compat.factguard import FactError
from compat.frames import Frame
from compat.playbook import (
    CloseBackendInput,
    Count,
    Emit,
    ExitStatus,
    Fire,
    Hold,
    Log,
    Out,
    Playbook,
    Record,
    TerminateBackend,
    Timer,
    only,
    outs,
)
from compat.session import ToolUse
from compat.stage import Context, Direction, Output, Stage
from compat.stages.maxturns import MaxTurns

from .control_support import user
from .tasks_support import SID, tool_result
from .test_max_turns_loop import call, denied, receipt

# -- the harness ------------------------------------------------------------------------------


@attrs.define
class Spy(Stage):
    """Wants results, and any frame with ``MAGIC`` in its line; reads ``session_id``."""

    rule: ClassVar[str] = "spy"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"result"})
    triggers: ClassVar[tuple[bytes, ...]] = (b"MAGIC",)
    reads: ClassVar[frozenset[str]] = frozenset({"session_id"})
    writes: ClassVar[frozenset[str]] = frozenset({"control.turn_active"})
    #: what to touch in the next call: a fact to read, or one to write
    touch: str = ""
    seen: list[Any] = attrs.field(factory=list)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self.seen.append(frame.obj)
        if self.touch == "read cwd":
            return (frame.replace({**frame.obj, "cwd": ctx.state.cwd}),)
        if self.touch == "write session_id":
            ctx.state.session_id = "mine"
        ctx.state.control.turn_active = True
        return (frame.replace({**frame.obj, "session_id": ctx.state.session_id}),)


def test_a_kind_the_rule_did_not_declare_passes_byte_identical_without_a_call() -> None:
    spy = Spy()
    pb = Playbook(spy, facts={"session_id": "s-1"})
    line = b'{"type":"assistant",  "x": 1}'
    got = pb.frame(line)
    assert got == [Out({"type": "assistant", "x": 1})]
    (out,) = got
    assert isinstance(out, Out)
    assert out.raw == line  # (never parsed: the bytes it came in as)
    assert pb.frame(b"not json") == [Out(b"not json")]  # (``invalid`` not declared)
    assert spy.seen == []
    assert pb.frame({"type": "result", "n": 2}) == [
        Out({"type": "result", "n": 2, "session_id": "s-1"})
    ]
    assert pb.frame({"type": "user", "t": "MAGIC"}) == [
        Out({"type": "user", "t": "MAGIC", "session_id": "s-1"})
    ]
    assert spy.seen == [{"type": "result", "n": 2}, {"type": "user", "t": "MAGIC"}]
    assert pb.counts == {"rewritten": 2}
    assert pb.state.control.turn_active is True


def test_the_fact_guard_fires_as_in_a_strict_engine() -> None:
    pb = Playbook(Spy(touch="read cwd"), facts={"cwd": "/w", "control.turn_active": False})
    with pytest.raises(FactError, match="rule spy reads the fact 'cwd'"):
        pb.frame({"type": "result"})
    pb = Playbook(Spy(touch="write session_id"))
    with pytest.raises(FactError, match="rule spy writes the fact 'session_id'"):
        pb.frame({"type": "result"})
    assert pb.state.session_id is None
    pb.state.cwd = "/elsewhere"  # the test, outside any call: not checked
    pb = Playbook(Clock())  # every hook is guarded, not only on_frame
    pb.frame({"type": "timers", "set": {"peek": 1.0}})
    with pytest.raises(FactError, match="rule clock reads the fact 'cwd'"):
        pb.timer()
    with pytest.raises(KeyError, match="not a fact"):
        Playbook(Spy(), facts={"nope": 1})


@attrs.define
class Clock(Stage):
    """Sets the timers a frame names (``{"set": {key: delay}, "cancel": [key]}``); a timer
    that fires writes a ``tick``."""

    rule: ClassVar[str] = "clock"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"timers"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        for key, delay in frame.obj.get("set", {}).items():
            ctx.set_timer(self, key, delay)
        for key in frame.obj.get("cancel", []):
            ctx.cancel_timer(self, key)
        return ()

    def on_timer(self, key: str, ctx: Context) -> Output:
        if key == "peek":
            return (Frame.synth({"type": "tick", "cwd": ctx.state.cwd}, self.rule),)
        return (Frame.synth({"type": "tick", "key": key, "at": ctx.now}, self.rule),)


def test_timers_fire_in_deadline_order_each_at_its_deadline() -> None:
    pb = Playbook(Clock())
    assert pb.frame({"type": "timers", "set": {"b": 2.0, "a": 1.0, "c": 1.0}}, at=0.5) == [
        Timer("b", 2.5),
        Timer("a", 1.5),
        Timer("c", 1.5),
    ]
    assert pb.advance(2.0) == [
        Fire("a", 1.5),
        Out({"type": "tick", "key": "a", "at": 1.5}),
        Fire("c", 1.5),
        Out({"type": "tick", "key": "c", "at": 1.5}),
    ]
    assert pb.ctx.now == 2.0
    # an event fires what is due before it; a cancelled timer never fires
    assert pb.frame({"type": "timers", "set": {"d": 1.0}, "cancel": ["x"]}, at=3.0) == [
        Fire("b", 2.5),
        Out({"type": "tick", "key": "b", "at": 2.5}),
        Timer("d", 4.0),
        Timer("x", None),
    ]
    pb.frame({"type": "timers", "cancel": ["d"]})
    assert pb.advance(10.0) == []
    pb.frame({"type": "timers", "set": {"e": 0.25}})
    assert pb.timer() == [Fire("e", 10.25), Out({"type": "tick", "key": "e", "at": 10.25})]
    with pytest.raises(LookupError):
        pb.timer()
    with pytest.raises(ValueError, match="time goes forward"):
        pb.advance(1.0)


@attrs.define
class Chatty(Stage):
    """Answers a request upstream itself and holds it; defers the client's EOF."""

    rule: ClassVar[str] = "chatty"
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request"})
    defers_eof: ClassVar[bool] = True

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        answer = {"type": "control_response", "request_id": frame.obj["request_id"]}
        ctx.emit("down", Frame.synth(answer, self.rule), self.rule)
        ctx.log(self.rule, "answered")
        ctx.count(self.rule, "answered", 2)
        ctx.hold()
        return ()

    def on_client_eof(self, ctx: Context) -> Output:
        ctx.set_exit_status(1)
        ctx.set_timer(self, "bye", 1.0)
        return (Frame.synth({"type": "keep_alive"}, self.rule),)

    def on_timer(self, key: str, ctx: Context) -> Output:
        ctx.close_backend_input(self)
        ctx.terminate_backend(self, "done")
        return None


def test_what_a_rule_asks_of_its_engine_is_recorded_in_order() -> None:
    pb = Playbook(Chatty())
    assert pb.frame({"type": "control_request", "request_id": "r1"}) == [
        Emit("down", {"type": "control_response", "request_id": "r1"}),
        Log("answered"),
        Count("answered", 2),
        Hold(),
    ]
    assert pb.counts == {"synthesized": 1, "answered": 2, "held": 1}
    assert pb.frame({"type": "user"}) == [Out({"type": "user"})]
    assert pb.client_eof(at=2.0) == [ExitStatus(1), Timer("bye", 3.0), Out({"type": "keep_alive"})]
    assert pb.timer() == [Fire("bye", 3.0), CloseBackendInput(), TerminateBackend("done")]
    assert (pb.exit_status, pb.terminated, pb.closed) == (1, "done", True)
    assert pb.backend_exit(143) == []
    assert pb.ctx.backend_end == "the bridge terminated the backend (done)"


def test_a_rule_by_id_gets_its_options_as_the_command_line_gives_them() -> None:
    stage = Playbook("max-turns", options={"receipt_wait": "2.5"}).stage
    assert isinstance(stage, MaxTurns)
    assert stage.receipt_wait == 2.5
    with pytest.raises(ValueError, match="is off"):
        Playbook("max-turns", options={"mode": "off"})


# -- max-turns (compat/stages/maxturns.py; the engine-wide story: test_max_turns_loop.py) ---


def max_turns(limit: int = 1) -> Playbook:
    return Playbook(
        "max-turns", options={"receipt_wait": "5"}, facts={"max_turns": limit, "session_id": SID}
    )


def interrupt(n: int) -> Emit:
    request = {
        "subtype": "interrupt",
        "session_id": SID,
        "reason": f"Reached maximum number of turns ({n})",
    }
    return Emit(
        "up", {"type": "control_request", "request_id": "ccbridge-max-turns-1", "request": request}
    )


def test_max_turns_interrupts_once_the_nth_messages_calls_are_answered() -> None:
    pb = max_turns(1)
    assert pb.frame(call(1, "rq1"), at=1.0) == [Out(call(1, "rq1"))]
    assert pb.frame(denied(1, "rq1"), at=1.5) == [
        interrupt(1),
        Timer("ccbridge-max-turns-1", 6.5),
        Count("stopped"),
        Log("--max-turns 1 reached (message 1's tool calls answered): cbc interrupted"),
        Out(denied(1, "rq1")),
    ]
    assert pb.frame(call(2, "rq1"), at=1.6) == []  # the stopped turn's output: dropped
    got = pb.frame(receipt("ccbridge-max-turns-1"), at=2.0)
    assert got[0] == Timer("ccbridge-max-turns-1", None)
    (result,) = outs(got[1:])
    assert {k: result[k] for k in ("subtype", "num_turns", "stop_reason", "errors")} == {
        "subtype": "error_max_turns",
        "num_turns": 2,
        "stop_reason": "tool_use",
        "errors": ["Reached maximum number of turns (1)"],
    }
    assert result["duration_ms"] == 1000
    assert result["usage"] == {"input_tokens": 12, "output_tokens": 3}


def test_max_turns_without_a_receipt_ends_the_turn_after_receipt_wait() -> None:
    pb = max_turns(1)
    pb.frame(call(1, "rq1"), at=1.0)
    pb.frame(denied(1, "rq1"), at=1.5)
    assert pb.advance(6.4) == []
    got = pb.advance(7.0)
    assert got[:2] == [
        Fire("ccbridge-max-turns-1", 6.5),
        Log("no reply to the interrupt in 5s", "warning"),
    ]
    assert [r["subtype"] for r in outs(got)] == ["error_max_turns"]
    late = pb.frame(receipt("ccbridge-max-turns-1"))
    assert late == [Timer("ccbridge-max-turns-1", None)]  # the receipt: swallowed


def test_max_turns_off_without_the_launch_fact() -> None:
    pb = Playbook("max-turns")
    assert pb.frame(denied(1, "rq1")) == [Out(denied(1, "rq1"))]
    assert pb.counts == {}


# -- user-line (compat/stages/user_line.py; the engine-wide story: test_user_line_ready.py) ----


def after_first_result() -> Playbook:
    """cbc wrote the result of the client's first turn at 1.02 (what session and
    control-state would have written)."""
    facts = {
        "session_id": SID,
        "result_at": 1.02,
        "control.backend_results": 1,
        "control.turn_from_client": True,
    }
    return Playbook("user-line", facts=facts)


def queued(uuid: str, n: int) -> Emit:
    echo = {
        "type": "command_lifecycle",
        "command_uuid": uuid,
        "state": "queued",
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "session_id": SID,
    }
    return Emit("down", echo)


def fired(records: list[Record]) -> list[float]:
    return [round(r.at, 6) for r in records if isinstance(r, Fire)]


def test_user_line_after_the_first_result_waits_for_the_probes_answer() -> None:
    pb = after_first_result()
    probe = {
        "type": "control_request",
        "request_id": "ccbridge-ready-1",
        "request": {"subtype": "get_available_modes"},
    }
    got = pb.frame(user("two", "u-2"), at=1.021)
    assert got[:2] == [queued("u-2", 1), Emit("up", probe)]
    assert only(got, Count, Hold) == [Count("held-after-result"), Hold()]
    # a frame after a held line waits with it
    stop = {"type": "control_request", "request_id": "i", "request": {"subtype": "interrupt"}}
    assert only(pb.frame(stop, at=1.022), Hold) == [Hold()]
    # cbc answers the probe at 1.0265 (control-reply takes its id out of control.own)
    pb.advance(1.0265)
    del pb.state.control.own["ccbridge-ready-1"]
    got = pb.advance(1.1)
    # looked for every ms; ``margin`` (0.02 s) after the first look that saw the answer
    assert fired(got) == [1.027, 1.047]
    assert outs(got) == [user("two", "u-2"), stop]
    assert (pb.counts["held"], pb.counts["released"]) == (2, 2)


def test_user_line_without_an_answer_goes_settle_after_the_result() -> None:
    pb = after_first_result()
    pb.frame(user("two", "u-2"), at=1.021)
    got = pb.advance(1.5)
    assert fired(got)[-1] == 1.22
    assert outs(got) == [user("two", "u-2")]


def test_user_line_passes_at_once_with_settle_zero() -> None:
    pb = Playbook(
        "user-line", options={"settle": "0"}, facts={"session_id": SID, "result_at": 1.02}
    )
    assert pb.frame(user("two", "u-2"), at=1.021) == [queued("u-2", 1), Out(user("two", "u-2"))]
    assert list(pb.state.control.pending_user) == ["u-2"]


def test_user_line_during_a_turn_is_queued_until_the_turn_ends() -> None:
    pb = Playbook("user-line", facts={"control.turn_active": True, "control.pending_user": ["u-1"]})
    assert pb.frame(user("two", "u-2")) == [Count("queued-during-turn"), Hold()]
    assert [f.obj["uuid"] for f in pb.state.control.queued_lines] == ["u-2"]
    assert list(pb.state.control.unsent_queued) == ["u-2"]  # (no session id yet: echoed later)
    # control-state ends the turn and wakes the rule ("turn-end")
    pb.set_facts({"control.turn_active": False, "control.pending_user": ["u-2"]})
    pb.ctx.set_timer(pb.stage, "turn-end", 0.0)
    assert outs(pb.advance(0.0)) == [user("two", "u-2")]
    assert pb.client_eof() == [Timer("settle", None), CloseBackendInput()]


# -- tool-parent (compat/stages/shape.py; the engine-wide story: test_session_shape.py) ----


def test_tool_parent_a_main_thread_result_never_names_itself_as_parent() -> None:
    uses = {
        "t1": ToolUse("t1", "Bash", {}),
        "t2": ToolUse("t2", "Read", {}, parent_tool_use_id="agent-1"),
    }
    pb = Playbook("tool-parent", facts={"tool_uses": uses})
    own = {**tool_result("t1", "ok"), "parent_tool_use_id": "t1"}
    sub_own = {**tool_result("t2", "ok"), "parent_tool_use_id": "t2"}
    right = {**tool_result("t3", "ok"), "parent_tool_use_id": "agent-1"}
    assert pb.frame(own) == [Out({**own, "parent_tool_use_id": None})]
    assert pb.frame(sub_own) == [Out({**sub_own, "parent_tool_use_id": "agent-1"})]
    assert pb.frame(right) == [Out(right)]
    assert pb.counts == {"rewritten": 2}
