"""The Claude Code version the ``cbc-to-claude`` rules make a stream look like (issue 14).

2.1.220 is the default; ``--target 2.1.332`` (``CCBRIDGE_TARGET``, config key ``target``)
picks the newer shapes. Everything the rules write differently per version is data here, a
frozen ``Target`` per version: the keys added to each frame kind (with the constant Claude
writes, or the name of the session fact they are derived from), the capabilities, the
error codes, the orderings and the reply shapes. A stage reads ``target_of(ctx)``; no
stage compares version strings.

Evidence (``captures/reference/claude-2.1.332`` against ``claude-2.1.220``, and the twins
in ``captures/twins-2.1.332/``, regenerated with the 2.1.332 binary; ``ccbridge drift``
lists the same):

- every task frame and every ``background_tasks_changed`` entry carries ``run_id`` (one
  per task: Claude's shape, derived from the task id); ``task_started`` has
  ``is_backgrounded`` on a shell or an agent (``true``: cbc reports background tasks
  only, no foreground-shell task; a workflow has none) and, on an agent, ``spawn_depth``
  (1: started by the main thread; cbc's agents start no agents);
- ``background_tasks_changed`` after a task's end follows its ``task_notification``
  (2.1.220: before the terminal ``task_updated``);
- a stopped workflow's agents end ``error`` "Stopped because the workflow was stopped",
  ``endedWithRun: "stopped"``, in a final snapshot described as the workflow;
- ``system/init``: 23 ``capabilities`` and eleven keys more; the initialize reply: 8
  ``capabilities``, ``claude_code_version``, the permission mode, hook and feedback
  flags, ``session_state``, empty pending request lists; ``result``: ``subagent_stats``,
  ``safety_stops``, ``queued_turn_count``, ``result_index``, ``user_message_uuids``, the
  usage's ``output_tokens_details``/``fallback_credit``;
- an unsupported control request's error has ``error_code: "unsupported_request"``;
- ``set_model`` is answered ``{model}``;
- an interrupted turn's result keeps its ``user_message_uuid`` (2.1.220 drops it);
- the first main-thread ``assistant`` frame of a client line's turn (its first model
  message's first block; not the messages after a tool result, not a subagent's) names the
  line: ``user_message_uuid`` and ``user_message_uuids`` (``[line]``: a cbc turn answers one
  line), after ``request_id``; a turn no line started (a task notification's) names none
  (twins ``*.claude.jsonl``, all six; ``claude-2.1.332/mockapi_*``; a 2-block message:
  ``scenario run parallel-tools``/``thinking`` on 2.1.332, 2026-12-01, block 1 only).

Not written (nothing honest to put there): timings cbc does not measure
(``first_content_frame_ms``, ``first_request_*``), Claude's own paths
(``messaging_socket_path``, ``user_output_styles_dir``), ``model_usage_since_last_result``
(cbc's usage is per result already; a copy would double-count), ``commands[].builtin``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from compat.versions import TARGET_CLAUDE_VERSION, TARGET_VERSIONS

if TYPE_CHECKING:
    from compat.stage import Context


class TargetError(ValueError):
    pass


#: a key Claude writes and where its value comes from: ("const", value) or ("session", fact)
Key = tuple[str, tuple[str, Any]]


def const(value: Any) -> tuple[str, Any]:
    return ("const", value)


def session(fact: str) -> tuple[str, Any]:
    return ("session", fact)


@attrs.frozen
class Target:
    version: str
    #: system/init: keys added when absent (in Claude's order, before ``uuid``)
    init_keys: tuple[Key, ...] = ()
    #: system/init capabilities; None: ``init-shape``'s option (what the bridge delivers)
    init_capabilities: tuple[str, ...] | None = None
    #: initialize reply: keys added after Claude's 2.1.220 flags, and around the reply
    initialize_keys: tuple[Key, ...] = ()
    initialize_outer_keys: tuple[Key, ...] = ()
    #: keys added to each ``models[]`` entry of the initialize reply
    model_keys: tuple[Key, ...] = ()
    #: result: keys added when absent; keys added to its ``usage``
    result_keys: tuple[Key, ...] = ()
    usage_keys: tuple[Key, ...] = ()
    #: ``origin`` of a task-notification turn's result gets ``producer`` and ``runId``
    origin_run: bool = False
    #: ``run_id`` on every task frame and snapshot entry
    run_id: bool = False
    #: task_started: keys added per Claude task type
    started_keys: Mapping[str, tuple[Key, ...]] = attrs.field(factory=dict)
    #: error-reply ``error_code`` by the message's prefix
    error_codes: tuple[tuple[str, str], ...] = ()
    #: the end-of-task snapshot follows the notification (else precedes the terminal update)
    snapshot_after_notification: bool = False
    #: snapshot entries of an agent carry its ``subagent_type``
    snapshot_subagent_type: bool = False
    #: a stopped/failed workflow's unfinished agents: their ``error`` text, by status; None:
    #: ``progress-final``'s own wording
    aborted_agent_error: Mapping[str, str] | None = None
    #: a stopped/failed workflow's final snapshot: its agents say how the run ended
    #: (``endedWithRun``), its description is the workflow's (no ``last_tool_name``)
    aborted_final_run_state: bool = False
    #: keys added to the first main-thread ``assistant`` frame of a client line's turn
    #: (facts ``turn_line``: the line's uuid; ``turn_line_uuids``: the lines it answers)
    line_answer_keys: tuple[Key, ...] = ()
    #: an interrupted turn's result still names its line (``user_message_uuid``)
    interrupted_result_names_line: bool = False
    #: the body of a successful ``set_model`` reply: the request's keys kept (None: the
    #: backend's reply passes as it is)
    set_model_reply: tuple[str, ...] | None = None

    def error_code(self, message: str) -> str | None:
        for prefix, code in self.error_codes:
            if message.startswith(prefix):
                return code
        return None


#: Claude Code 2.1.332's system/init capabilities (reference mockapi_workflow_*)
CAPABILITIES_332 = (
    "interrupt_receipt_v1",
    "interrupt_cancel_queued_v1",
    "interrupt_send_now_v1",
    "interrupt_requeue_taken_v1",
    "msg_lifecycle_v1",
    "request_marker_lists_v1",
    "ask_user_question_unanswered_v1",
    "lifecycle_wakeup_source_v1",
    "sdk_mcp_tools_list_changed",
    "sdk_mcp_manifests",
    "mcp_read_resource_v1",
    "mcp_tool_ui_meta_v1",
    "ui_surface_v1",
    "mcp_call_result_not_for_model_v1",
    "mcp_call_soft_error_result_v1",
    "mcp_call_check_permissions_v1",
    "voice_call_talk_line_v1",
    "withdrawn_files_note_v2",
    "withdrawn_tools_v1",
    "ui_pane_widget_v1",
    "reload_plugins_refuse_if_busy_v1",
    "get_usage_detached_v1",
    "silent_resend_files_v1",
)
#: the initialize reply's capabilities (the same capture)
INITIALIZE_CAPABILITIES_332 = (
    "ui_surface_v1",
    "mcp_call_result_not_for_model_v1",
    "mcp_call_soft_error_result_v1",
    "mcp_call_check_permissions_v1",
    "voice_call_talk_line_v1",
    "ui_pane_widget_v1",
    "reload_plugins_refuse_if_busy_v1",
    "get_usage_detached_v1",
)

V220 = Target(TARGET_CLAUDE_VERSION)
V332 = Target(
    "2.1.332",
    init_keys=(
        ("terminal_slash_commands", const([])),
        ("served_by_anthropic", const(False)),
        ("sandbox_enabled", const(False)),
        ("original_cwd", session("cwd")),
        ("additional_directories", const([])),
        ("per_turn_effort_active", const(True)),
        ("ultrathink_available", const(False)),
        ("ultrathink_typed_raises", const(False)),
        ("view_mode", const("default")),
        ("user_message_uuids", session("turn_line_uuids")),
    ),
    init_capabilities=CAPABILITIES_332,
    initialize_keys=(
        ("claude_code_version", const("2.1.332")),
        ("current_permission_mode", session("permission_mode")),
        ("hooks_applied", const(True)),
        ("hook_on_failure_supported", const(True)),
        ("hooks_when_unanswered_kept", const(0)),
        ("other_hook_ask_outranks_host", const(True)),
        ("feedback_mode", const({"kind": "disabled"})),  # no survey goes through the bridge
        ("analytics_disabled", const(True)),  # nor any of Claude's analytics
        ("sandbox_enabled", const(False)),
        ("remote_control_auto_connect_default", const(False)),
        ("remote_control_available", const(False)),
        ("session_state", const("idle")),
        ("capabilities", const(list(INITIALIZE_CAPABILITIES_332))),
    ),
    initialize_outer_keys=(
        ("pending_permission_requests", const([])),
        ("pending_user_dialog_requests", const([])),
    ),
    model_keys=(("supportsThinkingOff", const(False)),),
    result_keys=(
        ("subagent_stats", session("subagent_stats")),
        ("safety_stops", const(0)),
        ("user_message_uuids", session("result_line_uuids")),
        ("queued_turn_count", const(0)),
        ("result_index", session("result_index")),
    ),
    usage_keys=(
        ("output_tokens_details", const({"thinking_tokens": 0})),
        ("fallback_credit", const(None)),
    ),
    line_answer_keys=(
        ("user_message_uuid", session("turn_line")),
        ("user_message_uuids", session("turn_line_uuids")),
    ),
    origin_run=True,
    run_id=True,
    started_keys={
        "local_bash": (("is_backgrounded", const(True)),),
        "local_agent": (("is_backgrounded", const(True)), ("spawn_depth", const(1))),
    },
    error_codes=(("Unsupported control request subtype: ", "unsupported_request"),),
    snapshot_after_notification=True,
    snapshot_subagent_type=True,
    aborted_agent_error={
        "stopped": "Stopped because the workflow was stopped",
        "failed": "Stopped because the workflow failed",
    },
    set_model_reply=("model",),
    interrupted_result_names_line=True,
    aborted_final_run_state=True,
)

#: every version a target may name; the first is the default
TARGETS: dict[str, Target] = {t.version: t for t in (V220, V332)}
DEFAULT = V220
assert tuple(TARGETS) == TARGET_VERSIONS, "compat.versions.TARGET_VERSIONS names the targets"


def resolve(version: str | None) -> Target:
    """The target named ``version`` (None or "": the default); unknown: ``TargetError``
    with the one-line message every entry point prints."""
    if not version:
        return DEFAULT
    t = TARGETS.get(version.strip())
    if t is None:
        raise TargetError(
            f"unknown target Claude Code version {version!r} (known: {', '.join(TARGETS)})"
        )
    return t


def target_of(ctx: Context) -> Target:
    """The target of a stage's session (``Env.target_version``, checked at start-up)."""
    return TARGETS.get(ctx.env.target_version, DEFAULT)


