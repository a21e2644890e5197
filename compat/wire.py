"""Wire shapes: the frame families the rules act on, as ``TypedDict``s over the very dicts
``Frame.obj`` holds (no cost at run time), so that a misspelled key or a wrong nesting level
is a type error (strict mypy) rather than a silent ``None``.

Every key is optional (``total=False``): the wire is untrusted, and a rule reads a value
through ``isinstance`` (or ``compat.frames.str_at``/``dict_at``/``list_at``) before it
relies on it; the types say what each key holds *when it is well formed*, which is what a
rule writes. ``Defaults`` tables say, per family, what Claude Code 2.1.220 always sends and
what the bridge fills in when cbc leaves it out (``fill``), instead of ``if not
isinstance(...)`` ladders in the stages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypedDict, cast


class Usage(TypedDict, total=False):
    total_tokens: int
    tool_uses: int
    duration_ms: int


class _Frame(TypedDict, total=False):
    type: str
    subtype: str
    uuid: str
    session_id: str


class Envelope(_Frame, total=False):
    """What a stage reads of a frame before it knows the family (it dispatches on ``type``
    and the thread): the keys every message frame may carry."""

    parent_tool_use_id: str | None
    timestamp: str


class SystemInit(_Frame, total=False):
    cwd: str
    model: str
    tools: list[str]
    mcp_servers: list[dict[str, Any]]
    permissionMode: str
    apiKeySource: str
    claude_code_version: str
    capabilities: list[str]
    output_style: str


class SystemStatus(_Frame, total=False):
    #: null when a turn's work stops (cbc writes it also after an init no client line asked for)
    status: str | None
    permissionMode: str


class Result(_Frame, total=False):
    is_error: bool
    result: str
    duration_ms: float
    duration_api_ms: float
    num_turns: int
    total_cost_usd: float
    usage: dict[str, Any]
    modelUsage: dict[str, Any]
    permission_denials: list[dict[str, Any]]
    stop_reason: str | None
    terminal_reason: str
    errors: list[str]
    structured_output: Any
    #: Claude's HTTP status of a failed model request (null after a refusal)
    api_error_status: int | None
    #: what started a turn no client line asked for (``{kind: "task-notification"}``)
    origin: dict[str, Any]


class _Task(_Frame, total=False):
    task_id: str
    tool_use_id: str
    description: str
    #: a workflow's name (``meta.name``): on its ``task_started`` and every later frame of
    #: the task that carries the field
    workflow_name: str


class TaskStarted(_Task, total=False):
    task_type: str
    prompt: str
    subagent_type: str


class TaskProgress(_Task, total=False):
    usage: Usage
    last_tool_name: str
    summary: str
    workflow_progress: list[dict[str, Any]]


class TaskPatch(TypedDict, total=False):
    status: str
    end_time: int
    error: str


class TaskUpdated(_Task, total=False):
    patch: TaskPatch
    status: str


class TaskNotification(_Task, total=False):
    status: str
    output_file: str
    summary: str
    usage: Usage


class SnapshotTask(TypedDict, total=False):
    """One live task of a ``background_tasks_changed`` snapshot."""

    task_id: str
    #: copied from the task's ``task_started`` as the wire gave it
    task_type: Any
    subagent_type: str
    description: str


#: any of the task lifecycle frames (``system/task_*``)
TaskFrame = TaskStarted | TaskProgress | TaskUpdated | TaskNotification


class BackgroundTasksChanged(_Frame, total=False):
    tasks: list[SnapshotTask]


class ControlRequest(TypedDict, total=False):
    type: Literal["control_request"]
    request_id: str
    request: dict[str, Any]


class ControlResponseBody(TypedDict, total=False):
    subtype: Literal["success", "error"]
    request_id: str
    response: dict[str, Any]
    error: str


class ControlResponse(TypedDict, total=False):
    type: Literal["control_response"]
    response: ControlResponseBody


class Message(TypedDict, total=False):
    id: str
    #: ``"message"`` (the Messages API's object type)
    type: str
    role: str
    model: str
    content: list[dict[str, Any]] | str
    stop_reason: str | None
    stop_sequence: str | None
    usage: dict[str, Any]
    container: Any
    stop_details: Any


class Assistant(_Frame, total=False):
    message: Message
    parent_tool_use_id: str | None
    #: a sub-agent's frame (``parent_tool_use_id`` = its Agent call): that call's
    #: ``subagent_type`` and ``description`` (Claude writes both; cbc neither)
    subagent_type: str
    task_description: str
    #: Claude's synthetic API-error message: its kind (``rate_limit``, ``invalid_request``...)
    error: str
    is_api_error_message: bool


class User(_Frame, total=False):
    message: Message
    parent_tool_use_id: str | None
    subagent_type: str  # (as Assistant's)
    task_description: str
    tool_use_result: Any
    #: a client line echoed back (``--replay-user-messages``)
    isReplay: bool


class StreamEvent(_Frame, total=False):
    event: dict[str, Any]
    parent_tool_use_id: str | None


def as_dict(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A typed frame (a ``TypedDict``) as the plain dict ``Frame.replace``/``Frame.synth``
    take: the same object, unchanged (a ``TypedDict`` is a dict at run time)."""
    return cast(dict[str, Any], obj)


