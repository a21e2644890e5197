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

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.taskkit import TASK_FRAMES, task_id_of

#: the most calls of one message tracked; later calls of a larger message pass as they come
MAX_CALLS = 256


def _calls_of(obj: wire.Assistant) -> list[str]:
    """The ids of the ``tool_use`` blocks of an assistant frame, in order."""
    return _block_ids(obj, "tool_use", "id")


def _results_of(obj: wire.User) -> list[str]:
    """The ``tool_use_id`` of every tool_result block of a ``user`` frame."""
    return _block_ids(obj, "tool_result", "tool_use_id")


def _block_ids(obj: wire.Assistant | wire.User, block_type: str, key: str) -> list[str]:
    """The string ``key`` of each ``block_type`` block of the frame's ``message.content``."""
    return [
        b[key]
        for b in _content(obj)
        if isinstance(b, dict) and b.get("type") == block_type and isinstance(b.get(key), str)
    ]


def _content(obj: wire.Assistant | wire.User) -> list[Any]:
    """The frame's ``message.content`` (``[]`` when it is not a list)."""
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return content if isinstance(content, list) else []


def _message_id(obj: wire.Assistant) -> str | None:
    """The id of an assistant frame's message (None: none, or not a non-empty string)."""
    msg = obj.get("message")
    mid = msg.get("id") if isinstance(msg, dict) else None
    return mid if isinstance(mid, str) and mid else None


def _passing(out: Output, frame: Frame) -> Sequence[Frame]:
    """What a frame's call gave: ``out``, or the frame itself when it passes (None)."""
    return out if out is not None else (frame,)


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
            return self._assistant(frame, frame.view(wire.Assistant), ctx)
        if not self._calls and not self._held:
            return None  # no call: no order to keep
        if t == "result":
            return self._end(frame, ctx)
        if t == "user":
            return self._user(frame, frame.view(wire.User), ctx)
        return self._task(frame, ctx)

    def _user(self, frame: Frame, obj: wire.User, ctx: Context) -> Output:
        """A tool result of calls of the message: it finishes them, in call order."""
        if obj.get("parent_tool_use_id"):
            return None  # a subagent's own tool result
        ids = [i for i in _results_of(obj) if i in self._calls]
        return self._belongs(frame, ctx, ids, finishes=True) if ids else None

    def _task(self, frame: Frame, ctx: Context) -> Output:
        """A task frame: it belongs to the call that started the task."""
        tid = task_id_of(frame.obj)  # (any task frame's)
        if tid is None:
            return None
        if frame.subtype == "task_started":
            return self._task_started(frame, frame.view(wire.TaskStarted), tid, ctx)
        call = self._tasks.get(tid)
        return None if call is None else self._task_later(frame, call, ctx)

    def _task_started(self, frame: Frame, obj: wire.TaskStarted, tid: str, ctx: Context) -> Output:
        """A ``task_started``: its call (``tool_use_id``) is the task's from now on."""
        use_id = obj.get("tool_use_id")
        if not isinstance(use_id, str):
            return None
        if use_id in self._calls:
            self._tasks[tid] = use_id
            return self._belongs(frame, ctx, [use_id], finishes=False)
        if self._message is None or use_id in ctx.state.tool_uses:
            return None  # no message open, or a call of an earlier one
        # cbc starts a call's task before it writes the call (twins two-bg-tasks-apart,
        # bridged): wait for the call to take its place
        self._tasks[tid] = use_id
        return self._hold(frame, ctx, use_id)

    def _task_later(self, frame: Frame, call: str, ctx: Context) -> Output:
        """A later frame of the task ``call`` started (a call not written yet: held behind
        what it already holds)."""
        if call in self._calls:
            return self._belongs(frame, ctx, [call], finishes=False)
        return self._hold(frame, ctx, call) if call in self._held else None

    # -- the message and its calls ----------------------------------------------------------
    def _assistant(self, frame: Frame, obj: wire.Assistant, ctx: Context) -> Output:
        if obj.get("parent_tool_use_id"):
            return None  # a subagent's own message: not a call of the main thread
        mid = _message_id(obj)
        calls = _calls_of(obj)
        # without a message id a frame is a message of its own: no evidence of siblings
        same = mid is not None and mid == self._message
        out = None if same else self._next_message(frame, mid, ctx)
        self._track(calls)
        if not any(c in self._held for c in calls):
            return out
        # frames of these calls that came before them now take their place
        return (*_passing(out, frame), *self._release(ctx))

    def _next_message(self, frame: Frame, mid: str | None, ctx: Context) -> Output:
        """The model wrote its next message: it saw every result of the previous one."""
        out = self._end(frame, ctx) if self._calls or self._held else None
        self._message = mid
        return out

    def _track(self, calls: list[str]) -> None:
        """The message's calls, in order (up to ``MAX_CALLS``)."""
        for use_id in calls:
            if len(self._calls) < MAX_CALLS and use_id not in self._calls:
                self._calls[use_id] = len(self._calls)

    def _end(self, frame: Frame, ctx: Context) -> Output:
        """The message is over: what it held passes before ``frame``, the tracking resets."""
        released = self._pop_held()
        for call in (*self._calls, *self._held):
            ctx.cancel_timer(self, call)
        self._message = None
        self._calls.clear()
        self._done.clear()
        self._tasks.clear()
        self._held.clear()
        self._n_held = 0
        return (*released, frame) if released else None

    def _pop_held(self) -> list[Frame]:
        """Every frame held, in call order (a call not written yet last)."""
        return [f for call in self._calls_in_order() for f in self._held.pop(call, [])]

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
        if self._waits(last, ids):
            return self._hold(frame, ctx, last)
        return self._finish(frame, ctx, ids) if finishes else None

    def _waits(self, last: str, ids: list[str]) -> bool:
        """Frames of ``last`` are already held, or a call before it (not one of ``ids``) is
        not done."""
        n = self._calls[last]
        others = [c for c, i in self._calls.items() if i < n and c not in ids]
        return last in self._held or any(c not in self._done for c in others)

    def _finish(self, frame: Frame, ctx: Context, ids: list[str]) -> Output:
        """A tool result passes: its calls are done, the frames they freed follow it."""
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
            out.extend(self._release_call(call, ctx))
        return out

    def _release_call(self, call: str, ctx: Context) -> list[Frame]:
        """The frames held for ``call``, which is free: a tool result among them finishes
        its calls."""
        ctx.cancel_timer(self, call)
        frames = self._held.pop(call)
        self._n_held -= len(frames)
        for f in frames:
            if f.type == "user":
                self._done.update(_results_of(f.view(wire.User)))
        return frames

    def on_timer(self, key: str, ctx: Context) -> Output:
        if key not in self._held:
            return None
        if key not in self._calls:
            return self._unwritten(key, ctx)
        return self._give_up(key, ctx)

    def _unwritten(self, key: str, ctx: Context) -> Output:
        """The call ``key`` was not written in time: its frames go as they are."""
        ctx.log(self.rule, f"call {key} not written within {self.wait:g}s: released", "debug")
        frames = self._held.pop(key)
        self._n_held -= len(frames)
        return frames

    def _give_up(self, key: str, ctx: Context) -> Output:
        """The calls before ``key`` had no result in time: they count as done."""
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
        released = self._pop_held()
        self._held.clear()
        self._n_held = 0
        return released or None
