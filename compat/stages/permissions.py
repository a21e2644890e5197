"""``permission-routing``, ``permission-reply``, ``permission-cancel``: tool permission
prompts the Claude way (PROTOCOL.md §2 "Control protocol", §3 ``permission-routing``).

Strategy: cbc 2.163.0 asks the client about every tool its policy does not allow, Claude
Code 2.1.220 only a client that asked for stdio prompts; the rules route each prompt, translate
the answer between the two shapes, and record every denied or withdrawn call
(``ControlState.permission_denials``, ``denied_uses``) so the result and the tool_result
read as Claude's.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
from compat import wire
from compat.frames import Frame
from compat.session import PermissionRequest
from compat.stage import Context, Direction, Output, Stage, register
from compat.taskkit import remember

#: tools whose denial Claude words as a write to the file they name
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})


def claude_denial(tool_name: str, tool_input: dict[str, Any]) -> str:
    """Claude Code's message when it denies a tool it was not allowed to ask about."""
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if tool_name in WRITE_TOOLS and isinstance(path, str) and path:
        return f"Claude requested permissions to write to {path}, but you haven't granted it yet."
    if tool_name == "Read" and isinstance(path, str) and path:
        return f"Claude requested permissions to read from {path}, but you haven't granted it yet."
    return f"Claude requested permissions to use {tool_name}, but you haven't granted it yet."


