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
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import controlkit as ck
from compat.frames import Frame
from compat.stage import Context, Direction, Output, Stage, register
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
            remember(ctx.state.control.hook_requests, rid, None, cap=_MAX)
            return None
        answer = ctx.state.control.hook_answers.get(first)
        if answer is None:
            return None  # the client has not answered the first yet: it is asked again
        ctx.emit("up", Frame.from_obj(_again(rid, answer)), self.rule)
        ctx.count(self.rule, "answered-repeat")
        return ()


def _again(rid: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The client's answer (its ``response`` object) to another request id."""
    return {"type": "control_response", "response": {**answer, "request_id": rid}}


@register
@attrs.define
class HookReply(Stage):
    """Keep the client's answers to the hook requests `hook-once` forwarded."""

    rule: ClassVar[str] = "hook-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.hook_requests"})
    writes: ClassVar[frozenset[str]] = frozenset({"control.hook_answers"})
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, _, response = ck.response_of(frame.obj)
        if rid is not None and rid in ctx.state.control.hook_requests:
            remember(ctx.state.control.hook_answers, rid, dict(response), cap=_MAX)
        return None
