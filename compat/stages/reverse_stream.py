"""The message stream of profile ``claude-to-cbc``: what a cbc 2.163.0 client sees of a
Claude Code 2.1.220 session (REVERSE.md gaps 2, 9, 16, 19-22, 25).

- ``rev-session-id`` (down) / ``rev-session-id-up`` (up): a client session id that is not
  a UUID reaches Claude as ``uuid5`` of it (``compat.argv_cbc``); every string equal to
  that UUID in Claude's frames is the client's id again, and the client's id in its own
  frames (``set_model{session_id}``, user lines) is the UUID. Paths that contain the UUID
  (``transcript_path``, ``output_file``) are real files and stay as they are.
- ``rev-interrupted-turn``: Claude ends an interrupted turn with ``result{subtype:
  "error_during_execution", is_error:true, errors:[...], terminal_reason:"aborted_*"}``,
  which both cbc SDKs raise as ``ExecutionError``; cbc ends it with a success whose
  ``result`` is empty. After the client's interrupt (or for ``terminal_reason
  aborted_*``), the result becomes ``subtype:"success", is_error:false, result:""``
  without ``errors`` (``terminal_reason`` kept); ``rev-interrupt-marker`` makes Claude's
  ``[Request interrupted by user…]`` user frame cbc's assistant "Interrupted by user".
- ``rev-local-command``: the replayed ``<local-command-stdout>`` user frame Claude writes
  after ``set_model`` / ``set_permission_mode`` is dropped (unless the client passed
  ``--replay-user-messages``): cbc's SDK would surface it as a user message.
- ``rev-tasks-snapshot``: ``system/background_tasks_changed`` is dropped (not cbc's), and
  ``rev-command-lifecycle`` drops ``command_lifecycle`` (cbc has no such receipts).
- ``rev-task-type``: ``task_type`` ``local_bash`` -> ``Bash``, ``local_agent`` -> ``Agent``;
  ``rev-task-status``: ``task_updated`` gets its ``patch.status`` at the top level (cbc's).
- ``rev-background-agent``: a background agent's own messages (``assistant``/``user``/
  ``stream_event`` whose ``parent_tool_use_id`` is an Agent call made with
  ``run_in_background``) are dropped: cbc keeps them to itself. A foreground Agent's
  frames pass (cbc sends those with their parent too).
- ``rev-agent-summary``: a completed agent task's ``summary`` (Claude: the agent's last
  text) is cbc's ``Background agent "<description>" completed``.
- ``rev-task-words``: background tasks in cbc's words: a shell's ``description`` is its
  command (Claude: the call's ``description``) and its notification's ``summary``
  ``Background command "<command>" completed`` / ``was stopped`` (Claude adds the exit
  code, and names the description); a stopped workflow's summary is ``Dynamic workflow
  "<description>" was stopped`` (Claude: the bare description).
- ``rev-tool-result``: a ``tool_result`` block without ``is_error`` gets ``is_error: false``
  (cbc writes it on every tool result, Claude only ``true`` on a failed one).
- ``rev-exit-status``: Claude exits 143 (129, 130) when the SDK ends it by a signal, and 1
  at EOF after an error result (also one the bridge made a success); cbc exits 0, so the
  bridge does, unless Claude failed before any result.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import reverse_state as rstate
from compat.frames import Frame, dict_at, list_at, str_at
from compat.stage import Context, Direction, Output, Stage, register

TASK_TYPES = {"local_bash": "Bash", "local_agent": "Agent"}
LOCAL_COMMAND = "<local-command-stdout>"
#: Claude's exit status when a signal ended it (SIGHUP, SIGINT, SIGTERM)
SIGNAL_EXITS = frozenset({129, 130, 143})
#: how cbc's summary of a background shell ends, by notification status (its captures)
BASH_ENDINGS = {"completed": "completed", "stopped": "was stopped", "killed": "was stopped"}
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
    if frame.raw and old.encode() not in frame.raw:
        return None
    obj = frame.obj
    if not isinstance(obj, dict):
        return None
    out = swap(obj, old, new)
    return None if out is obj else (frame.replace(out),)


@register
@attrs.define
class ReverseSessionId(Stage):
    """Claude's session UUID -> the client's own (non-UUID) session id, in every frame."""

    rule: ClassVar[str] = "rev-session-id"
    kinds: ClassVar[frozenset[str] | None] = None
    lazy: ClassVar[bool] = True

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rs = rstate.of(ctx.state)
        return _swapped(frame, rs.claude_session, rs.client_session)


@register
@attrs.define
class ReverseSessionIdUp(Stage):
    """The client's session id -> the UUID Claude was started with, in the client's frames."""

    rule: ClassVar[str] = "rev-session-id-up"
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = None
    lazy: ClassVar[bool] = True

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rs = rstate.of(ctx.state)
        return _swapped(frame, rs.client_session, rs.claude_session)


@register
@attrs.define
class ReverseInterruptedTurn(Stage):
    """An interrupted turn ends as cbc ends it: `result{subtype:"success", is_error:false,
    result:""}`, no `errors` (both cbc SDKs raise ExecutionError on Claude's)."""

    rule: ClassVar[str] = "rev-interrupted-turn"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"result"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rs = rstate.of(ctx.state)
        obj = frame.obj
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


def marker_text(obj: dict[str, Any]) -> str | None:
    """The marker of one of Claude's interrupted-turn user frames, else None."""
    content = (dict_at(obj, "message") or {}).get("content")
    if isinstance(content, str):
        text = content
    elif (
        isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], dict)
        and content[0].get("type") == "text"
    ):
        text = str(content[0].get("text", ""))
    else:
        return None
    return text if text in INTERRUPT_MARKERS else None


