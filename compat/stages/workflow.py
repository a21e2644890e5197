"""``workflow-name``, ``workflow-prompt``, ``progress-snapshot``, ``progress-final``: what
Claude Code copies from the starting tool call and the workflow script (PROTOCOL.md §2).

Strategy: the script is looked up once per task (``compat.taskkit.resolve_workflow``):
the inline ``script`` of the ``Workflow`` call whose id is the task's ``tool_use_id``
(``DeferExecuteTool`` unwrapped), or the file at ``scriptPath`` through
``ctx.env.read_script`` (the I/O side reads only below the directory the bridge started
cbc in, or ``script_roots``, never below the ``cwd`` cbc reports). ``meta`` is read by
``compat.jsmeta`` without evaluating anything; when it cannot be read the backend's values
stay and the reason is logged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, cast

import attrs

from compat.frames import Frame, str_at
from compat.session import TaskInfo
from compat.stage import Context, Output, Stage, register
from compat.target import Target, target_of
from compat.taskkit import (
    AGENT_TOOLS,
    FALLBACK_WORKFLOW_DESCRIPTION,
    NOTIFICATION_OF,
    SHELL_TOOLS,
    TASK_FRAMES,
    TERMINAL,
    WORKFLOW,
    claude_type,
    meta_fields,
    ordered,
    patch_status,
    remember,
    resolve_workflow,
    starting_call,
    system_frame,
    task_id_of,
)
from compat.wire import (
    Envelope,
    ReverseTask,
    TaskNotification,
    TaskProgress,
    TaskStarted,
    TaskUpdated,
    as_dict,
)

FINAL_AGENT_STATES = frozenset({"done", "error", "cached"})
ABORTED = {"stopped": "subagent aborted: workflow was stopped"}


def _is_task_frame(obj: Mapping[str, Any]) -> bool:
    return obj.get("type") == "system" and f"system/{obj.get('subtype')}" in TASK_FRAMES


def _is_agent(e: Any) -> bool:
    return isinstance(e, dict) and e.get("type") == "workflow_agent"


def _without(obj: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


def _has_ended_at(e: Any) -> bool:
    """An agent entry with cbc's ``endedAt`` (not a key of Claude's entries)."""
    return _is_agent(e) and "endedAt" in e


def _without_ended_at(entries: list[Any]) -> list[Any]:
    """Agent entries without cbc's ``endedAt``."""
    if not any(map(_has_ended_at, entries)):
        return entries
    return [_without(e, "endedAt") if _has_ended_at(e) else e for e in entries]


def _is_phase(e: Any) -> bool:
    return isinstance(e, dict) and e.get("type") == "workflow_phase"


def complete_phases(entries: list[Any], titles: list[str] | None) -> list[Any]:
    """Every declared phase first (Claude's order), then the other entries as they were.
    Unchanged unless cbc's phase entries agree with ``meta.phases`` (same index, same
    title): a script may call ``phase()`` with titles it never declared."""
    if not titles:
        return entries
    phases = _phases_by_index(entries, titles)
    if phases is None:
        return entries
    full = [
        phases.get(i) or {"type": "workflow_phase", "index": i, "title": t}
        for i, t in enumerate(titles, 1)
    ]
    return full + [e for e in entries if not _is_phase(e)]


def _phases_by_index(entries: list[Any], titles: list[str]) -> dict[int, Any] | None:
    """cbc's phase entries by index, or None when one disagrees with ``titles``."""
    phases: dict[int, Any] = {}
    for e in filter(_is_phase, entries):
        idx = e.get("index")
        if not _declared(idx, e.get("title"), titles) or idx in phases:
            return None
        phases[idx] = e
    return phases


def _declared(idx: Any, title: Any, titles: list[str]) -> bool:
    """``idx`` is a declared phase's (1-based) and ``title`` its title."""
    return type(idx) is int and 1 <= idx <= len(titles) and titles[idx - 1] == title


