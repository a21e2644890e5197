"""Shared vocabulary and helpers of the background-task rules (PROTOCOL.md §2).

The task stages (``compat/stages/tasks.py``, ``workflow.py``, ``lifecycle.py``) are separate
so each can be switched off by id; what they must agree on lives here: which statuses are
terminal (cbc's internal ``cancelled`` included, so every stage still works with
``task-status`` off), Claude's task types, the tool call that started a task (unwrapping
cbc's ``DeferExecuteTool``), a workflow's script and ``meta``, Claude's summary wording and
the order Claude writes task-frame keys in.

Facts one stage learns for the others go into ``SessionState.tasks`` (``TaskInfo``); each
field there has one writer, named in ``compat/session.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from compat import wire
from compat.frames import Frame
from compat.jsmeta import MetaError, meta_summary, parse_meta
from compat.vocabulary import TASK_TYPES

if TYPE_CHECKING:
    from compat.session import SessionState, TaskInfo
    from compat.stage import Context

TASK_FRAMES = frozenset(
    {
        "system/task_started",
        "system/task_progress",
        "system/task_updated",
        "system/task_notification",
    }
)

#: the facts a rule reads to know the running tasks and what the client was shown of
#: them (``SessionState.running_tasks``, ``TaskInfo.shown``: terminal-guarantee's)
RUNNING_TASK_FACTS = frozenset(
    {"task.phase", "task.shown", "task.task_id", "task.tool_use_id", "tasks"}
)

#: patch statuses that end a task (``cancelled`` is cbc's internal word for ``killed``)
TERMINAL = frozenset({"completed", "failed", "killed", "cancelled"})
#: patch status -> notification status (Claude: completed|failed|stopped)
NOTIFICATION_OF = {
    "completed": "completed",
    "failed": "failed",
    "killed": "stopped",
    "cancelled": "stopped",
    "stopped": "stopped",
}
#: notification status -> patch status
PATCH_OF = {
    "completed": "completed",
    "failed": "failed",
    "stopped": "killed",
    "killed": "killed",
    "cancelled": "killed",
}

#: cbc task_type (the raw tool name) -> Claude task_type (rule ``task-type``)
TASK_TYPE_MAP = {
    "Agent": "local_agent",
    "Task": "local_agent",
    "Bash": "local_bash",
    "PowerShell": "local_bash",
    "Monitor": "local_bash",
}
AGENT_TOOLS = frozenset({"Agent", "Task"})
SHELL_TOOLS = frozenset({"Bash", "PowerShell", "Monitor"})
WORKFLOW = "local_workflow"
FALLBACK_WORKFLOW_DESCRIPTION = "Dynamic workflow"

#: the key order Claude Code 2.1.220 writes (captures ``claude-2.1.220/mockapi_*``)
KEY_ORDER: dict[str, tuple[str, ...]] = {
    "task_started": (
        "type",
        "subtype",
        "task_id",
        "tool_use_id",
        "description",
        "subagent_type",
        "task_type",
        "workflow_name",
        "prompt",
    ),
    "task_progress": (
        "type",
        "subtype",
        "task_id",
        "tool_use_id",
        "description",
        "subagent_type",  # (a foreground agent's: twins subagent-foreground)
        "usage",
        "last_tool_name",
        "summary",
        "workflow_progress",
    ),
    "task_updated": ("type", "subtype", "task_id", "patch"),
    "task_notification": (
        "type",
        "subtype",
        "task_id",
        "tool_use_id",
        "status",
        "output_file",
        "summary",
        "usage",
    ),
    "background_tasks_changed": ("type", "subtype", "tasks"),
}
_TAIL = ("uuid", "session_id")


def claude_type(task_type: Any) -> Any:
    """The Claude task type a stage should reason with, whether or not ``task-type`` ran."""
    return TASK_TYPE_MAP.get(task_type, task_type) if isinstance(task_type, str) else task_type


def is_known_type(task_type: Any) -> bool:
    return isinstance(task_type, str) and task_type in TASK_TYPES


def patch_status(obj: Mapping[str, Any]) -> str | None:
    patch = obj.get("patch")
    st = patch.get("status") if isinstance(patch, dict) else None
    return st if isinstance(st, str) else None


def task_id_of(obj: Mapping[str, Any]) -> str | None:
    tid = obj.get("task_id")
    return tid if isinstance(tid, str) and tid else None


def ordered(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with Claude's key order for its subtype; unknown keys keep their order
    before ``uuid``/``session_id``."""
    order = KEY_ORDER.get(obj.get("subtype"))  # type: ignore[arg-type]
    if order is None:
        return obj
    out = {k: obj[k] for k in order if k in obj}
    out.update((k, v) for k, v in obj.items() if k not in out and k not in _TAIL)
    out.update((k, obj[k]) for k in _TAIL if k in obj)
    return out