@register
@attrs.define
class PermissionRouting(Stage):
    """Forward `can_use_tool` only to a client that asked for stdio prompts; else deny.

    cbc 2.163.0 asks the client about every tool its policy does not allow
    (``control_request{subtype:"can_use_tool", tool_name, input, tool_use_id}``, no
    ``--permission-prompt-tool`` needed). Claude Code 2.1.220 asks only when the client passed
    ``--permission-prompt-tool stdio``
    (``mockapi_permission-prompt-stdio_can-use-tool_{allow,deny}``); otherwise it denies by
    itself with "Claude requested permissions to use X, but you haven't granted it yet." (to
    *write to <path>* for file edits) and lists the call in ``result.permission_denials``.

    Mode ``auto`` forwards ``can_use_tool`` when the client asked for stdio prompts
    (``SessionState.stdio_permissions``, from the launch line) and denies it itself,
    Claude-worded, otherwise; ``forward`` / ``deny`` force one way. A forwarded request is
    remembered by ``request_id``; a local denial is recorded in
    ``ControlState.permission_denials`` (cbc also lists it in its own result, since to cbc it
    is an SDK deny: ``mockoai_can-use-tool-deny``). The tool_result of a call the client's
    answer denied gets Claude's ``tool_result_meta: [{id, non_execution_kind:
    "permission-rule"}]`` (twins permission-deny.claude.jsonl); other user frames are not
    parsed (nothing denied: the step is cold).
    """

    rule: ClassVar[str] = "permission-routing"
    reads: ClassVar[frozenset[str]] = frozenset(
        {"control.client_turns", "control.denied_uses", "stdio_permissions"}
    )
    writes: ClassVar[frozenset[str]] = frozenset({"control.permission_denials"})
    modes: ClassVar[tuple[str, ...]] = ("auto", "forward", "deny")
    #: can_use_tool requests, and tool results (``user``) of calls the client denied; a
    #: turn's result forgets the calls an interrupt withdrew
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request", "user", "result"})
    lazy: ClassVar[bool] = True

    def cold(self, kind: tuple[str | None, str | None], ctx: Context) -> bool:
        """A user frame or result passes untouched while no denied call waits for its
        result."""
        return kind[0] in ("user", "result") and not ctx.state.control.denied_uses

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.kind() == ("user", None):
            return self._tool_result(frame, ctx)
        kind = frame.kind()
        if kind is not None and kind[0] == "result":
            denied = ctx.state.control.denied_uses
            for withdrawn in [u for u, k in denied.items() if k == "user-rejected"]:
                del denied[withdrawn]  # the interrupted turn is over (cbc wrote no result)
            return None
        if not isinstance(frame.obj, dict):
            return None
        rid, request = ck.request_of(frame.obj)
        body = cast("wire.CanUseTool", request)
        if rid is None or body.get("subtype") != "can_use_tool":
            return None
        tool = body.get("tool_name")
        tool = tool if isinstance(tool, str) else ""
        inp = body.get("input")
        inp = inp if isinstance(inp, dict) else {}
        use = body.get("tool_use_id")
        use = use if isinstance(use, str) else None
        control = ctx.state.control
        forward = ctx.state.stdio_permissions if self.mode == "auto" else self.mode == "forward"
        if forward:
            remember(control.permissions, rid, PermissionRequest(rid, tool, use, inp), cap=256)
            return None
        reason = claude_denial(tool, inp)
        control.permission_denials.append(
            {"tool_name": tool, "tool_use_id": use, "tool_input": inp, "turn": control.client_turns}
        )
        reply: dict[str, Any] = {"allowed": False, "reason": reason, "interrupt": False}
        if use:
            reply["tool_use_id"] = use
        ctx.emit("up", Frame.from_obj(ck.success(rid, reply)), self.rule)
        ctx.log(
            self.rule,
            f"denied {tool} (the client did not ask for permission prompts: "
            "no --permission-prompt-tool stdio)",
            "debug",
        )
        ctx.count(self.rule, "denied")
        return ()

    def _tool_result(self, frame: Frame, ctx: Context) -> Output:
        denied = ctx.state.control.denied_uses
        if not denied or (frame.raw and not any(u.encode() in frame.raw for u in denied)):
            return None
        obj = cast("wire.User", frame.obj)
        message = obj.get("message") if isinstance(obj, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or obj.get("parent_tool_use_id") is not None:
            return None
        meta = [
            {"id": b["tool_use_id"], "non_execution_kind": denied[b["tool_use_id"]]}
            for b in content
            if isinstance(b, dict)
            and b.get("type") == "tool_result"
            and b.get("tool_use_id") in denied
        ]
        if not meta:
            return None
        for m in meta:
            denied.pop(m["id"], None)
        new: dict[str, Any] = {k: v for k, v in obj.items() if k != "tool_result_meta"}
        new["tool_result_meta"] = meta
        return (frame.replace(new),)


@register
@attrs.define
class PermissionReply(Stage):
    """Claude's `{behavior, updatedInput | message}` answer -> cbc's `{allowed, ...}`.

    cbc reads ``{allowed, reason, interrupt, updatedInput}`` back; a reply without ``allowed``
    is a deny (``mockoai_can-use-tool-claude-shaped-allow`` denies a Claude-shaped allow).
    Claude reads ``{behavior:"allow", updatedInput}`` / ``{behavior:"deny", message,
    interrupt?}`` (``mockapi_permission-prompt-stdio_can-use-tool_{allow,deny}``).

    The client's answer to a forwarded request (or any answer of Claude's shape) is translated
    to cbc's, the legacy ``claude-code-sdk`` 0.0.x answer (``{allow, reason | input}``) too,
    its reason kept; a client error reply becomes a deny, and the denied call's id is noted
    (``ControlState.denied_uses``).
    """

    rule: ClassVar[str] = "permission-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.permissions"})
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def _unapplied(self, updates: Any, ctx: Context) -> None:
        """An allow's ``updatedPermissions`` (the SDKs' "always allow" suggestions: rules
        added, a mode set, directories added) has no place in cbc's answer, which reads only
        ``{allowed, reason, interrupt, updatedInput}`` (its binary): later calls prompt
        again. Said once per answer that carries any, naming the update types, so that what
        the client asked for is not lost silently (counted: ``permission-updates-unapplied``)."""
        if not isinstance(updates, list) or not updates:
            return
        kinds = sorted(
            {str(u.get("type")) if isinstance(u, dict) else type(u).__name__ for u in updates}
        )
        ctx.count(self.rule, "permission-updates-unapplied", len(updates))
        ctx.log(
            self.rule,
            f"updatedPermissions not applied ({', '.join(kinds)}): cbc's permission answer "
            "has no such field, so the tool will be asked about again",
            "warning",
        )

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, sub, response = ck.response_of(frame.obj)
        if rid is None:
            return None
        pending = ctx.state.control.permissions.pop(rid, None)
        resp = cast("wire.ControlResponseBody", response)
        body = cast("wire.PermissionAnswer", ck.body_of(response))
        if pending is None and not ("behavior" in body and "allowed" not in body):
            return None  # not an answer to a permission prompt (hooks, MCP messages...)
        if sub == "error":
            message = resp.get("error")
            reply = self._deny(
                message if isinstance(message, str) and message else "Permission denied", False
            )
        elif "allowed" in body:
            return None  # already cbc's shape
        elif "behavior" not in body and isinstance(body.get("allow"), bool):
            # the legacy claude-code-sdk (0.0.x): {allow: true, input?} / {allow: false,
            # reason}; its deny reason reaches cbc as given
            if body["allow"]:
                updated = body.get("input")
                if not isinstance(updated, dict):
                    updated = pending.input if pending is not None else {}
                reply = {"allowed": True, "updatedInput": updated}
            else:
                reason = body.get("reason")
                reply = self._deny(
                    reason if isinstance(reason, str) and reason else "Permission denied",
                    body.get("interrupt") is True,
                )
        elif body.get("behavior") == "allow":
            updated = body.get("updatedInput")
            if not isinstance(updated, dict):
                updated = pending.input if pending is not None else {}
            reply = {"allowed": True, "updatedInput": updated}
            self._unapplied(body.get("updatedPermissions"), ctx)
        else:
            if body.get("behavior") != "deny":
                ctx.log(
                    self.rule,
                    f"permission answer with behavior {body.get('behavior')!r} taken as a deny",
                    "warning",
                )
            message = body.get("message")
            reply = self._deny(
                message if isinstance(message, str) and message else "Permission denied",
                body.get("interrupt") is True,
            )
        if pending is not None and pending.tool_use_id:
            reply["tool_use_id"] = pending.tool_use_id
            if not reply["allowed"]:
                remember(
                    ctx.state.control.denied_uses, pending.tool_use_id, "permission-rule", cap=256
                )
        return (frame.replace(ck.success(rid, reply)),)

    @staticmethod
    def _deny(reason: str, interrupt: bool) -> dict[str, Any]:
        return {"allowed": False, "reason": reason, "interrupt": interrupt}


