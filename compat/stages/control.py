"""The control protocol's requests and replies (PROTOCOL.md §2 "Control protocol", §3
``stdin-vocabulary``, ``user-line``), plus ``control-state``, the bookkeeping they share.

Strategy: every client ``control_request`` gets exactly one reply, Claude-worded: answered
by cbc when it can, by the bridge when it cannot or does not in time. The rules share
``ControlState`` (pending and queued user lines, open requests, turn boundaries).
``initialize-request`` and ``initialize-reply`` live in ``compat/stages/initialize.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
from compat import wire
from compat.frames import Frame
from compat.session import MAX_OWN, MAX_TOOL_USES, ControlRequest, trim_input
from compat.session import ControlState as ControlFacts
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.control_mcp import (
    KEEP,
    cbc_copy,
    claude_initialize,
    claude_result,
    mcp_message,
    mcp_status_entry,
    tool_use_meta,
    with_tool_use_id,
)
from compat.stages.control_mcp import claude_block as claude_block
from compat.stages.control_mcp import claude_client_info as claude_client_info
from compat.stages.control_mcp import claude_tool_info as claude_tool_info
from compat.stages.control_replies import for_target, setter_reply, without_deny_errors
from compat.stages.control_usage import DEFAULT_WINDOW as DEFAULT_WINDOW
from compat.stages.control_usage import context_usage
from compat.stages.control_usage import grid_rows as grid_rows
from compat.stages.lifecycle_cmd import lifecycle
from compat.stages.turns import TURN_CONTENT, is_interrupt_receipt
from compat.taskkit import remember
from compat.text import clip

#: setters cbc refuses before its first turn; answered at once, sent once it has a session
_SETTERS = frozenset({"set_permission_mode", "set_model"})


@register
@attrs.define
class StdinVocabulary(Stage):
    """Absorb client input cbc would turn into an empty turn (non-JSON, Claude-only types).

    Runs first upstream and forwards only the four input types cbc 2.163.0 handles; anything
    else, and every line that is not a JSON object, makes cbc run an empty turn
    (``nomodel_unknown-stdin-types``), so it is absorbed and counted. None of them expects a
    reply (``keep_alive``, ``update_environment_variables``).
    """

    rule: ClassVar[str] = "stdin-vocabulary"
    direction: ClassVar[Direction] = "up"
    invalid: ClassVar[bool] = True

    #: lines that are not JSON objects logged one by one before only counting them
    log_first: int = 20
    _logged: int = attrs.field(default=0, init=False)

    def interested(self, type_: str | None, subtype: str | None) -> bool:
        return type_ not in ck.CBC_INPUT_TYPES

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = cast("wire.Envelope", frame.obj)
        t: Any = obj.get("type") if isinstance(obj, dict) else None
        if isinstance(t, str) and t in ck.CBC_INPUT_TYPES:
            return None
        if isinstance(t, str):
            t = clip(t)  # a name the client chose: a bounded counter key and log line
        ctx.count(self.rule, f"absorbed:{t}" if isinstance(t, str) else "absorbed:non-json")
        self._log(ctx, _absorbed(obj, t), _absorbed_level(t))
        return ()

    def _log(self, ctx: Context, what: str, level: str) -> None:
        """Log an absorbed line: the first ``log_first`` (a ``keep_alive`` always, at debug)."""
        if self._logged < self.log_first or level == "debug":
            self._logged += level != "debug"
            ctx.log(
                self.rule,
                f"client input not forwarded ({what}): cbc would run an empty turn for it",
                level,
            )


def _absorbed(obj: Any, t: Any) -> str:
    """What an absorbed line is, in words (``t``: its type, clipped)."""
    if isinstance(t, str):
        return f"type {t!r}"
    return "no type" if isinstance(obj, dict) else "a line that is not a JSON object"


def _absorbed_level(t: Any) -> str:
    """The log level of an absorbed line: ``keep_alive`` is routine, a line without a type
    (or not a JSON object) a warning."""
    return "debug" if t == "keep_alive" else "warning" if t is None else "info"


#: seconds between two looks for cbc's answer to ``user-line``'s readiness probe
_POLL = 0.001


@register
@attrs.define
class UserLine(Stage):
    """Pass user lines; remember their uuids: a client turn is pending. Hold a line cbc
    would lose (or run twice) right after a result that restarts its drain poll until cbc
    shows it is ready (``probe``, ``settle``), and a line written while a turn runs until
    that turn ends (``queue``).

    User lines pass unchanged (cbc takes string or block content and ``session_id``
    ``""``/``"default"``/the id); their ``uuid`` is queued in ``ControlState.pending_user``: a
    turn the client asked for is pending. A line with a ``uuid`` is echoed as Claude's
    ``command_lifecycle`` ``queued`` (``started``/``completed`` and the result's
    ``user_message_uuid``: ``command-lifecycle``, ``compat/stages/lifecycle_cmd.py``).

    ``probe``, ``margin``, ``settle`` (cbc 2.163.0 read in its binary and its log,
    measured on the stand-in model, 2026-12-05): cbc's CLI posts each stdin line to its own
    in-process HTTP server; once the request of its first user line returns (that turn's
    ``result`` is written) it starts a drain poll, a long-poll post it sends again whenever
    it returns: after a turn cbc ran by itself (a background task's end) and every 30 s
    while idle. Two posts that start together get one body: a line that reaches cbc as the
    poll starts is lost (both carry the poll: no turn, and the lines queued behind it wait
    forever) or run twice (both carry the line). On a direct pipe, first follow-ups written
    0-11 ms after the first result: 10 of 30 lost (load ~5; the poll started 4-103 ms after
    the client read the result, median 6, over 120 first turns at load 1.5-4); later
    follow-ups 0-20 ms after theirs: 0 of 200; lines 0-3 ms after the result of a turn a
    background Bash's end started: 5 of 8 run twice. Nothing on cbc's stdout says the poll
    started, but cbc answers a control request written after the result only once it has
    gone through writing it, the poll's start included: 139 of 139 first follow-ups written
    as the answer came (0.6-30 ms after the result, load 4-7) got their turn once. The post
    itself may still be on its way out then (its request interceptors read settings files;
    cbc's server saw it up to 21 ms after the answer): through the bridge, lines given to
    cbc at the answer met it in 3 of 299 fresh sessions (cbc read the line 1 ms after its
    server saw the poll's post), ``margin`` (0.02 s) after it in 0 of 150. So after such a
    result (the first cbc writes itself for a client turn, or one of a turn no client line
    started; a turn the bridge ended for cbc, as ``max-turns`` does, does not count: with
    it counted, 3 of 5 sessions lost the line after the next turn's result; what cbc
    writes of such a turn by itself does, and until it came the line waits, at most
    ``leftover_wait``: ``ControlState.leftover_due``) a line that
    arrives within ``settle`` seconds of it waits until ``margin`` after cbc answered a
    probe the bridge writes after that result (``get_available_modes``, which changes
    nothing; looked for every ms; the answer is the bridge's own, ``control-reply``
    swallows it), at the latest ``settle`` after the result; every client frame after the
    line waits with it (order kept); the client's EOF releases them at once. After any
    other result a line passes at once (the poll is parked in cbc's server then: such a
    follow-up costs nothing). ``python -m bench.followup`` (bench/README.md), 50 fresh
    sessions of 20 follow-ups written 0-20 ms after each answer: 0 of 1,000 lost or run
    twice through the bridge (bare cbc: 10), +1.7 ms a follow-up turn (+14.9 ms a first
    one). ``probe`` false: the line waits ``settle`` out instead; ``settle`` 0: never held.
    Not covered: the poll's re-post every 30 s while idle (30.005-30.010 s apart), which
    nothing on cbc's stdout shows; a line meeting it was not observed. Claude takes a line
    at any time.

    ``queue``: a line written while a turn runs (or while an earlier line waits for its turn)
    is queued in the bridge (``ControlState.queued_lines``) and given to cbc once that turn's
    result came (then ``probe``), one line per turn: Claude keeps such lines queued
    (``interrupt`` answers them in ``still_queued``, ``cancel_queued`` takes them back:
    ``interrupt-request``), while cbc, given a line mid-turn, runs it in a turn of its own
    afterwards anyway, or drops it when that turn is interrupted (raw run queued-lines-cancel
    through the bridge: "stale normal run", two lines never answered).
    """

    rule: ClassVar[str] = "user-line"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.backend_results",
            "control.leftover_due",
            "control.own",
            "control.turn_active",
            "control.turn_from_client",
            "result_at",
            "session_id",
        }
    )
    #: its probe's id leaves ``control.own`` when control-reply swallows the answer
    reads_earlier: ClassVar[frozenset[str]] = frozenset({"control.own"})
    writes: ClassVar[frozenset[str]] = frozenset(
        {
            "control.line_waker",
            "control.own",
            "control.pending_user",
            "control.queued_lines",
            "control.unsent_queued",
            "control.user_lines",
        }
    )
    direction: ClassVar[Direction] = "up"
    #: every client frame: one that follows a held line waits behind it
    kinds: ClassVar[frozenset[str] | None] = None

    #: the longest a line waits for cbc's readiness after a result that restarts its drain
    #: poll (without ``probe``: the hold after that result); 0: never held
    settle: float = 0.2
    #: ask cbc whether it is ready (a ``get_available_modes`` written after that result; its
    #: answer comes once cbc went through what it does after the result) instead of waiting
    #: ``settle`` out
    probe: bool = True
    #: seconds a line still waits after cbc answered the probe (its poll's post may still
    #: be on its way out then)
    margin: float = 0.02
    #: hold a line written while a turn runs (or another line waits) until the turn's
    #: result, then give cbc one line per turn
    queue: bool = True
    #: the longest a line waits for cbc to end by itself a turn ``max-turns`` stopped
    #: while cbc went on with it (real cbc: 0.1-0.26 s after its init)
    leftover_wait: float = 1.0
    _held: list[Frame] = attrs.field(factory=list, init=False)
    #: the last probe written: (its request id, the time of the result it follows, when
    #: its answer was seen)
    _probe: tuple[str, float, float | None] | None = attrs.field(default=None, init=False)
    #: the time of the result after which cbc was found ready (``margin`` after its answer)
    _ready_after: float | None = attrs.field(default=None, init=False)
    _probes: int = attrs.field(default=0, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.kind() != ("user", None):
            return self._hold(frame, ctx) if self._held else None
        control = ctx.state.control
        busy = self.queue and (control.turn_active or bool(control.pending_user))
        self._pending(frame, ctx)
        if self._held:
            return self._hold(frame, ctx)
        if busy:
            return self._queue(frame, ctx)
        return self._settle(frame, ctx)

    def _pending(self, frame: Frame, ctx: Context) -> None:
        """A client turn is pending: the line's uuid (None without one) queued, and
        Claude's ``queued`` echo for it."""
        obj = frame.view(wire.User)
        uuid = obj.get("uuid") if isinstance(obj, dict) else None
        control = ctx.state.control
        control.user_lines += 1
        uuid = uuid if isinstance(uuid, str) and uuid else None
        control.pending_user.append(uuid)
        if uuid is not None:
            self._echo_queued(uuid, ctx)

    def _echo_queued(self, uuid: str, ctx: Context) -> None:
        """Claude's "queued" echo as the line is read (compat/stages/lifecycle_cmd.py);
        before cbc has told the session id it waits for the turn start."""
        if ctx.state.session_id is None:
            ctx.state.control.unsent_queued.append(uuid)
            return
        queued = lifecycle(uuid, "queued", ctx, ctx.state.session_id)
        ctx.emit("down", Frame.synth(queued, self.rule), self.rule)

    def _queue(self, frame: Frame, ctx: Context) -> Output:
        """Claude keeps a line written mid-turn queued (interrupt's still_queued /
        cancel_queued take it back); cbc, given it mid-turn, answers it in a turn of its
        own afterwards, or drops it when that turn is interrupted ("stale normal run")."""
        control = ctx.state.control
        control.queued_lines.append(frame)
        control.line_waker = self
        ctx.count(self.rule, "queued-during-turn")
        ctx.hold()
        return ()

    def _settle(self, frame: Frame, ctx: Context) -> Output:
        if not self._waiting(ctx):
            return None
        ctx.count(self.rule, "held-after-result")
        return self._hold(frame, ctx)

    def _unready_after(self, ctx: Context) -> float | None:
        """The time of a result after which cbc may not be ready for a line yet: one that
        restarts its drain poll (the first client turn's it ended itself, or a turn it ran
        by itself), less
        than ``settle`` ago, with no answer to a probe written after it; None: ready."""
        at = ctx.state.result_at
        control = ctx.state.control
        if at is None or at == self._ready_after or ctx.now >= at + self.settle:
            return None
        if control.turn_from_client and control.backend_results > 1:
            return None
        return at

    def _waiting(self, ctx: Context) -> bool:
        """Whether a line must wait for cbc now; if so a timer looks again (every ``_POLL``
        until the probe is answered, then ``margin`` after the answer; at the latest
        ``settle`` after the result). While cbc is still to end a turn ``max-turns`` stopped
        (``ControlState.leftover_due``) the line waits for that end, at most
        ``leftover_wait``."""
        due = ctx.state.control.leftover_due
        if due is not None and ctx.now < due + self.leftover_wait:
            ctx.set_timer(self, "settle", min(_POLL, due + self.leftover_wait - ctx.now))
            return True
        at = self._unready_after(ctx)
        if at is None:
            return False
        ready = self._ready_time(ctx, at) if self.probe else at + self.settle
        if ready is not None and ctx.now >= ready:
            self._ready_after = at
            return False
        wait = _POLL if ready is None else ready - ctx.now
        ctx.set_timer(self, "settle", min(wait, at + self.settle - ctx.now))
        return True

    def _ready_time(self, ctx: Context, at: float) -> float | None:
        """When cbc may take a line after the result at ``at``: ``margin`` after it answered
        the probe written after that result (written now when there is none yet); None:
        no answer yet (its id is still in ``ControlState.own``)."""
        if self._probe is None or self._probe[1] != at:
            self._send_probe(ctx, at)
            return None
        rid, _, answered = self._probe
        if answered is None and rid not in ctx.state.control.own:
            answered = ctx.now
            self._probe = (rid, at, answered)
        return None if answered is None else answered + self.margin

    def _send_probe(self, ctx: Context, at: float) -> None:
        """Ask cbc what it answers at once and changes nothing for (``get_available_modes``);
        ``control-reply`` swallows the answer, the bridge's own (``ControlState.own``)."""
        self._probes += 1
        rid = f"ccbridge-ready-{self._probes}"
        remember(ctx.state.control.own, rid, "readiness probe", cap=MAX_OWN)
        probe = ck.request(rid, {"subtype": "get_available_modes"})
        ctx.emit("up", Frame.from_obj(probe), self.rule)
        self._probe = (rid, at, None)

    def _hold(self, frame: Frame, ctx: Context) -> Output:
        self._held.append(frame)
        ctx.hold()
        return ()

    def _release(self) -> Output:
        held, self._held = self._held, []
        return held

    def on_timer(self, key: str, ctx: Context) -> Output:
        if key != "turn-end":  # "settle": cbc's readiness looked for
            return self._settled(ctx)
        control = ctx.state.control
        if control.turn_active or not control.queued_lines or self._held or self._waiting(ctx):
            return None  # (waiting: "settle" fires once cbc is ready, and comes back here)
        return (control.queued_lines.popleft(),)  # one line: its turn, then the next

    def _settled(self, ctx: Context) -> Output:
        """The held lines, once cbc is ready; a line queued behind them goes at once after."""
        if self._waiting(ctx):
            return None
        control = ctx.state.control
        if control.queued_lines and not control.turn_active:
            ctx.set_timer(self, "turn-end", 0.0)
        return self._release()

    def on_input_eof(self, ctx: Context) -> Output:
        ctx.cancel_timer(self, "settle")
        queued = list(ctx.state.control.queued_lines)
        ctx.state.control.queued_lines.clear()
        held, self._held = self._held, []
        return [*held, *queued]


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


# -- in-process MCP servers (the SDK's create_sdk_mcp_server / createSdkMcpServer) -------
# (their shapes, Claude's and cbc's, and what is kept of them: compat/stages/control_mcp.py)


@register
@attrs.define
class SdkMcp(Stage):
    """cbc's requests to the client's in-process MCP servers, and their results, as
    Claude's.

    A Claude SDK's in-process server (``--mcp-config`` ``{"type": "sdk"}``) is reached
    through ``control_request{subtype: "mcp_message", server_name, message}``; cbc 2.163.0
    sends them, and both CLIs introduce themselves with an MCP ``initialize``, then
    ``notifications/initialized``, ``tools/list``, ``tools/call`` (raw runs, 2026-12-02).
    What differs, and is rewritten here:

    - ``initialize``: cbc's ``clientInfo`` is the server's own name and version
      (``{"name": "probe", "version": "1.0.0"}``); Claude's is ``claude-code`` with its
      version (``claude_client_info``).
    - ``tools/call``: Claude's ``params._meta`` has ``claudecode/toolUseId``, the id of the
      model's call; cbc's has none (its own ``traceparent``/``baggage`` are kept). It is the
      oldest ``mcp__<server>__<tool>`` call not yet sent (``_tool_use``).
    - the ``tool_result``: cbc writes the tool's content list as JSON in one text block
      (``[{"type":"text","text":"[{\\"type\\":\\"text\\",...}]"}]``) and drops ``isError``;
      Claude writes the content as the tool returned it, with ``tool_use_result`` the same
      list, and a failure as its text with ``is_error: true`` (``tool_use_result``
      ``Error: <text>``). The result is the one ``sdk-mcp-reply`` kept from the client's
      answer; a ``tool_result`` that is not cbc's copy of it passes unchanged.
    - the ``assistant`` frame of a call of such a server's tool: Claude adds
      ``tool_use_meta: [{id, display_name, server_display_name}]``, the tool's
      ``annotations.title`` or its name made a label (``tool_display_name``: ``Echo``) and
      the server's ``serverInfo.name`` (its ``initialize`` answer); cbc has none. (A stdio
      server's is left out: cbc's wire shows neither its tools' titles nor its
      ``serverInfo``.)

    cbc gives its model that JSON text too (a known gap: the model side is not the
    bridge's).
    """

    rule: ClassVar[str] = "sdk-mcp"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.sdk_mcp_calls",
            "control.sdk_mcp_results",
            "control.sdk_mcp_server_names",
            "control.sdk_mcp_tools",
            "tool_uses",
        }
    )
    writes: ClassVar[frozenset[str]] = frozenset(
        {"control.sdk_mcp_calls", "control.sdk_mcp_results"}
    )
    direction: ClassVar[Direction] = "down"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "control_request", "user"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t, _ = frame.kind() or (None, None)
        if t == "user":
            return self._result(frame, frame.obj, ctx)
        if t == "assistant":
            return self._meta(frame, frame.obj, ctx)
        return self._request(frame, ctx)

    def _request(self, frame: Frame, ctx: Context) -> Output:
        """cbc's ``mcp_message``: remembered (for sdk-mcp-reply), its params Claude's."""
        obj = frame.obj
        rid, body = ck.request_of(obj)
        mcp = mcp_message(body)
        if rid is None or mcp is None:
            return None
        server, msg = mcp
        method: str = msg["method"]
        use_id, new = self._claude_params(ctx, server, method, msg.get("params"))
        # (kept longer than the calls session keeps: an id of a call still known is
        # never taken for one not yet sent)
        calls = ctx.state.control.sdk_mcp_calls
        remember(calls, rid, (server, method, use_id), cap=2 * MAX_TOOL_USES)
        if new is None:
            return None
        message = {**msg, "params": new}
        return (frame.replace({**obj, "request": {**body, "message": message}}),)

    def _claude_params(
        self, ctx: Context, server: str, method: str, params: Any
    ) -> tuple[str, dict[str, Any] | None]:
        """(the model's call a ``tools/call`` runs, else ``""``; the params as Claude sends
        them, None: unchanged)."""
        if not isinstance(params, dict):
            return "", None
        if method == "initialize":
            return "", claude_initialize(params, ctx.env.target_version)
        if method == "tools/call":
            use_id = self._tool_use(ctx, server, params)
            return use_id, with_tool_use_id(params, use_id)
        return "", None

    def _tool_use(self, ctx: Context, server: str, params: dict[str, Any]) -> str:
        """The model's call this ``tools/call`` runs: the oldest ``mcp__<server>__<tool>``
        call not yet sent whose input (as ``session`` keeps it, trimmed) is these
        arguments, else the oldest of that name (cbc runs a message's calls in order)."""
        name = f"mcp__{server}__{params.get('name')}"
        sent = {c[2] for c in ctx.state.control.sdk_mcp_calls.values()}
        args = params.get("arguments")
        args = trim_input(args) if isinstance(args, dict) else {}
        fallback = ""
        for use in ctx.state.tool_uses.values():
            if use.name != name or use.id in sent:
                continue
            if use.input == args:
                return use.id
            fallback = fallback or use.id
        if not fallback:
            ctx.log(self.rule, f"tools/call of {name}: no call of the model's matches", "debug")
        return fallback

    def _meta(self, frame: Frame, obj: dict[str, Any], ctx: Context) -> Output:
        control = ctx.state.control
        message = obj.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        if not control.sdk_mcp_tools or not isinstance(blocks, list) or "tool_use_meta" in obj:
            return None
        meta = tool_use_meta(blocks, control.sdk_mcp_tools, control.sdk_mcp_server_names)
        return (frame.replace({**obj, "tool_use_meta": meta}),) if meta else None

    def _result(self, frame: Frame, obj: dict[str, Any], ctx: Context) -> Output:
        """A user frame's ``tool_result`` blocks that are cbc's copies of the results
        sdk-mcp-reply kept, as Claude's (its ``tool_use_result`` too when it has one)."""
        results = ctx.state.control.sdk_mcp_results
        message = obj.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        if not results or not isinstance(message, dict) or not isinstance(blocks, list):
            return None
        out, use_results = self._claude_blocks(ctx, results, blocks)
        if not use_results:
            return None
        new: dict[str, Any] = {**obj, "message": {**message, "content": out}}
        if len(use_results) == 1 and _tool_results(out) == 1:
            new["tool_use_result"] = use_results[0]
        return (frame.replace(new),)

    def _claude_blocks(
        self, ctx: Context, results: dict[str, dict[str, Any]], blocks: list[Any]
    ) -> tuple[list[Any], list[Any]]:
        """The blocks, cbc's copies of kept results as Claude's, and those results'
        ``tool_use_result``s."""
        out: list[Any] = []
        use_results: list[Any] = []
        for b in blocks:
            claude = self._claude_result(ctx, results, b)
            if claude is None:
                out.append(b)
                continue
            out.append(claude[0])
            use_results.append(claude[1])
        return out, use_results

    def _claude_result(
        self, ctx: Context, results: dict[str, dict[str, Any]], b: Any
    ) -> tuple[dict[str, Any], Any] | None:
        """(the ``tool_result`` block as Claude writes it, its ``tool_use_result``) for one
        block, taking its call's kept result; None: the block stays."""
        uid = b.get("tool_use_id") if isinstance(b, dict) else None
        result = results.pop(uid, None) if isinstance(uid, str) else None
        content = result.get("content") if result is not None else None
        if result is None or not isinstance(content, list):
            return None
        if not cbc_copy(b.get("content"), content):
            ctx.log(self.rule, f"tool_result {uid}: not cbc's copy: kept", "debug")
            return None
        return claude_result(b, result)


def _tool_results(blocks: list[Any]) -> int:
    """How many of a message's blocks are ``tool_result``s."""
    return sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result")


@register
@attrs.define
class SdkMcpReply(Stage):
    """The client's answers to cbc's ``mcp_message`` requests (``sdk-mcp``): passed on
    unchanged; what they say is kept: each in-process server's ``serverInfo.name``
    (``initialize``) and ``tools/list`` (``mcp_status``'s ``tools``, ``unsupported-control``;
    ``tool_use_meta``, ``sdk-mcp``) and each ``tools/call`` result (for ``sdk-mcp`` to write
    that call's ``tool_result`` as Claude)."""

    rule: ClassVar[str] = "sdk-mcp-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.sdk_mcp_calls"})
    writes: ClassVar[frozenset[str]] = frozenset(
        {"control.sdk_mcp_results", "control.sdk_mcp_server_names", "control.sdk_mcp_tools"}
    )
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        control = ctx.state.control
        if not control.sdk_mcp_calls:
            return None
        rid, sub, resp = ck.response_of(frame.obj)
        call = control.sdk_mcp_calls.get(rid) if rid is not None else None
        if call is None or sub != "success":
            return None
        mcp = ck.body_of(resp).get("mcp_response")
        result = mcp.get("result") if isinstance(mcp, dict) else None
        if not isinstance(result, dict):
            return None
        server, method, use_id = call
        keep = KEEP.get(method)
        if keep is not None:
            keep(control, server, use_id, result)
        return None