#: one default: (key, the type a well-formed value has, what to write otherwise)
Default = tuple[str, type | tuple[type, ...], Callable[[], Any]]


def fill(new: Mapping[str, Any], defaults: tuple[Default, ...]) -> dict[str, Any]:
    """``new`` (a fresh dict the caller owns) with every key of ``defaults`` whose value is
    missing or of the wrong type set to its default."""
    out = cast(dict[str, Any], new)
    for key, kind, make in defaults:
        if not isinstance(out.get(key), kind):
            out[key] = make()
    return out


# -- control and messages (typedB) --


class CancelRequest(TypedDict, total=False):
    type: Literal["control_cancel_request"]
    request_id: str


class TurnResult(Result, total=False):
    """A ``result`` as the turn rules read it: the uuid of the user line it answers."""

    user_message_uuid: str


class CompactBoundary(_Frame, total=False):
    """``system/compact_boundary``: what a compaction summarized (``compact_metadata``:
    trigger, pre_tokens, post_tokens, cumulative_dropped_tokens, duration_ms, and the
    preserved messages when any are kept) and the last message before it."""

    compact_metadata: dict[str, Any]
    logical_parent_uuid: str


class StatusFrame(_Frame, total=False):
    """``system/status`` (and the other ``system`` frames that carry a status or an error)."""

    status: str | None
    error: Any
    message: Any


def blocks(obj: Mapping[str, Any]) -> list[Any]:
    """A message frame's content blocks: its ``message.content`` when that is a list, else
    ``[]`` (a string content, no message, a peer's odd shape). The blocks are as sent."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def blocks_of(obj: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    """The content blocks (``blocks``) that are objects of ``type`` ``kind``
    (``"tool_use"``, ``"tool_result"``...)."""
    return [b for b in blocks(obj) if isinstance(b, dict) and b.get("type") == kind]


def plain(obj: Mapping[str, object]) -> dict[str, Any]:
    """A typed frame as the plain dict ``Frame.replace``/``Frame.synth`` take (no copy)."""
    return cast(dict[str, Any], obj)


class CanUseTool(TypedDict, total=False):
    """The body of a ``can_use_tool`` control request (backend -> client)."""

    subtype: str
    tool_name: str
    input: dict[str, Any]
    tool_use_id: str


class PermissionAnswer(TypedDict, total=False):
    """A client's answer to ``can_use_tool``: Claude's ``{behavior, updatedInput | message,
    interrupt}``, cbc's ``{allowed, reason, interrupt, updatedInput}``, or the legacy
    claude-code-sdk 0.0.x ``{allow, input | reason}``."""

    behavior: str
    updatedInput: dict[str, Any]
    updatedPermissions: list[Any]
    message: str
    interrupt: bool
    allowed: bool
    reason: str
    allow: bool
    input: dict[str, Any]
    tool_use_id: str


class InterruptRequest(TypedDict, total=False):
    """The body of an ``interrupt`` control request (client -> backend); cbc reads
    ``session_id`` and ``reason`` too."""

    subtype: Literal["interrupt"]
    cancel_queued: bool
    reason: str
    session_id: str


class InterruptReceipt(TypedDict, total=False):
    """The body of an interrupt's reply: cbc's ``{session_id, interrupted, reason}``,
    Claude's ``{still_queued, cancelled?}``."""

    session_id: str
    interrupted: bool
    reason: str
    still_queued: list[str]
    cancelled: list[str]


