"""The facts the stages of one engine share, by name, and who may write them.

A fact is a field of the shared state: ``session_id`` (``SessionState``),
``control.turn_active`` (``ControlState``), ``task.status`` (every ``TaskInfo``),
``rev.in_turn`` (``compat.reverse_state.ReverseState``). Every stage declares the facts it
``reads`` and ``writes`` (``compat.stage.Stage``). In a strict engine (every test's) the
declarations are enforced: a stage call that reads a fact its rule does not declare, or
assigns one it does not declare it writes, fails at once, on every path
(``compat.factguard``). tests/compat/test_ownership.py also checks the declarations against
what each stage does on the captures (it sees a container changed in place, which an
attribute check cannot), that every fact has one writer in a profile (``SHARED``: the
queues one rule fills and another drains), and that a reader comes after its writer in its
direction, unless it reads what an earlier frame left (``reads_earlier``)."""

from __future__ import annotations

import attrs

from compat.reverse_state import ReverseState
from compat.session import ControlState, SessionState, TaskInfo

#: the state objects and the prefix of their facts' names
PREFIXES: tuple[tuple[type, str], ...] = (
    (SessionState, ""),
    (ControlState, "control."),
    (TaskInfo, "task."),
    (ReverseState, "rev."),
)


def is_fact(field: attrs.Attribute) -> bool:  # type: ignore[type-arg]
    """A field of the shared state that is a fact (not an index of one: ``NOT_A_FACT``)."""
    return field.metadata.get("fact", True) is not False


def _facts() -> frozenset[str]:
    names: set[str] = set()
    for cls, prefix in PREFIXES:
        for f in attrs.fields(cls):
            if f.name != "control" and is_fact(f):  # (control: the object, not a fact)
                names.add(prefix + f.name.lstrip("_"))
    return frozenset(names)


FACTS = _facts()
#: facts the launch writes before the session starts (``bridge.proxy.set_launch_facts``,
#: ``compat.reverse_state.launch``), not a stage
LAUNCH = frozenset(
    {
        "pid",
        "stdio_permissions",
        "resumes",
        "max_turns",
        "rev.client_session",
        "rev.claude_session",
        "rev.replay_user_messages",
        "rev.history",
        "rev.resumed",
        "rev.cwd",
    }
)
#: queues and registries written by more than one rule, each with a role: fact -> the
#: rules that write it (any other writer is an error)
SHARED: dict[str, frozenset[str]] = {
    # user-line queues the lines it sends; control-state pops one at each turn start;
    # local-slash-commands pops the line of a command it answers itself
    "control.pending_user": frozenset({"user-line", "control-state", "local-slash-commands"}),
    # user-line queues lines read before the session id; command-lifecycle drains them
    "control.unsent_queued": frozenset({"user-line", "command-lifecycle"}),
    # unsupported-control and interrupt-request register what they forward (a setter, an
    # interrupt); control-reply marks it answered
    "control.requests": frozenset({"unsupported-control", "interrupt-request", "control-reply"}),
    # the same two hold what cbc cannot take before its session; control-reply sends it then
    "control.deferred": frozenset({"unsupported-control", "interrupt-request", "control-reply"}),
    # the bridge's own requests to cbc (unsupported-control's and initialize-request's
    # set_config, permission-reply's set_permission_mode for a setMode update, user-line's
    # readiness probe); control-reply swallows their replies
    "control.own": frozenset(
        {
            "unsupported-control",
            "initialize-request",
            "permission-reply",
            "user-line",
            "control-reply",
        }
    ),
    # interrupt-request holds an interrupt while cbc is told deny + interrupt (its id) and
    # clears it when it sends it after all; control-reply clears it when cbc answers it
    "control.prompt_interrupt": frozenset({"interrupt-request", "control-reply"}),
    # calls whose tool_result Claude marks (tool_result_meta): denied by the client's answer
    # (permission-reply), by a rule it added (permission-routing) or by its PreToolUse hook
    # (hook-reply), withdrawn by an interrupt (permission-cancel); permission-routing marks
    # the result and forgets them
    "control.denied_uses": frozenset(
        {"permission-reply", "permission-cancel", "permission-routing", "hook-reply"}
    ),
    # calls the client's PreToolUse hook denied (hook-reply); hook-deny words their
    # tool_result and forgets them
    "control.hook_denials": frozenset({"hook-reply", "hook-deny"}),
    # calls the client denied with interrupt: true (permission-reply); interrupted-turn ends
    # their turn as Claude does and forgets them
    "control.denying_interrupts": frozenset({"permission-reply", "interrupted-turn"}),
    # the turn's denials: permission-routing's (a rule it added, the client's deny),
    # permission-cancel's (a prompt an interrupt withdrew), hook-reply's (the client's
    # PreToolUse hook)
    "control.permission_denials": frozenset(
        {"permission-routing", "permission-cancel", "hook-reply"}
    ),
    # a workflow's script and parsed meta, looked up once by whichever of workflow-name and
    # workflow-prompt needs them first (compat.taskkit.resolve_workflow)
    "task.script": frozenset({"workflow-name", "workflow-prompt"}),
    "task.meta": frozenset({"workflow-name", "workflow-prompt"}),
    "task.source_resolved": frozenset({"workflow-name", "workflow-prompt"}),
    # sdk-mcp-reply keeps the client's tools/call result; sdk-mcp takes it for the call's
    # tool_result
    "control.sdk_mcp_results": frozenset({"sdk-mcp-reply", "sdk-mcp"}),
    # rev-requests marks an interrupt; the turn's end clears it (rev-interrupted-turn, or
    # rev-interrupt-reply when Claude was idle)
    "rev.interrupted": frozenset({"rev-requests", "rev-interrupted-turn", "rev-interrupt-reply"}),
    # rev-permission-reply notes a deny with interrupt: true; rev-denied-interrupt ends the
    # turn as cbc does and forgets it
    "rev.denied_interrupts": frozenset({"rev-permission-reply", "rev-denied-interrupt"}),
    # rev-track registers an open can_use_tool; its answer or cancel forgets it
    "rev.permission_inputs": frozenset({"rev-track", "rev-permission-reply", "rev-cancel-request"}),
    # rev-track registers a running agent; rev-agent-summary forgets it at its end
    "rev.agent_tasks": frozenset({"rev-track", "rev-agent-summary"}),
    # the model the session runs: rev-track from each system/init, rev-control-replies when
    # the client's set_model succeeds (Claude writes no init for it)
    "rev.model": frozenset({"rev-track", "rev-control-replies"}),
}
