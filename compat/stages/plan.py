"""Plan mode as Claude Code 2.1.220 shows it (twins plan-mode, plan-mode-denied).

``exit-plan-mode``: the model writes its plan to a file (both CLIs name one under their
``plans/`` directory) and calls ``ExitPlanMode`` with no input. Claude puts the plan in the
call (``input: {plan, planFilePath}``, in the assistant frame and in the ``can_use_tool``
prompt, which also says ``requires_user_interaction: true``), and the result's record is
``{plan, isAgent: false, filePath}``: a client shows the plan for approval from the
prompt (Zed's adapter) and the approved one from the record. cbc asks with ``{}`` and keeps
the plan in its result's private ``_meta.rawResponse {planFilePath, plan}``. The rule
fills the call and the prompt from the last plan file the session's calls wrote (a
``Write`` to a ``plans/*.md`` file, an ``Edit`` of it applied), and the record from cbc's
``rawResponse`` (before ``private-fields`` cuts it); ``permission-reply`` gives cbc back the
input it asked with (its schema takes no other key).

``plan-exit-status``: leaving plan mode is said as Claude says it.

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

import re
from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
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


#: a plan file as both CLIs name it (``~/.claude/plans/<words>.md``,
#: ``~/.codebuddy/plans/<words>-<id>.md``)
_PLAN_FILE = re.compile(r"/plans/[^/]+\.md$")
#: the keys Claude adds to ``ExitPlanMode``'s input (cbc's schema takes none of them)
PLAN_KEYS = ("plan", "planFilePath")


def _edited(text: str, inp: dict[str, Any]) -> str:
    """``text`` with an ``Edit`` call's replacement applied (unchanged when not found)."""
    old, new = inp.get("old_string"), inp.get("new_string")
    if not isinstance(old, str) or not old or not isinstance(new, str):
        return text
    return text.replace(old, new) if inp.get("replace_all") is True else text.replace(old, new, 1)


def _record(block: Any) -> dict[str, Any] | None:
    """Claude's record of an ``ExitPlanMode`` result, from cbc's ``_meta.rawResponse``."""
    meta = block.get("_meta") if isinstance(block, dict) else None
    raw = meta.get("rawResponse") if isinstance(meta, dict) else None
    if not isinstance(raw, dict) or not isinstance(raw.get("plan"), str):
        return None
    return {"plan": raw["plan"], "isAgent": False, "filePath": raw.get("planFilePath")}


@register
@attrs.define
class ExitPlanModeInput(Stage):
    """`ExitPlanMode`'s call and prompt carry the plan and its file, and its result the plan
    record, as Claude writes them."""

    rule: ClassVar[str] = "exit-plan-mode"
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "user", "control_request"})

    _path: str | None = attrs.field(default=None, init=False)  # the last plan file written
    _plan: str = attrs.field(default="", init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        key = frame.key()
        if key == "assistant":
            return self._assistant(frame)
        if key == "user":
            return self._result(frame, ctx)
        return self._prompt(frame)

    def _filled(self, inp: Any) -> dict[str, Any] | None:
        """``ExitPlanMode``'s input with the plan, when the session wrote one."""
        if self._path is None or not isinstance(inp, dict) or "plan" in inp:
            return None
        return {**inp, "plan": self._plan, "planFilePath": self._path}

    def _assistant(self, frame: Frame) -> Output:
        obj = frame.view(wire.Assistant)
        if obj.get("parent_tool_use_id") is not None:
            return None
        blocks, changed = [], False
        for b in wire.blocks(obj):
            self._note_write(b)
            filled = self._filled(b.get("input")) if _is_call(b, EXIT_PLAN) else None
            blocks.append({**b, "input": filled} if filled is not None else b)
            changed = changed or filled is not None
        if not changed:
            return None
        message = cast("dict[str, Any]", obj.get("message"))
        return (frame.replace({**obj, "message": {**message, "content": blocks}}),)

    def _note_write(self, block: Any) -> None:
        """A ``Write`` of a plan file, or an ``Edit`` of the one written."""
        inp = block.get("input") if isinstance(block, dict) else None
        if not isinstance(inp, dict):
            return
        path = inp.get("file_path")
        if not isinstance(path, str) or not _PLAN_FILE.search(path):
            return
        if _is_call(block, "Write") and isinstance(inp.get("content"), str):
            self._path, self._plan = path, inp["content"]
        elif _is_call(block, "Edit") and path == self._path:
            self._plan = _edited(self._plan, inp)

    def _prompt(self, frame: Frame) -> Output:
        _, request = ck.request_of(frame.obj)
        if request.get("subtype") != "can_use_tool" or request.get("tool_name") != EXIT_PLAN:
            return None
        filled = self._filled(request.get("input"))
        new = {**request, **({"input": filled} if filled is not None else {})}
        new["requires_user_interaction"] = True
        return (frame.replace({**frame.obj, "request": new}),)

    def _result(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.User)
        if obj.get("parent_tool_use_id") is not None or "tool_use_result" in obj:
            return None
        for b in wire.blocks(obj):
            call = starting_call(ctx.state, b.get("tool_use_id")) if isinstance(b, dict) else None
            record = _record(b) if call is not None and call[0] == EXIT_PLAN else None
            if record is not None and not b.get("is_error"):
                return (frame.replace({**obj, "tool_use_result": record}),)
        return None


def _is_call(block: Any, name: str) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == name


__all__ = ["PLAN_KEYS", "ExitPlanModeInput", "PlanExitStatus"]
