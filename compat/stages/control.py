"""The control protocol's requests and replies (PROTOCOL.md §2 "Control protocol"):
``unsupported-control``, ``control-reply``, plus ``control-state``, the bookkeeping they
share with the stdin rules.

Strategy: every client ``control_request`` gets exactly one reply, Claude-worded: answered
by cbc when it can, by the bridge when it cannot or does not in time. The rules share
``ControlState`` (pending and queued user lines, open requests, turn boundaries). Elsewhere:
``initialize-request`` and ``initialize-reply`` (``compat/stages/initialize.py``),
``stdin-vocabulary`` and ``user-line`` (``user_line.py``), ``sdk-mcp`` and
``sdk-mcp-reply`` (``sdk_mcp.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
from compat import wire
from compat.frames import Frame
from compat.session import MAX_OWN, ControlRequest
from compat.session import ControlState as ControlFacts
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.control_mcp import claude_block as claude_block
from compat.stages.control_mcp import claude_client_info as claude_client_info
from compat.stages.control_mcp import claude_tool_info as claude_tool_info
from compat.stages.control_mcp import (
    mcp_status_entry,
)
from compat.stages.control_replies import for_target, setter_reply, without_deny_errors
from compat.stages.control_usage import DEFAULT_WINDOW as DEFAULT_WINDOW
from compat.stages.control_usage import context_usage
from compat.stages.control_usage import grid_rows as grid_rows
from compat.stages.turns import TURN_CONTENT, is_interrupt_receipt
from compat.taskkit import remember

#: setters cbc refuses before its first turn; answered at once, sent once it has a session
_SETTERS = frozenset({"set_permission_mode", "set_model"})


@register
@attrs.define
class UnsupportedControl(Stage):
    """Answer locally what cbc cannot; never leave a client control request unanswered.

    Runs last upstream. It answers locally what cbc cannot (``nomodel_controls-*``: ``Unknown
    control request subtype`` for ``mcp_status``, ``get_context_usage``,
    ``set_max_thinking_tokens``, ``stop_task``); holds ``set_permission_mode``/``set_model``
    sent before cbc has a session (cbc answers ``Session not found: current`` until its first
    turn starts, even with ``--session-id``) and answers them at once the way Claude does; and
    registers every request it forwards with a safety timer: no reply within ``timeout``
    (``initialize_timeout`` for ``initialize``, which cbc answers only after its slow start)
    gets an error reply, so the Python SDK never waits its 60 s.
    """

    rule: ClassVar[str] = "unsupported-control"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.default_model",
            "control.last_result",
            "control.mcp_servers",
            "control.sdk_mcp_tools",
            "control.set_model",
            "model",
            "session_id",
            "task.phase",
            "tasks",
        }
    )
    writes: ClassVar[frozenset[str]] = frozenset(
        {"control.deferred", "control.own", "control.requests"}
    )
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"control_request", "control_cancel_request"}
    )

    #: seconds a forwarded request may wait for cbc's reply before the bridge answers
    timeout: float = 30.0
    #: the same for ``initialize`` (cbc answers it only once started; the SDK waits 60 s)
    initialize_timeout: float = 55.0
    _own: int = attrs.field(default=0, init=False)  # requests of its own sent upstream

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t, _ = frame.kind() or (None, None)
        if t == "control_cancel_request":
            return self._cancel(frame, ctx)
        return self._request(frame, ctx)

    def _cancel(self, frame: Frame, ctx: Context) -> Output:
        """The client gave up on a request: no reply, no timer; cbc has nothing to cancel
        on the client's behalf."""
        rid = frame.view(wire.CancelRequest).get("request_id")
        req = ctx.state.control.requests.get(rid) if isinstance(rid, str) else None
        if req is not None and not req.answered:
            req.answered = True
            ctx.cancel_timer(self, req.request_id)
        ctx.count(self.rule, "absorbed:control_cancel_request")
        return ()

    def _request(self, frame: Frame, ctx: Context) -> Output:
        control = ctx.state.control
        rid, body = ck.request_of(frame.obj)
        setter = cast("wire.SetterBody", body)
        sub = setter.get("subtype")
        if rid is None:
            ctx.log(self.rule, "a control_request without request_id dropped", "warning")
            return ()
        if rid in control.own:
            return None  # the bridge's own request (initialize-request's set_config)
        if not isinstance(sub, str):
            return self._answer(ctx, ck.error(rid, f"{ck.UNSUPPORTED}{sub!s}"), "malformed")
        req = ControlRequest(rid, sub, body)
        remember(control.requests, rid, req, cap=1024)
        local = _LOCAL.get(sub)
        if local is not None:
            return self._answer(ctx, local(self, ctx, rid, setter), sub)
        return self._forward(frame, ctx, req)

    def _forward(self, frame: Frame, ctx: Context, req: ControlRequest) -> Output:
        """A request cbc answers: sent with a safety timer; a null ``set_model`` given the
        default model; a setter before cbc has a session answered now, sent later."""
        out: Output = None
        if req.subtype == "set_model" and req.request.get("model") is None:
            default = ctx.state.control.default_model
            if default is None:  # cbc refuses a null model ("Model is required")
                return self._answer(ctx, ck.success(req.request_id, {}), "set_model:null")
            req.request = {**req.request, "model": default}
            out = (frame.replace({**frame.obj, "request": req.request}),)
        if req.subtype in _SETTERS and ctx.state.session_id is None:
            return self._defer(ctx, req)
        timeout = self.initialize_timeout if req.subtype == "initialize" else self.timeout
        ctx.set_timer(self, req.request_id, timeout)
        return out

    def _defer(self, ctx: Context, req: ControlRequest) -> Output:
        """A setter before cbc has a session: answered now the way Claude does, kept for
        ``control-reply`` to send once the session starts."""
        sub = req.subtype
        ctx.state.control.deferred.append(req.request)
        ctx.log(
            self.rule,
            f"{sub} before the backend has a session: answered now, sent when the session starts",
            "debug",
        )
        ctx.count(self.rule, f"answered:{sub}:deferred")
        req.answered = True
        for f in setter_reply(ctx, req.request_id, req.request):
            if f.obj.get("type") == "control_response":
                f = Frame.from_obj(for_target(ctx, f.obj, req))
            ctx.emit("down", f, self.rule)
        return ()

    def _answer(self, ctx: Context, reply: dict[str, Any], what: str) -> Output:
        rid = reply["response"]["request_id"]
        req = ctx.state.control.requests.get(rid)
        reply = for_target(ctx, reply, req)
        if req is not None:
            req.answered = True  # should the backend answer it anyway, that reply is dropped
        ctx.emit("down", Frame.from_obj(reply), self.rule)
        ctx.count(self.rule, f"answered:{what}")
        return ()

    def on_timer(self, key: str, ctx: Context) -> Output:
        req = ctx.state.control.requests.get(key)
        if req is None or req.answered:
            return None
        req.answered = True
        ctx.log(
            self.rule,
            f"the backend did not answer {req.subtype} request {key!r}; answered it with an error",
            "warning",
        )
        message = f"Control request timeout: {req.subtype} (the backend did not answer)"
        ctx.emit("down", Frame.from_obj(ck.error(key, message)), self.rule)
        return None

    # -- local answers: what Claude Code 2.1.220 answers, from what the bridge knows ------
    def _local_mcp_status(self, ctx: Context, rid: str, body: wire.SetterBody) -> dict[str, Any]:
        """The servers of the last init; an in-process one (sdk-mcp-reply) as Claude."""
        sdk_tools = ctx.state.control.sdk_mcp_tools
        servers = [
            mcp_status_entry(s, sdk_tools.get(s["name"]))
            for s in ctx.state.control.mcp_servers
            if isinstance(s, dict) and isinstance(s.get("name"), str)
        ]
        return ck.success(rid, {"mcpServers": servers})

    def _local_get_context_usage(
        self, ctx: Context, rid: str, body: wire.SetterBody
    ) -> dict[str, Any]:
        """Claude's shape, from the last result's usage and the current model
        (``control_usage.context_usage``)."""
        control = ctx.state.control
        last = control.last_result or {}
        model = control.set_model or ctx.state.model or control.default_model or ""
        return ck.success(rid, context_usage(last, model))

    def _local_set_max_thinking_tokens(
        self, ctx: Context, rid: str, body: wire.SetterBody
    ) -> dict[str, Any]:
        """Claude: a success without a body. cbc refuses the request (``Unknown control
        request subtype``) but its ``set_config`` takes ``alwaysThinkingEnabled``: a
        budget above 0 turns thinking on, 0 off (Claude's meaning of 0); null (Claude's
        default) changes nothing."""
        tokens = body.get("max_thinking_tokens")
        if type(tokens) is int and tokens >= 0:
            control = ctx.state.control
            self._own += 1
            own = f"ccbridge-thinking-{self._own}"
            remember(control.own, own, "set_config", cap=MAX_OWN)
            config = {"alwaysThinkingEnabled": tokens > 0}
            ctx.emit(
                "up",
                Frame.from_obj(ck.request(own, {"subtype": "set_config", "config": config})),
                self.rule,
            )
            ctx.log(self.rule, f"set_max_thinking_tokens sent as set_config {config}", "info")
        return {"type": "control_response", "response": {"subtype": "success", "request_id": rid}}

    def _local_stop_task(self, ctx: Context, rid: str, body: wire.SetterBody) -> dict[str, Any]:
        # Claude stops the task; an unknown or finished id also succeeds
        # (mockapi_stop-task-control-request_bg-bash-killed_unknown-id-also-success). cbc
        # cannot stop a task on request, so a running one gets the unsupported error.
        info = ctx.state.tasks.get(str(body.get("task_id")))
        if info is not None and info.started and not info.notified:
            return ck.error(rid, ck.UNSUPPORTED + "stop_task")
        return ck.success(rid, {})


