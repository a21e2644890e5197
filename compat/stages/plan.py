"""``plan-exit-status``: leaving plan mode is said as Claude Code 2.1.220 says it (twins
plan-mode).

When the client allows the model's ``ExitPlanMode`` call, Claude leaves plan mode and
writes ``{type: system, subtype: status, status: null, permissionMode: <the mode it
returns to>}`` before the call's ``tool_result``; a client shows the session's mode from
it (as after its own ``set_permission_mode``). cbc 2.163.0 leaves plan mode too but says
so only in its next ``system/init`` (``permissionMode: default``), a copy ``init-once``
drops. The rule writes Claude's frame before the result of an ``ExitPlanMode`` call that
did not fail. The mode it returns to is the last mode other than ``plan`` the session's
``system/init`` said (``default`` when it started in plan mode), as Claude restores it.
A denied call (``is_error``) leaves the session in plan mode: nothing is written.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.taskkit import starting_call

EXIT_PLAN = "ExitPlanMode"


def _exits(obj: wire.User, ctx: Context) -> bool:
    """Does this main-thread frame hold a successful ``ExitPlanMode`` result?"""
    if obj.get("parent_tool_use_id") is not None:
        return False
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict) or b.get("type") != "tool_result" or b.get("is_error"):
            continue
        call = starting_call(ctx.state, b.get("tool_use_id"))
        if call is not None and call[0] == EXIT_PLAN:
            return True
    return False


@register
@attrs.define
class PlanExitStatus(Stage):
    """An allowed `ExitPlanMode` is followed by Claude's `system/status` with the mode the
    session returns to, before the call's result."""

    rule: ClassVar[str] = "plan-exit-status"
    reads: ClassVar[frozenset[str]] = frozenset({"session_id", "tool_uses"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/init", "user"})

    #: the mode plan mode returns to
    _back_to: str = attrs.field(default="default", init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.key() != "user":
            mode = frame.view(wire.SystemInit).get("permissionMode")
            if isinstance(mode, str) and mode and mode != "plan":
                self._back_to = mode
            return None
        if not _exits(frame.view(wire.User), ctx):
            return None
        ctx.count(self.rule, "status")
        return (Frame.synth(self._status(ctx), self.rule), frame)

    def _status(self, ctx: Context) -> dict[str, Any]:
        return {
            "type": "system",
            "subtype": "status",
            "status": None,
            "permissionMode": self._back_to,
            "uuid": ctx.env.new_uuid(),
            "session_id": ctx.state.session_id or "",
        }


__all__ = ["PlanExitStatus"]
