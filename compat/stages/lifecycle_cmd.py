"""``command-lifecycle``: the echo of each client user line Claude Code 2.1.220 writes
(capability ``msg_lifecycle_v1``; PROTOCOL.md §2 "Session, turns and results").

Claude (twins ``simple-success``, ``bg-agent``, ``user-line-during-first-turn``;
``claude-2.1.220/mockapi_workflow_local-workflow-task-progress``): for a user line with a
``uuid``, ``{"type":"command_lifecycle","command_uuid":<the line's uuid>,"state":…,
"uuid":<new>,"session_id":…}`` with state ``queued`` as soon as the line is read,
``started`` right before the turn that answers it (before its ``system/init``), and
``completed`` right after that turn's ``result``, whose ``user_message_uuid`` is the
line's uuid. A line without ``uuid`` gets none of them (``claude-2.1.220/dummykey_*``,
``nocreds_*``), nor does a turn no line started (a task notification's).

cbc 2.163.0 writes none of it. ``user-line`` (up) sends ``queued`` when it forwards the
line (``ctx.emit``: straight to the client) once the session id is known, and leaves the
uuid in ``ControlState.unsent_queued`` before that (cbc tells the id only in its first
``system/init``). This stage, just before ``control-state`` (after ``init-once``: one
init per turn), sends the waiting ``queued`` frames and ``started`` at a turn start, reading
the uuid ``control-state`` is about to take from ``ControlState.pending_user``, and at the
turn's ``result`` adds ``user_message_uuid`` and sends ``completed`` after it. Inside a
turn only its result and (below) its first answer matter.

An interrupted line: Claude ends its lifecycle with ``cancelled``, not ``completed``, and
its ``result`` (``error_during_execution``, ``aborted_*``) carries no
``user_message_uuid`` (``claude-2.1.220/mockapi_interrupt-during-foreground-bash_aborted-
tools``, ``…_permission-prompt-stdio_interrupt_…``, ``dummykey_interrupt-midturn_…``;
twins ``interrupt-midturn-workflow.claude.jsonl``; 2.1.332 adds it). A turn counts as
interrupted when the receipt of an interrupt arrived while it ran
(``ControlState.turn_interrupted``: ``control-state`` keeps it, and it still holds at the
result here, before ``control-state`` ends the turn), or its result says ``aborted_*``.

Under a target that names the line on its first answer (2.1.332, ``Target.line_answer_keys``)
the first main-thread ``assistant`` frame of the line's turn (after ``frame-fields``' split:
the first block of the first message) gets ``user_message_uuid``/``user_message_uuids``;
the turn's later assistant frames pass.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.stages.turns import TURN_CONTENT
from compat.target import target_of, values


def lifecycle(command_uuid: str, state: str, ctx: Context, session_id: str) -> dict[str, Any]:
    """Claude's ``command_lifecycle`` frame, keys in its order."""
    return {
        "type": "command_lifecycle",
        "command_uuid": command_uuid,
        "state": state,
        "uuid": ctx.env.new_uuid(),
        "session_id": session_id,
    }