def system_frame(ctx: Context, subtype: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A new Claude-shaped ``system`` frame with a fresh uuid and the session id."""
    obj = {"type": "system", "subtype": subtype, **fields}
    obj["uuid"] = ctx.env.new_uuid()
    obj["session_id"] = ctx.state.session_id or ""
    return ordered(obj)


@attrs.define
class LiveTask:
    """What a rule that may have to end a task itself remembers of it."""

    task_type: Any
    description: str
    tool_use_id: str | None

    @classmethod
    def shown(cls, started: Mapping[str, Any], tool_use_id: str | None) -> LiveTask:
        """A ``task_started`` as the client sees it (``TaskInfo.shown``): Claude's task
        type, the call it names, else ``tool_use_id`` (``TaskInfo.tool_use_id``)."""
        task = cls.of(started)
        task.task_type = claude_type(task.task_type)
        if task.tool_use_id is None:
            task.tool_use_id = tool_use_id
        return task

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> LiveTask:
        d, use = obj.get("description"), obj.get("tool_use_id")
        return cls(
            obj.get("task_type"),
            d if isinstance(d, str) else "",
            use if isinstance(use, str) else None,
        )


def stop_frames(ctx: Context, rule: str, tid: str, task: LiveTask, end: int) -> list[Frame]:
    """Claude's end of a task the bridge stops itself (interrupt-terminal, eof-wind-down):
    ``task_updated{killed,end_time}`` then ``task_notification{stopped}``."""
    fields: dict[str, Any] = {"task_id": tid}
    use = task.tool_use_id or ctx.state.task(tid).tool_use_id
    if use:
        fields["tool_use_id"] = use
    fields.update(
        status="stopped",
        output_file="",
        summary=claude_summary(task.task_type, "stopped", task.description),
    )
    return [
        Frame.synth(
            system_frame(
                ctx,
                "task_updated",
                {"task_id": tid, "patch": {"status": "killed", "end_time": end}},
            ),
            rule,
        ),
        Frame.synth(system_frame(ctx, "task_notification", fields), rule),
    ]


#: how many tasks a per-task registry keeps (``remember``'s default cap): above what any real
#: session runs at once (a test drives 10,000 live tasks), bounded against a runaway backend
MAX_LIVE_TASKS = 16384


def remember(d: dict[str, Any], key: str, value: Any, cap: int = MAX_LIVE_TASKS) -> int:
    """Insert into an insertion-ordered dict used as a bounded registry; how many of the
    oldest entries were forgotten to stay within ``cap`` (a caller for which that loses a
    live task counts and logs it). A registry with a big cap is an ``OrderedDict``: in a
    plain dict the first key is found past the holes the deletions before left at its
    front (13 us for each entry forgotten at 16,384, against 0.5)."""
    d[key] = value
    forgotten = 0
    while len(d) > cap:
        del d[next(iter(d))]
        forgotten += 1
    return forgotten


# -- the tool call that started a task ------------------------------------------------


def foreground_calls(obj: wire.Assistant) -> list[tuple[str, dict[str, Any]]]:
    """(call id, input) of the foreground Agent calls of a main-thread frame (an Agent call
    not run in the background: ``subagent-prompt``, ``agent-tool-result``,
    ``agent-task-frames`` follow its agent)."""
    if obj.get("parent_tool_use_id") is not None:
        return []
    out = []
    for b in wire.blocks(obj):
        if not isinstance(b, dict) or b.get("type") != "tool_use":
            continue
        cid, name, inp = b.get("id"), b.get("name"), b.get("input")
        if not (isinstance(cid, str) and cid and isinstance(name, str)):
            continue
        if (
            name in AGENT_TOOLS
            and isinstance(inp, dict)
            and inp.get("run_in_background") is not True
        ):
            out.append((cid, inp))
    return out


def starting_call(state: SessionState, tool_use_id: Any) -> tuple[str, dict[str, Any]] | None:
    """(tool name, input) of the call ``tool_use_id``; a ``DeferExecuteTool`` call is
    unwrapped to the tool it runs (``mockoai_workflow-by-path-via-deferexecutetool``)."""
    if not isinstance(tool_use_id, str):
        return None
    use = state.tool_uses.get(tool_use_id)
    if use is None:
        return None
    name, inp = use.name, use.input
    if name == "DeferExecuteTool":
        inner, params = inp.get("toolName"), inp.get("params")
        if isinstance(inner, str) and isinstance(params, dict):
            return inner, params
    return name, inp


def resolve_workflow(
    ctx: Context, info: TaskInfo, tool_use_id: Any, rule: str, backend_name: Any = None
) -> None:
    """Fill ``info.script`` and ``info.meta`` once per task, from the inline ``script`` of
    the ``Workflow`` call or the file at its ``scriptPath``. Never evaluates anything.

    What proves that cbc ran a file as a workflow script, so that its text may become the
    client-visible ``prompt`` (cbc 2.163.0, ``mockoai_workflow-by-path``,
    ``…-via-deferexecutetool``): the task is a ``local_workflow`` that started (this is
    called on its ``task_started``), its ``tool_use_id`` is a ``Workflow`` call the bridge
    saw in an ``assistant`` frame (``DeferExecuteTool`` unwrapped) naming that
    ``scriptPath``; cbc's own name for it, when it gives one, is ``path:<the file's
    name>``; the file is read through ``ctx.env.read_script``, which only reads below the
    directory the bridge started cbc in (or the configured ``script_roots``), not below
    the ``cwd`` cbc reports; and the file is a workflow script: its ``export const meta =
    {…}`` parses. Anything else (``/etc/passwd``, a key file, a link out of the root, a
    file below the root that is not a workflow script) is never copied into a frame: cbc's
    names are kept, and the reason is logged (with the path, never the text). An inline
    ``script`` is the call's own input, which the client already has."""
    if info.source_resolved or not isinstance(tool_use_id, str):
        return
    call = starting_call(ctx.state, tool_use_id)
    if call is None:
        return  # the tool call may not have been seen (yet); try again on a later frame
    info.source_resolved = True
    name, inp = call
    if name != "Workflow":
        ctx.log(rule, f"task {info.task_id}: started by {name!r}, not Workflow", "debug")
        return
    script = inp.get("script")
    if isinstance(script, str):
        info.script = script
        try:
            info.meta = parse_meta(script)
        except MetaError as exc:
            ctx.log(
                rule,
                f"task {info.task_id}: workflow meta not readable ({exc}); "
                "keeping the backend's values",
                "warning",
            )
        return
    path = inp.get("scriptPath")
    if not isinstance(path, str) or not path:
        ctx.log(
            rule,
            f"task {info.task_id}: no script or scriptPath (a saved "
            "workflow?); keeping the backend's name",
            "debug",
        )
        return
    if (
        isinstance(backend_name, str)
        and backend_name.startswith(PATH_NAME)
        and (backend_name[len(PATH_NAME) :] != _basename(path))
    ):
        ctx.log(
            rule,
            f"task {info.task_id}: the backend names {backend_name!r}, not the "
            f"call's {path!r}; not reading it",
            "warning",
        )
        return
    text = ctx.env.read_script(ctx.state.cwd or "", path)
    if text is None:
        ctx.log(
            rule,
            f"task {info.task_id}: could not read workflow script {path!r} "
            "(outside the session's directory, not a regular file, or too big); "
            "keeping the backend's name",
            "warning",
        )
        return
    try:
        meta = parse_meta(text)
    except MetaError as exc:
        ctx.log(
            rule,
            f"task {info.task_id}: {path!r} is not a workflow script ({exc}); "
            "keeping the backend's values",
            "warning",
        )
        return
    info.script, info.meta = text, meta


#: cbc's ``workflow_name`` for a script started by path: ``path:<basename>``
PATH_NAME = "path:"
_SEP = re.compile(r"[\\/]")


def _basename(path: str) -> str:
    return _SEP.split(path.rstrip("/\\"))[-1]


def meta_fields(info: TaskInfo) -> tuple[str | None, str | None, list[str] | None]:
    """(name, description, phase titles) from the task's workflow meta, when known."""
    if info.meta is None:
        return None, None, None
    return meta_summary(info.meta)


# -- summaries ---------------------------------------------------------------------------

_PREFIX = {
    WORKFLOW: "Dynamic workflow",
    "local_bash": "Background command",
    "local_agent": "Background agent",
}
_CBC_SUMMARY = re.compile(
    r'\A(Background command|Dynamic workflow|Background agent) "(.*)" '
    r"(completed|failed|was stopped|was killed|stopped|killed|cancelled)(.*)\Z",
    re.S,
)


def claude_summary(task_type: Any, status: str, description: str) -> str:
    """Claude's wording: ``Background command "<d>" completed`` and the like; a stopped task's
    summary is its bare description (``mockapi_idle-interrupt-kills-bg-workflow-keeps-bg-bash``,
    ``mockapi_taskstop-background-bash_killed-stopped``)."""
    if status == "stopped":
        return description
    ttype = claude_type(task_type)
    prefix = _PREFIX.get(ttype, "Background task") if isinstance(ttype, str) else "Background task"
    return f'{prefix} "{description}" {status}'


def rewrite_summary(summary: str, status: str, task_type: Any, description: str | None) -> str:
    """Re-word one of cbc's summary templates the Claude way; other text is kept."""
    m = _CBC_SUMMARY.match(summary)
    if m is None:
        return summary
    kind = {v: k for k, v in _PREFIX.items()}[m.group(1)]
    desc = description if description is not None else m.group(2)
    if status == "stopped":
        return desc
    return claude_summary(task_type or kind, status, desc) + m.group(4)
