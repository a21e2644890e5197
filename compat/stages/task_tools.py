"""``task-tool-results``: the Task tools' results carry Claude Code 2.1.220's record of the
task list, as clients render it.

Both CLIs offer TaskCreate, TaskUpdate, TaskList and TaskGet with the same input schemas
(twins todo-tools). Claude's user frame of each result carries a ``tool_use_result`` a
client renders as a checklist: TaskCreate ``{task: {id, subject}}``; TaskUpdate
``{success, taskId, updatedFields, statusChange: {from, to}}``; TaskList ``{tasks: [{id,
subject, status, blockedBy}]}``; TaskGet ``{task: {id, subject, description, status,
blocks, blockedBy}}``. cbc writes none, but keeps the task in the result's private
``_meta.rawResponse`` (``{task, todos}``; TaskList ``{tasks, todos}``; TaskGet the task
itself), which ``private-fields`` cuts later: this rule reads it first. A TaskUpdate's
``from`` is the status the rule last saw the task in (a task it never saw: no
``statusChange``), ``updatedFields`` the call's input fields but ``taskId``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.stages.hygiene import message_blocks
from compat.taskkit import remember

#: the most task statuses remembered (a session's task list)
_MAX_TASKS = 1024


def _task(raw: Any) -> dict[str, Any]:
    """The task a ``rawResponse`` holds (``{}``: none)."""
    task = raw.get("task") if isinstance(raw, dict) else None
    return task if isinstance(task, dict) else {}


def _links(task: dict[str, Any], key: str) -> list[Any]:
    value = task.get(key)
    return value if isinstance(value, list) else []


def _created(raw: Any, _: dict[str, Any], __: dict[str, str]) -> dict[str, Any] | None:
    task = _task(raw)
    if "id" not in task:
        return None
    return {"task": {"id": task["id"], "subject": task.get("subject")}}


def _updated(raw: Any, given: dict[str, Any], seen: dict[str, str]) -> dict[str, Any] | None:
    task = _task(raw)
    tid = task.get("id", given.get("taskId"))
    if tid is None:
        return None
    out: dict[str, Any] = {
        "success": True,
        "taskId": tid,
        "updatedFields": [k for k in given if k != "taskId"],
    }
    before, after = seen.get(str(tid)), task.get("status")
    if "status" in given and before is not None and isinstance(after, str):
        out["statusChange"] = {"from": before, "to": after}
    return out


def _listed(raw: Any, _: dict[str, Any], __: dict[str, str]) -> dict[str, Any] | None:
    tasks = raw.get("tasks") if isinstance(raw, dict) else None
    if not isinstance(tasks, list):
        return None
    rows = [t for t in tasks if isinstance(t, dict)]
    return {
        "tasks": [
            {
                "id": t.get("id"),
                "subject": t.get("subject"),
                "status": t.get("status"),
                "blockedBy": _links(t, "blockedBy"),
            }
            for t in rows
        ]
    }


def _got(raw: Any, _: dict[str, Any], __: dict[str, str]) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or "id" not in raw:
        return None
    keys = ("id", "subject", "description", "status")
    return {
        "task": {
            **{k: raw.get(k) for k in keys},
            "blocks": _links(raw, "blocks"),
            "blockedBy": _links(raw, "blockedBy"),
        }
    }


#: tool name -> Claude's record from (cbc's rawResponse, the call's input, statuses seen)
_RECORDS: dict[str, Callable[[Any, dict[str, Any], dict[str, str]], dict[str, Any] | None]] = {
    "TaskCreate": _created,
    "TaskUpdate": _updated,
    "TaskList": _listed,
    "TaskGet": _got,
}


def _raw(block: dict[str, Any]) -> Any:
    meta = block.get("_meta")
    return meta.get("rawResponse") if isinstance(meta, dict) else None


def _statuses(raw: Any) -> list[tuple[str, str]]:
    """(task id, status) of every task a ``rawResponse`` shows."""
    tasks = [_task(raw), raw] if isinstance(raw, dict) else []
    listed = raw.get("tasks") if isinstance(raw, dict) else None
    tasks += listed if isinstance(listed, list) else []
    return [
        (str(t["id"]), t["status"])
        for t in tasks
        if isinstance(t, dict) and "id" in t and isinstance(t.get("status"), str)
    ]


@register
@attrs.define
class TaskToolResults(Stage):
    """A Task tool's result carries Claude's record of the task list (`tool_use_result`),
    read from cbc's private `_meta.rawResponse` before it is cut."""

    rule: ClassVar[str] = "task-tool-results"
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})

    #: task id -> the status it was last seen in
    _seen: dict[str, str] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.User)
        found = message_blocks(obj)
        if found is None or "tool_use_result" in obj:
            return None
        results = [b for b in found[1] if isinstance(b, dict) and b.get("type") == "tool_result"]
        if len(results) != 1 or results[0].get("is_error") is True:
            return None
        record = self._record(results[0], ctx)
        if record is None:
            return None
        ctx.count(self.rule, "task-record")
        return (frame.replace({**obj, "tool_use_result": record}),)

    def _record(self, block: dict[str, Any], ctx: Context) -> dict[str, Any] | None:
        use_id = block.get("tool_use_id")
        use = ctx.state.tool_uses.get(use_id) if isinstance(use_id, str) else None
        make = _RECORDS.get(use.name) if use is not None else None
        if use is None or make is None:
            return None
        raw = _raw(block)
        record = make(raw, use.input, self._seen)
        for tid, status in _statuses(raw):
            remember(self._seen, tid, status, cap=_MAX_TASKS)
        return record
