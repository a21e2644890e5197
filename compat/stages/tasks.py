"""``task-correlation``, ``task-type``, ``task-noise``, ``task-status``, ``task-fields``:
the per-frame shape of cbc's background-task frames (PROTOCOL.md §2).

Strategy: each rule is a small stage over the ``system/task_*`` kinds (task-correlation
also reads the tool results that name a task).

- ``task-correlation``: cbc's ``task_started`` of a background ``Agent`` has no
  ``tool_use_id`` and comes *before* the tool result that names it (``task_id: agent-…``,
  capture ``cbc-2.163.0/mockoai_bg-agent``). The stage holds that ``task_started`` (and
  later frames of the task, to keep their order) until the tool result arrives, then
  fills the id in; after ``wait`` seconds it falls back to the oldest unclaimed Agent call
  with the same description, or releases it as is. Progress and notifications get the id
  too, as Claude writes it there (``claude-2.1.220/mockapi_background-agent_*``).
- ``task-type``: ``Agent→local_agent``, ``Bash/PowerShell/Monitor→local_bash``; unknown
  values pass and are logged once per value.
- ``task-noise``: cbc sends ``task_updated{pending}`` and a ``task_progress`` before
  ``task_started`` (agents) and ``task_updated{running}`` right after it. Non-terminal
  ``pending``/``running`` patches are dropped; other frames of a task not started yet are
  held (bounded) and released right after its ``task_started``, except a ``task_progress``
  with zero usage (no tokens, no tool uses, no workflow snapshot): Claude sends no progress
  before the agent has done something (twins bg-agent, eof-with-bg-work). ``paused→running``
  is a real transition and passes.
- ``task-status``: ``cancelled→killed`` in patches, ``killed/cancelled→stopped`` in
  notifications, the top-level duplicate ``status`` of ``task_updated`` dropped.
- ``task-fields``: last in the profile; fills what the Python SDK requires
  (``output_file``, ``summary``, ``usage``, ``uuid``, ``session_id``...), words cbc's
  summaries the Claude way (``Dynamic workflow "<description>" completed``; a stopped
  task's summary is its description), gives a completed workflow's notification the
  ``usage`` of its last progress (as Claude 2.1.220 does: twins workflow-inline,
  eof-with-bg-work; none on a stopped one), and writes keys in Claude's order.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, cast

import attrs

from compat.frames import Frame
from compat.session import TaskInfo
from compat.stage import Context, Output, Stage, register
from compat.target import Target, insert_after, run_id, target_of, values
from compat.taskkit import (
    AGENT_TOOLS,
    NOTIFICATION_OF,
    TASK_FRAMES,
    TASK_TYPE_MAP,
    WORKFLOW,
    claude_summary,
    claude_type,
    is_known_type,
    ordered,
    patch_status,
    remember,
    rewrite_summary,
    task_id_of,
)
from compat.vocabulary import NOTIFICATION_STATUSES, TASK_STATUSES
from compat.wire import (
    Default,
    Envelope,
    ReverseTask,
    TaskNotification,
    TaskProgress,
    TaskStarted,
    TaskUpdated,
    User,
    as_dict,
    fill,
)

#: ``task_id: X`` on a line of its own in a tool result (its leading blanks stay on its line:
#: ``^\s*`` tried at every line of a long blank run is quadratic, and the text is a tool's)
_RESULT_TASK_ID = re.compile(r"(?m)^[^\S\n]*task_id:\s*([A-Za-z0-9][A-Za-z0-9_.:@\-]{0,200})\s*$")
#: tasks with frames held before their task_started, and frames held per task
MAX_PENDING_TASKS = 256


def _result_texts(obj: User) -> list[tuple[str, str]]:
    """(tool_use_id, text) of every tool_result block of a ``user`` frame."""
    return [(use_id, text) for use_id, body in _tool_results(obj) for text in _texts(body)]


def _tool_results(obj: User) -> list[tuple[str, Any]]:
    """(tool_use_id, content) of the tool_result blocks that name their call."""
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return []
    return [
        (block["tool_use_id"], block.get("content"))
        for block in content
        if _is_tool_result(block) and isinstance(block.get("tool_use_id"), str)
    ]


def _is_tool_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _texts(body: Any) -> list[str]:
    """A tool result's text: the string, or the text of each of its parts."""
    if isinstance(body, str):
        return [body]
    if not isinstance(body, list):
        return []
    return [
        part["text"]
        for part in body
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]


