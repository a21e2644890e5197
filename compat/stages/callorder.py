"""``call-order``: the frames of one message's tool calls reach the client in call order.

With several tool calls in one assistant message, Claude Code 2.1.220 writes each call's
frames together: a background call's ``task_started`` (with the ``background_tasks_changed``
snapshot tasks-snapshot puts before it), then that call's tool result, then the next
call's (both Claude runs of two-bg-tasks-apart; which call goes first differed between
them, one in call order, one the last call first). cbc 2.163.0 starts every background
call of the message before it writes any result, in either order (the raw run of
two-bg-tasks-apart started the second call first), so the first snapshot the client sees
already names the other task. The rule gives Claude's grouping, in call order.

Strategy: the stage records the tool calls of the current main-thread assistant message
(cbc writes one ``assistant`` frame per block, under one ``message.id``). A frame that
belongs to a call, its ``task_started`` (by ``tool_use_id``), the later frames of the task
it started (by ``task_id``) and its tool result ``user`` frame, passes only once every
earlier call of the message is done (its tool result has passed); until then it is held
(in arrival order per call) and released right after the frame that finishes the earlier
calls. The hold is bounded: after ``wait`` seconds the earlier calls are given up on; a
``result``, the next assistant message (the model saw every result) and the backend's exit
release everything; at most ``max_held`` frames per message. Nothing else is reordered:
frames that belong to no call of the message (and a subagent's own frames) pass.

It sits after task-correlation (which gives a background agent's ``task_started`` its
``tool_use_id``) and before every rule that reads the order of ``task_started``
(tasks-snapshot writes the snapshots from it).
"""

from __future__ import annotations

from typing import ClassVar, cast

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.taskkit import TASK_FRAMES, task_id_of

#: the most calls of one message tracked; later calls of a larger message pass as they come
MAX_CALLS = 256


