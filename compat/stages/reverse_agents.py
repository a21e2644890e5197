"""``rev-foreground-agent``: a foreground sub-agent as a cbc 2.163.0 client sees it, over
Claude Code 2.1.220 (twins-reverse subagent-foreground: an ``Agent`` call with
``run_in_background: false`` whose agent runs a Bash call and reports back).

Both CLIs stream the agent's own calls and results with ``parent_tool_use_id`` = the
Agent call. Around them Claude writes what cbc does not, and the other way round:

- the agent's prompt as a user frame of its own (text only, parent the call): cbc writes
  none, so it is dropped;
- the agent as a ``local_agent`` task (``task_started`` naming the call, then
  ``task_progress``, ``task_updated``, ``task_notification`` of its task id): cbc reports
  only a background agent as a task, so they are dropped;
- the agent's last reply: cbc writes it as an assistant frame (parent the call) just
  before the call's result, Claude only inside the result (``tool_use_result.content``);
  the frame is written from it, before the result (unless the agent's last frame was that
  reply already).

A call with ``run_in_background: true``, or without the flag (Claude 2.1.220 runs such a
call in the background: ``status: async_launched``), is left to the background rules.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame, str_at
from compat.stage import Context, Output, Stage, register
from compat.stages.reverse_stream import cbc_text_frame
from compat.taskkit import AGENT_TOOLS, remember

#: foreground calls and their tasks remembered at once (the oldest forgotten past this)
_MAX = 256
_TASK_KINDS = ("task_progress", "task_updated", "task_notification")
#: cbc's usage record, counting nothing
_NO_USAGE = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "cache_creation": None,
    "server_tool_use": None,
    "service_tier": None,
}


def _foreground_calls(obj: wire.Assistant) -> list[str]:
    """The ids of the main-thread Agent calls made with ``run_in_background: false``."""
    if obj.get("parent_tool_use_id") is not None:
        return []
    return [
        b["id"]
        for b in wire.blocks_of(obj, "tool_use")
        if isinstance(b.get("name"), str)
        and b["name"] in AGENT_TOOLS
        and isinstance(b.get("id"), str)
        and isinstance(b.get("input"), dict)
        and b["input"].get("run_in_background") is False
    ]


def _texts_only(obj: Any) -> bool:
    blocks = wire.blocks(obj)
    return bool(blocks) and all(isinstance(b, dict) and b.get("type") == "text" for b in blocks)


def _answer(obj: wire.User, calls: dict[str, bool | None]) -> tuple[str, str] | None:
    """(call, the agent's answer) when ``obj`` is the result of a foreground call."""
    record = obj.get("tool_use_result")
    for b in wire.blocks(obj):
        use = b.get("tool_use_id") if isinstance(b, dict) else None
        if isinstance(use, str) and use in calls and b.get("type") == "tool_result":
            text = _record_text(record) or _first_text(b.get("content"))
            return (use, text) if text else None
    return None


def _record_text(record: Any) -> str | None:
    content = record.get("content") if isinstance(record, dict) else None
    return _first_text(content)


def _first_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    first = content[0] if isinstance(content, list) and content else None
    text = first.get("text") if isinstance(first, dict) else None
    return text if isinstance(text, str) else None


@register
@attrs.define
class ReverseForegroundAgent(Stage):
    """A foreground agent as cbc shows it: no prompt frame, no task frames, its last reply
    as a frame of its own before the Agent call's result."""

    rule: ClassVar[str] = "rev-foreground-agent"
    reads: ClassVar[frozenset[str]] = frozenset({"model", "session_id"})
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"assistant", "user", "system/task_started", *(f"system/{k}" for k in _TASK_KINDS)}
    )

    #: foreground Agent calls: whether the agent's last frame was a text-only reply
    _calls: dict[str, bool | None] = attrs.field(factory=dict, init=False)
    _tasks: dict[str, None] = attrs.field(factory=dict, init=False)  # their task ids

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        key = frame.key()
        if key == "assistant":
            obj = frame.view(wire.Assistant)
            for call in _foreground_calls(obj):
                remember(self._calls, call, None, cap=_MAX)
            parent = obj.get("parent_tool_use_id")
            if isinstance(parent, str) and parent in self._calls:
                self._calls[parent] = _texts_only(obj) or None  # (its answer, written already)
            return None
        if key == "user":
            return self._user(frame, ctx)
        return self._task(frame, ctx)

    def _user(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.User)
        parent = obj.get("parent_tool_use_id")
        if isinstance(parent, str) and parent in self._calls and _texts_only(obj):
            ctx.count(self.rule, "prompt-dropped")
            return ()
        found = _answer(obj, self._calls) if parent is None else None
        if found is None:
            return None
        call, text = found
        if self._calls.pop(call):
            return None  # (the backend wrote the agent's answer as a frame itself)
        ctx.count(self.rule, "answer-frame")
        return (self._reply(call, text, ctx), frame)

    def _task(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.Envelope)
        tid = str_at(obj, "task_id")
        if tid is None:
            return None
        call = str_at(obj, "tool_use_id")
        if obj.get("subtype") == "task_started" and call is not None and call in self._calls:
            remember(self._tasks, tid, None, cap=_MAX)
        elif tid not in self._tasks:
            return None
        if obj.get("subtype") == "task_notification":
            del self._tasks[tid]
        ctx.count(self.rule, "task-frame-dropped")
        return ()

    def _reply(self, call: str, text: str, ctx: Context) -> Frame:
        """cbc's frame of the agent's last reply (the agent's own usage is not in Claude's
        result)."""
        uid = ctx.env.new_uuid()
        session = ctx.state.session_id or ""
        obj = cbc_text_frame(uid, uid.replace("-", ""), session, text, ctx, dict(_NO_USAGE))
        return Frame.synth({**obj, "parent_tool_use_id": call}, self.rule)


__all__ = ["ReverseForegroundAgent"]
