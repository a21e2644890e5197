"""What the rules know about the session, shared by the stages of one engine.

The ``session`` stage (first downstream) keeps ``session_id``, ``cwd`` and the tool calls
seen so far; the task stages keep ``tasks``. Stages read each other's facts only through
this object, never through each other, so each stays testable alone: a test builds a
``SessionState`` by hand and feeds frames.
"""

from __future__ import annotations

from typing import Any

import attrs

#: tool calls remembered for correlation (task-correlation, workflow-name); oldest dropped
MAX_TOOL_USES = 4096
#: tasks remembered; the oldest are forgotten first (a long session starts many shells)
MAX_TASKS = 4096


@attrs.define
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]
    parent_tool_use_id: str | None = None


@attrs.define
class TaskInfo:
    """What the task rules learned about one background task. Each field has one writer
    (the rule in brackets); the others only read it, so a rule switched off leaves its
    fields at their defaults and the readers fall back to the frame's own values."""

    task_id: str
    task_type: str = ""  # [task-type] the Claude task type
    tool_use_id: str | None = None  # [task-correlation] the call that started the task
    description: str = ""  # [workflow-prompt] the Claude description on task_started
    backend_description: str | None = None  # [workflow-prompt] cbc's own description
    workflow_name: str | None = None  # [workflow-name] the name the client was given
    prompt: str | None = None  # [workflow-prompt] script text / the Agent call's prompt
    #: [compat.taskkit.resolve_workflow] the workflow script and its parsed ``meta``
    #: (name, description, phases), when known; ``source_resolved``: looked up already
    script: str | None = None
    meta: dict[str, Any] | None = None
    source_resolved: bool = False
    # [terminal-guarantee] the lifecycle as forwarded past that rule
    started: bool = False  # task_started forwarded to the client
    status: str = "running"  # last status forwarded (Claude vocabulary)
    terminal: bool = False  # a terminal task_updated was forwarded
    notified: bool = False  # the one task_notification was forwarded
    end_time: int | None = None
    last_progress: dict[str, Any] | None = None  # [progress-final] last task_progress
    usage: dict[str, Any] | None = None


@attrs.define
class SessionState:
    session_id: str | None = None
    cwd: str | None = None
    model: str | None = None
    tool_uses: dict[str, ToolUse] = attrs.Factory(dict)
    tasks: dict[str, TaskInfo] = attrs.Factory(dict)
    #: a turn is running (between a user line and its ``result``)
    in_turn: bool = False
    turns: int = 0

    def remember_tool_use(self, use: ToolUse) -> None:
        uses = self.tool_uses
        uses[use.id] = use
        if len(uses) > MAX_TOOL_USES:
            del uses[next(iter(uses))]

    def task(self, task_id: str) -> TaskInfo:
        info = self.tasks.get(task_id)
        if info is None:
            info = self.tasks[task_id] = TaskInfo(task_id)
            if len(self.tasks) > MAX_TASKS:
                del self.tasks[next(iter(self.tasks))]
        return info

    def open_tasks(self) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.started and not t.notified]