def _text(value: Any) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _progress_title(entries: list[Any]) -> tuple[str | None, str | None]:
    """Claude's progress description ("Scan: scanner") and last_tool_name ("scanner")."""
    last = next((e for e in reversed(entries) if _is_agent(e)), None)
    if last is None:
        return None, None
    label, phase = _text(last.get("label")), _text(last.get("phaseTitle"))
    if label and phase:
        return f"{phase}: {label}", label
    return label or phase, label


def _titles(ctx: Context, tid: str) -> tuple[TaskInfo | None, list[str] | None]:
    """The task (if known) and its script's ``meta.phases``."""
    info = ctx.state.tasks.get(tid)
    return info, meta_fields(info)[2] if info is not None else None


def _str_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _workflow_call_fields(ctx: Context, info: TaskInfo, obj: TaskStarted, rule: str) -> None:
    if not info.source_resolved:
        resolve_workflow(
            ctx, info, obj.get("tool_use_id") or info.tool_use_id, rule, obj.get("workflow_name")
        )


@register
@attrs.define
class WorkflowName(Stage):
    """`workflow_name` = the script's `meta.name` (cbc: `inline-…`, `path:…`).

    ``workflow_name`` = ``meta.name`` (cbc: ``inline-<sha6>``, ``path:<basename>``), kept for
    every later frame that carries the field.
    """

    rule: ClassVar[str] = "workflow-name"
    reads: ClassVar[frozenset[str]] = frozenset({"cwd", "task.task_id", "tasks", "tool_uses"})
    writes: ClassVar[frozenset[str]] = frozenset(
        {"task.meta", "task.script", "task.source_resolved", "task.workflow_name"}
    )
    #: task_started, and the later frames of the task that carry the field too
    kinds: ClassVar[frozenset[str] | None] = TASK_FRAMES

    _names: dict[str, str] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(ReverseTask)  # any task frame
        if not _is_task_frame(obj):
            return None
        tid = task_id_of(obj)
        if tid is None:
            return None
        if obj.get("subtype") == "task_started":
            started = frame.view(TaskStarted)
            if claude_type(started.get("task_type")) != WORKFLOW:
                return None
            self._name(ctx, tid, started)
        name = self._names.get(tid)
        if name is None or "workflow_name" not in obj or obj["workflow_name"] == name:
            return None
        return (frame.replace({**obj, "workflow_name": name}),)

    def _name(self, ctx: Context, tid: str, started: TaskStarted) -> None:
        """The workflow's name: its script's ``meta.name``, else cbc's."""
        info = ctx.state.task(tid)
        _workflow_call_fields(ctx, info, started, self.rule)
        name, _, _ = meta_fields(info)
        given = started.get("workflow_name")
        info.workflow_name = name or (given if isinstance(given, str) else None)
        if info.workflow_name is not None:
            remember(self._names, tid, info.workflow_name)


