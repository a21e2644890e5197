"""``interrupt-request``, ``interrupt-reply``, ``interrupt-terminal``: an interrupt behaves
the way it does in Claude Code 2.1.220 (PROTOCOL.md §2 "Control protocol" and "Background
tasks").

Strategy: the client's interrupt is translated into cbc's, and what Claude reports for an
interrupt (the receipt, the end of each running task before it, no turn of its own after
it) is rebuilt from cbc's frames, synthesized where cbc reports late or not at all. The
rules share ``ControlState.interrupts`` (each interrupt and its ``cancel_queued``, written
by ``interrupt-request``) and read the pending and queued user lines.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
from compat import wire
from compat.frames import Frame
from compat.session import ControlRequest, Interrupt
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.lifecycle_cmd import lifecycle
from compat.stages.turns import TURN_CONTENT
from compat.taskkit import (
    RUNNING_TASK_FACTS,
    TASK_FRAMES,
    LiveTask,
    remember,
    stop_frames,
    task_id_of,
)

#: background task types an interrupt kills (shells keep running)
KILLS = frozenset({"local_agent", "local_workflow"})
#: the model's first output: a turn held as "pending" is decided by it
_COMMIT = frozenset({"assistant", "user", "stream_event", "result", "tool_progress"})
_TURN_EXTRA = frozenset(
    {
        "system/status",
        "system/api_retry",
        "system/thinking_tokens",
        "rate_limit_event",
        "tool_use_summary",
        "prompt_suggestion",
    }
)


@register
@attrs.define
class InterruptRequest(Stage):
    """Give cbc the interrupt it understands (its session id, a reason, nothing else).

    Claude takes ``{subtype:"interrupt"}`` with optional ``reason``/``cancel_queued`` and
    ignores a ``session_id`` (``nocreds_idle-interrupt_session-id_cancel-queued_…``); cbc needs
    its own session id (another one: ``Session not found: <id>``) and knows ``subtype,
    session_id, reason`` only (``nomodel_controls-after-session``). So the request is rebuilt
    from the latest ``system/init``'s session id; ``cancel_queued`` is remembered for the
    reply.

    Before cbc has a session it answers ``Session not found: current``
    (``nomodel_interrupt-before-session``, also with ``--session-id``) after its slow start:
    the bridge answers at once instead, and when a user line is already on its way the
    interrupt is held and sent the moment that turn's session exists (``control-reply`` sends
    it).

    With ``cancel_queued``, the lines ``user-line`` queued while the turn runs (not given to
    cbc yet) are taken back: dropped, each echoed ``command_lifecycle cancelled`` before the
    receipt (raw run queued-lines-cancel: Claude runs neither line).
    """

    rule: ClassVar[str] = "interrupt-request"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.pending_user",
            "control.permissions",
            "control.queued_lines",
            "control.unsent_queued",
            "session_id",
        }
    )
    writes: ClassVar[frozenset[str]] = frozenset(
        {"control.deferred", "control.interrupts", "control.prompt_interrupt", "control.requests"}
    )
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request"})

    #: seconds cbc may take to end a turn after deny + interrupt before it gets the
    #: interrupt itself
    prompt_wait: float = 5.0
    _held: Frame | None = attrs.field(default=None, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, request = ck.request_of(frame.obj)
        body = cast("wire.InterruptRequest", request)
        if rid is None or body.get("subtype") != "interrupt":
            return None
        info = self._remember(rid, body, ctx)
        reason = body.get("reason")
        reason = reason if isinstance(reason, str) and reason else ck.INTERRUPT_REASON
        if ctx.state.session_id is None:
            return self._answer_now(rid, request, info, reason, ctx)
        out = self._for_cbc(frame, body, reason, ctx)
        if self._end_prompts(rid, ctx):
            self._held = out  # sent only if cbc does not end the turn (on_timer)
            ctx.set_timer(self, rid, self.prompt_wait)
            ctx.hold()
            return ()
        return None if out is frame else (out,)

    def _remember(self, rid: str, body: wire.InterruptRequest, ctx: Context) -> Interrupt:
        """The interrupt, for the reply; with ``cancel_queued``, the queued lines taken
        back."""
        control = ctx.state.control
        cancel = body.get("cancel_queued") is True
        info = Interrupt(rid, cancel)
        remember(control.interrupts, rid, info, cap=256)
        if not cancel:
            return info
        info.cancelled = self._cancel_queued(ctx)
        if control.pending_user:
            ctx.log(
                self.rule,
                "cancel_queued: user lines already given to cbc cannot be "
                "taken back; they stay queued",
                "warning",
            )
        return info

    def _answer_now(
        self, rid: str, request: dict[str, Any], info: Interrupt, reason: str, ctx: Context
    ) -> Output:
        """cbc has no session yet: the bridge answers; the first turn on its way (if any)
        is interrupted once it exists."""
        control = ctx.state.control
        pending = list(control.pending_user)
        if pending:  # the first turn is on its way: interrupt it once it exists
            control.deferred.append({"subtype": "interrupt", "reason": reason})
            pending = pending[1:]
        reply: dict[str, Any] = {"still_queued": ck.still_queued(pending)}
        if info.cancel_queued:
            reply["cancelled"] = info.cancelled
        ctx.emit("down", Frame.from_obj(ck.success(rid, reply)), self.rule)
        ctx.count(self.rule, "answered:no-session")
        remember(
            control.requests, rid, ControlRequest(rid, "interrupt", request, True), cap=1024
        )  # a reply cbc may still send is dropped (control-reply)
        return ()

    def _for_cbc(
        self, frame: Frame, body: wire.InterruptRequest, reason: str, ctx: Context
    ) -> Frame:
        """The request as cbc takes it: its session id, the reason, nothing else."""
        new = {"subtype": "interrupt", "session_id": ctx.state.session_id, "reason": reason}
        extra = sorted(k for k in body if k not in ck.CBC_INTERRUPT_FIELDS)
        if extra:
            ctx.log(self.rule, f"interrupt fields cbc does not know dropped: {extra}", "debug")
        if new == body:
            return frame
        return frame.replace({**frame.view(wire.ControlRequest), "request": new})

    def on_timer(self, key: str, ctx: Context) -> Output:
        control = ctx.state.control
        held, self._held = self._held, None
        if held is None or control.prompt_interrupt != key:
            return None
        control.prompt_interrupt = None  # cbc did not end the turn: it gets the interrupt
        ctx.log(self.rule, "no result after the deny + interrupt: interrupt sent", "info")
        return (held,)

    def _end_prompts(self, rid: str, ctx: Context) -> bool:
        """Open permission prompts: cbc is told deny + interrupt instead of the interrupt.
        Given the interrupt, cbc withdraws the prompt, writes the rejection and asks the
        model again (raw run interrupt-permission-prompt: a "done." answer, a success; the
        same when the deny + interrupt goes just before the interrupt: cbc's interrupt wins,
        twin run 2026-12-01); given deny + interrupt alone it ends the turn at once, with
        no model request and no tool_result (a real cbc 2.163.0 run through the bridge,
        2026-12-01: one model request, then ``error_during_execution``), as Claude ends
        it. ``control-reply`` then writes the interrupt's receipt before that result; the
        interrupt itself is held and sent only when no result comes within
        ``prompt_wait``. The prompts stay open for ``permission-cancel`` (the client's
        ``control_cancel_request``, the denial). True when there were prompts."""
        control = ctx.state.control
        open_prompts = [p for p in control.permissions.values() if not p.interrupted]
        for prompt in open_prompts:
            prompt.interrupted = True
            reply: dict[str, Any] = {
                "allowed": False,
                "interrupt": True,
                "reason": "The user doesn't want to proceed with this tool use.",
            }
            if prompt.tool_use_id:
                reply["tool_use_id"] = prompt.tool_use_id
            ctx.emit("up", Frame.from_obj(ck.success(prompt.request_id, reply)), self.rule)
        if open_prompts:
            control.prompt_interrupt = rid
            ctx.count(self.rule, "prompts-ended", len(open_prompts))
        return bool(open_prompts)

    def _cancel_queued(self, ctx: Context) -> list[str]:
        """Take back the lines ``user-line`` queued (not given to cbc yet): out of
        ``pending_user``, dropped, each echoed ``command_lifecycle cancelled`` before the
        receipt as Claude does (raw run queued-lines-cancel); their uuids."""
        control = ctx.state.control
        queued = list(control.queued_lines)
        if not queued:
            return []
        control.queued_lines.clear()
        for _ in queued:  # the queued lines are the newest pending ones
            if control.pending_user:
                control.pending_user.pop()
        ctx.drop_held("user-line", len(queued))
        cancelled, taken = self._end_queued(queued, ctx)
        if taken:
            _forget_unsent(control.unsent_queued, taken)
        ctx.count(self.rule, "cancelled-queued", len(queued))
        return cancelled

    def _end_queued(self, queued: list[Frame], ctx: Context) -> tuple[list[str], Counter[str]]:
        """Each cancelled line's uuid, echoed ``command_lifecycle cancelled`` unless it was
        never echoed queued; and those never echoed, counted."""
        sid = ctx.state.session_id
        # the uuids never echoed queued (nothing to end), counted: each cancelled line takes
        # one, the first of its uuid (a search of the deque per line was lines x 1,024)
        unsent = Counter(ctx.state.control.unsent_queued)
        taken: Counter[str] = Counter()
        cancelled: list[str] = []
        for f in queued:
            uuid = _uuid_of(f)
            if uuid is None:
                continue
            cancelled.append(uuid)
            if unsent[uuid] > taken[uuid]:
                taken[uuid] += 1
            elif sid is not None:
                echo = lifecycle(uuid, "cancelled", ctx, sid)
                ctx.emit("down", Frame.synth(echo, self.rule), self.rule)
        return cancelled, taken


def _uuid_of(line: Frame) -> str | None:
    """A user line's uuid, when it has one."""
    obj = line.view(wire.User)
    uuid = obj.get("uuid") if isinstance(obj, dict) else None
    return uuid if isinstance(uuid, str) and uuid else None


