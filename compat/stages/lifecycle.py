"""``terminal-guarantee``, ``late-progress``, ``tasks-snapshot``: every task the client saw
start ends exactly once, and nothing follows its end (PROTOCOL.md §1-2, seed 000 §delivery).

Strategy: these stages come after every rule that holds or drops lifecycle frames
(``task-noise``, ``progress-final``), so what they see is what the client will see.
``terminal-guarantee`` alone writes a task's phase (``TaskInfo.phase/status/end_time``,
and ``shown``: the start as forwarded, what a rule that ends a task itself says of it);
the other two keep their own per-task records. All three read and build task frames with
``compat.taskkit``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, ClassVar

import attrs

from compat.frames import Frame
from compat.session import TaskInfo, TaskPhase
from compat.stage import Context, Output, Stage, register
from compat.target import target_of
from compat.taskkit import (
    MAX_LIVE_TASKS,
    NOTIFICATION_OF,
    PATCH_OF,
    TERMINAL,
    LiveTask,
    claude_summary,
    patch_status,
    remember,
    system_frame,
    task_id_of,
)
from compat.wire import (
    Envelope,
    SnapshotTask,
    TaskNotification,
    TaskStarted,
    TaskUpdated,
    as_dict,
)

_LIFECYCLE = frozenset({"system/task_started", "system/task_updated", "system/task_notification"})


@attrs.define
class _Open:
    shown: LiveTask  # the shared ``TaskInfo.shown``
    status: str | None = None  # Claude patch status once terminal
    end_time: int | None = None


@register
@attrs.define
class TerminalGuarantee(Stage):
    """Exactly one `task_notification` per started task, even if the backend dies.

    The one place that decides which frames end a task, and the writer of
    ``TaskInfo.phase/status/end_time/shown`` (``compat.session.TaskPhase``). A terminal
    ``task_updated`` arms a ``grace`` timer; when it fires with no notification, one is
    synthesized. A notification without a terminal update gets one synthesized before it
    (Claude always sends the pair). Second terminal updates and second notifications are
    dropped, as is any ``task_updated`` after the notification: that is how the late
    duplicates cbc sends after ``interrupt-terminal`` already ended a task disappear. At
    backend exit every open task gets ``task_updated{killed,end_time}`` +
    ``task_notification{stopped}``.
    """

    rule: ClassVar[str] = "terminal-guarantee"
    reads: ClassVar[frozenset[str]] = frozenset(
        {"session_id", "task.task_id", "task.tool_use_id", "tasks"}
    )
    writes: ClassVar[frozenset[str]] = frozenset(
        {"finished", "task.end_time", "task.phase", "task.shown", "task.status"}
    )
    kinds: ClassVar[frozenset[str] | None] = _LIFECYCLE

    #: seconds a terminal task_updated waits for cbc's own notification
    grace: float = 5.0
    _open: dict[str, _Open] = attrs.field(factory=dict, init=False)
    _done: dict[str, None] = attrs.field(factory=OrderedDict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(Envelope)
        tid = task_id_of(obj)
        if tid is None:
            return None
        st = obj.get("subtype")
        info = ctx.state.task(tid)
        if st == "task_started":
            return self._started(frame.view(TaskStarted), tid, info, ctx)
        if tid in self._done:
            ctx.count(self.rule, f"after-notification:{st}")
            return ()
        task = self._open.get(tid)
        if task is not None:
            _seen_started(info, task)  # the client saw it start
        if st == "task_updated":
            return self._updated(frame.view(TaskUpdated), tid, task, info, ctx)
        return self._notified(frame, frame.view(TaskNotification), tid, task, info, ctx)

    def _started(self, obj: TaskStarted, tid: str, info: TaskInfo, ctx: Context) -> Output:
        """A task starts (once: a second ``task_started`` is dropped)."""
        if tid in self._open or tid in self._done:
            ctx.log(self.rule, f"task {tid}: second task_started dropped", "debug")
            return ()
        task = self._open[tid] = _Open(LiveTask.shown(obj, info.tool_use_id))
        info.shown = task.shown
        info.start()
        return None

    def _updated(
        self, obj: TaskUpdated, tid: str, task: _Open | None, info: TaskInfo, ctx: Context
    ) -> Output:
        """A ``task_updated``: a terminal one ends the task and arms the ``grace`` timer;
        any after that is dropped."""
        status = patch_status(obj)
        if task is None:
            return None  # a task the client never saw start: not ours to police
        if task.status is not None:
            # already ended: a duplicate, or a change after the end
            ctx.count(self.rule, "after-terminal")
            return ()
        if status in TERMINAL:
            self._ended(obj, tid, task, status, info, ctx)
        elif status is not None:
            info.status = status
        return None

    def _ended(
        self,
        obj: TaskUpdated,
        tid: str,
        task: _Open,
        status: str,
        info: TaskInfo,
        ctx: Context,
    ) -> None:
        """The terminal ``task_updated``: the task's phase is ended, its notification due
        within ``grace`` seconds."""
        task.status = PATCH_OF.get(status, status)
        end = obj["patch"].get("end_time")
        task.end_time = end if type(end) is int else None
        info.end(task.status, task.end_time)
        ctx.set_timer(self, tid, self.grace)

    def _notified(
        self,
        frame: Frame,
        obj: TaskNotification,
        tid: str,
        task: _Open | None,
        info: TaskInfo,
        ctx: Context,
    ) -> Output:
        """``task_notification``: ended first (Claude always sends the pair), then
        notified; a task with no terminal update gets one synthesized before it."""
        ctx.cancel_timer(self, tid)
        remember(self._done, tid, None)
        if task is not None:
            del self._open[tid]
        missing = task is not None and task.status is None
        patch = _notified_end(obj, info, ctx) if missing else None
        ctx.state.finished(info)
        if patch is None:
            return None
        return (self._update(ctx, tid, *patch), frame)

    def _update(self, ctx: Context, tid: str, status: str, end_time: int) -> Frame:
        fields: TaskUpdated = {"task_id": tid, "patch": {"status": status, "end_time": end_time}}
        return Frame.synth(system_frame(ctx, "task_updated", as_dict(fields)), self.rule)

    def _notification(self, ctx: Context, tid: str, task: _Open) -> Frame:
        status = NOTIFICATION_OF.get(task.status or "killed", "stopped")
        fields: TaskNotification = {"task_id": tid}
        shown = task.shown
        if shown.tool_use_id:
            fields["tool_use_id"] = shown.tool_use_id
        fields["status"] = status
        fields["output_file"] = ""
        fields["summary"] = claude_summary(shown.task_type, status, shown.description)
        remember(self._done, tid, None)
        info = ctx.state.task(tid)
        ctx.state.finished(info)
        return Frame.synth(system_frame(ctx, "task_notification", as_dict(fields)), self.rule)

    def on_timer(self, key: str, ctx: Context) -> Output:
        task = self._open.pop(key, None)
        if task is None or task.status is None:
            return None
        ctx.log(
            self.rule,
            f"task {key}: no notification {self.grace:g}s after it ended; synthesized one",
            "info",
        )
        return (self._notification(ctx, key, task),)

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        out: list[Frame] = []
        for tid, task in list(self._open.items()):
            if task.status is None:
                out.append(self._killed(ctx, tid, task))
            out.append(self._notification(ctx, tid, task))
        if out:
            ctx.log(
                self.rule,
                f"backend exited with {len(self._open)} task(s) open; ended them as stopped",
                "info",
            )
        self._open.clear()
        return out

    def _killed(self, ctx: Context, tid: str, task: _Open) -> Frame:
        """An open task at the backend's exit: ended ``killed`` now."""
        end = ctx.wall_ms()
        task.status, task.end_time = "killed", end
        info = ctx.state.task(tid)
        _seen_started(info, task)  # forgotten by the session (MAX_TASKS), started here
        info.end("killed", end)
        return self._update(ctx, tid, "killed", end)