@register
@attrs.define
class WorkflowPrompt(Stage):
    """Fill `prompt` (script / Agent prompt) and Claude's `description` on task frames.

    ``prompt`` = the script (workflows) or the Agent call's ``prompt`` (plus its
    ``subagent_type``); ``description`` = ``meta.description`` (fallback "Dynamic workflow")
    when the script is known, and the Bash call's ``description`` for shells (cbc puts the
    command there: ``mockoai_bg-bash`` vs ``mockapi_background-bash_*``).

    A file reaches a client-visible ``prompt`` only when cbc ran it as a workflow script: the
    ``task_started`` of a ``local_workflow`` whose ``Workflow`` call names it (and whose
    ``path:<name>``, when cbc gives one, is that file's), and a file whose ``meta`` parses;
    ``/etc/passwd``, a key file or any other file that is not a workflow script never does.
    """

    rule: ClassVar[str] = "workflow-prompt"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "task.meta",
            "task.script",
            "task.source_resolved",
            "task.tool_use_id",
            "tasks",
            "tool_uses",
        }
    )
    writes: ClassVar[frozenset[str]] = frozenset(
        {
            "task.backend_description",
            "task.description",
            "task.meta",
            "task.prompt",
            "task.script",
            "task.source_resolved",
        }
    )
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"system/task_started", "system/task_progress"}
    )

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.view(Envelope).get("subtype") == "task_progress":
            return _progress_description(frame, ctx)
        obj = frame.view(TaskStarted)
        tid = task_id_of(obj)
        if tid is None:
            return None
        info = ctx.state.task(tid)
        desc = obj.get("description")
        if info.backend_description is None:
            info.backend_description = _str_or_empty(desc)
        fields = self._fields(ctx, info, obj)
        if info.prompt is not None and not isinstance(obj.get("prompt"), str):
            fields["prompt"] = info.prompt
        info.description = _str_or_empty(fields.get("description", desc))
        if all(obj.get(k) == v for k, v in fields.items()):
            return None  # (no fields, or the same)
        return (frame.replace(ordered({**obj, **fields})),)

    def _fields(self, ctx: Context, info: TaskInfo, obj: TaskStarted) -> dict[str, Any]:
        """What the starting call (or the workflow's script) says of the task."""
        use_id = obj.get("tool_use_id") or info.tool_use_id
        if claude_type(obj.get("task_type")) == WORKFLOW:
            return _workflow_fields(ctx, info, obj, self.rule)
        call = starting_call(ctx.state, use_id)
        if call is None:
            return {}
        tool, args = call
        if tool in AGENT_TOOLS:
            return _agent_fields(info, obj, args)
        if tool in SHELL_TOOLS:
            return _shell_fields(args)
        return {}


def _progress_description(frame: Frame, ctx: Context) -> Output:
    """A progress that repeats cbc's description of the task says Claude's."""
    progress = frame.view(TaskProgress)
    tid = task_id_of(progress)
    if tid is None:
        return None
    info = ctx.state.task(tid)
    desc = progress.get("description")
    if not _is_backend_description(desc, info):
        return None
    new: TaskProgress = {**progress, "description": info.description}
    return (frame.replace(as_dict(new)),)


def _is_backend_description(desc: Any, info: TaskInfo) -> bool:
    """``desc`` is cbc's description of the task, which Claude words otherwise."""
    return (
        info.backend_description is not None
        and desc == info.backend_description
        and bool(info.description)
        and desc != info.description
    )


def _workflow_fields(ctx: Context, info: TaskInfo, obj: TaskStarted, rule: str) -> dict[str, Any]:
    """A workflow's ``description`` (``meta.description``); its prompt is its script."""
    _workflow_call_fields(ctx, info, obj, rule)
    if info.script is None:
        return {}
    _, mdesc, _ = meta_fields(info)
    fields = {"description": mdesc or FALLBACK_WORKFLOW_DESCRIPTION}
    info.prompt = info.script
    return fields


def _agent_fields(info: TaskInfo, obj: TaskStarted, args: dict[str, Any]) -> dict[str, Any]:
    """An Agent call's ``prompt`` (kept as the task's) and ``subagent_type``."""
    prompt, sub = args.get("prompt"), args.get("subagent_type")
    if isinstance(prompt, str):
        info.prompt = prompt
    if isinstance(sub, str) and sub and "subagent_type" not in obj:
        return {"subagent_type": sub}
    return {}


def _shell_fields(args: dict[str, Any]) -> dict[str, Any]:
    """A shell call's ``description`` (cbc puts the command there)."""
    d = args.get("description")
    return {"description": d} if isinstance(d, str) and d.strip() else {}