_LOCAL = {
    "mcp_status": UnsupportedControl._local_mcp_status,
    "get_context_usage": UnsupportedControl._local_get_context_usage,
    "set_max_thinking_tokens": UnsupportedControl._local_set_max_thinking_tokens,
    "stop_task": UnsupportedControl._local_stop_task,
}


@register
@attrs.define
class ControlReply(Stage):
    """Match cbc's replies to the client's requests: one reply each, Claude-worded.

    Sends the requests ``unsupported-control`` held upstream the moment the session exists
    (its first ``system/status``, which cbc writes right after the init, before the model is
    asked; their replies are swallowed), drops a reply that comes after the bridge answered,
    rewords cbc's ``Unknown control request subtype: x`` to Claude's ``Unsupported control
    request subtype: x``, turns a late "Session not found" for a setter into success plus a
    replay, and answers every still-open request when the backend exits.
    """

    rule: ClassVar[str] = "control-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.prompt_interrupt", "session_id"})
    writes: ClassVar[frozenset[str]] = frozenset(
        {
            "control.deferred",
            "control.own",
            "control.prompt_interrupt",
            "control.requests",
            "control.set_model",
        }
    )
    #: the held requests go out at the first sign of the session: its init (held by
    #: init-once until the model answers) or the status frame cbc sends right after it
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"control_response", "system/init", "system/status", "result"}
    )

    _sent: int = attrs.field(default=0, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t, _ = frame.kind() or (None, None)
        if t == "result":
            return self._on_result(frame, ctx)
        if t == "system":
            return self._on_system(frame, ctx)
        return self._on_response(frame, ctx)

    def _on_result(self, frame: Frame, ctx: Context) -> Output:
        """The interrupt ended open prompts with deny + interrupt (interrupt-request) and
        cbc ended the turn: the interrupt's receipt comes first, as in Claude."""
        control = ctx.state.control
        rid = control.prompt_interrupt
        if rid is None:
            return None
        control.prompt_interrupt = None
        receipt = ck.success(
            rid,
            {"session_id": ctx.state.session_id, "interrupted": True, "reason": "prompt"},
        )
        ctx.count(self.rule, "receipt:prompt-interrupt")
        return (Frame.synth(receipt, self.rule), without_deny_errors(frame))

    def _on_system(self, frame: Frame, ctx: Context) -> Output:
        """The session exists: the held requests go out."""
        control = ctx.state.control
        if (
            control.deferred
            and ctx.state.session_id is not None
            and (frame.view(wire.Envelope).get("session_id") == ctx.state.session_id)
        ):
            self._send_deferred(ctx)
        return None

    def _on_response(self, frame: Frame, ctx: Context) -> Output:
        control = ctx.state.control
        rid, sub, response = ck.response_of(frame.obj)
        if control.prompt_interrupt is not None and rid == control.prompt_interrupt:
            control.prompt_interrupt = None  # cbc got the interrupt and answered it
        if rid is None:
            return None
        purpose = control.own.pop(rid, None)
        if purpose is not None:
            return self._own_answered(ctx, purpose, sub, response)
        req = control.requests.get(rid)
        if req is not None and req.answered:
            return self._late(ctx, rid, req)
        if req is not None:
            req.answered = True
        return self._cbc_answered(frame, ctx, rid, sub, response, req)

    def _cbc_answered(
        self,
        frame: Frame,
        ctx: Context,
        rid: str,
        sub: str | None,
        response: dict[str, Any],
        req: ControlRequest | None,
    ) -> Output:
        """cbc's reply to a client's request, as Claude's: an error Claude-worded, a
        setter's success with Claude's side frames, any other in the target's shape."""
        if sub == "error":
            return self._cbc_error(frame, ctx, rid, req, response)
        if sub == "success" and req is not None and req.subtype in _SETTERS:
            ctx.count(self.rule, f"reshaped:{req.subtype}")
            return self._replace_reply(frame, setter_reply(ctx, rid, req.request), ctx, req)
        shaped = for_target(ctx, frame.obj, req)
        return None if shaped is frame.obj else (frame.replace(shaped),)

    def _own_answered(
        self, ctx: Context, purpose: str, sub: str | None, response: dict[str, Any]
    ) -> Output:
        """cbc's answer to a request of the bridge's own: swallowed (a failure logged)."""
        if sub != "success":
            error = cast("wire.ControlResponseBody", response).get("error")
            ctx.log(self.rule, f"the held {purpose} request failed when sent: {error}", "warning")
        return ()

    def _late(self, ctx: Context, rid: str, req: ControlRequest) -> Output:
        """A reply to a request the bridge answered already: dropped."""
        ctx.log(
            self.rule,
            f"reply to {req.subtype} {rid!r} after the bridge answered it; dropped",
            "debug",
        )
        return ()

    def _cbc_error(
        self,
        frame: Frame,
        ctx: Context,
        rid: str,
        req: ControlRequest | None,
        response: dict[str, Any],
    ) -> Output:
        """cbc's error, Claude-worded; a setter's "Session not found" (cbc has no session
        yet) a success, the request sent again once the session exists."""
        message = cast("wire.ControlResponseBody", response).get("error")
        message = message if isinstance(message, str) else ""
        better = ck.reworded(message)
        if better is not None:
            fixed = ck.with_response(frame, {**response, "error": better})
            return (fixed.replace(for_target(ctx, fixed.obj, req)),)
        if req is not None and req.subtype in _SETTERS and message.startswith(ck.SESSION_NOT_FOUND):
            ctx.state.control.deferred.append(req.request)
            return self._replace_reply(frame, setter_reply(ctx, rid, req.request), ctx, req)
        return None

    def _replace_reply(
        self, frame: Frame, out: list[Frame], ctx: Context, req: ControlRequest
    ) -> Output:
        """``out`` (side frames and a control_response) with cbc's reply frame standing for
        the control_response (rewritten). A side frame before it (``set_model``'s replayed
        user frame) is written straight to the client: passed down the pipeline, a user
        frame between turns would look like a turn's start to the turn rules
        (``control-state``, ``interrupted-turn``). One after it (``system/status``, not a
        turn's content) follows it down the pipeline."""
        result: list[Frame] = []
        for f in out:
            if f.obj.get("type") == "control_response":
                result.append(frame.replace(for_target(ctx, f.obj, req)))
            elif not result:
                ctx.emit("down", f, self.rule)
            else:
                result.append(Frame.synth(f.obj, self.rule))
        return result

    def _send_deferred(self, ctx: Context) -> None:
        control = ctx.state.control
        for body in control.deferred:
            self._sent += 1
            rid = f"ccbridge-held-{self._sent}"
            sub = str(body.get("subtype"))
            if sub == "interrupt":
                body = {**body, "session_id": ctx.state.session_id}
            remember(control.own, rid, sub, cap=MAX_OWN)
            ctx.emit("up", Frame.from_obj(ck.request(rid, body)), self.rule)
        ctx.log(
            self.rule,
            f"sent {len(control.deferred)} held request(s) now that the session exists",
            "debug",
        )
        control.deferred.clear()

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        out = []
        for rid, req in ctx.state.control.requests.items():
            if not req.answered:
                req.answered = True
                message = f"The backend exited (status {status}) before answering {req.subtype}"
                out.append(Frame.synth(ck.error(rid, message), self.rule))
        return out


@register
@attrs.define
class ControlState(Stage):
    """Bookkeeping for the control rules: turns as the client sees them, mcp_servers, usage.

    Not a PROTOCOL.md rule, and always on. It runs after ``init-once`` (one init per turn) and
    keeps the turn boundaries as the client sees them (a turn start takes one pending user
    line: ``turn_from_client``), whether an interrupt's receipt came while the turn ran
    (``turn_interrupted``: kept past the turn's result until the next turn starts, for
    ``command-lifecycle``, which ends the turn's line just before this rule), the
    ``mcp_servers`` of the last init, the usage of the last result.
    """

    rule: ClassVar[str] = "control-state"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.compact_lines",
            "control.interrupts",
            "control.line_waker",
            "control.queued_lines",
            "session_id",
        }
    )
    writes: ClassVar[frozenset[str]] = frozenset(
        {
            "control.backend_results",
            "control.client_turns",
            "control.last_init",
            "control.last_result",
            "control.mcp_servers",
            "control.pending_user",
            "control.turn_active",
            "control.turn_from_client",
            "control.turn_interrupted",
            "control.turns",
        }
    )
    kinds: ClassVar[frozenset[str] | None] = TURN_CONTENT | {"control_response"}

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        control = ctx.state.control
        t, _ = frame.kind() or (None, None)
        if t == "control_response":
            _receipt(control, frame, ctx)
            return None
        if control.turn_active and t not in ("system", "result"):
            return None  # inside a turn: nothing to keep
        if not control.turn_active:
            _start_turn(control)
        if t == "system":
            _keep_servers(control, frame, ctx)
        elif t == "result":
            _end_turn(control, frame, ctx)
        return None