@register
@attrs.define
class PermissionCancel(Stage):
    """Withdraw open permission prompts before an interrupt's receipt.

    At the receipt of an interrupt, Claude withdraws every open prompt with
    ``control_cancel_request{request_id}`` before the receipt
    (``mockapi_permission-prompt-stdio_interrupt_cli-sends-control-cancel-request``); cbc
    cancels them internally and says nothing (``mockoai_can-use-tool-then-interrupt``). Claude
    also lists each withdrawn call in the result's ``permission_denials`` and marks its
    rejected tool_result ``tool_result_meta: [{id, non_execution_kind: "user-rejected"}]``
    (raw run interrupt-permission-prompt): the call is recorded for ``result-shape`` and
    ``permission-routing``.
    """

    rule: ClassVar[str] = "permission-cancel"
    reads: ClassVar[frozenset[str]] = frozenset({"control.interrupts", "control.permissions"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, _, _ = ck.response_of(frame.obj)
        control = ctx.state.control
        if rid not in control.interrupts or not control.permissions:
            return None
        cancels = [
            Frame.synth({"type": "control_cancel_request", "request_id": pid}, self.rule)
            for pid in control.permissions
        ]
        for req in control.permissions.values():
            # Claude: the withdrawn call is a denial of the turn, its rejection "user-rejected"
            # (raw run interrupt-permission-prompt, 2026-12-01). (A prompt interrupt-request
            # ended with deny + interrupt gets no result from cbc: interrupted-turn writes
            # the marked rejection, and the mark is forgotten at the result.)
            if req.tool_use_id:
                remember(control.denied_uses, req.tool_use_id, "user-rejected", cap=256)
            control.permission_denials.append(
                {
                    "tool_name": req.tool_name,
                    "tool_use_id": req.tool_use_id,
                    "tool_input": req.input,
                    "turn": control.client_turns,
                }
            )
        control.permissions.clear()
        return (*cancels, frame)