@register
@attrs.define
class ProgressSnapshot(Stage):
    """Workflow progress in Claude's shape: entries pass, declared phases listed first.

    Entries pass through (unknown types and ``cached`` included); when ``meta.phases`` agrees
    with cbc's phase entries, every declared phase is listed first, as Claude does from the
    first snapshot on; Claude's ``description`` ("<phase>: <label>" of the latest agent),
    ``last_tool_name`` and ``summary`` are added; cbc's ``endedAt`` is dropped from agent
    entries (no Claude 2.1.220 entry has it: twins workflow-inline, eof-with-bg-work;
    reference ``mockapi_workflow_local-workflow-task-progress``).
    """

    rule: ClassVar[str] = "progress-snapshot"
    reads: ClassVar[frozenset[str]] = frozenset({"task.meta", "tasks"})
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"system/task_started", "system/task_progress"}
    )

    #: workflow task id -> its description as forwarded
    _workflows: dict[str, str] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        head = frame.view(Envelope)
        tid = task_id_of(head)
        if tid is None:
            return None
        if head.get("subtype") == "task_started":
            self._started(frame.view(TaskStarted), tid)
            return None
        return self._progress(frame, frame.view(TaskProgress), tid, ctx)

    def _started(self, started: TaskStarted, tid: str) -> None:
        if claude_type(started.get("task_type")) == WORKFLOW:
            remember(self._workflows, tid, _str_or_empty(started.get("description")))

    def _progress(self, frame: Frame, obj: TaskProgress, tid: str, ctx: Context) -> Output:
        entries = obj.get("workflow_progress")
        if tid not in self._workflows or not isinstance(entries, list):
            return None
        _, titles = _titles(ctx, tid)
        new = _snapshot(obj, complete_phases(_without_ended_at(entries), titles))
        if "summary" not in obj and self._workflows[tid]:
            new["summary"] = self._workflows[tid]
        if new == obj:
            return None
        return (frame.replace(ordered(as_dict(new))),)


def _snapshot(obj: TaskProgress, entries: list[Any]) -> TaskProgress:
    """``obj`` with ``entries``, and Claude's description and last_tool_name from them."""
    new = cast(TaskProgress, dict(obj))
    new["workflow_progress"] = entries
    title, tool = _progress_title(entries)
    if title is not None:
        new["description"] = title
    if tool is not None and "last_tool_name" not in obj:
        new["last_tool_name"] = tool
    return new


@attrs.define
class _Run:
    last: dict[str, Any] | None = None  # the last progress forwarded (or folded)
    held: Frame | None = None  # the terminal task_updated, until the notification
    status: str | None = None  # Claude notification status once terminal
    end_time: int | None = None
    final: bool = False


#: what ``progress-final`` does with a frame of a running workflow, per subtype
_Step = Callable[["ProgressFinal", Frame, Context, str, _Run], Output]


def _agent_id(e: Any) -> str | int | None:
    """An agent entry's ``agentId`` when it can be a key (cbc writes a string)."""
    aid = e.get("agentId") if isinstance(e, dict) else None
    return aid if isinstance(aid, str | int) and not isinstance(aid, bool) else None


def _is_open_agent(e: Any) -> bool:
    """An agent entry not in a final state (cbc's ``start`` to the end)."""
    return _is_agent(e) and str_at(e, "state") not in FINAL_AGENT_STATES


def _merge(old: list[Any], new: list[Any]) -> list[Any]:
    """A later snapshot wins, except that an agent never goes back from a final state."""
    final: dict[str | int | None, Any] = {
        aid: e
        for e in old
        if _is_agent(e) and not _is_open_agent(e) and (aid := _agent_id(e)) is not None
    }
    return [final.get(_agent_id(e), e) if _is_open_agent(e) else e for e in new]


def _ended(e: Any, state: str, status: str | None, target: Target) -> Any:
    """An agent entry not in a final state, put in ``state`` (``error``: with the words of
    the abort, and the run's end when the target writes it: ``_aborted``)."""
    if not _is_open_agent(e):
        return e
    e = _without(e, "endedAt")
    e["state"] = state
    if state == "error":
        _aborted(e, status, target)
    return e


