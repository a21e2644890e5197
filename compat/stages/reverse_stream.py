"""The message stream of profile ``claude-to-cbc``: what a cbc 2.163.0 client sees of a
Claude Code 2.1.220 session (REVERSE.md gaps 2, 9, 16, 19-22, 25).

Strategy: a cbc client sees only what cbc writes: each rule drops a frame of Claude's that
cbc never sends, or rewrites one field or result into cbc's words and shape; a frame no
rule recognizes passes untouched. The rules read the ``rev`` facts ``rev-requests`` and
``rev-track`` keep (``compat/stages/reverse_control.py``).
"""

from __future__ import annotations

import re
import signal
from typing import Any, ClassVar, cast

import attrs

from compat import reverse_state as rstate
from compat import wire
from compat.exits import Exit
from compat.frames import Frame, dict_at, list_at, str_at
from compat.stage import Context, Direction, Output, Stage, register
from compat.vocabulary import CBC_SYSTEM

TASK_TYPES = {"local_bash": "Bash", "local_agent": "Agent"}
LOCAL_COMMAND = "<local-command-stdout>"
#: Claude's exit status when a signal ended it (SIGHUP, SIGINT, SIGTERM)
SIGNAL_EXITS = frozenset({128 + signal.SIGHUP, Exit.INTERRUPTED, Exit.TERMINATED})
#: how cbc's summary of a background shell ends, by notification status (its captures)
BASH_ENDINGS = {
    "completed": "completed",
    "failed": "failed",
    "stopped": "was stopped",
    "killed": "was stopped",
}
STOPPED = frozenset({"stopped", "killed"})


