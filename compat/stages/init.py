"""``foreign-init`` and ``init-once``: one ``system/init`` per turn, of this session only.

Strategy: the client sees an init only where Claude writes one: never another session's,
and this session's once per turn, the fullest copy, held until a frame proves the turn has
started. Both rules read ``session_id`` (set by ``session``); ``init-once`` also reads the
control and task facts that say whether a client asked for the turn and a task is running.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.stages.turns import is_interrupt_receipt
from compat.wire import StatusFrame, SystemInit

_TURN_CONTENT = frozenset({"assistant", "user", "stream_event", "result"})
#: system frames that belong to the turn itself (cbc: init, status, assistant, ...)
_TURN_SYSTEM = frozenset({"system/status"})
#: what also starts the turn when it comes before the turn's first message: a permission
#: prompt, a task the turn starts (the frames of a task that ended do not: they open the
#: turn cbc starts by itself, before its init)
_TURN_OPENERS = frozenset({"control_request", "system/task_started"})
#: the frames of a task that ended, which open a turn cbc starts by itself (Claude: before
#: its init); the init follows the notification
_TASK_END = frozenset({"system/task_updated", "system/task_progress"})
_NOTIFICATION = "system/task_notification"


def _is_stub(obj: SystemInit) -> bool:
    return not obj.get("tools") or obj.get("model") in (None, "", "unknown")


@register
@attrs.define
class ForeignInit(Stage):
    """Drop `system/init` frames of another session (a sub-agent's).

    A sub-agent's own init (another ``session_id``) can reach cbc's stdout (PROTOCOL.md §2,
    captures ``cbc-2.163.0/mockoai_workflow-inline``, ``mockoai_bg-agent``).
    """

    rule: ClassVar[str] = "foreign-init"
    reads: ClassVar[frozenset[str]] = frozenset({"session_id"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/init"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        sid = frame.view(SystemInit).get("session_id")
        if ctx.state.session_id is not None and sid != ctx.state.session_id:
            ctx.log(self.rule, f"dropped the system/init of session {sid!r}", "debug")
            return ()
        return None


@register
@attrs.define
class InitOnce(Stage):
    """Forward one `system/init` per turn (the fullest copy), drop the rest.

    cbc writes ``system/init`` twice per turn, the second copy possibly after the turn's
    ``result`` and possibly a stub (``tools: []``, ``model: "unknown"``) (PROTOCOL.md §2,
    captures ``cbc-2.163.0/mockoai_workflow-inline``, ``mockoai_bg-agent``).

    The rule holds an init until the turn actually starts (the first assistant, user,
    stream_event or result frame): a later init of the same session replaces the held one
    when it is the fuller copy, and an init that no turn follows is dropped. Task frames do
    not release it, which also matches Claude's order (notification, then the next turn's
    init). A ``system/status`` with a real state (``compacting``, ``requesting``), a
    ``control_request`` (a permission prompt) and a ``task_started`` still start the turn.

    In a turn no client line asked for (``ControlState.pending_user`` empty) while a
    background task runs, neither does cbc's ``system/status`` with ``status: null``, which
    it writes right after every init (``vocabulary`` drops it later): a turn cbc starts by
    itself when a background task ends opens with ``init``, ``status: null``, then the
    task's ``task_updated`` and ``task_notification``, where Claude writes the task frames
    first and then the turn's ``init`` (``scenarios/bg-task-failed-turn``): there
    the init is held past the status and goes out right after the first
    ``task_notification`` (at most ``open_wait`` s later, and at once when the turn's
    content or a prompt comes first). A client's turn starts at the status as before (its
    interrupt may come before any model output).

    Whether an interrupt's receipt came (``interrupted``) is the rule's own view, not
    ``ControlState.turn_interrupted`` (control-state's, which ``command-lifecycle``
    reads): it needs a receipt since the last ``result`` cbc wrote, in
    cbc's order, and above all one while no turn runs (an idle interrupt, after which cbc
    starts a turn of its own). The fact counts only receipts while control-state's turn
    runs, clears at the next turn start rather than at a result, and is written after
    ``control-reply``, which holds a result until its interrupt's receipt (the receipt
    reaches control-state first), and after this rule.
    """

    rule: ClassVar[str] = "init-once"
    reads: ClassVar[frozenset[str]] = frozenset(
        {"control.interrupts", "control.pending_user", "task.phase", "tasks"}
    )
    reads_earlier: ClassVar[frozenset[str]] = frozenset(
        {"control.pending_user", "task.phase", "tasks"}
    )
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {
            "system/init",
            *_TURN_CONTENT,
            *_TURN_SYSTEM,
            *_TURN_OPENERS,
            *_TASK_END,
            _NOTIFICATION,
            "control_response",
        }
    )

    #: seconds the init of a turn cbc started by itself waits for the frames of the task
    #: that ended (cbc writes them in the same millisecond as its init)
    open_wait: float = 0.5
    held: Frame | None = attrs.field(default=None, init=False)
    sent_this_turn: bool = attrs.field(default=False, init=False)
    #: cbc started the held init's turn (its status-null came, no client line pending)
    opened: bool = attrs.field(default=False, init=False)
    #: an interrupt's receipt came since the last result: the turn cbc starts by itself
    #: then is its own (``interrupt-terminal`` drops it), not a task's
    interrupted: bool = attrs.field(default=False, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t, st = frame.kind() or (None, None)  # (most frames of a turn are never parsed)
        if t == "control_response":
            if is_interrupt_receipt(frame.obj, ctx):
                self.interrupted = True
            return None
        if t == "system" and st == "init":
            return self._init(frame, ctx)
        if t == "result":
            out = self._release()
            self.sent_this_turn = self.interrupted = False
            return (*out, frame) if out else None
        if not self.sent_this_turn and self.held is not None:
            return self._opening(frame, t, st, ctx)
        return None

    def _init(self, frame: Frame, ctx: Context) -> Output:
        """An init: held (the fuller copy), or dropped inside a turn."""
        if self.sent_this_turn:
            return ()  # a second copy inside a turn
        if self.held is not None:
            if _is_stub(frame.view(SystemInit)) and not _is_stub(self.held.view(SystemInit)):
                return ()  # keep the fuller copy held; this one is dropped
            ctx.drop_held(self.rule)  # the held copy is replaced
        self.held = frame
        ctx.hold()
        return ()

    def _opening(self, frame: Frame, t: Any, st: Any, ctx: Context) -> Output:
        """A frame while an init is held: does it start the turn (then the init goes first)?"""
        key = f"{t}/{st}"
        if key in _TASK_END or (key == _NOTIFICATION and not self.opened):
            return None  # between turns (as before), or the ended task's frames
        if key == _NOTIFICATION:
            ctx.cancel_timer(self, "open")
            return (frame, *self._release())
        if (
            st == "status"
            and frame.view(StatusFrame).get("status", False) is None
            and not ctx.state.control.pending_user
            and not self.interrupted
            and ctx.state.has_open_task()
        ):
            # cbc's status-null after the init of a turn no client line asked for: the
            # frames of the task that ended come next, then the turn's content
            self.opened = True
            ctx.set_timer(self, "open", self.open_wait)
            return None
        if self.opened:
            ctx.cancel_timer(self, "open")
        out = self._release()
        return (*out, frame)

    def on_timer(self, key: str, ctx: Context) -> Output:
        if self.opened and self.held is not None and not self.sent_this_turn:
            return self._release()  # no task frames came: the turn starts now
        return None

    def _release(self) -> tuple[Frame, ...]:
        held, self.held = self.held, None
        self.opened = False
        if held is None:
            return ()
        self.sent_this_turn = True
        return (held,)

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        if self.held is not None:
            ctx.drop_held(self.rule)
            self.held = None
        return None