def _aborted(e: dict[str, Any], status: str | None, target: Target) -> None:
    words = target.aborted_agent_error or ABORTED
    e.setdefault("error", words[status])  # type: ignore[index]
    if target.aborted_final_run_state:
        e.setdefault("endedWithRun", status)


def _last_snapshot(
    ctx: Context,
    last: dict[str, Any],
    entries: list[Any],
    info: TaskInfo | None,
    aborted: bool,
) -> dict[str, Any]:
    """The last snapshot with ``entries`` (an aborted workflow's, on a target that writes
    the run's end, with the workflow's own description)."""
    snap = _without(last, "uuid", "session_id")
    snap["workflow_progress"] = entries
    if aborted and target_of(ctx).aborted_final_run_state and info:
        snap["description"] = info.description or snap.get("description", "")
        snap.pop("last_tool_name", None)  # 2.1.332: the workflow's own line
    return system_frame(ctx, "task_progress", _without(snap, "type", "subtype"))


def _first_snapshot(
    ctx: Context, tid: str, info: TaskInfo | None, entries: list[Any]
) -> dict[str, Any]:
    """The corrected snapshot of a workflow that sent none before it ended."""
    fields: dict[str, Any] = {"task_id": tid}
    if info is not None and info.tool_use_id:
        fields["tool_use_id"] = info.tool_use_id
    fields["description"] = (info.description if info else "") or ""
    fields["usage"] = {"total_tokens": 0, "tool_uses": 0, "duration_ms": 0}
    fields["workflow_progress"] = entries
    return system_frame(ctx, "task_progress", fields)