def swap(value: Any, old: str, new: str) -> Any:
    """``value`` with every string equal to ``old`` replaced by ``new`` (the same object when
    nothing changes)."""
    if isinstance(value, str):
        return new if value == old else value
    if type(value) is dict:
        out = {k: swap(v, old, new) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if type(value) is list:
        items = [swap(v, old, new) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _swapped(frame: Frame, old: str | None, new: str | None) -> Output:
    if not old or not new:
        return None
    obj = frame.obj
    out = swap(obj, old, new)
    return None if out is obj else (frame.replace(out),)


@register
@attrs.define
class ReverseSessionId(Stage):
    """Claude's session UUID -> the client's own (non-UUID) session id, in every frame.

    A client session id that is not a UUID reaches Claude as ``uuid5`` of it
    (``compat.argv_cbc``); every string equal to that UUID in Claude's frames is the client's
    id again (``rev-session-id-up`` does the reverse upstream). Paths that contain the UUID
    (``transcript_path``, ``output_file``) are real files and stay as they are.
    """

    rule: ClassVar[str] = "rev-session-id"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.claude_session", "rev.client_session"})
    kinds: ClassVar[frozenset[str] | None] = None

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rs = rstate.of(ctx.state)
        return _swapped(frame, rs.claude_session, rs.client_session)


@register
@attrs.define
class ReverseSessionIdUp(Stage):
    """The client's session id -> the UUID Claude was started with, in the client's frames.

    A client session id that is not a UUID reaches Claude as ``uuid5`` of it
    (``compat.argv_cbc``): the client's id in its own frames (``set_model{session_id}``, user
    lines) is the UUID (``rev-session-id`` does the reverse downstream).
    """

    rule: ClassVar[str] = "rev-session-id-up"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.claude_session", "rev.client_session"})
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = None

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rs = rstate.of(ctx.state)
        return _swapped(frame, rs.client_session, rs.claude_session)


@register
@attrs.define
class ReverseInterruptedTurn(Stage):
    """An interrupted turn ends as cbc ends it: `result{subtype:"success", is_error:false,
    result:""}`, no `errors` (both cbc SDKs raise ExecutionError on Claude's).

    Claude ends an interrupted turn with ``result{subtype: "error_during_execution",
    is_error:true, errors:[...], terminal_reason:"aborted_*"}``, which both cbc SDKs raise as
    ``ExecutionError``; cbc ends it with a success whose ``result`` is empty. After the
    client's interrupt (or for ``terminal_reason aborted_*``), the result becomes
    ``subtype:"success", is_error:false, result:""`` without ``errors`` (``terminal_reason``
    kept).
    """

    rule: ClassVar[str] = "rev-interrupted-turn"
    writes: ClassVar[frozenset[str]] = frozenset({"rev.interrupted"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"result"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rs = rstate.of(ctx.state)
        obj = frame.view(wire.Result)
        asked, rs.interrupted = rs.interrupted, False
        reason = str_at(obj, "terminal_reason") or ""
        aborted = reason.startswith("aborted")
        if not obj.get("is_error") or not (
            aborted or (asked and obj.get("subtype") == "error_during_execution")
        ):
            return None
        new = {k: v for k, v in obj.items() if k != "errors"}
        new.update(subtype="success", is_error=False, result="")
        return (frame.replace(new),)


#: Claude's marker user frames of an interrupted turn (text-only content)
INTERRUPT_MARKERS = frozenset(
    {"[Request interrupted by user]", "[Request interrupted by user for tool use]"}
)
CBC_INTERRUPTED = "Interrupted by user"


def marker_text(obj: wire.User) -> str | None:
    """The marker of one of Claude's interrupted-turn user frames, else None."""
    content = cast("wire.Message", dict_at(obj, "message") or {}).get("content")
    if isinstance(content, str):
        text = content
    elif (
        isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], dict)
        and cast("wire.ContentBlock", content[0]).get("type") == "text"
    ):
        text = str(cast("wire.ContentBlock", content[0]).get("text", ""))
    else:
        return None
    return text if text in INTERRUPT_MARKERS else None


@register
@attrs.define
class ReverseInterruptMarker(Stage):
    """Claude's `[Request interrupted by user…]` user frame -> cbc's assistant message
    "Interrupted by user" (a cbc client never gets a user message it did not send)."""

    rule: ClassVar[str] = "rev-interrupt-marker"
    reads: ClassVar[frozenset[str]] = frozenset({"model"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.User)
        if obj.get("parent_tool_use_id") is not None or marker_text(obj) is None:
            return None
        uid = str_at(obj, "uuid") or ctx.env.new_uuid()
        usage = {"input_tokens": 0, "output_tokens": 0}
        new = cbc_text_frame(uid, uid, obj.get("session_id"), CBC_INTERRUPTED, ctx, usage)
        return (frame.replace({**new, "parent_tool_use_id": None}),)


def cbc_text_frame(
    uid: str, mid: str, session: Any, text: str, ctx: Context, usage: dict[str, Any]
) -> dict[str, Any]:
    """An assistant frame of one text in cbc's shape (a message cbc writes of its own)."""
    message = {
        "id": mid,
        "content": [{"type": "text", "text": text}],
        "model": ctx.state.model or "",
        "role": "assistant",
        "stop_reason": None,
        "stop_sequence": None,
        "type": "message",
        "usage": usage,
    }
    return {"type": "assistant", "uuid": uid, "session_id": session, "message": message}


@register
@attrs.define
class ReverseToolResult(Stage):
    """A ``tool_result`` block with no ``is_error`` gets ``is_error: false``, as cbc writes
    every tool result (Claude writes ``is_error`` only when it is true)."""

    rule: ClassVar[str] = "rev-tool-result"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.User)
        msg = dict_at(obj, "message")
        content = cast("list[wire.ContentBlock]", list_at(msg, "content"))
        if msg is None or not any(
            type(b) is dict and b.get("type") == "tool_result" and "is_error" not in b
            for b in content
        ):
            return None
        blocks = [
            {**b, "is_error": False}
            if type(b) is dict and b.get("type") == "tool_result" and "is_error" not in b
            else b
            for b in content
        ]
        return (frame.replace({**obj, "message": {**msg, "content": blocks}}),)


@register
@attrs.define
class ReverseLocalCommand(Stage):
    """Drop Claude's replayed `<local-command-stdout>` user frame (after set_model etc.).

    The replayed ``<local-command-stdout>`` user frame Claude writes after ``set_model`` /
    ``set_permission_mode`` is dropped (unless the client passed ``--replay-user-messages``):
    cbc's SDK would surface it as a user message.
    """

    rule: ClassVar[str] = "rev-local-command"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.replay_user_messages"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.User)
        if obj.get("isReplay") is not True:
            return None
        if rstate.of(ctx.state).replay_user_messages:
            return None
        content = cast("wire.Message", dict_at(obj, "message") or {}).get("content")
        text = content if isinstance(content, str) else ""
        return () if text.lstrip().startswith(LOCAL_COMMAND) else None


@register
@attrs.define
class ReverseTasksSnapshot(Stage):
    """Drop `system/background_tasks_changed` (outside cbc's vocabulary)."""

    rule: ClassVar[str] = "rev-tasks-snapshot"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/background_tasks_changed"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        return ()


@register
@attrs.define
class ReverseVocabulary(Stage):
    """Drop a ``system`` frame whose subtype cbc 2.163.0 never writes (its contract's
    ``CBC_SYSTEM``): a cbc client never sees one.

    Claude's ``api_retry``, ``thinking_tokens``, ``hook_started``,
    ``model_refusal_no_fallback``...: outside ``compat.vocabulary.CBC_SYSTEM``, dropped, as the
    forward profile drops what Claude does not write; cbc's own subtypes pass.
    """

    rule: ClassVar[str] = "rev-vocabulary"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        sub = str_at(frame.obj, "subtype")
        return None if sub is None or sub in CBC_SYSTEM else ()


#: Claude's max-turns error text, and cbc's
_CLAUDE_MAX_TURNS = re.compile(r"Reached maximum number of turns \((\d+)\)")
CBC_MAX_TURNS = "Max turns ({}) exceeded"


@register
@attrs.define
class ReverseErrorResult(Stage):
    """A failed turn ends in cbc's ``error_during_execution`` with ``errors``: Claude's
    API-error result (``success`` with ``is_error``) and its ``error_max_turns``.

    A turn that failed ends as cbc ends it, ``subtype: "error_during_execution"`` with
    ``errors`` (both SDKs raise ``ExecutionError`` on it): Claude's API-error end
    (``subtype:"success", is_error:true``, the message in ``result``) gets ``errors:
    [result]`` and no ``result``; ``error_max_turns`` is cbc's ``Max turns (N) exceeded``.
    """

    rule: ClassVar[str] = "rev-error-result"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"result"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.Result)
        if obj.get("is_error") is not True:
            return None
        sub = obj.get("subtype")
        if sub == "success":
            text = obj.get("result")
            new = {k: v for k, v in obj.items() if k != "result"}
            new.update(
                subtype="error_during_execution",
                errors=[text] if isinstance(text, str) and text else list_at(obj, "errors"),
            )
            return (frame.replace(new),)
        if sub == "error_max_turns":
            errors = [
                CBC_MAX_TURNS.format(m.group(1))
                if isinstance(e, str) and (m := _CLAUDE_MAX_TURNS.fullmatch(e))
                else e
                for e in list_at(obj, "errors")
            ]
            return (frame.replace({**obj, "subtype": "error_during_execution", "errors": errors}),)
        return None


@register
@attrs.define
class ReverseCommandLifecycle(Stage):
    """Drop `command_lifecycle` (Claude's queued/started/completed receipts of user lines;
    cbc writes none)."""

    rule: ClassVar[str] = "rev-command-lifecycle"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"command_lifecycle"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        return ()


@register
@attrs.define
class ReverseTaskType(Stage):
    """`task_type` `local_bash` -> `Bash`, `local_agent` -> `Agent` (cbc's names)."""

    rule: ClassVar[str] = "rev-task-type"
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {
            "system/task_started",
            "system/task_progress",
            "system/task_updated",
            "system/task_notification",
        }
    )

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.ReverseTask)
        t = obj.get("task_type")
        if not isinstance(t, str) or t not in TASK_TYPES:
            return None
        return (frame.replace({**obj, "task_type": TASK_TYPES[t]}),)


