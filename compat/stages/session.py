"""``session``: bookkeeping every other rule reads (not a PROTOCOL.md rule; always on).

Keeps the session id and cwd from the first ``system/init`` (later inits of the same
session refresh cwd/model; inits of other sessions are sub-agents, see ``foreign-init``),
every ``tool_use`` the assistant makes (for ``task-correlation`` and ``workflow-name``),
and whether a turn is running. It never changes a frame.
"""

from __future__ import annotations

from typing import ClassVar, cast

import attrs

from compat.frames import Frame
from compat.session import ToolUse
from compat.stage import Context, Output, Stage, register
from compat.wire import Assistant, SystemInit


@register
@attrs.define
class SessionStage(Stage):
    """Track session id, cwd and tool calls for the other rules."""

    rule: ClassVar[str] = "session"
    writes: ClassVar[frozenset[str]] = frozenset(
        {"cwd", "model", "result_at", "session_id", "tool_uses"}
    )
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/init", "assistant", "result"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
        t = obj.get("type")
        if t == "assistant":
            self._tool_uses(cast(Assistant, obj), ctx)
        elif t == "result":
            ctx.state.result_at = ctx.now
        else:  # system/init
            self._init(cast(SystemInit, obj), ctx)
        return None

    @staticmethod
    def _tool_uses(assistant: Assistant, ctx: Context) -> None:
        """Every ``tool_use`` block of an assistant message, remembered by its id."""
        message = assistant.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            tid, name = block.get("id"), block.get("name")
            if isinstance(tid, str) and isinstance(name, str):
                inp = block.get("input")
                ctx.state.remember_tool_use(
                    ToolUse(
                        tid,
                        name,
                        inp if isinstance(inp, dict) else {},
                        assistant.get("parent_tool_use_id"),
                    )
                )

    @staticmethod
    def _init(init: SystemInit, ctx: Context) -> None:
        """The session id of the first init; cwd and model from each init of that session."""
        state = ctx.state
        sid = init.get("session_id")
        if state.session_id is None and isinstance(sid, str):
            state.session_id = sid
        if sid != state.session_id:
            return  # another session's (a sub-agent's)
        cwd, model = init.get("cwd"), init.get("model")
        if isinstance(cwd, str) and cwd:
            state.cwd = cwd
        if isinstance(model, str) and model and model != "unknown":
            state.model = model