def _calls_of(obj: wire.Assistant) -> list[str]:
    """The ids of the ``tool_use`` blocks of an assistant frame, in order."""
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return []
    return [
        b["id"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
    ]


def _results_of(obj: wire.User) -> list[str]:
    """The ``tool_use_id`` of every tool_result block of a ``user`` frame."""
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return []
    return [
        b["tool_use_id"]
        for b in content
        if isinstance(b, dict)
        and b.get("type") == "tool_result"
        and isinstance(b.get("tool_use_id"), str)
    ]


@register
@attrs.define
class CallOrder(Stage):
    """The frames of one message's tool calls in call order: a later call's task_started
    (and its task's frames) and tool result wait until the earlier calls' results passed."""

    rule: ClassVar[str] = "call-order"
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})
    kinds: ClassVar[frozenset[str] | None] = TASK_FRAMES | {"assistant", "user", "result"}

    #: seconds a later call's frames wait for the earlier calls' results
    wait: float = 1.0
    #: the most frames held for one message; past it everything held is released
    max_held: int = 64

    #: the current main-thread message: its id, its calls in order
    _message: str | None = attrs.field(default=None, init=False)
    _calls: dict[str, int] = attrs.field(factory=dict, init=False)
    #: calls of the message whose result passed (or that were given up on)
    _done: set[str] = attrs.field(factory=set, init=False)
    #: task id -> the call of the message that started it
    _tasks: dict[str, str] = attrs.field(factory=dict, init=False)
    #: call -> the frames held for it, in arrival order
    _held: dict[str, list[Frame]] = attrs.field(factory=dict, init=False)
    _n_held: int = attrs.field(default=0, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t = frame.type
        if t == "assistant":
            return self._assistant(frame, cast("wire.Assistant", frame.obj), ctx)
        if not self._calls and not self._held:
            return None  # no call: no order to keep
        if t == "result":
            return self._end(frame, ctx)
        if t == "user":
            user = cast("wire.User", frame.obj)
            if user.get("parent_tool_use_id"):
                return None  # a subagent's own tool result
            ids = [i for i in _results_of(user) if i in self._calls]
            return self._belongs(frame, ctx, ids, finishes=True) if ids else None
        obj = cast("wire.TaskStarted", frame.obj)  # a task frame (they share these keys)
        tid = task_id_of(wire.plain(obj))
        if tid is None:
            return None
        if frame.subtype == "task_started":
            use_id = obj.get("tool_use_id")
            if not isinstance(use_id, str):
                return None
            if use_id not in self._calls:
                if self._message is None or use_id in ctx.state.tool_uses:
                    return None  # no message open, or a call of an earlier one
                # cbc starts a call's task before it writes the call (twins
                # two-bg-tasks-apart, bridged): wait for the call to take its place
                self._tasks[tid] = use_id
                return self._hold(frame, ctx, use_id)
            self._tasks[tid] = use_id
            return self._belongs(frame, ctx, [use_id], finishes=False)
        call = self._tasks.get(tid)
        if call is None:
            return None
        if call not in self._calls:
            return self._hold(frame, ctx, call) if call in self._held else None
        return self._belongs(frame, ctx, [call], finishes=False)

    # -- the message and its calls ----------------------------------------------------------
    def _assistant(self, frame: Frame, obj: wire.Assistant, ctx: Context) -> Output:
        if obj.get("parent_tool_use_id"):
            return None  # a subagent's own message: not a call of the main thread
        msg = obj.get("message")
        mid = msg.get("id") if isinstance(msg, dict) else None
        mid = mid if isinstance(mid, str) and mid else None
        calls = _calls_of(obj)
        # without a message id a frame is a message of its own: no evidence of siblings
        same = mid is not None and mid == self._message
        out: Output = None
        if not same and (self._calls or self._held):
            # the model wrote its next message: it saw every result of the previous one
            out = self._end(frame, ctx)
        if not same:
            self._message = mid
        for use_id in calls:
            if len(self._calls) < MAX_CALLS and use_id not in self._calls:
                self._calls[use_id] = len(self._calls)
        if not any(c in self._held for c in calls):
            return out
        # frames of these calls that came before them now take their place
        released = self._release(ctx)
        return (*(out if out is not None else (frame,)), *released)

    def _end(self, frame: Frame, ctx: Context) -> Output:
        """The message is over: what it held passes before ``frame``, the tracking resets."""
        released = [f for call in self._calls_in_order() for f in self._held.pop(call, [])]
        for call in (*self._calls, *self._held):
            ctx.cancel_timer(self, call)
        self._message = None
        self._calls.clear()
        self._done.clear()
        self._tasks.clear()
        self._held.clear()
        self._n_held = 0
        if not released:
            return None
        return (*released, frame)

    def _calls_in_order(self) -> list[str]:
        return sorted(self._held, key=lambda c: self._calls.get(c, MAX_CALLS))

    def _free(self, call: str) -> bool:
        """Every call before ``call`` in the message is done (not so for a call not written
        yet)."""
        n = self._calls.get(call)
        if n is None:
            return False
        return all(c in self._done for c, i in self._calls.items() if i < n)

    def _belongs(self, frame: Frame, ctx: Context, ids: list[str], *, finishes: bool) -> Output:
        """A frame of the calls ``ids``: held behind an earlier call not done yet, or passed
        (a tool result then finishes its calls and lets the frames waiting on them go)."""
        last = max(ids, key=lambda c: self._calls[c])
        others = [c for c in self._calls if self._calls[c] < self._calls[last] and c not in ids]
        if last in self._held or any(c not in self._done for c in others):
            return self._hold(frame, ctx, last)
        if not finishes:
            return None
        self._done.update(ids)
        released = self._release(ctx)
        return (frame, *released) if released else None

    def _hold(self, frame: Frame, ctx: Context, call: str) -> Output:
        if self._n_held >= self.max_held:
            ctx.log(self.rule, f"more than {self.max_held} frames held: released", "warning")
            return self._end(frame, ctx)
        held = self._held.get(call)
        if held is None:
            held = self._held[call] = []
            ctx.set_timer(self, call, self.wait)
        held.append(frame)
        self._n_held += 1
        ctx.hold()
        return ()

    def _release(self, ctx: Context) -> list[Frame]:
        """The held frames of every call now free, in call order; a released tool result
        finishes its call, which may free the next."""
        out: list[Frame] = []
        for call in self._calls_in_order():
            if not self._free(call):
                break
            ctx.cancel_timer(self, call)
            frames = self._held.pop(call)
            self._n_held -= len(frames)
            for f in frames:
                if f.type == "user":
                    self._done.update(_results_of(cast("wire.User", f.obj)))
            out.extend(frames)
        return out

    def on_timer(self, key: str, ctx: Context) -> Output:
        if key not in self._held:
            return None
        if key not in self._calls:
            ctx.log(self.rule, f"call {key} not written within {self.wait:g}s: released", "debug")
            frames = self._held.pop(key)
            self._n_held -= len(frames)
            return frames
        n = self._calls[key]
        late = [c for c, i in self._calls.items() if i < n and c not in self._done]
        ctx.log(
            self.rule,
            f"no result for {', '.join(late)} within {self.wait:g}s: {key}'s frames released",
            "debug",
        )
        self._done.update(late)
        return self._release(ctx)

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        released = [f for call in self._calls_in_order() for f in self._held.pop(call, [])]
        self._held.clear()
        self._n_held = 0
        return released or None