class InitializeBody(TypedDict, total=False):
    """The body of an ``initialize`` control request (client -> backend): the keys the
    bridge rewrites (``systemPrompt`` as blocks, ``settings`` as an object or JSON text);
    the rest passes by name."""

    subtype: Literal["initialize"]
    systemPrompt: str | list[Any]
    appendSystemPrompt: str
    settings: dict[str, Any] | str


class Account(TypedDict, total=False):
    """The ``account`` of an initialize reply (Claude's keys, and cbc's ``uid``)."""

    tokenSource: str
    apiKeySource: str
    apiProvider: str
    uid: str


class InitializeReplyBody(TypedDict, total=False):
    """The body of an initialize reply: cbc's keys the bridge reads (``currentModelId``,
    ``permissionMode``/``currentPermissionMode``) and the ones both write."""

    commands: list[dict[str, Any]]
    agents: list[dict[str, Any]]
    output_style: str
    available_output_styles: list[str]
    models: list[dict[str, Any]]
    account: Account
    pid: int
    currentModelId: str
    permissionMode: str
    currentPermissionMode: str


class SetterBody(TypedDict, total=False):
    """The body of a control request the bridge answers or reshapes itself: ``set_model``,
    ``set_permission_mode``, ``set_max_thinking_tokens``, ``stop_task`` (and the subtype of
    any other)."""

    subtype: str
    model: str | None
    mode: str
    max_thinking_tokens: int | None
    task_id: str


class Command(TypedDict, total=False):
    """A slash command of an initialize reply: Claude's ``{name, description,
    argumentHint}``; cbc writes ``/name`` and maybe ``argument_hint``."""

    name: str
    description: str
    argumentHint: str
    argument_hint: str


class Agent(TypedDict, total=False):
    name: str
    description: str


class ModelInfo(TypedDict, total=False):
    """A model of an initialize reply: Claude's ``{value, displayName, description}``, cbc's
    ``{id, name}``."""

    value: str
    displayName: str
    description: str
    id: str
    name: str


# -- the reverse profile (typedC) --


class ContentBlock(TypedDict, total=False):
    """One block of a message's ``content``: ``text``, ``tool_use`` (``id``, ``name``,
    ``input``) or ``tool_result`` (``tool_use_id``, ``content``, ``is_error``)."""

    type: str
    text: str
    id: str
    name: str
    input: dict[str, Any]
    tool_use_id: str
    content: Any
    is_error: bool


class ToolCallInput(TypedDict, total=False):
    """The ``input`` of a ``tool_use`` block as the reverse rules read it: a Bash call's
    ``command``, an Agent/Task call's ``run_in_background``."""

    command: str
    run_in_background: bool