@register
@attrs.define
class CommandLifecycle(Stage):
    """`command_lifecycle` started/completed (cancelled when interrupted) around a client
    line's turn; the result's `user_message_uuid` (none on an interrupted turn's); a target's
    keys on the turn's first main-thread answer (2.1.332: the line's uuid)."""

    rule: ClassVar[str] = "command-lifecycle"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.denying_interrupts",
            "control.pending_user",
            "control.turn_active",
            "control.turn_interrupted",
            "session_id",
        }
    )
    writes: ClassVar[frozenset[str]] = frozenset({"control.unsent_queued"})
    #: (``denying_interrupts``: the turn's, before interrupted-turn ends the turn on them;
    #: ``turn_interrupted``: the running turn's, before control-state ends it)
    reads_earlier: ClassVar[frozenset[str]] = frozenset(
        {
            "control.denying_interrupts",
            "control.pending_user",
            "control.turn_active",
            "control.turn_interrupted",
        }
    )
    kinds: ClassVar[frozenset[str] | None] = TURN_CONTENT

    #: the uuid of the line the running turn answers (None: no line, or one without uuid)
    _current: str | None = attrs.field(default=None, init=False)
    #: the running line's first answer still to name (``Target.line_answer_keys``)
    _unnamed: bool = attrs.field(default=False, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t = frame.key()
        active = ctx.state.control.turn_active
        if active and t != "result":
            # inside the turn: only its first answer matters
            return self._name_line(frame, ctx) if t == "assistant" else None
        obj = frame.view(wire.Envelope)
        sid = _session_id(obj, ctx)
        # not active: this frame starts a turn (control-state counts it)
        out = [] if active else self._start(ctx, sid)
        if t == "result":
            return self._result(frame, frame.view(wire.TurnResult), out, active, ctx, sid)
        return _after(out, self._first_frame(frame, t, ctx))

    def _first_frame(self, frame: Frame, t: object, ctx: Context) -> Frame:
        """A turn's first frame; an assistant frame (no init before it) names the line."""
        named = self._name_line(frame, ctx) if t == "assistant" else None
        return named[0] if named else frame

    def _start(self, ctx: Context, sid: str) -> list[Frame]:
        """A turn starts: the waiting ``queued`` echoes, then ``started`` for its line."""
        control = ctx.state.control
        out = [self._synth(line, "queued", ctx, sid) for line in _drain(control.unsent_queued)]
        line = control.pending_user[0] if control.pending_user else None
        self._current = line
        self._unnamed = line is not None and bool(target_of(ctx).line_answer_keys)
        if line is not None:
            out.append(self._synth(line, "started", ctx, sid))
        return out

    def _result(
        self,
        frame: Frame,
        obj: wire.TurnResult,
        out: list[Frame],
        active: bool,
        ctx: Context,
        sid: str,
    ) -> Output:
        """The turn's ``result``: the running line's lifecycle ends (``_end``), interrupted
        when an interrupt's receipt came while it ran (``turn_interrupted``; a result that
        starts its turn had none: the fact is still the last turn's)."""
        line, self._current = self._current, None
        self._unnamed = False
        if line is None:
            return _after(out, frame)
        interrupted = active and ctx.state.control.turn_interrupted
        return self._end(frame, obj, line, interrupted, out, ctx, sid)

    def _end(
        self,
        frame: Frame,
        obj: wire.TurnResult,
        line: str,
        interrupted: bool,
        out: list[Frame],
        ctx: Context,
        sid: str,
    ) -> Output:
        """The turn's ``result``: it names its line (or not, as the target's does), and the
        line's lifecycle ends ``cancelled`` or ``completed``."""
        state, names = _ending(obj, interrupted, ctx)
        frame = _naming(frame, obj, line) if names else _not_naming(frame, obj)
        if state == "cancelled":
            ctx.count(self.rule, "cancelled")
        return (*out, frame, self._synth(line, state, ctx, sid))

    def _name_line(self, frame: Frame, ctx: Context) -> tuple[Frame] | None:
        """The line's first answer names it (``Target.line_answer_keys``): the first
        main-thread assistant frame of its turn; a subagent's frame is not that."""
        obj = frame.view(wire.Assistant)
        line = self._current
        if not self._unnamed or line is None or obj.get("parent_tool_use_id") is not None:
            return None
        self._unnamed = False
        facts = {"turn_line": line, "turn_line_uuids": [line]}
        keys = values(target_of(ctx).line_answer_keys, facts)
        if all(obj.get(k) == v for k, v in keys):
            return None
        ctx.count(self.rule, "line-answer-named")
        return (frame.replace({**obj, **dict(keys)}),)

    def _synth(self, line: str, state: str, ctx: Context, sid: str) -> Frame:
        return Frame.synth(lifecycle(line, state, ctx, sid), self.rule)


def _session_id(obj: wire.Envelope, ctx: Context) -> str:
    """The session id the lifecycle frames carry (the frame's before the session knows it)."""
    sid = ctx.state.session_id or obj.get("session_id")
    return sid if isinstance(sid, str) else ""


def _drain(queue: deque[str]) -> Iterator[str]:
    """The queue's entries, oldest first, each taken off as it is yielded."""
    while queue:
        yield queue.popleft()


def _after(out: list[Frame], frame: Frame) -> Output:
    """``frame`` after the frames ``out`` synthesized before it; None (it passes) if none."""
    return (*out, frame) if out else None


def _ending(obj: wire.TurnResult, interrupted: bool, ctx: Context) -> tuple[str, bool]:
    """How the line's lifecycle ends, and whether the turn's result names the line: an
    interrupted turn is ``cancelled`` and its result names no line (but under a target
    that says so, 2.1.332: ``compat.target``); another is ``completed``, its result names
    the line, but Claude's error_max_turns names none (twins max-turns). A turn a call
    the client denied with ``interrupt: true`` ended is interrupted (twins
    permission-deny-interrupt: ``interrupted-turn`` rewrites its result later)."""
    if interrupted or _aborted(obj) or _denied_interrupt(obj, ctx):
        return "cancelled", target_of(ctx).interrupted_result_names_line
    return "completed", not _ends_at_max_turns(obj)


def _denied_interrupt(obj: wire.TurnResult, ctx: Context) -> bool:
    """The client denied a call of this turn with ``interrupt: true`` and cbc ended it in
    error (``Permission denied for tool(s): …``)."""
    return bool(ctx.state.control.denying_interrupts) and obj.get("is_error") is True


def _aborted(obj: wire.TurnResult) -> bool:
    """The result says the turn was cut short (``aborted_*``, ``api_error``)."""
    reason = obj.get("terminal_reason")
    return isinstance(reason, str) and (reason.startswith("aborted") or reason == "api_error")


def _naming(frame: Frame, obj: wire.TurnResult, line: str) -> Frame:
    """The result with ``user_message_uuid`` the line's."""
    if obj.get("user_message_uuid") == line:
        return frame
    return frame.replace({**obj, "user_message_uuid": line})


def _not_naming(frame: Frame, obj: wire.TurnResult) -> Frame:
    """The result without ``user_message_uuid``."""
    if "user_message_uuid" not in obj:
        return frame
    return frame.replace({k: v for k, v in obj.items() if k != "user_message_uuid"})


def _ends_at_max_turns(obj: wire.Result) -> bool:
    from compat.stages.result_shape import is_cbc_max_turns

    return obj.get("subtype") == "error_max_turns" or is_cbc_max_turns(wire.plain(obj))
