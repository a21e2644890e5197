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

from typing import Any, ClassVar, cast

import attrs

from compat.frames import Frame, str_at
from compat.session import TaskInfo
from compat.stage import Context, Output, Stage, register
from compat.target import target_of
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
    TaskFrame,
    TaskNotification,
    TaskProgress,
    TaskStarted,
    TaskUpdated,
    as_dict,
)

FINAL_AGENT_STATES = frozenset({"done", "error", "cached"})
ABORTED = {"stopped": "subagent aborted: workflow was stopped"}


def _is_agent(e: Any) -> bool:
    return isinstance(e, dict) and e.get("type") == "workflow_agent"


def _without_ended_at(entries: list[Any]) -> list[Any]:
    """Agent entries without cbc's ``endedAt`` (not a key of Claude's entries)."""
    if not any(_is_agent(e) and "endedAt" in e for e in entries):
        return entries
    return [_drop_ended_at(e) for e in entries]


def _drop_ended_at(e: Any) -> Any:
    if not (_is_agent(e) and "endedAt" in e):
        return e
    return {k: v for k, v in e.items() if k != "endedAt"}


def complete_phases(entries: list[Any], titles: list[str] | None) -> list[Any]:
    """Every declared phase first (Claude's order), then the other entries as they were.
    Unchanged unless cbc's phase entries agree with ``meta.phases`` (same index, same
    title): a script may call ``phase()`` with titles it never declared."""
    if not titles:
        return entries
    phases: dict[int, Any] = {}
    rest: list[Any] = []
    for e in entries:
        if isinstance(e, dict) and e.get("type") == "workflow_phase":
            idx = e.get("index")
            if (
                type(idx) is not int
                or not 1 <= idx <= len(titles)
                or titles[idx - 1] != e.get("title")
                or idx in phases
            ):
                return entries
            phases[idx] = e
        else:
            rest.append(e)
    full = [
        phases.get(i) or {"type": "workflow_phase", "index": i, "title": t}
        for i, t in enumerate(titles, 1)
    ]
    return full + rest


def _progress_title(entries: list[Any]) -> tuple[str | None, str | None]:
    """Claude's progress description ("Scan: scanner") and last_tool_name ("scanner")."""
    agents = [e for e in entries if _is_agent(e)]
    if not agents:
        return None, None
    last = agents[-1]
    label, phase = last.get("label"), last.get("phaseTitle")
    label = label if isinstance(label, str) and label else None
    phase = phase if isinstance(phase, str) and phase else None
    if label and phase:
        return f"{phase}: {label}", label
    return label or phase, label


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
        obj = cast(TaskFrame, frame.obj)
        if obj.get("type") != "system" or f"system/{obj.get('subtype')}" not in TASK_FRAMES:
            return None
        tid = task_id_of(obj)
        if tid is None:
            return None
        if obj.get("subtype") == "task_started":
            started = cast(TaskStarted, obj)
            if claude_type(started.get("task_type")) != WORKFLOW:
                return None
            info = ctx.state.task(tid)
            _workflow_call_fields(ctx, info, started, self.rule)
            name, _, _ = meta_fields(info)
            given = started.get("workflow_name")
            info.workflow_name = name or (given if isinstance(given, str) else None)
            if info.workflow_name is not None:
                remember(self._names, tid, info.workflow_name)
        name = self._names.get(tid)
        if name is None or "workflow_name" not in obj or obj["workflow_name"] == name:
            return None
        return (frame.replace({**obj, "workflow_name": name}),)


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
        if cast(Envelope, frame.obj).get("subtype") == "task_progress":
            progress = cast(TaskProgress, frame.obj)
            tid = task_id_of(progress)
            if tid is None:
                return None
            info = ctx.state.task(tid)
            desc = progress.get("description")
            if (
                info.backend_description is not None
                and desc == info.backend_description
                and info.description
                and desc != info.description
            ):
                new: TaskProgress = {**progress, "description": info.description}
                return (frame.replace(as_dict(new)),)
            return None
        obj = cast(TaskStarted, frame.obj)
        tid = task_id_of(obj)
        if tid is None:
            return None
        info = ctx.state.task(tid)
        desc = obj.get("description")
        if info.backend_description is None:
            info.backend_description = desc if isinstance(desc, str) else ""
        fields: dict[str, Any] = {}
        ttype = claude_type(obj.get("task_type"))
        use_id = obj.get("tool_use_id") or info.tool_use_id
        if ttype == WORKFLOW:
            _workflow_call_fields(ctx, info, obj, self.rule)
            if info.script is not None:
                _, mdesc, _ = meta_fields(info)
                fields["description"] = mdesc or FALLBACK_WORKFLOW_DESCRIPTION
                info.prompt = info.script
        else:
            call = starting_call(ctx.state, use_id)
            if call is not None and call[0] in AGENT_TOOLS:
                prompt, sub = call[1].get("prompt"), call[1].get("subagent_type")
                if isinstance(prompt, str):
                    info.prompt = prompt
                if isinstance(sub, str) and sub and "subagent_type" not in obj:
                    fields["subagent_type"] = sub
            elif call is not None and call[0] in SHELL_TOOLS:
                d = call[1].get("description")
                if isinstance(d, str) and d.strip():
                    fields["description"] = d
        if info.prompt is not None and not isinstance(obj.get("prompt"), str):
            fields["prompt"] = info.prompt
        final = fields.get("description", desc)
        info.description = final if isinstance(final, str) else ""
        if not fields or all(obj.get(k) == v for k, v in fields.items()):
            return None
        return (frame.replace(ordered({**obj, **fields})),)


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
        head = cast(Envelope, frame.obj)
        tid = task_id_of(head)
        if tid is None:
            return None
        if head.get("subtype") == "task_started":
            started = cast(TaskStarted, head)
            if claude_type(started.get("task_type")) == WORKFLOW:
                d = started.get("description")
                remember(self._workflows, tid, d if isinstance(d, str) else "")
            return None
        obj = cast(TaskProgress, head)
        entries = obj.get("workflow_progress")
        if tid not in self._workflows or not isinstance(entries, list):
            return None
        info = ctx.state.tasks.get(tid)
        titles = meta_fields(info)[2] if info is not None else None
        new = cast(TaskProgress, dict(obj))
        new["workflow_progress"] = complete_phases(_without_ended_at(entries), titles)
        title, tool = _progress_title(new["workflow_progress"])
        if title is not None:
            new["description"] = title
        if tool is not None and "last_tool_name" not in obj:
            new["last_tool_name"] = tool
        if "summary" not in obj and self._workflows[tid]:
            new["summary"] = self._workflows[tid]
        if new == obj:
            return None
        return (frame.replace(ordered(as_dict(new))),)