def _receipt(control: ControlFacts, frame: Frame, ctx: Context) -> None:
    """A control response: an interrupt's receipt while the turn runs interrupted it."""
    if control.turn_active and not control.turn_interrupted:
        control.turn_interrupted = is_interrupt_receipt(frame.obj, ctx)


def _start_turn(control: ControlFacts) -> None:
    """A turn starts (as the client sees it), not interrupted (yet); it is the client's when a
    user line is pending, which it takes."""
    control.turn_active = True
    control.turn_interrupted = False
    control.turns += 1
    control.turn_from_client = bool(control.pending_user)
    if control.turn_from_client:
        control.pending_user.popleft()
        control.client_turns += 1


def _keep_servers(control: ControlFacts, frame: Frame, ctx: Context) -> None:
    """The session's init (kept: ``local-slash-commands`` copies it, ``compact-command``
    gives its tools to a compaction's init): its ``mcp_servers``. Not a ``/compact`` line's
    init: cbc's lists its compaction agent's tools (``["Read"]``) and no server."""
    obj = frame.view(wire.SystemInit)
    if obj.get("session_id") != ctx.state.session_id or _compacting(control):
        return
    if obj.get("subtype") == "init":
        control.last_init = frame.obj
    servers = obj.get("mcp_servers")
    if isinstance(servers, list):
        control.mcp_servers = servers


def _compacting(control: ControlFacts) -> bool:
    """The running turn is a ``/compact`` line's (``compact-line`` noted its number)."""
    return control.turn_from_client and control.client_turns in control.compact_lines


def _end_turn(control: ControlFacts, frame: Frame, ctx: Context) -> None:
    """A result: the turn ended (one cbc wrote for a client's turn counted), its usage
    kept; a line queued during it goes now (user-line, upstream)."""
    control.turn_active = False
    if control.turn_from_client and frame.synthesized_by is None:
        control.backend_results += 1
    result = frame.view(wire.Result)
    control.last_result = {
        "usage": result.get("usage"),
        "modelUsage": result.get("modelUsage"),
        "total_cost_usd": result.get("total_cost_usd"),  # (and the API time: /cost)
        "duration_api_ms": result.get("duration_api_ms"),
    }
    if control.queued_lines and isinstance(control.line_waker, Stage):
        ctx.set_timer(control.line_waker, "turn-end", 0.0)
