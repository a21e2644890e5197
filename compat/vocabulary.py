"""The Claude Code 2.1.220 output vocabulary (PROTOCOL.md §1, rule ``vocabulary``).

Taken from the wire-type list a ≈2.1.220 binary declares (reference capture
``third-party/rust-code-agent-sdks/claude_stream_json_snapshot.txt``) plus the control
frames, which that list leaves out because they are not messages.
"""

from __future__ import annotations

OUTPUT_TYPES = frozenset(
    {
        "assistant",
        "user",
        "result",
        "stream_event",
        "system",
        "control_request",
        "control_response",
        "control_cancel_request",
        "rate_limit_event",
        "tool_progress",
        "tool_use_summary",
        "command_lifecycle",
        "auth_status",
        "conversation_reset",
        "prompt_suggestion",
        "keep_alive",
    }
)

SYSTEM_SUBTYPES = frozenset(
    {
        "api_retry",
        "background_tasks_changed",
        "code_change_published",
        "commands_changed",
        "compact_boundary",
        "control_request_progress",
        "elicitation_complete",
        "files_persisted",
        "hook_progress",
        "hook_response",
        "hook_started",
        "informational",
        "init",
        "local_command_output",
        "memory_recall",
        "mirror_error",
        "model_refusal_fallback",
        "model_refusal_no_fallback",
        "notification",
        "permission_denied",
        "plugin_install",
        "session_state_changed",
        "status",
        "task_notification",
        "task_progress",
        "task_started",
        "task_updated",
        "thinking_tokens",
        "vcs_state_changed",
        "worker_shutting_down",
    }
)

#: top-level types the Python SDK uses as internal sentinels: never emit them
SENTINEL_TYPES = frozenset({"error", "end"})

#: task lifecycle (PROTOCOL.md §1)
TASK_STATUSES = frozenset({"pending", "running", "completed", "failed", "killed", "paused"})
TERMINAL_TASK_STATUSES = frozenset({"completed", "failed", "killed"})
NOTIFICATION_STATUSES = frozenset({"completed", "failed", "stopped"})
TASK_TYPES = frozenset(
    {
        "local_bash",
        "local_agent",
        "local_workflow",
        "remote_agent",
        "in_process_teammate",
        "local_main_session",
        "monitor_mcp",
        "dream",
    }
)


def in_vocabulary(type_: str | None, subtype: str | None) -> bool:
    if type_ not in OUTPUT_TYPES:
        return False
    if type_ == "system":
        return subtype in SYSTEM_SUBTYPES
    return True


#: the system subtypes cbc 2.163.0 writes (its captures; what a cbc client may get: rule
#: ``rev-vocabulary``, and the cbc contract ``analysis.contract_cbc``)
CBC_SYSTEM = frozenset(
    {
        "init",
        "status",
        "task_started",
        "task_progress",
        "task_updated",
        "task_notification",
        "compact_boundary",
        "hook_response",
    }
)