def _forget_unsent(unsent: deque[str], taken: Counter[str]) -> None:
    """``unsent`` without the ``taken`` uuids (the first of each, as many as taken)."""
    kept = []
    for u in unsent:
        if taken[u]:
            taken[u] -= 1
        else:
            kept.append(u)
    unsent.clear()
    unsent.extend(kept)


@register
@attrs.define
class InterruptReply(Stage):
    """cbc's `{session_id, interrupted, reason}` (or "no session yet") -> `{still_queued}`.

    cbc's ``{session_id, interrupted, reason}`` (or that error) becomes ``{still_queued: [uuids
    of user lines not started]}``, plus ``cancelled: [uuids taken back]`` when
    ``cancel_queued`` was asked (a line already given to cbc cannot be taken back: it stays in
    ``still_queued``).
    """

    rule: ClassVar[str] = "interrupt-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.interrupts", "control.pending_user"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, sub, response = ck.response_of(frame.obj)
        if rid is None:
            return None
        control = ctx.state.control
        info = control.interrupts.get(rid)
        resp = cast("wire.ControlResponseBody", response)
        body = cast("wire.InterruptReceipt", ck.body_of(response))
        if info is None:  # interrupt-request off: recognise cbc's receipt by its shape
            if not _is_cbc_receipt(sub, body):
                return None
            info = Interrupt(rid)
        if sub == "error":
            message = _session_not_found(resp)
            if message is None:
                return None
            info.backend_error = message  # Claude: an interrupt with nothing to stop succeeds
        elif sub != "success":
            return None
        reply: dict[str, Any] = {"still_queued": ck.still_queued(control.pending_user)}
        if info.cancel_queued:
            reply["cancelled"] = info.cancelled
        return (
            ck.with_response(frame, {"subtype": "success", "request_id": rid, "response": reply}),
        )