def _seen_started(info: TaskInfo, task: _Open) -> None:
    """A task the client saw start has its phase started, though the session forgot it
    (past ``MAX_TASKS``)."""
    if info.phase is TaskPhase.NEW:
        info.shown = task.shown
        info.start()


def _notified_end(obj: TaskNotification, info: TaskInfo, ctx: Context) -> tuple[str, int]:
    """A notification without a terminal update: the task ends now, with the patch status
    of the notification's (``killed`` for an unknown one); (status, end_time)."""
    status = obj.get("status")
    patch_st = PATCH_OF.get(status, "killed") if isinstance(status, str) else "killed"
    end = ctx.wall_ms()
    info.end(patch_st, end)
    return patch_st, end


_TURN = frozenset({"system/init", "assistant", "user", "result"})
_PROGRESS_AND_END = ("task_progress", "task_notification")


def _in_turn(type_: str | None, subtype: str | None) -> bool:
    """A turn's frame (``_TURN``): the stream moved on."""
    return type_ in _TURN or f"{type_}/{subtype}" in _TURN


@register
@attrs.define
class LateProgress(Stage):
    """`task_progress` after the task's notification: drop (default), pass, or fold.

    ``drop`` (default, counted), ``pass``, or ``fold``: the notification is held for ``grace``
    seconds (seed 000 recommends 5 s) so late progress goes out before it; it is released
    early when the stream moves on (a turn's frames) and at backend exit.
    """

    rule: ClassVar[str] = "late-progress"
    modes: ClassVar[tuple[str, ...]] = ("drop", "pass", "fold")
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"system/task_progress", "system/task_notification"}
    )

    #: fold: seconds a notification is held for late progress
    grace: float = 5.0
    _notified: dict[str, None] = attrs.field(factory=OrderedDict, init=False)
    _held: dict[str, Frame] = attrs.field(factory=dict, init=False)

    def interested(self, type_: str | None, subtype: str | None) -> bool:
        if self.mode == "pass":
            return False
        if self.mode == "fold" and _in_turn(type_, subtype):
            return True
        return super().interested(type_, subtype)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(Envelope)
        st = obj.get("subtype") if obj.get("type") == "system" else None
        if st not in _PROGRESS_AND_END:
            return self._moved_on(frame, ctx)
        tid = task_id_of(obj)
        if tid is None:
            return None
        if st == "task_notification":
            return self._notification(frame, tid, ctx)
        return self._progress(tid, ctx)

    def _moved_on(self, frame: Frame, ctx: Context) -> Output:
        """fold: a turn's frame; the held notifications go out before it."""
        return (*self._release_all(ctx), frame) if self._held else None

    def _notification(self, frame: Frame, tid: str, ctx: Context) -> Output:
        """The task's end: later progress is late; fold holds the notification for it."""
        remember(self._notified, tid, None)
        if self.mode != "fold" or tid in self._held:
            return None
        self._held[tid] = frame
        ctx.hold()
        ctx.set_timer(self, tid, self.grace)
        return ()

    def _progress(self, tid: str, ctx: Context) -> Output:
        if tid not in self._notified or tid in self._held:
            return None  # fold: goes out ahead of the held notification
        ctx.log(self.rule, f"task {tid}: progress after its notification dropped", "debug")
        return ()

    def _release_all(self, ctx: Context) -> list[Frame]:
        out = list(self._held.values())
        for tid in self._held:
            ctx.cancel_timer(self, tid)
        self._held.clear()
        return out

    def on_timer(self, key: str, ctx: Context) -> Output:
        f = self._held.pop(key, None)
        return (f,) if f is not None else None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        return self._release_all(ctx)


