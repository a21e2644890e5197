"""Facts enforced, not only declared: in a strict engine (the tests') a rule sees only the
facts it declared (``Stage.reads`` / ``writes``, ``compat.facts``).

The state objects of a strict engine (``SessionState``, its ``ControlState``, every
``TaskInfo`` it makes, its ``ReverseState``) are switched to subclasses that check each
access to a fact against the rule whose call is running (``Guard.stage``, set by the
pipeline and the engine around every call of a stage: ``on_frame``, the hooks,
the timers). Reading a fact the rule does not declare, or assigning one it does not
declare it writes, raises ``FactError`` at once, on every path a test drives, not only on
those a capture reaches (``tests/compat/test_ownership.py`` measures those, and also sees
a container changed in place, which an attribute check cannot). What runs outside a stage
call (the launch facts, the engine's own statistics) is not checked.
"""

from __future__ import annotations

from typing import Any

import attrs

from compat import reverse_state
from compat.facts import is_fact
from compat.session import ControlState, SessionState, TaskInfo


class FactError(AttributeError):
    """A rule read or wrote a fact it does not declare."""


class Guard:
    """The rule whose call is running (None: the engine's own code)."""

    def __init__(self) -> None:
        self.stage: Any = None

    def call(self, stage: Any, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` as ``stage``'s call (nested calls restore the outer one)."""
        outer, self.stage = self.stage, stage
        try:
            return fn(*args)
        finally:
            self.stage = outer

    def check(self, fact: str, write: bool) -> None:
        stage = self.stage
        if stage is None:
            return
        allowed = stage.writes if write else stage.reads | stage.writes
        if fact not in allowed:
            verb = "writes" if write else "reads"
            raise FactError(
                f"rule {stage.rule} {verb} the fact {fact!r}, which it does not declare "
                f"({'writes' if write else 'reads'} = {sorted(allowed)})"
            )


def _guarded(cls: type, prefix: str, guard: Guard) -> type:
    facts = {f.name: prefix + f.name.lstrip("_") for f in attrs.fields(cls) if is_fact(f)}
    facts.pop("control", None)  # the object, not a fact
    if cls is TaskInfo:
        facts["phase"] = "task.phase"  # (the property over ``_phase``)

    setattr_of: Any = cls.__setattr__

    def __getattribute__(self: Any, name: str) -> Any:  # noqa: N807
        fact = facts.get(name)
        if fact is not None:
            guard.check(fact, False)
        return object.__getattribute__(self, name)

    def __setattr__(self: Any, name: str, value: Any) -> None:  # noqa: N807
        fact = facts.get(name)
        if fact is not None:
            guard.check(fact, True)
        setattr_of(self, name, value)

    body: dict[str, Any] = {
        "__slots__": (),
        "__getattribute__": __getattribute__,
        "__setattr__": __setattr__,
    }
    if cls is SessionState:
        task_cls = _guarded(TaskInfo, "task.", guard)

        def task(self: Any, task_id: str) -> TaskInfo:
            """A task's facts: reading them is the rule's (``task.*``); making one, and
            forgetting an old one to stay within ``MAX_TASKS``, is the registry's."""
            guard.check("tasks", False)
            info: TaskInfo = guard.call(None, SessionState.task, self, task_id)
            if type(info) is TaskInfo:
                info.__class__ = task_cls
            return info

        def finished(self: Any, info: TaskInfo) -> None:
            guard.check("finished", True)
            guard.call(None, SessionState.finished, self, info)

        body.update(task=task, finished=finished)
    return type(f"Guarded{cls.__name__}", (cls,), body)


def install(state: SessionState, guard: Guard) -> None:
    """Make ``state`` (and its control, tasks and reverse facts) check every access."""
    rev = reverse_state.of(state)
    control = object.__getattribute__(state, "control")
    control.__class__ = _guarded(ControlState, "control.", guard)
    rev.__class__ = _guarded(reverse_state.ReverseState, "rev.", guard)
    state.__class__ = _guarded(SessionState, "", guard)