def _is_cbc_receipt(sub: str | None, body: wire.InterruptReceipt) -> bool:
    """cbc's success ``{session_id, interrupted, reason}`` (not Claude's ``still_queued``)."""
    return sub == "success" and "interrupted" in body and "still_queued" not in body


def _session_not_found(resp: wire.ControlResponseBody) -> str | None:
    """cbc's error for an interrupt before its session exists, else None."""
    message = resp.get("error")
    if isinstance(message, str) and message.startswith(ck.SESSION_NOT_FOUND):
        return message
    return None


def _killed(task: LiveTask) -> bool:
    """An interrupt kills the task (an agent or a workflow; shells keep running)."""
    ttype = task.task_type  # (``TaskInfo.shown``: Claude's type, or what cbc wrote)
    return isinstance(ttype, str) and ttype in KILLS


@register
@attrs.define
class InterruptTerminal(Stage):
    """End running agents and workflows before the interrupt receipt; drop cbc's own turn.

    Runs before ``progress-final``/``terminal-guarantee``. cbc kills running workflows and
    background agents at once but reports it up to ~30 s later
    (``mockoai_interrupt-idle-workflow-2-running-agents``); Claude reports
    ``task_updated{killed,end_time}`` + ``task_notification{stopped}`` for each before the
    receipt and keeps background shells running
    (``mockapi_idle-interrupt-kills-bg-workflow-keeps-bg-bash``). Those frames are synthesized
    ahead of the receipt and pass the later task rules (``tasks-snapshot`` adds the snapshot
    before each, ``progress-final`` the last progress, ``terminal-guarantee`` marks them
    notified); cbc's late duplicates are dropped here.

    cbc then runs a model turn by itself (init, status, assistant, result:
    ``mockoai_interrupt-midturn-…``); Claude does not. Mode ``drop-auto-turn`` drops such a
    turn: one that starts within ``window`` seconds of an interrupt that ended tasks, when no
    client user line is pending (``ControlState.pending_user``) and no genuine task
    notification (a shell that really finished, which Claude would also answer with a turn)
    came since the last turn. Its ``system/status`` frames are held until that is known; tasks
    it starts are hidden; a permission request it makes is denied. ``keep`` forwards it.
    """

    rule: ClassVar[str] = "interrupt-terminal"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.interrupts",
            "control.pending_user",
            "control.turn_active",
            "control.turn_from_client",
            "control.turns",
            "session_id",
            *RUNNING_TASK_FACTS,
        }
    )
    #: the running tasks an interrupt ends: terminal-guarantee's, later (a receipt is no
    #: task frame: every start before it is in the phase already)
    reads_earlier: ClassVar[frozenset[str]] = frozenset({"task.phase", "task.shown"})
    modes: ClassVar[tuple[str, ...]] = ("drop-auto-turn", "keep")
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"control_response", "control_request", *TASK_FRAMES, *TURN_CONTENT, *_TURN_EXTRA}
    )

    #: seconds after an interrupt during which a turn nobody asked for is cbc's own
    window: float = 90.0
    _ended: dict[str, None] = attrs.field(factory=OrderedDict, init=False)  # by an interrupt
    #: started by a dropped turn
    _hidden: dict[str, None] = attrs.field(factory=OrderedDict, init=False)
    _armed: bool = attrs.field(default=False, init=False)
    #: frames of a turn nobody asked for, held until the model's first output decides
    _held: list[Frame] = attrs.field(factory=list, init=False)
    _justified: bool = attrs.field(default=False, init=False)  # a genuine notification came
    _turn_no: int = attrs.field(default=0, init=False)  # ControlState.turns of the last turn
    #: that turn: "keep", "drop", or "pending" (held until the model answers)
    _turn: str = attrs.field(default="keep", init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        kind = frame.key()
        if kind == "control_response":
            return self._receipt(frame, ctx)
        if kind in TASK_FRAMES:
            return self._task(frame, kind, ctx)
        if kind == "control_request":
            return self._permission(frame, ctx)
        return self._turn_frame(frame, kind, ctx)

    # -- the receipt ------------------------------------------------------------------
    def _receipt(self, frame: Frame, ctx: Context) -> Output:
        rid, sub, _ = ck.response_of(frame.obj)
        info = ctx.state.control.interrupts.get(rid) if rid is not None else None
        if info is None or sub != "success" or info.backend_error is not None:
            return None
        out = self._end_killed(ctx)
        if not out:
            return None
        ctx.log(
            self.rule,
            f"interrupt {rid!r}: ended {len(out) // 2} background agent/workflow "
            "task(s) before its receipt",
            "debug",
        )
        if self.mode == "drop-auto-turn":
            self._armed, self._justified = True, False
            ctx.set_timer(self, "window", self.window)
        return (*out, frame)

    def _end_killed(self, ctx: Context) -> list[Frame]:
        """The end of each live task an interrupt kills (agents, workflows), as Claude
        reports it; they are followed no more."""
        out: list[Frame] = []
        end = ctx.wall_ms()
        for info in ctx.state.running_tasks():
            task = info.shown
            if task is None or not _killed(task):
                continue
            remember(self._ended, info.task_id, None)
            out += stop_frames(ctx, self.rule, info.task_id, task, end)
        return out

    # -- task frames ------------------------------------------------------------------
    def _task(self, frame: Frame, kind: str, ctx: Context) -> Output:
        obj = frame.obj
        tid = task_id_of(obj)
        if tid is None:
            return None
        if tid in self._hidden:
            return ()
        if kind == "system/task_started":
            return self._started(tid, obj, ctx)
        if tid in self._ended:
            if kind == "system/task_progress":
                return None  # late progress: the late-progress rule's business
            ctx.count(self.rule, "late-duplicate")
            return ()  # cbc's own report of what the bridge already ended
        if kind == "system/task_notification" and self._armed:
            return self._notified(frame, ctx)
        return None

    def _started(self, tid: str, obj: dict[str, Any], ctx: Context) -> Output:
        """A task starts: hidden when the turn that starts it is dropped (else the next
        interrupt ends it, if it still runs: ``TaskInfo.phase``)."""
        if self._turn == "drop" and self._current(ctx, ""):
            remember(self._hidden, tid, None)
            ctx.count(self.rule, "hidden-task")
            return ()
        return None

    def _notified(self, frame: Frame, ctx: Context) -> Output:
        """A genuine task notification after an interrupt: the turn it comes with (or the
        next one) is Claude's too, and what was held for it follows it."""
        if self._turn == "pending" and self._current(ctx, ""):
            self._turn = "keep"  # the turn answers a real completion
        else:
            self._justified = True  # ... or the next one will
        held, self._held = self._held, []
        return (frame, *held) if held else None  # Claude: notification, then the turn

    # -- turn frames ------------------------------------------------------------------
    def _current(self, ctx: Context, kind: str) -> bool:
        """The frame belongs to the last turn control-state started (its result included)."""
        control = ctx.state.control
        return control.turns == self._turn_no and (control.turn_active or kind == "result")

    def _turn_frame(self, frame: Frame, kind: str, ctx: Context) -> Output:
        control = ctx.state.control
        if kind in TURN_CONTENT and control.turns != self._turn_no:
            self._turn_no = control.turns  # this frame starts a turn
            self._turn = self._decide(ctx)
        elif not self._current(ctx, kind):
            return self._between_turns(frame, ctx)
        if self._turn == "pending":
            if kind not in _COMMIT:
                return self._hold(frame, ctx)
            self._drop_turn(ctx)  # the model answered: a turn nobody asked for
        if self._turn == "drop":
            return ()
        held, self._held = self._held, []
        return (*held, frame) if held else None

    def _between_turns(self, frame: Frame, ctx: Context) -> Output:
        """A frame between turns (status, api_retry... before an init): part of what comes
        next, held with it after an interrupt unless the client asked for a turn."""
        if self._armed and not ctx.state.control.pending_user:
            return self._hold(frame, ctx)
        return None

    def _hold(self, frame: Frame, ctx: Context) -> Output:
        """Held until the turn it goes with is decided."""
        self._held.append(frame)
        ctx.hold()
        return ()

    def _decide(self, ctx: Context) -> str:
        if not self._armed:
            return "keep"
        if ctx.state.control.turn_from_client:
            self._disarm(ctx)  # the client is back: what comes now was asked for
            return "keep"
        if self._justified:  # a real completion: Claude would run a turn for it too
            self._justified = False
            return "keep"
        return "pending"

    def _drop_turn(self, ctx: Context) -> None:
        self._turn = "drop"
        ctx.count(self.rule, "auto-turn")
        ctx.drop_held(self.rule, len(self._held))
        self._held.clear()
        ctx.log(
            self.rule, "dropped the model turn cbc started by itself after the interrupt", "debug"
        )

    def _permission(self, frame: Frame, ctx: Context) -> Output:
        rid, request = ck.request_of(frame.obj)
        body = cast("wire.CanUseTool", request)
        if rid is None or body.get("subtype") != "can_use_tool":
            return None
        if self._turn == "pending" and self._current(ctx, ""):
            self._drop_turn(ctx)  # cbc asks before it writes the assistant frame
        if not (self._turn == "drop" and self._current(ctx, "")):
            return None
        reply: dict[str, Any] = {
            "allowed": False,
            "interrupt": True,
            "reason": "The user doesn't want to proceed with this tool use.",
        }
        ctx.emit("up", Frame.from_obj(ck.success(rid, reply)), self.rule)
        return ()

    def _disarm(self, ctx: Context) -> None:
        self._armed, self._justified = False, False
        ctx.cancel_timer(self, "window")

    def on_timer(self, key: str, ctx: Context) -> Output:
        self._armed, self._justified = False, False
        if self._turn == "pending":
            self._turn = "keep"
        held, self._held = self._held, []
        return held or None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        held, self._held = self._held, []
        return held or None
