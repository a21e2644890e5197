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


@attrs.define
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]
    parent_tool_use_id: str | None = None


@attrs.define
class TaskInfo:
    task_id: str
    task_type: str = ""
    tool_use_id: str | None = None
    description: str = ""
    workflow_name: str | None = None
    prompt: str | None = None
    #: parsed ``meta`` of a workflow script (name, description, phases), when known
    meta: dict[str, Any] | None = None
    started: bool = False  # task_started forwarded to the client
    status: str = "running"  # last status forwarded (Claude vocabulary)
    terminal: bool = False  # a terminal task_updated was forwarded
    notified: bool = False  # the one task_notification was forwarded
    end_time: int | None = None
    last_progress: dict[str, Any] | None = None  # last task_progress frame forwarded
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
        return info

    def open_tasks(self) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.started and not t.notified]
