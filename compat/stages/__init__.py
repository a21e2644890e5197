"""One module per rule family of PROTOCOL.md. Importing this package registers them all."""

from compat.stage import REGISTRY
from compat.stages import (  # noqa: F401
    agent_tasks,
    bash_output,
    callorder,
    compact,
    control,
    errors,
    fields,
    file_tools,
    hook_input,
    hooks,
    hygiene,
    init,
    initialize,
    interrupts,
    lifecycle,
    maxturns,
    permissions,
    plan,
    reverse_agents,
    reverse_denials,
    session,
    shape,
    slash,
    subagents,
    task_output,
    task_tools,
    tasks,
    tool_input,
    turns,
    usage,
    winddown,
    workflow,
)

__all__ = ["REGISTRY"]