def values(keys: tuple[Key, ...], facts: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(key, value)`` for each key: a constant (a fresh copy of a list or dict) or the
    session fact named; a fact that is missing (``facts`` has no entry) leaves its key out."""
    out: list[tuple[str, Any]] = []
    for key, (how, what) in keys:
        if how == "const":
            out.append((key, _copy(what)))
        elif what in facts:
            out.append((key, facts[what]))
    return out


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def insert_after(obj: dict[str, Any], anchor: str, key: str, value: Any) -> dict[str, Any]:
    """``obj`` with ``key`` right after ``anchor`` (at the end when there is none)."""
    if anchor not in obj:
        return {**{k: v for k, v in obj.items() if k != key}, key: value}
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if k == key:
            continue
        out[k] = v
        if k == anchor:
            out[key] = value
    return out


def run_id(task_id: str) -> str:
    """The run id of a task, shaped as Claude's (``0mx4q9bxg-9978c2b6``: 9 base36 digits,
    8 hex) and derived from its task id, so every rule names a task's run alike without
    sharing state (Claude's first part is its start time; the id is opaque to clients)."""
    h = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()
    n = int(h[:12], 16)
    b36 = ""
    for _ in range(9):
        n, r = divmod(n, 36)
        b36 = _B36[r] + b36
    return f"{b36}-{h[12:20]}"


_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"