class ClientRequest(SetterBody, total=False):
    """The body of a cbc client's control request (client -> Claude) as the reverse rules
    read it: ``subscribe{channel}``, ``set_config{config}``, ``authenticate{methodId}``,
    ``interrupt{reason}``, ``initialize{hasPrompt}``; cbc's SDKs send ``session_id`` too."""

    channel: str
    config: dict[str, Any]
    methodId: str
    reason: str
    hasPrompt: bool
    session_id: str


class ClientConfig(TypedDict, total=False):
    """``set_config``'s ``config`` (the JS SDK's): only ``model`` reaches Claude."""

    model: str


class ClaudeModel(ModelInfo, total=False):
    """A model of Claude's initialize reply, with the ``resolvedModel`` of its ``default``."""

    resolvedModel: str


class CbcAccount(Account, total=False):
    """An account as cbc's SDKs read one (``userId`` and ``token`` mean logged in)."""

    userId: str
    userName: str
    userNickname: str
    nickname: str
    type: str
    token: str


class McpStatusReply(TypedDict, total=False):
    """The body of an ``mcp_status`` reply: Claude's ``mcpServers``, cbc's ``mcp_servers``."""

    mcpServers: Any
    mcp_servers: Any


class TranscriptEntry(_Frame, total=False):
    """One entry of Claude's session transcript (its ``.jsonl``), as a resume replay reads it."""

    message: Message
    isSidechain: bool
    isMeta: bool


class ReverseTask(TaskStarted, TaskUpdated, TaskNotification, total=False):
    """Any ``system/task_*`` frame as the reverse rules read it (the keys of all of them)."""


# -- frame families: what ``Frame.view`` checks a frame against ------------------------------
#: the kinds (``type`` or ``type/subtype``) each frame family covers; ``ANY``: a shape every
#: frame has (what a rule reads before it dispatches on the kind)
ANY: frozenset[str] = frozenset()
_TASK_KINDS = frozenset(
    f"system/task_{event}" for event in ("started", "progress", "updated", "notification")
)
FAMILIES: dict[Any, frozenset[str]] = {
    Envelope: ANY,
    StatusFrame: ANY,  # (a system frame, or another type's: its ``status`` is looked at)
    SystemInit: frozenset({"system/init"}),
    SystemStatus: frozenset({"system/status"}),
    CompactBoundary: frozenset({"system/compact_boundary"}),
    Result: frozenset({"result"}),
    TurnResult: frozenset({"result"}),
    TaskStarted: frozenset({"system/task_started"}),
    TaskProgress: frozenset({"system/task_progress"}),
    TaskUpdated: frozenset({"system/task_updated"}),
    TaskNotification: frozenset({"system/task_notification"}),
    ReverseTask: _TASK_KINDS,
    BackgroundTasksChanged: frozenset({"system/background_tasks_changed"}),
    ControlRequest: frozenset({"control_request"}),
    ControlResponse: frozenset({"control_response"}),
    CancelRequest: frozenset({"control_cancel_request"}),
    Assistant: frozenset({"assistant"}),
    User: frozenset({"user"}),
    StreamEvent: frozenset({"stream_event"}),
}


def _split(kinds: frozenset[str]) -> tuple[frozenset[Any], frozenset[tuple[Any, Any]]]:
    """A family's kinds as the types it covers whatever the subtype, and (type, subtype)s."""
    pairs = {tuple(k.split("/", 1)) for k in kinds if "/" in k}
    return frozenset(k for k in kinds if "/" not in k), frozenset(pairs)  # type: ignore[arg-type]


#: ``FAMILIES`` as ``covers`` looks them up (a frame's kind is a (type, subtype) tuple)
_COVERED = {family: _split(kinds) for family, kinds in FAMILIES.items()}


def covers(family: Any, kind: tuple[Any, Any] | None) -> bool:
    """Whether a frame of ``kind`` (``Frame.kind()``) is one of ``family``'s (KeyError: not a
    frame family)."""
    types, pairs = _COVERED[family]
    if kind is None:
        return False
    return (not types and not pairs) or kind[0] in types or kind in pairs
