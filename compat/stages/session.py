"""``session``: bookkeeping every other rule reads (not a PROTOCOL.md rule; always on).

Keeps the session id and cwd from the first ``system/init`` (later inits of the same
session refresh cwd/model; inits of other sessions are sub-agents, see ``foreign-init``),
every ``tool_use`` the assistant makes (for ``task-correlation`` and ``workflow-name``),
and whether a turn is running. It never changes a frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from compat.frames import Frame
from compat.session import ToolUse
from compat.stage import Context, Output, Stage, register
from compat.wire import Assistant, Result, SystemInit

if TYPE_CHECKING:
    from compat.session import SessionState


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
        _TRACKERS[frame.obj.get("type")](frame.obj, ctx)
        return None


def _tool_uses(assistant: Assistant, ctx: Context) -> None:
    """Every ``tool_use`` block of an assistant message, remembered by its id."""
    message = assistant.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return
    for block in content:
        use = _tool_use(block, assistant)
        if use is not None:
            ctx.state.remember_tool_use(use)


def _tool_use(block: Any, assistant: Assistant) -> ToolUse | None:
    """A ``tool_use`` block as the session keeps it; None for any other block, or one
    without a string id and name."""
    if not isinstance(block, dict) or block.get("type") != "tool_use":
        return None
    tid, name = block.get("id"), block.get("name")
    if not isinstance(tid, str) or not isinstance(name, str):
        return None
    inp = block.get("input")
    parent = assistant.get("parent_tool_use_id")
    return ToolUse(tid, name, inp if isinstance(inp, dict) else {}, parent)


def _result(result: Result, ctx: Context) -> None:
    ctx.state.result_at = ctx.now


def _init(init: SystemInit, ctx: Context) -> None:
    """The session id of the first init; cwd and model from each init of that session
    (another session's are a sub-agent's)."""
    state = ctx.state
    sid = init.get("session_id")
    if state.session_id is None and isinstance(sid, str):
        state.session_id = sid
    if sid == state.session_id:
        _refresh(init, state)


def _refresh(init: SystemInit, state: SessionState) -> None:
    """cwd and model from an init of the session (an empty one, or model ``unknown``,
    leaves them)."""
    cwd, model = init.get("cwd"), init.get("model")
    if isinstance(cwd, str) and cwd:
        state.cwd = cwd
    if isinstance(model, str) and model and model != "unknown":
        state.model = model


#: what each kind of frame tells the session
_TRACKERS: dict[Any, Callable[[Any, Context], None]] = {
    "assistant": _tool_uses,
    "result": _result,
    "system": _init,  # system/init: the only system frame the rule takes
}