@register
@attrs.define
class TasksSnapshot(Stage):
    """Claude's `background_tasks_changed` full snapshots around task start and end.

    Claude sends ``background_tasks_changed`` with the full list of live tasks (``{task_id,
    task_type, description}``) before each ``task_started`` and before the terminal
    ``task_updated`` (``[]`` when none); cbc never does
    (``claude-2.1.220/mockapi_idle-interrupt-kills-bg-workflow-keeps-bg-bash``).

    A snapshot is the whole live set or nothing: with more than ``max_tasks`` live tasks
    (default 256) a snapshot would be that large on every task event, so it is not sent
    (counted ``suppressed``, logged when it starts) until the live set is back within the cap;
    a snapshot never leaves a live task out. The registry of live tasks keeps up to
    ``MAX_LIVE_TASKS`` (16,384, ``compat.taskkit``); past that the oldest is forgotten
    (counted ``forgotten``, logged) and, since a snapshot could then miss a task, none is sent
    for the rest of the session.
    """

    rule: ClassVar[str] = "tasks-snapshot"
    reads: ClassVar[frozenset[str]] = frozenset({"session_id"})
    kinds: ClassVar[frozenset[str] | None] = _LIFECYCLE

    #: the most live tasks a snapshot lists; with more, no snapshot is sent (see above)
    max_tasks: int = 256

    _live: dict[str, SnapshotTask] = attrs.field(factory=OrderedDict, init=False)
    #: snapshots are being suppressed (the live set is over ``max_tasks``)
    _over: bool = attrs.field(default=False, init=False)
    #: a live task was forgotten (registry full): no snapshot can be complete any more
    _incomplete: bool = attrs.field(default=False, init=False)
    #: ended tasks whose snapshot follows their notification (compat.target)
    _owed: dict[str, bool] = attrs.field(factory=OrderedDict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(Envelope)
        tid = task_id_of(obj)
        if tid is None:
            return None
        st = obj.get("subtype")
        if st == "task_started":
            return self._started(frame, frame.view(TaskStarted), tid, ctx)
        return self._ending(frame, obj, st, tid, ctx)

    def _started(self, frame: Frame, obj: TaskStarted, tid: str, ctx: Context) -> Output:
        """A task starts: it joins the live set, the snapshot goes before it."""
        if tid in self._live:
            return None
        entry = _snapshot_entry(obj, tid, ctx)
        if len(self._live) >= MAX_LIVE_TASKS:
            self._forget_oldest(ctx)
        self._live[tid] = entry
        return self._with_snapshot(frame, ctx)

    def _forget_oldest(self, ctx: Context) -> None:
        """The registry is full: its oldest task is forgotten, and snapshots end."""
        del self._live[next(iter(self._live))]
        ctx.count(self.rule, "forgotten")
        if self._incomplete:
            return
        self._incomplete = True
        ctx.log(
            self.rule,
            f"more than {MAX_LIVE_TASKS} live tasks: the oldest is "
            "forgotten and no snapshot is sent for the rest of the session",
            "warning",
        )

    def _ending(self, frame: Frame, obj: Envelope, st: Any, tid: str, ctx: Context) -> Output:
        """A task's terminal ``task_updated`` (or a notification that came without one)
        takes it out of the live set, the snapshot before it; a target that sends the
        snapshot after the end (2.1.332) sends it after the task's notification."""
        after = target_of(ctx).snapshot_after_notification
        if after and st == "task_notification" and self._owed.pop(tid, False):
            return self._with_snapshot(frame, ctx, after=True)  # 2.1.332: after the end
        if not self._ends_live(obj, st, tid):
            return None
        del self._live[tid]
        if after and st == "task_updated":
            remember(self._owed, tid, True)  # sent after the task's notification
            return None
        return self._with_snapshot(frame, ctx, after=after)

    def _ends_live(self, obj: Envelope, st: Any, tid: str) -> bool:
        """The frame ends a live task: its terminal ``task_updated``, or its notification."""
        if tid not in self._live:
            return False
        return st != "task_updated" or patch_status(obj) in TERMINAL

    def _with_snapshot(self, frame: Frame, ctx: Context, after: bool = False) -> Output:
        """The snapshot and ``frame``; ``frame`` alone when the snapshot would not list every
        live task within ``max_tasks`` (counted, logged once per stretch)."""
        n = len(self._live)
        if self._incomplete or n > self.max_tasks:
            self._suppressed(n, ctx)
            return None
        self._resumed(n, ctx)
        tasks = [dict(e) for e in self._live.values()]
        snap = Frame.synth(
            system_frame(ctx, "background_tasks_changed", {"tasks": tasks}), self.rule
        )
        return (frame, snap) if after else (snap, frame)

    def _suppressed(self, n: int, ctx: Context) -> None:
        """A snapshot not sent: counted; logged when a stretch over ``max_tasks`` starts."""
        ctx.count(self.rule, "suppressed")
        if self._over or self._incomplete:
            return
        self._over = True
        ctx.log(
            self.rule,
            f"{n} live background tasks, more than max_tasks="
            f"{self.max_tasks}: background_tasks_changed not sent until the "
            "live set is back within it (a partial one would leave tasks out)",
            "warning",
        )

    def _resumed(self, n: int, ctx: Context) -> None:
        """A snapshot sent again after a stretch over ``max_tasks``: logged."""
        if not self._over:
            return
        self._over = False
        ctx.log(self.rule, f"{n} live background tasks: snapshots sent again", "info")


def _snapshot_entry(started: TaskStarted, tid: str, ctx: Context) -> SnapshotTask:
    """A started task as the snapshots list it (keys in Claude's order)."""
    d = started.get("description")
    entry: SnapshotTask = {"task_id": tid, "task_type": started.get("task_type")}
    sub = started.get("subagent_type")
    if target_of(ctx).snapshot_subagent_type and isinstance(sub, str):
        entry["subagent_type"] = sub
    entry["description"] = d if isinstance(d, str) else ""
    return entry