@attrs.define
class _Run:
    last: dict[str, Any] | None = None  # the last progress forwarded (or folded)
    held: Frame | None = None  # the terminal task_updated, until the notification
    status: str | None = None  # Claude notification status once terminal
    end_time: int | None = None
    final: bool = False


def _agent_id(e: Any) -> str | int | None:
    """An agent entry's ``agentId`` when it can be a key (cbc writes a string)."""
    aid = e.get("agentId") if isinstance(e, dict) else None
    return aid if isinstance(aid, str | int) and not isinstance(aid, bool) else None


def _merge(old: list[Any], new: list[Any]) -> list[Any]:
    """A later snapshot wins, except that an agent never goes back from a final state."""
    final: dict[str | int | None, Any] = {
        aid: e
        for e in old
        if _is_agent(e)
        and str_at(e, "state") in FINAL_AGENT_STATES
        and (aid := _agent_id(e)) is not None
    }
    return [
        final.get(_agent_id(e), e)
        if _is_agent(e) and str_at(e, "state") not in FINAL_AGENT_STATES
        else e
        for e in new
    ]


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
        obj = cast(Envelope, frame.obj)
        tid = task_id_of(obj)
        if tid is None:
            return None
        st = obj.get("subtype")
        if st == "task_started":
            task_type = cast(TaskStarted, obj).get("task_type")
            if claude_type(task_type) == WORKFLOW and tid not in self._runs:
                remember(self._runs, tid, _Run(), cap=1024)
            return None
        run = self._runs.get(tid)
        if run is None or run.final:
            return None
        if st == "task_progress":
            progress = cast(TaskProgress, obj)
            if isinstance(progress.get("workflow_progress"), list):
                if run.held is not None and run.last is not None:
                    merged = _merge(run.last["workflow_progress"], progress["workflow_progress"])
                    folded: TaskProgress = {**progress, "workflow_progress": merged}
                    run.last = as_dict(folded)
                    return ()  # stale: folded into the corrected snapshot
                run.last = as_dict(progress)
            return None
        if st == "task_updated":
            status = patch_status(obj)
            if status not in TERMINAL or run.held is not None:
                return None
            run.held, run.status = frame, NOTIFICATION_OF[status]
            end = cast(TaskUpdated, obj)["patch"].get("end_time")
            run.end_time = end if type(end) is int else None
            ctx.hold()
            ctx.set_timer(self, tid, self.wait)
            return ()
        # task_notification
        ctx.cancel_timer(self, tid)
        status = cast(TaskNotification, obj).get("status")
        if run.status is None and isinstance(status, str):
            run.status = NOTIFICATION_OF.get(status, status)
        return (*self._finish(ctx, tid, run), frame)

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

    def _corrected(self, ctx: Context, tid: str, run: _Run) -> dict[str, Any] | None:
        base = run.last["workflow_progress"] if run.last is not None else []
        info = ctx.state.tasks.get(tid)
        titles = meta_fields(info)[2] if info is not None else None
        entries = complete_phases(base, titles)
        state = "done" if run.status in ("completed", "failed") else None
        if run.status == "stopped" and self.mode == "all":
            state = "error"
        if state is not None:
            fixed = []
            for e in entries:
                if _is_agent(e) and str_at(e, "state") not in FINAL_AGENT_STATES:
                    e = {k: v for k, v in e.items() if k != "endedAt"}
                    e["state"] = state
                    if state == "error":
                        words = target_of(ctx).aborted_agent_error or ABORTED
                        e.setdefault("error", words[run.status])  # type: ignore[index]
                        if target_of(ctx).aborted_final_run_state:
                            e.setdefault("endedWithRun", run.status)
                fixed.append(e)
            entries = fixed
        if entries == base or not entries:
            return None
        if run.last is not None:
            snap = {k: v for k, v in run.last.items() if k not in ("uuid", "session_id")}
            snap["workflow_progress"] = entries
            if state == "error" and target_of(ctx).aborted_final_run_state and info:
                snap["description"] = info.description or snap.get("description", "")
                snap.pop("last_tool_name", None)  # 2.1.332: the workflow's own line
            return system_frame(
                ctx,
                "task_progress",
                {k: v for k, v in snap.items() if k not in ("type", "subtype")},
            )
        fields: dict[str, Any] = {"task_id": tid}
        if info is not None and info.tool_use_id:
            fields["tool_use_id"] = info.tool_use_id
        fields["description"] = (info.description if info else "") or ""
        fields["usage"] = {"total_tokens": 0, "tool_uses": 0, "duration_ms": 0}
        fields["workflow_progress"] = entries
        return system_frame(ctx, "task_progress", fields)

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
