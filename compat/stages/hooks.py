"""``hook-once`` and ``hook-reply``: an SDK hook is called once per tool call and event, as
Claude Code 2.1.220 calls it.

A client that registers hooks in ``initialize`` (``hooks: {PreToolUse: [{hookCallbackIds}],
…}``) is asked through ``hook_callback`` control requests. Claude asks PreToolUse once per
call; cbc 2.163.0 asks it twice for a call that needs permission: before the
``can_use_tool`` prompt and again after the allow (``tests/bridge/data/acp/bash-allowed``,
Zed's ACP adapter: two PreToolUse for one Bash call, one PostToolUse). A client that counts
or logs its hooks, or asks its user in one, sees the call twice.

``hook-reply`` (up) keeps the client's answer to each hook request ``hook-once`` forwarded;
``hook-once`` (down) forwards the first request of a (callback, event, tool call) and
answers a repeat itself with the client's answer to the first — the decision the client
already made — counted as ``answered-repeat``. A repeat that comes before the client
answered the first is forwarded (nothing to answer it with). Requests without a
``tool_use_id`` (UserPromptSubmit, Stop, …) pass.

``hook-deny`` (down): a call the client's ``PreToolUse`` hook denied
(``hookSpecificOutput.permissionDecision: "deny"``, or the older ``decision: "block"``)
ends as Claude ends it (``scenarios/sdk-hooks``, both CLIs): its tool_result is the
hook's reason (cbc: ``Error: <reason>``), marked ``tool_result_meta``
``permission-rule``, and the turn's ``result.permission_denials`` lists it (cbc: none).
``hook-reply`` notes the denial (``ControlState.hook_denials``, ``denied_uses``,
``permission_denials``); ``permission-routing`` marks the tool_result and
``result-shape`` lists the call, as for a denied ``can_use_tool``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import controlkit as ck
from compat import wire
from compat.frames import Frame
from compat.session import PermissionRequest
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.hygiene import one_text
from compat.stages.permissions import record_denial
from compat.taskkit import remember

#: the most hook requests remembered (a long session asks a few per tool call)
_MAX = 1024


def _key(request: dict[str, Any]) -> str | None:
    """The callback id, event and tool call of a ``hook_callback`` about a tool call, as
    one key."""
    data = request.get("input")
    if request.get("subtype") != "hook_callback" or not isinstance(data, dict):
        return None
    parts = (request.get("callback_id"), data.get("hook_event_name"), data.get("tool_use_id"))
    if not all(isinstance(p, str) and p for p in parts):
        return None
    return "\x00".join(parts)  # type: ignore[arg-type]


@register
@attrs.define
class HookOnce(Stage):
    """A repeated `hook_callback` for the same call and event is answered with the
    client's first answer, not asked again."""

    rule: ClassVar[str] = "hook-once"
    reads: ClassVar[frozenset[str]] = frozenset({"control.hook_answers"})
    writes: ClassVar[frozenset[str]] = frozenset({"control.hook_requests"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request"})

    #: (callback, event, call) -> the request id the client was asked with
    _asked: dict[str, str] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, request = ck.request_of(frame.obj)
        key = _key(request)
        if rid is None or key is None:
            return None
        first = self._asked.get(key)
        if first is None:
            remember(self._asked, key, rid, cap=_MAX)
            remember(ctx.state.control.hook_requests, rid, _call(rid, request), cap=_MAX)
            return None
        answer = ctx.state.control.hook_answers.get(first)
        if answer is None:
            return None  # the client has not answered the first yet: it is asked again
        ctx.emit("up", Frame.from_obj(_again(rid, answer)), self.rule)
        ctx.count(self.rule, "answered-repeat")
        return ()


def _call(rid: str, request: dict[str, Any]) -> PermissionRequest | None:
    """The call a ``PreToolUse`` request asks about (None for another event)."""
    data = request.get("input")
    if not isinstance(data, dict) or data.get("hook_event_name") != "PreToolUse":
        return None
    tool, use, inp = data.get("tool_name"), data.get("tool_use_id"), data.get("tool_input")
    return PermissionRequest(
        rid,
        tool if isinstance(tool, str) else "",
        use if isinstance(use, str) else None,
        inp if isinstance(inp, dict) else {},
    )


def _denied(answer: dict[str, Any]) -> str | None:
    """The reason of a hook answer that denies the call (None: it does not)."""
    body = ck.body_of(answer)
    out = body.get("hookSpecificOutput")
    if isinstance(out, dict) and out.get("permissionDecision") == "deny":
        reason = out.get("permissionDecisionReason")
    elif body.get("decision") == "block":
        reason = body.get("reason")
    else:
        return None
    return reason if isinstance(reason, str) and reason else "Blocked by hook"


def _again(rid: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The client's answer (its ``response`` object) to another request id."""
    return {"type": "control_response", "response": {**answer, "request_id": rid}}


@register
@attrs.define
class HookReply(Stage):
    """Keep the client's answers to the hook requests `hook-once` forwarded."""

    rule: ClassVar[str] = "hook-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.client_turns", "control.hook_requests"})
    writes: ClassVar[frozenset[str]] = frozenset(
        {
            "control.denied_uses",
            "control.hook_answers",
            "control.hook_denials",
            "control.permission_denials",
        }
    )
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, _, response = ck.response_of(frame.obj)
        control = ctx.state.control
        if rid is None or rid not in control.hook_requests:
            return None
        remember(control.hook_answers, rid, dict(response), cap=_MAX)
        call, reason = control.hook_requests[rid], _denied(response)
        if call is not None and call.tool_use_id and reason is not None:
            record_denial(control, call)
            remember(control.denied_uses, call.tool_use_id, "permission-rule", cap=_MAX)
            remember(control.hook_denials, call.tool_use_id, reason, cap=_MAX)
            ctx.count(self.rule, "denied-by-hook")
        return None


#: cbc's words before a hook's reason in the tool_result of the call it denied
_CBC_PREFIX = "Error: "


@register
@attrs.define
class HookDeny(Stage):
    """The tool_result of a call the client's PreToolUse hook denied is the hook's reason,
    as Claude writes it (cbc: ``Error: <reason>``)."""

    rule: ClassVar[str] = "hook-deny"
    reads: ClassVar[frozenset[str]] = frozenset()
    writes: ClassVar[frozenset[str]] = frozenset({"control.hook_denials"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        denials = ctx.state.control.hook_denials
        if not denials:
            return None
        obj = frame.view(wire.User)
        message = obj.get("message")
        if obj.get("parent_tool_use_id") is not None or not isinstance(message, dict):
            return None
        content = message.get("content")
        if not isinstance(content, list):
            return None
        new = [_worded(b, denials) for b in content]
        if all(n is b for n, b in zip(new, content, strict=True)):
            return None
        return (frame.replace({**obj, "message": {**message, "content": new}}),)


def _worded(block: Any, denials: dict[str, str]) -> Any:
    """A tool_result block of a hook-denied call with the hook's reason as its content."""
    if not isinstance(block, dict) or block.get("type") != "tool_result":
        return block
    reason = denials.pop(str(block.get("tool_use_id")), None)
    if reason is None or one_text(block.get("content")) not in (reason, _CBC_PREFIX + reason):
        return block
    return {**block, "content": reason}