def _is_task_frame(obj: Mapping[str, Any]) -> bool:
    return obj.get("type") == "system" and f"system/{obj.get('subtype')}" in TASK_FRAMES


def _lacks_tool_use_id(obj: Mapping[str, Any]) -> bool:
    """A progress or notification without the id of the call that started its task."""
    return obj.get("subtype") in ("task_progress", "task_notification") and not obj.get(
        "tool_use_id"
    )


def _with(obj: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    return ordered({**obj, **fields})


@register
@attrs.define
class TaskCorrelation(Stage):
    """Give every task the tool_use_id of the call that started it."""

    rule: ClassVar[str] = "task-correlation"
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})
    writes: ClassVar[frozenset[str]] = frozenset({"task.tool_use_id", "tasks"})
    #: task frames, and tool results (``user``) that may name a task
    kinds: ClassVar[frozenset[str] | None] = TASK_FRAMES | {"user"}

    #: seconds to wait for the tool result that names a held task
    wait: float = 2.0
    _held: dict[str, list[Frame]] = attrs.field(factory=dict, init=False)
    _from_results: dict[str, str] = attrs.field(factory=OrderedDict, init=False)
    _claimed: dict[str, None] = attrs.field(factory=OrderedDict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.type == "user":
            return self._tool_result(frame, frame.view(User), ctx)
        task = frame.view(ReverseTask)  # any task frame
        if not _is_task_frame(task):
            return None
        tid = task_id_of(task)
        if tid is None:
            return None
        held = self._held.get(tid)
        if held is not None:
            held.append(frame)  # behind its task_started, in order
            ctx.hold()
            return ()
        info = ctx.state.task(tid)
        if task.get("subtype") == "task_started":
            return self._started(frame, tid, info, ctx)
        if _lacks_tool_use_id(task) and info.tool_use_id:
            return (frame.replace(_with(task, tool_use_id=info.tool_use_id)),)
        return None

    def _started(self, frame: Frame, tid: str, info: TaskInfo, ctx: Context) -> Output:
        """A task_started gets its call's id: its own, a tool result's already seen, or
        (held until a tool result names it) one found later."""
        use_id = frame.view(TaskStarted).get("tool_use_id")
        if isinstance(use_id, str) and use_id:
            self._claim(info, use_id)
            return None
        known = self._from_results.get(tid)
        if known is not None:
            return (self._fill(frame, info, known),)
        if not self._any_candidate(ctx):
            return None  # nothing could have started it: no reason to wait
        self._held[tid] = [frame]
        ctx.hold()
        ctx.set_timer(self, tid, self.wait)
        return ()

    def _claim(self, info: TaskInfo, use_id: str) -> None:
        info.tool_use_id = use_id
        remember(self._claimed, use_id, None)

    def _fill(self, frame: Frame, info: TaskInfo, use_id: str) -> Frame:
        self._claim(info, use_id)
        return frame.replace(_with(frame.obj, tool_use_id=use_id))

    def _any_candidate(self, ctx: Context) -> bool:
        """Whether ``_candidates`` has any (newest first: the call is usually recent)."""
        return any(
            use.name in AGENT_TOOLS and use.id not in self._claimed
            for use in reversed(ctx.state.tool_uses.values())
        )

    def _candidates(self, ctx: Context, started: TaskStarted) -> list[str]:
        """Unclaimed Agent calls, oldest first; those with the task's description first."""
        desc = started.get("description")
        same: list[str] = []
        other: list[str] = []
        for use in ctx.state.tool_uses.values():
            if use.name in AGENT_TOOLS and use.id not in self._claimed:
                (same if use.input.get("description") == desc else other).append(use.id)
        return same + other

    def _tool_result(self, frame: Frame, obj: User, ctx: Context) -> Output:
        released: list[Frame] = []
        for use_id, text in _result_texts(obj):
            if text.find("task_id:") < 0:
                continue  # (one scan of a long tool output, not the regex at each line)
            for m in _RESULT_TASK_ID.finditer(text):
                tid = m.group(1)
                remember(self._from_results, tid, use_id)
                held = self._held.pop(tid, None)
                if held is not None:
                    ctx.cancel_timer(self, tid)
                    released.extend(self._release(ctx, tid, held, use_id))
        return (*released, frame) if released else None

    def _release(
        self, ctx: Context, tid: str, held: list[Frame], use_id: str | None
    ) -> list[Frame]:
        info = ctx.state.task(tid)
        if use_id is None:
            ctx.log(
                self.rule,
                f"task {tid}: no tool call found for it; forwarded without tool_use_id",
                "warning",
            )
            return held
        out = [self._fill(held[0], info, use_id)]
        for f in held[1:]:
            if _lacks_tool_use_id(f.obj):
                f = f.replace(_with(f.obj, tool_use_id=use_id))
            out.append(f)
        return out

    def on_timer(self, key: str, ctx: Context) -> Output:
        held = self._held.pop(key, None)
        if held is None:
            return None
        started = held[0].view(TaskStarted)
        cands = self._candidates(ctx, started)
        use = ctx.state.tool_uses.get(cands[0]) if cands else None
        if use is not None and use.input.get("description") == started.get("description"):
            ctx.log(self.rule, f"task {key}: matched to {use.id} by description", "debug")
            return self._release(ctx, key, held, use.id)
        return self._release(ctx, key, held, None)

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        out: list[Frame] = []
        for tid in list(self._held):
            out.extend(self.on_timer(tid, ctx) or ())
        return out


@register
@attrs.define
class TaskType(Stage):
    """Map cbc task types to Claude's (`Agent`→`local_agent`, `Bash`→`local_bash`, ...)."""

    rule: ClassVar[str] = "task-type"
    reads: ClassVar[frozenset[str]] = frozenset({"tasks"})
    writes: ClassVar[frozenset[str]] = frozenset({"task.task_type"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/task_started"})

    _unknown: set[str] = attrs.field(factory=set, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(TaskStarted)
        tt = obj.get("task_type")
        tid = task_id_of(obj)
        mapped = TASK_TYPE_MAP.get(tt) if isinstance(tt, str) else None
        if tid is not None and isinstance(tt, str):
            ctx.state.task(tid).task_type = mapped or tt
        if mapped is not None:
            return (frame.replace(_with(obj, task_type=mapped)),)
        if not is_known_type(tt) and repr(tt) not in self._unknown:
            self._unknown.add(repr(tt))
            ctx.log(self.rule, f"unknown task_type {tt!r} passed unchanged", "warning")
        return None


def _zero_progress(frame: Frame) -> bool:
    """A ``task_progress`` that reports nothing done yet (cbc's, before an agent starts)."""
    if frame.subtype != "task_progress":
        return False
    progress = frame.view(TaskProgress)
    usage = progress.get("usage")
    return (
        isinstance(usage, dict)
        and not usage.get("total_tokens")
        and not usage.get("tool_uses")
        and not progress.get("workflow_progress")
    )


def _without_status(obj: TaskUpdated) -> dict[str, Any] | None:
    """A task_updated without its status (top-level and patch), or None when its patch
    said nothing else."""
    patch = {k: v for k, v in obj["patch"].items() if k != "status"}
    if not patch:
        return None
    rest = {k: v for k, v in obj.items() if k != "status"}
    return {**rest, "patch": patch}


@register
@attrs.define
class TaskNoise(Stage):
    """`task_started` first; drop non-terminal `pending`/`running` patches."""

    rule: ClassVar[str] = "task-noise"
    kinds: ClassVar[frozenset[str] | None] = TASK_FRAMES

    #: frames held per task before its task_started; more are dropped
    max_held: int = 64
    _started: dict[str, None] = attrs.field(factory=OrderedDict, init=False)
    _pending: dict[str, list[Frame]] = attrs.field(factory=dict, init=False)
    #: tasks whose last status was paused: a running patch is then a real transition
    _paused: dict[str, None] = attrs.field(factory=OrderedDict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(ReverseTask)  # any task frame
        tid = task_id_of(obj)
        if tid is None:
            return None
        st = obj.get("subtype")
        if st == "task_started":
            return self._start(frame, tid, ctx)
        out = frame
        if st == "task_updated":
            quiet = self._quieted(frame, tid)
            if quiet is None:
                return ()  # a patch that said nothing else
            out = quiet
        if tid in self._started:
            return None if out is frame else (out,)
        if st == "task_notification":
            # the task never started (or started before we saw it): let it all through
            return (*self._pending.pop(tid, []), out)
        return self._hold(out, tid, ctx)

    def _start(self, frame: Frame, tid: str, ctx: Context) -> Output:
        """The task_started, then what was held for it (but zero progress)."""
        if tid in self._started:
            return None
        if remember(self._started, tid, None):
            ctx.count(self.rule, "forgotten")  # its later frames will be held as unstarted
            ctx.log(
                self.rule, "too many live tasks: the oldest started one is forgotten", "warning"
            )
        held = self._released(tid, ctx)
        return (frame, *held) if held else None

    def _released(self, tid: str, ctx: Context) -> list[Frame]:
        """What was held for the task, but a zero progress (Claude sends none before the
        agent has done something)."""
        held = self._pending.pop(tid, None) or []
        kept = [f for f in held if not _zero_progress(f)]
        if len(kept) < len(held):
            ctx.drop_held(self.rule, len(held) - len(kept))
        return kept

    def _quieted(self, frame: Frame, tid: str) -> Frame | None:
        """A task_updated without a ``pending``/``running`` status that is no transition
        (None: the patch said nothing else)."""
        obj = frame.view(TaskUpdated)
        status = patch_status(obj)
        was_paused = tid in self._paused
        if status == "paused":
            remember(self._paused, tid, None)
        elif status is not None:
            self._paused.pop(tid, None)
        if status not in ("pending", "running") or was_paused:
            return frame
        # not a transition Claude reports; keep whatever else the patch says
        new = _without_status(obj)
        return None if new is None else frame.replace(new)

    def _hold(self, frame: Frame, tid: str, ctx: Context) -> Output:
        """A frame of a task not started yet waits for its task_started (bounded)."""
        held = self._pending.get(tid)
        if held is None:
            held = self._pending_for(tid, ctx)
        if len(held) >= self.max_held:
            return ()
        held.append(frame)
        ctx.hold()
        return ()

    def _pending_for(self, tid: str, ctx: Context) -> list[Frame]:
        """A new list of held frames (the oldest task's dropped past ``MAX_PENDING_TASKS``)."""
        if len(self._pending) >= MAX_PENDING_TASKS:
            old = next(iter(self._pending))
            ctx.drop_held(self.rule, len(self._pending.pop(old)))
        held: list[Frame] = []
        self._pending[tid] = held
        return held

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        for tid, held in self._pending.items():
            ctx.drop_held(self.rule, len(held))
            ctx.log(self.rule, f"task {tid} never started; {len(held)} frame(s) dropped", "debug")
        self._pending.clear()
        return None


@register
@attrs.define
class TaskStatus(Stage):
    """Claude's status vocabulary: `cancelled`→`killed`, notification `killed`→`stopped`."""

    rule: ClassVar[str] = "task-status"
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"system/task_updated", "system/task_notification"}
    )

    _unknown: set[str] = attrs.field(factory=set, init=False)

    def _note(self, ctx: Context, value: Any, allowed: frozenset[str]) -> None:
        known = isinstance(value, str) and value in allowed
        if not known and repr(value) not in self._unknown:
            self._unknown.add(repr(value))
            ctx.log(self.rule, f"unknown task status {value!r} passed unchanged", "warning")

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.view(Envelope).get("subtype") == "task_notification":
            return self._notification(frame, ctx)
        return self._update(frame, ctx)

    def _update(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(TaskUpdated)
        patch = obj.get("patch")
        if not isinstance(patch, dict):
            return None
        status = patch.get("status")
        new = obj
        if status == "cancelled":
            new = {**obj, "patch": {**patch, "status": "killed"}}
        elif status is not None:
            self._note(ctx, status, TASK_STATUSES)
        if "status" in new:  # cbc's own top-level status: Claude's is the patch's
            new = cast(TaskUpdated, {k: v for k, v in new.items() if k != "status"})
        return None if new is obj else (frame.replace(as_dict(new)),)

    def _notification(self, frame: Frame, ctx: Context) -> Output:
        note = frame.view(TaskNotification)
        status = note.get("status")
        if status in ("killed", "cancelled"):
            stopped: TaskNotification = {**note, "status": "stopped"}
            return (frame.replace(as_dict(stopped)),)
        self._note(ctx, status, NOTIFICATION_STATUSES)
        return None


_ZERO_USAGE = {"total_tokens": 0, "tool_uses": 0, "duration_ms": 0}
#: the task frames Claude gives the tool_use_id of the call that started the task
_CARRY_TOOL_USE = frozenset({"task_started", "task_progress", "task_notification"})
#: what Claude always sends, per subtype (compat.wire.fill), whatever the task id
_SHAPE: dict[str, tuple[Default, ...]] = {
    "task_updated": (("patch", dict, dict),),
    "background_tasks_changed": (("tasks", list, list),),
}


def _target_keys(target: Target, new: dict[str, Any], tid: str | None, st: Any) -> dict[str, Any]:
    """The target's newer task keys (compat.target): ``run_id`` after ``task_id`` (also on
    every snapshot entry), ``task_started``'s ``is_backgrounded``/``spawn_depth``."""
    if not (target.run_id or target.started_keys):
        return new
    if target.run_id:
        new = _with_run_ids(new, tid, st)
    if st == "task_started":
        new = _with_started_keys(target, new)
    return new


def _with_run_ids(new: dict[str, Any], tid: str | None, st: Any) -> dict[str, Any]:
    if tid is not None and "run_id" not in new:
        new = insert_after(new, "task_id", "run_id", run_id(tid))
    tasks = new.get("tasks")
    if st == "background_tasks_changed" and isinstance(tasks, list):
        new["tasks"] = [_entry_with_run_id(e) for e in tasks]
    return new


def _entry_with_run_id(e: Any) -> Any:
    """A snapshot entry with the ``run_id`` of its ``task_id``."""
    if isinstance(e, dict) and isinstance(e.get("task_id"), str) and "run_id" not in e:
        return insert_after(e, "task_id", "run_id", run_id(e["task_id"]))
    return e


def _with_started_keys(target: Target, new: dict[str, Any]) -> dict[str, Any]:
    """The target's keys of a ``task_started`` of its type, after its ``subagent_type`` (or
    ``description``)."""
    keys = target.started_keys.get(str(new.get("task_type")), ())
    anchor = "subagent_type" if "subagent_type" in new else "description"
    for key, value in reversed(values(keys, {})):
        if key not in new:
            new = insert_after(new, anchor, key, value)
    return new


def _claude_status(status: Any) -> str:
    """A notification's status in Claude's words ("" when it has none)."""
    return NOTIFICATION_OF.get(status, status) if isinstance(status, str) else ""


def _summary(summary: Any, ttype: Any, status: str, desc: str) -> str:
    """Claude's summary: cbc's reworded, or made when cbc gave none."""
    if not isinstance(summary, str):
        return claude_summary(ttype, status, desc)
    return rewrite_summary(summary, status, ttype, desc or None)


def _carry_tool_use(new: dict[str, Any], info: TaskInfo | None) -> None:
    """The id of the call that started the task, where Claude gives it."""
    if not new.get("tool_use_id") and info is not None and info.tool_use_id:
        new["tool_use_id"] = info.tool_use_id


def _fill_common(new: dict[str, Any], st: Any, ctx: Context) -> None:
    """What Claude always sends: per subtype, and every frame's ``uuid``/``session_id``."""
    fill(new, _SHAPE.get(st, ()) if isinstance(st, str) else ())
    fill(
        new,
        (
            ("uuid", str, ctx.env.new_uuid),
            ("session_id", str, lambda: ctx.state.session_id or ""),
        ),
    )


@register
@attrs.define
class TaskFields(Stage):
    """Fill the fields Claude always sends on task frames; Claude's summary wording."""

    rule: ClassVar[str] = "task-fields"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "session_id",
            "task.backend_description",
            "task.description",
            "task.task_type",
            "task.tool_use_id",
            "tasks",
        }
    )
    kinds: ClassVar[frozenset[str] | None] = TASK_FRAMES | {"system/background_tasks_changed"}

    #: task_id -> (Claude task type, description) as forwarded on task_started
    _seen: dict[str, tuple[Any, str]] = attrs.field(factory=OrderedDict, init=False)
    #: workflow task_id -> the usage of its last task_progress forwarded
    _usage: dict[str, dict[str, Any]] = attrs.field(factory=OrderedDict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(Envelope)
        st = obj.get("subtype")
        tid = task_id_of(obj)
        info = ctx.state.tasks.get(tid) if tid else None
        new: dict[str, Any] = dict(obj)
        if tid is not None:
            self._fix(new, st, tid, info)
        if st in _CARRY_TOOL_USE:
            _carry_tool_use(new, info)
        _fill_common(new, st, ctx)
        if tid is None and st != "background_tasks_changed":
            return None if new == obj else (frame.replace(new),)
        new = _target_keys(target_of(ctx), ordered(new), tid, st)
        if new == obj and list(new) == list(obj):
            return None
        return (frame.replace(new),)

    def _fix(self, new: dict[str, Any], st: Any, tid: str, info: TaskInfo | None) -> None:
        fix = self._FIX.get(st) if isinstance(st, str) else None
        if fix is not None:
            fix(self, new, tid, info)

    # -- per subtype (a task frame with a task id) ------------------------------------------
    def _started(self, new: dict[str, Any], tid: str, info: TaskInfo | None) -> None:
        ts = cast(TaskStarted, new)
        fill(new, (("description", str, lambda: (info.description if info else "") or ""),))
        remember(self._seen, tid, (claude_type(ts.get("task_type")), ts["description"]))

    def _progress(self, new: dict[str, Any], tid: str, info: TaskInfo | None) -> None:
        tp = cast(TaskProgress, new)
        fill(new, (("description", str, lambda: self._desc(tid, info)),))
        usage = new.get("usage")
        if not isinstance(usage, dict) or any(k not in usage for k in _ZERO_USAGE):
            new["usage"] = {**_ZERO_USAGE, **(usage if isinstance(usage, dict) else {})}
        if tid in self._seen and self._seen[tid][0] == WORKFLOW:
            remember(self._usage, tid, dict(tp["usage"]))

    def _notification(self, new: dict[str, Any], tid: str, info: TaskInfo | None) -> None:
        tn = cast(TaskNotification, new)
        fill(new, (("output_file", str, str),))
        status = _claude_status(tn.get("status"))
        ttype = self._seen[tid][0] if tid in self._seen else (info.task_type if info else "")
        tn["summary"] = _summary(tn.get("summary"), ttype, status, self._desc(tid, info))
        last = self._usage.pop(tid, None)
        # Claude's completed and failed workflows carry it, its stopped ones do not (twins
        # workflow-inline, workflow-failed, interrupt-*-workflow)
        if last is not None and status in ("completed", "failed") and "usage" not in new:
            new["usage"] = {k: last.get(k, 0) for k in _ZERO_USAGE}

    _FIX: ClassVar[
        dict[str, Callable[[TaskFields, dict[str, Any], str, TaskInfo | None], None]]
    ] = {
        "task_started": _started,
        "task_progress": _progress,
        "task_notification": _notification,
    }

    def _desc(self, tid: str | None, info: TaskInfo | None) -> str:
        if tid in self._seen:
            return self._seen[tid][1]
        return (info.description or info.backend_description or "") if info else ""
