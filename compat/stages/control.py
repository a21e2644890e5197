"""The control protocol's requests and replies (PROTOCOL.md §2 "Control protocol", §3
``stdin-vocabulary``, ``user-line``), plus ``control-state``, the bookkeeping they share.

Strategy: every client ``control_request`` gets exactly one reply, Claude-worded.

- ``stdin-vocabulary`` (up, first) forwards only the four input types cbc 2.163.0 handles;
  anything else, and every line that is not a JSON object, makes cbc run an empty turn
  (``nomodel_unknown-stdin-types``), so it is absorbed and counted. None of them expects a
  reply (``keep_alive``, ``update_environment_variables``).
- ``user-line`` (up) passes user lines unchanged (cbc takes string or block content and
  ``session_id`` ``""``/``"default"``/the id) and queues their ``uuid`` in
  ``ControlState.pending_user``: a turn the client asked for is pending. It echoes a line
  with a ``uuid`` as Claude's ``command_lifecycle`` ``queued`` (``started``/``completed``
  and the result's ``user_message_uuid``: ``command-lifecycle``,
  ``compat/stages/lifecycle_cmd.py``). cbc 2.163.0 loses a user line that reaches it
  1-3 ms after it wrote a ``result`` (no model request, no frame: a client waiting for
  its answer hangs; with a direct pipe to cbc, 10 of 16 lines sent 1-3 ms after the result
  lost, none at 0 ms or from 5 ms on; through a proxy's hop every line sent at once after
  the result lands there). So a line that arrives within ``settle`` seconds of cbc's last
  ``result`` is held until that much time has passed since it, and every client frame
  after it waits with it (order kept); the client's EOF releases them at once. Claude
  takes such a line at any time; 0 switches the hold off.
- ``unsupported-control`` (up, last) answers locally what cbc cannot
  (``nomodel_controls-*``: ``Unknown control request subtype`` for ``mcp_status``,
  ``get_context_usage``, ``set_max_thinking_tokens``, ``stop_task``), holds
  ``set_permission_mode``/``set_model`` sent before cbc has a session (cbc answers
  ``Session not found: current`` until its first turn starts, even with ``--session-id``)
  and answers them at once the way Claude does, and registers every request it forwards
  with a safety timer: no reply within ``timeout`` (``initialize_timeout`` for
  ``initialize``, which cbc answers only after its slow start) gets an error reply, so
  the Python SDK never waits its 60 s.
- ``control-reply`` (down) sends the held requests upstream the moment the session exists
  (its first ``system/status``, which cbc writes right after the init, before the model
  is asked; their replies are swallowed), drops a reply that comes after the bridge
  answered, rewords cbc's ``Unknown control request subtype: x`` to Claude's
  ``Unsupported control request subtype: x``, turns a late "Session not found" for a
  setter into success plus a replay, and answers every still-open request when the
  backend exits.
- ``control-state`` (down, after ``init-once``: one init per turn) is not a PROTOCOL.md
  rule and is always on: turn boundaries as the client sees them (a turn start takes one
  pending user line: ``turn_from_client``), the ``mcp_servers`` of the last init, the
  usage of the last result.

``initialize-request`` and ``initialize-reply`` live in ``compat/stages/initialize.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import controlkit as ck
from compat.frames import Frame
from compat.session import ControlRequest
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.lifecycle_cmd import lifecycle
from compat.stages.turns import TURN_CONTENT
from compat.taskkit import remember

#: setters cbc refuses before its first turn; answered at once, sent once it has a session
_SETTERS = frozenset({"set_permission_mode", "set_model"})


@register
@attrs.define
class StdinVocabulary(Stage):
    """Absorb client input cbc would turn into an empty turn (non-JSON, Claude-only types)."""

    rule: ClassVar[str] = "stdin-vocabulary"
    direction: ClassVar[Direction] = "up"
    invalid: ClassVar[bool] = True

    #: lines that are not JSON objects logged one by one before only counting them
    log_first: int = 20
    _logged: int = attrs.field(default=0, init=False)

    def interested(self, type_: str | None, subtype: str | None) -> bool:
        return type_ not in ck.CBC_INPUT_TYPES

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
        t = obj.get("type") if isinstance(obj, dict) else None
        if isinstance(t, str) and t in ck.CBC_INPUT_TYPES:
            return None
        what = (
            f"type {t!r}"
            if isinstance(t, str)
            else "no type"
            if isinstance(obj, dict)
            else "a line that is not a JSON object"
        )
        ctx.count(self.rule, f"absorbed:{t}" if isinstance(t, str) else "absorbed:non-json")
        level = "debug" if t == "keep_alive" else "warning" if t is None else "info"
        if self._logged < self.log_first or level == "debug":
            self._logged += level != "debug"
            ctx.log(
                self.rule,
                f"client input not forwarded ({what}): cbc would run an empty turn for it",
                level,
            )
        return ()


@register
@attrs.define
class UserLine(Stage):
    """Pass user lines; remember their uuids: a client turn is pending. Hold a line cbc
    would lose right after a result (``settle``)."""

    rule: ClassVar[str] = "user-line"
    direction: ClassVar[Direction] = "up"
    #: every client frame: one that follows a held line waits behind it
    kinds: ClassVar[frozenset[str] | None] = None

    #: seconds after cbc's result before a user line is forwarded (0: never held)
    settle: float = 0.2
    _held: list[Frame] = attrs.field(factory=list, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.kind() != ("user", None):
            return self._hold(frame, ctx) if self._held else None
        obj = frame.obj
        uuid = obj.get("uuid") if isinstance(obj, dict) else None
        control = ctx.state.control
        control.user_lines += 1
        uuid = uuid if isinstance(uuid, str) and uuid else None
        control.pending_user.append(uuid)
        if uuid is not None:
            # Claude's "queued" echo as the line is read (compat/stages/lifecycle_cmd.py);
            # before cbc has told the session id it waits for the turn start
            if ctx.state.session_id is None:
                control.unsent_queued.append(uuid)
            else:
                ctx.emit(
                    "down",
                    Frame.synth(lifecycle(uuid, "queued", ctx, ctx.state.session_id), self.rule),
                    self.rule,
                )
        if self._held:
            return self._hold(frame, ctx)
        result_at = ctx.state.result_at
        if result_at is not None and ctx.now < result_at + self.settle:
            ctx.set_timer(self, "settle", result_at + self.settle - ctx.now)
            ctx.count(self.rule, "held-after-result")
            return self._hold(frame, ctx)
        return None

    def _hold(self, frame: Frame, ctx: Context) -> Output:
        self._held.append(frame)
        ctx.hold()
        return ()

    def _release(self) -> Output:
        held, self._held = self._held, []
        return held

    def on_timer(self, key: str, ctx: Context) -> Output:
        return self._release()

    def on_input_eof(self, ctx: Context) -> Output:
        ctx.cancel_timer(self, "settle")
        return self._release()


@register
@attrs.define
class UnsupportedControl(Stage):
    """Answer locally what cbc cannot; never leave a client control request unanswered."""

    rule: ClassVar[str] = "unsupported-control"
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"control_request", "control_cancel_request"}
    )

    #: seconds a forwarded request may wait for cbc's reply before the bridge answers
    timeout: float = 30.0
    #: the same for ``initialize`` (cbc answers it only once started; the SDK waits 60 s)
    initialize_timeout: float = 55.0

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
        control = ctx.state.control
        if obj.get("type") == "control_cancel_request":
            rid = obj.get("request_id")
            req = control.requests.get(rid) if isinstance(rid, str) else None
            if req is not None and not req.answered:
                req.answered = True  # the client gave up on it: no reply, no timer
                ctx.cancel_timer(self, req.request_id)
            ctx.count(self.rule, "absorbed:control_cancel_request")
            return ()  # cbc has nothing to cancel on the client's behalf
        rid, body = ck.request_of(obj)
        sub = body.get("subtype")
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
            return self._answer(ctx, local(self, ctx, rid, body), sub)
        out: Output = None
        if sub == "set_model" and body.get("model") is None:
            default = control.default_model
            if default is None:  # cbc refuses a null model ("Model is required")
                return self._answer(ctx, ck.success(rid, {}), "set_model:null")
            req.request = body = {**body, "model": default}
            out = (frame.replace({**obj, "request": body}),)
        if sub in _SETTERS and ctx.state.session_id is None:
            control.deferred.append(body)
            ctx.log(
                self.rule,
                f"{sub} before the backend has a session: answered now, "
                "sent when the session starts",
                "debug",
            )
            return self._answer(ctx, ck.success(rid, {}), f"{sub}:deferred")
        ctx.set_timer(self, rid, self.initialize_timeout if sub == "initialize" else self.timeout)
        return out

    def _answer(self, ctx: Context, reply: dict[str, Any], what: str) -> Output:
        rid = reply["response"]["request_id"]
        req = ctx.state.control.requests.get(rid)
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
    def _local_mcp_status(self, ctx: Context, rid: str, body: dict[str, Any]) -> Any:
        servers = []
        for s in ctx.state.control.mcp_servers:
            if isinstance(s, dict) and isinstance(s.get("name"), str):
                entry = {"name": s["name"], "status": s.get("status") or "pending"}
                entry.update((k, v) for k, v in s.items() if k not in entry)
                servers.append(entry)
        return ck.success(rid, {"mcpServers": servers})

    def _local_get_context_usage(self, ctx: Context, rid: str, body: dict[str, Any]) -> Any:
        last = ctx.state.control.last_result or {}
        usage = last.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        keys = (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
        total: int = sum(usage[k] for k in keys if type(usage.get(k)) is int)
        window = 0
        model_usage = last.get("modelUsage")
        for m in model_usage.values() if isinstance(model_usage, dict) else ():
            if isinstance(m, dict) and type(m.get("contextWindow")) is int:
                window = max(window, m["contextWindow"])
        model = ctx.state.model or ctx.state.control.default_model or ""
        return ck.success(
            rid,
            {
                "categories": [{"name": "Messages", "tokens": total, "color": "purple"}],
                "totalTokens": total,
                "maxTokens": window,
                "rawMaxTokens": window,
                "percentage": round(100 * total / window, 1) if window else 0,
                "model": model,
                "isAutoCompactEnabled": True,
                "memoryFiles": [],
                "mcpTools": [],
                "agents": [],
                "gridRows": [],
            },
        )

    def _local_set_max_thinking_tokens(self, ctx: Context, rid: str, body: dict[str, Any]) -> Any:
        ctx.log(
            self.rule,
            "set_max_thinking_tokens acknowledged, not applied (cbc has no such control)",
            "info",
        )
        return ck.success(rid, {})

    def _local_stop_task(self, ctx: Context, rid: str, body: dict[str, Any]) -> Any:
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
    """Match cbc's replies to the client's requests: one reply each, Claude-worded."""

    rule: ClassVar[str] = "control-reply"
    #: the held requests go out at the first sign of the session: its init (held by
    #: init-once until the model answers) or the status frame cbc sends right after it
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"control_response", "system/init", "system/status"}
    )

    _sent: int = attrs.field(default=0, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
        control = ctx.state.control
        if obj.get("type") == "system":
            if (
                control.deferred
                and ctx.state.session_id is not None
                and (obj.get("session_id") == ctx.state.session_id)
            ):
                self._send_deferred(ctx)
            return None
        rid, sub, resp = ck.response_of(obj)
        if rid is None:
            return None
        purpose = control.own.pop(rid, None)
        if purpose is not None:
            if sub != "success":
                ctx.log(
                    self.rule,
                    f"the held {purpose} request failed when sent: {resp.get('error')}",
                    "warning",
                )
            return ()
        req = control.requests.get(rid)
        if req is not None:
            if req.answered:
                ctx.log(
                    self.rule,
                    f"reply to {req.subtype} {rid!r} after the bridge answered it; dropped",
                    "debug",
                )
                return ()
            req.answered = True
        if sub != "error":
            return None
        message = resp.get("error")
        message = message if isinstance(message, str) else ""
        better = ck.reworded(message)
        if better is not None:
            return (ck.with_response(frame, {**resp, "error": better}),)
        if req is not None and req.subtype in _SETTERS and message.startswith(ck.SESSION_NOT_FOUND):
            control.deferred.append(req.request)
            ok = {"subtype": "success", "request_id": rid, "response": {}}
            return (ck.with_response(frame, ok),)
        return None

    def _send_deferred(self, ctx: Context) -> None:
        control = ctx.state.control
        for body in control.deferred:
            self._sent += 1
            rid = f"ccbridge-held-{self._sent}"
            sub = str(body.get("subtype"))
            if sub == "interrupt":
                body = {**body, "session_id": ctx.state.session_id}
            control.own[rid] = sub
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
    """Bookkeeping for the control rules: turns as the client sees them, mcp_servers, usage."""

    rule: ClassVar[str] = "control-state"
    kinds: ClassVar[frozenset[str] | None] = TURN_CONTENT
    #: inside a turn most frames need nothing from it: it reads their kind, not their JSON
    lazy: ClassVar[bool] = True
    cold_parsed: ClassVar[bool] = True  # its cold answer holds for a parsed frame too

    def cold(self, kind: tuple[str | None, str | None], ctx: Context) -> bool:
        """``on_frame`` passes an unparsed frame of ``kind`` at once (the pipeline skips
        the call: ``compat.pipeline`` "Cold steps")."""
        return ctx.state.control.turn_active and kind[0] not in ("system", "result")

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        control = ctx.state.control
        kind = frame.kind()
        if control.turn_active and kind is not None and kind[0] not in ("system", "result"):
            return None
        obj = frame.obj
        if not isinstance(obj, dict):
            return None  # not valid JSON: passes, the engine logs it
        t = obj.get("type")
        if not control.turn_active:
            control.turn_active = True
            control.turns += 1
            control.turn_from_client = bool(control.pending_user)
            if control.turn_from_client:
                control.pending_user.popleft()
                control.client_turns += 1
        if t == "system" and obj.get("session_id") == ctx.state.session_id:
            servers = obj.get("mcp_servers")
            if isinstance(servers, list):
                control.mcp_servers = servers
        elif t == "result":
            control.turn_active = False
            control.last_result = {k: obj.get(k) for k in ("usage", "modelUsage")}
        return None