@register
@attrs.define
class ReverseInterruptMarker(Stage):
    """Claude's `[Request interrupted by user…]` user frame -> cbc's assistant message
    "Interrupted by user" (a cbc client never gets a user message it did not send)."""

    rule: ClassVar[str] = "rev-interrupt-marker"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})
    lazy: ClassVar[bool] = True

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.raw and b"[Request interrupted by user" not in frame.raw:
            return None
        obj = frame.obj
        if (
            not isinstance(obj, dict)
            or obj.get("parent_tool_use_id") is not None
            or marker_text(obj) is None
        ):
            return None
        uid = str_at(obj, "uuid") or ctx.env.new_uuid()
        new: dict[str, Any] = {
            "type": "assistant",
            "uuid": uid,
            "session_id": obj.get("session_id"),
            "message": {
                "id": uid,
                "content": [{"type": "text", "text": CBC_INTERRUPTED}],
                "model": ctx.state.model or "",
                "role": "assistant",
                "stop_reason": None,
                "stop_sequence": None,
                "type": "message",
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
            "parent_tool_use_id": None,
        }
        return (frame.replace(new),)


@register
@attrs.define
class ReverseToolResult(Stage):
    """A ``tool_result`` block with no ``is_error`` gets ``is_error: false``, as cbc writes
    every tool result (Claude writes ``is_error`` only when it is true)."""

    rule: ClassVar[str] = "rev-tool-result"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})
    lazy: ClassVar[bool] = True

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.raw and b'"tool_result"' not in frame.raw:
            return None
        obj = frame.obj
        msg = dict_at(obj, "message")
        content = list_at(msg, "content")
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
    """Drop Claude's replayed `<local-command-stdout>` user frame (after set_model etc.)."""

    rule: ClassVar[str] = "rev-local-command"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})
    lazy: ClassVar[bool] = True

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.raw and (
            b'"isReplay"' not in frame.raw or LOCAL_COMMAND.encode() not in frame.raw
        ):
            return None
        obj = frame.obj
        if not isinstance(obj, dict) or obj.get("isReplay") is not True:
            return None
        if rstate.of(ctx.state).replay_user_messages:
            return None
        content = (dict_at(obj, "message") or {}).get("content")
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
        obj = frame.obj
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
        obj = frame.obj
        status = str_at(dict_at(obj, "patch"), "status")
        if status is None or "status" in obj:
            return None
        return (frame.replace({**obj, "status": status}),)


@register
@attrs.define
class ReverseBackgroundAgent(Stage):
    """Drop a background agent's own messages (cbc keeps them to itself); a foreground
    agent's pass."""

    rule: ClassVar[str] = "rev-background-agent"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "user", "stream_event"})
    lazy: ClassVar[bool] = True

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        calls = rstate.of(ctx.state).background_calls
        if not calls or (frame.raw and not any(c.encode() in frame.raw for c in calls)):
            return None
        parent = str_at(frame.obj, "parent_tool_use_id")
        return () if parent is not None and parent in calls else None


@register
@attrs.define
class ReverseAgentSummary(Stage):
    """A completed agent task's summary in cbc's words: `Background agent "<d>" completed`."""

    rule: ClassVar[str] = "rev-agent-summary"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/task_notification"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
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
    a stopped workflow's summary ``Dynamic workflow "<description>" was stopped``."""

    rule: ClassVar[str] = "rev-task-words"
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"system/task_started", "system/task_notification"}
    )

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
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
    any result (a refused option) keeps its status."""

    rule: ClassVar[str] = "rev-exit-status"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"result"})
    lazy: ClassVar[bool] = True
    _results: int = attrs.field(default=0, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self._results += 1
        return None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        if status in SIGNAL_EXITS or (status == 1 and self._results):
            ctx.set_exit_status(0)
        return None