@register
@attrs.define
class ReverseTaskStatus(Stage):
    """`task_updated` carries its `patch.status` at the top level too, as cbc writes it."""

    rule: ClassVar[str] = "rev-task-status"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/task_updated"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.TaskUpdated)
        status = str_at(dict_at(obj, "patch"), "status")
        if status is None or "status" in obj:
            return None
        return (frame.replace({**obj, "status": status}),)


@register
@attrs.define
class ReverseBackgroundAgent(Stage):
    """Drop a background agent's own messages (cbc keeps them to itself); a foreground
    agent's pass.

    A background agent's own messages are the ``assistant``/``user``/``stream_event`` frames
    whose ``parent_tool_use_id`` is an Agent call made with ``run_in_background``. A
    foreground Agent's frames pass (cbc sends those with their parent too).
    """

    rule: ClassVar[str] = "rev-background-agent"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.background_calls"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "user", "stream_event"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        calls = rstate.of(ctx.state).background_calls
        parent = str_at(frame.obj, "parent_tool_use_id")
        return () if parent is not None and parent in calls else None


@register
@attrs.define
class ReverseAgentSummary(Stage):
    """A completed agent task's summary in cbc's words: `Background agent "<d>" completed`.

    Claude's ``summary`` is the agent's last text; cbc's is ``Background agent
    "<description>" completed``.
    """

    rule: ClassVar[str] = "rev-agent-summary"
    writes: ClassVar[frozenset[str]] = frozenset({"rev.agent_tasks"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/task_notification"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.TaskNotification)
        tid = str_at(obj, "task_id")
        task = rstate.of(ctx.state).agent_tasks.pop(tid or "", None)
        if task is None or obj.get("status") != "completed":
            return None
        summary = f'Background agent "{task[0]}" completed'
        return (
            None if obj.get("summary") == summary else (frame.replace({**obj, "summary": summary}),)
        )


@register
@attrs.define
class ReverseTaskWords(Stage):
    """Background tasks in cbc's words: a shell's ``task_started`` description is its
    command, its summary ``Background command "<command>" completed`` (or ``was stopped``);
    a stopped workflow's summary ``Dynamic workflow "<description>" was stopped``.

    A shell's ``description`` is its command (Claude: the call's ``description``) and its
    notification's ``summary`` ``Background command "<command>" completed`` / ``failed`` /
    ``was stopped`` (Claude adds the exit code, and names the description); a stopped
    workflow's summary is ``Dynamic workflow "<description>" was stopped`` (Claude: the bare
    description).
    """

    rule: ClassVar[str] = "rev-task-words"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.bash_calls"})
    writes: ClassVar[frozenset[str]] = frozenset({"rev.bash_tasks", "rev.workflow_tasks"})
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"system/task_started", "system/task_notification"}
    )

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.ReverseTask)
        rs = rstate.of(ctx.state)
        tid = str_at(obj, "task_id") or ""
        kind = obj.get("task_type")
        if obj.get("subtype") == "task_started":
            if kind in ("local_workflow",):
                rstate.remember(rs.workflow_tasks, tid, str_at(obj, "description") or "")
                return None
            if kind not in ("local_bash", "Bash"):
                return None
            command = rs.bash_calls.get(str_at(obj, "tool_use_id") or "")
            if command is None:
                return None
            rstate.remember(rs.bash_tasks, tid, command)
            if obj.get("description") == command:
                return None
            return (frame.replace({**obj, "description": command}),)
        status = str(obj.get("status"))
        if tid in rs.workflow_tasks:
            described = rs.workflow_tasks.pop(tid)
            if status not in STOPPED or not described:
                return None
            summary = f'Dynamic workflow "{described}" was stopped'
        else:
            command = rs.bash_tasks.pop(tid, None)
            ending = BASH_ENDINGS.get(status)
            if command is None or ending is None:
                return None
            summary = f'Background command "{command}" {ending}'
        return (
            None if obj.get("summary") == summary else (frame.replace({**obj, "summary": summary}),)
        )


@register
@attrs.define
class ReverseExitStatus(Stage):
    """Exit 0 as cbc does when Claude was ended by a signal (143) or exits 1 after a session
    that ran (its last result an error, or an interrupted turn); a Claude that fails before
    any result (a refused option) keeps its status.

    Claude exits 143 (129, 130) when the SDK ends it by a signal, and 1 at EOF after an error
    result (also one the bridge made a success); cbc exits 0, so the bridge does, unless
    Claude failed before any result.
    """

    rule: ClassVar[str] = "rev-exit-status"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"result"})
    _results: int = attrs.field(default=0, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self._results += 1
        return None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        if status in SIGNAL_EXITS or (status == 1 and self._results):
            ctx.set_exit_status(Exit.OK)
        return None