@register
@attrs.define
class ProgressFinal(Stage):
    """Before a workflow ends, one snapshot with every non-cached agent terminal.

    cbc's last snapshot before the notification is stale (agents still ``start``:
    ``mockoai_workflow-inline``). The terminal ``task_updated`` of a workflow is held until
    its notification (at most ``wait`` s); cbc's stale progress in between is folded in; then
    one corrected snapshot goes out *before* the update, as in
    ``claude-2.1.220/mockapi_workflow_local-workflow-task-progress``: every non-cached agent
    terminal (``done`` when completed; ``error: "subagent aborted: …"`` when stopped, unless
    ``completed-only``, which leaves them like Claude 2.1.220 does).

    A workflow that *failed* (its script threw) gets ``done`` for them too, not an abort: cbc
    writes no agent end state at all (its snapshots keep ``start`` to the end, completed or
    failed), so its ``start`` says nothing about the agent, and Claude 2.1.220 leaves the
    agent that had finished before the throw ``done`` (raw runs of ``scenarios/workflow-failed``;
    no Claude capture has a ``subagent aborted`` entry). An agent cbc itself ended (``error``
    with its own message) keeps its state. What cbc's wire cannot tell: an agent still running
    when the script threw shows ``done`` as well.
    """

    rule: ClassVar[str] = "progress-final"
    reads: ClassVar[frozenset[str]] = frozenset(
        {"session_id", "task.description", "task.meta", "task.tool_use_id", "tasks"}
    )
    writes: ClassVar[frozenset[str]] = frozenset({"task.last_progress"})
    modes: ClassVar[tuple[str, ...]] = ("all", "completed-only")
    kinds: ClassVar[frozenset[str] | None] = TASK_FRAMES

    #: seconds a workflow's terminal task_updated waits for its notification (cbc sends
    #: them in the same millisecond; this only bounds the wait when it does not)
    wait: float = 1.0
    _runs: dict[str, _Run] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(Envelope)
        tid = task_id_of(obj)
        if tid is None:
            return None
        st = obj.get("subtype")
        if st == "task_started":
            task_type = frame.view(TaskStarted).get("task_type")
            if claude_type(task_type) == WORKFLOW and tid not in self._runs:
                remember(self._runs, tid, _Run(), cap=1024)
            return None
        run = self._runs.get(tid)
        if run is None or run.final:
            return None
        step = self._STEPS.get(st, ProgressFinal._notified)  # (else: task_notification)
        return step(self, frame, ctx, tid, run)

    # -- per subtype of a workflow still running ---------------------------------------------
    def _progress(self, frame: Frame, ctx: Context, tid: str, run: _Run) -> Output:
        """Kept as the last snapshot; once the end is held, folded into it and dropped."""
        progress = frame.view(TaskProgress)
        if not isinstance(progress.get("workflow_progress"), list):
            return None
        if run.held is None or run.last is None:
            run.last = as_dict(progress)
            return None
        merged = _merge(run.last["workflow_progress"], progress["workflow_progress"])
        folded: TaskProgress = {**progress, "workflow_progress": merged}
        run.last = as_dict(folded)
        return ()  # stale: folded into the corrected snapshot

    def _updated(self, frame: Frame, ctx: Context, tid: str, run: _Run) -> Output:
        """The terminal update is held until the notification (at most ``wait`` s)."""
        obj = frame.view(TaskUpdated)
        status = patch_status(obj)
        if status not in TERMINAL or run.held is not None:
            return None
        run.held, run.status = frame, NOTIFICATION_OF[status]
        end = obj["patch"].get("end_time")
        run.end_time = end if type(end) is int else None
        ctx.hold()
        ctx.set_timer(self, tid, self.wait)
        return ()

    def _notified(self, frame: Frame, ctx: Context, tid: str, run: _Run) -> Output:
        """The corrected snapshot and the held update go out before the notification."""
        ctx.cancel_timer(self, tid)
        status = frame.view(TaskNotification).get("status")
        if run.status is None and isinstance(status, str):
            run.status = NOTIFICATION_OF.get(status, status)
        return (*self._finish(ctx, tid, run), frame)

    _STEPS: ClassVar[dict[str | None, _Step]] = {
        "task_progress": _progress,
        "task_updated": _updated,
        "task_notification": _notified,
    }

    def _finish(self, ctx: Context, tid: str, run: _Run) -> list[Frame]:
        run.final = True
        out: list[Frame] = []
        snap = self._corrected(ctx, tid, run)
        if snap is not None:
            out.append(Frame.synth(snap, self.rule))
        if run.held is not None:
            out.append(run.held)
            run.held = None
        info = ctx.state.tasks.get(tid)
        if info is not None and run.last is not None:
            info.last_progress = snap or run.last
        run.last = None  # a final run only answers "final" (memory: no snapshot kept)
        return out

    def _end_state(self, status: str | None) -> str | None:
        """The state a non-final agent ends in: ``done`` when the workflow completed or
        failed, ``error`` when it was stopped (mode ``all``)."""
        if status == "stopped":
            return "error" if self.mode == "all" else None
        return "done" if status in ("completed", "failed") else None

    def _corrected(self, ctx: Context, tid: str, run: _Run) -> dict[str, Any] | None:
        """The snapshot that ends the workflow, unless it would say nothing new."""
        base = run.last["workflow_progress"] if run.last is not None else []
        info, titles = _titles(ctx, tid)
        state = self._end_state(run.status)
        entries = complete_phases(base, titles)
        if state is not None:
            target = target_of(ctx)
            entries = [_ended(e, state, run.status, target) for e in entries]
        if entries == base or not entries:
            return None
        if run.last is None:
            return _first_snapshot(ctx, tid, info, entries)
        return _last_snapshot(ctx, run.last, entries, info, aborted=state == "error")

    def on_timer(self, key: str, ctx: Context) -> Output:
        run = self._runs.get(key)
        if run is None or run.final or run.held is None:
            return None
        return self._finish(ctx, key, run)

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        # what is still open is about to be killed by terminal-guarantee
        out: list[Frame] = []
        for tid, run in self._runs.items():
            if not run.final:
                if run.status is None:
                    run.status = "stopped"
                out.extend(self._finish(ctx, tid, run))
        return out
