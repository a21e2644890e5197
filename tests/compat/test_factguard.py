"""Facts are enforced in a strict engine (``compat.factguard``): a rule that reads or writes
a fact it does not declare fails at once, whatever the path; what it declares it may use;
a production engine checks nothing."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import pytest

from compat.engine import Engine
from compat.factguard import FactError, Guard, install
from compat.frames import Frame
from compat.stage import Context, Output, Stage

from .helpers import det_env, line


@attrs.define
class Peek(Stage):
    """A rule that reads ``session_id``, or, on a result, ``control.turn_active`` (a fact
    it may or may not declare), and writes ``result_at`` there."""

    rule: ClassVar[str] = "test-peek"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system", "result"})
    reads: ClassVar[frozenset[str]] = frozenset({"session_id"})
    writes: ClassVar[frozenset[str]] = frozenset()
    seen: list[Any] = attrs.field(factory=list)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self.seen.append(ctx.state.session_id)
        if frame.obj.get("type") == "result":
            self.seen.append(ctx.state.control.turn_active)
        return None

    def on_timer(self, key: str, ctx: Context) -> Output:
        ctx.state.result_at = 1.0
        return None


def _engine(stage: Stage, strict: bool = True) -> Engine:
    return Engine([], [stage], det_env(), strict=strict)


def test_a_declared_fact_may_be_read() -> None:
    peek = Peek()
    eng = _engine(peek)
    eng.state.session_id = "s"  # the engine's own writes (launch facts) are not checked
    eng.feed("backend", line({"type": "system", "subtype": "init"}), 0.0)
    assert peek.seen == ["s"]


def test_an_undeclared_read_fails_at_once_on_any_path() -> None:
    eng = _engine(Peek())
    with pytest.raises(FactError, match=r"test-peek reads the fact 'control.turn_active'"):
        eng.feed("backend", line({"type": "result", "subtype": "success"}), 0.0)


def test_an_undeclared_write_fails_in_a_hook_too() -> None:
    peek = Peek()
    eng = _engine(peek)
    eng.ctx.set_timer(peek, "t", 1.0)
    with pytest.raises(FactError, match=r"test-peek writes the fact 'result_at'"):
        eng.advance(2.0)


def test_declared_writes_are_allowed_and_task_facts_are_guarded() -> None:
    @attrs.define
    class Tasker(Peek):
        rule: ClassVar[str] = "test-tasker"
        reads: ClassVar[frozenset[str]] = frozenset({"session_id", "tasks"})
        writes: ClassVar[frozenset[str]] = frozenset({"result_at", "task.status"})

        def on_frame(self, frame: Frame, ctx: Context) -> Output:
            info = ctx.state.task("t1")
            info.status = "completed"
            self.seen.append(info.description)  # task.description: not declared
            return None

    eng = _engine(Tasker())
    with pytest.raises(FactError, match=r"test-tasker reads the fact 'task.description'"):
        eng.feed("backend", line({"type": "system", "subtype": "init"}), 0.0)
    assert eng.state.tasks["t1"].status == "completed"


def test_a_production_engine_checks_nothing() -> None:
    peek = Peek()
    eng = _engine(peek, strict=False)
    eng.feed("backend", line({"type": "result", "subtype": "success"}), 0.0)
    assert peek.seen == [None, False]


def test_a_guard_given_after_a_kind_was_planned_guards_that_kind_too() -> None:
    """A plan binds its stages' calls once (through the guard in a strict engine): a guard
    given to a pipeline later (``compat.playbook`` does) still sees every later call."""
    eng = _engine(Peek(), strict=False)
    result = line({"type": "result", "subtype": "success"})
    eng.feed("backend", result, 0.0)  # planned unguarded
    guard = Guard()
    install(eng.state, guard)
    eng.pipelines["down"].strict, eng.pipelines["down"].guard = True, guard
    with pytest.raises(FactError, match=r"test-peek reads the fact 'control.turn_active'"):
        eng.feed("backend", result, 1.0)
