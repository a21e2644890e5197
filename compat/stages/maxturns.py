"""``max-turns``: ``--max-turns N`` ends a turn as Claude Code 2.1.220 ends it, whether or
not the backend honours the flag.

Claude counts a prompt's main-thread model requests: once the Nth message's tool calls have
their results it asks no more and ends with ``error_max_turns``, ``num_turns`` N + 1 (the
``turnCount`` of its ``max_turns_reached``; parallel calls are one turn), the stop reason of
that message (probes ``*max-turns*`` in tests/bridge/data/headless; 2.1.220 runs at N = 1,
2, with denied and with parallel calls, 2026-12-04: N requests each). cbc 2.163.0 honours
the flag in the first turn of a stream-json session only, and not after a call its
permission callback denied: it asks the model again at once, ~10 times a second, forever.

Strategy: count the turn's main-thread messages (by id; cbc's own "Max turns (N) exceeded"
notice is none); once the Nth one's calls are answered (or an N+1th message comes) give cbc
an interrupt of the bridge's own, drop the turn's further output and the interrupt's reply,
and write Claude's result for the turn (cbc ends an interrupted turn with no result, or a
late one). cbc's own max-turns result, when it wins that race, passes for ``result-shape``.
What is left of the turn (an "Interrupted by user" notice, a ``success``), which cbc writes
when the next line comes or its stdin closes, carries the turn's ``_requestId``: dropped.
When cbc had gone on to ask the model again as the interrupt came (a ``system/init`` of the
session after the stop), it writes what is left by itself once that request is aborted
(0.1-0.26 s later), and a line given to it before then is lost (its drain poll starts after
that result and takes the line: ``user-line``; real cbc, ``--max-turns 2``: 1 session in
about 8 lost the line after the stop): ``ControlState.leftover_due`` says so until then.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import controlkit as ck
from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.stages.result_shape import is_cbc_max_turns, is_max_turns_notice
from compat.taskkit import remember

#: a turn's frames (counted, or dropped once it is stopped); task frames pass
_TURN = frozenset({"assistant", "user", "result", "stream_event", "tool_progress"})
#: what cbc writes of a stopped turn when the next line comes (dropped)
_LATE = frozenset({"assistant", "user", "result"})
#: the usage counts a result sums over the turn's messages
_TOKENS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
_DENY = {"allowed": False, "interrupt": True, "reason": "Reached the maximum number of turns."}


def _calls(message: wire.Message) -> list[str]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [str(b.get("id")) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]


def _results(obj: dict[str, Any]) -> list[str]:
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = content if isinstance(content, list) else []
    return [
        str(b.get("tool_use_id"))
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def _main_thread(obj: dict[str, Any]) -> bool:
    """Not a sub-agent's frame (cbc names a main-thread call as its own result's parent)."""
    parent = obj.get("parent_tool_use_id")
    return parent is None or (obj.get("type") == "user" and parent in _results(obj))


def _request_of(frame: Frame) -> Any:
    """cbc's ``_requestId`` of the frame (one per turn; ``private-fields`` strips it later)."""
    wire_obj = frame.lineage.obj
    return wire_obj.get("_requestId") if isinstance(wire_obj, dict) else None


@register
@attrs.define
class MaxTurns(Stage):
    """`--max-turns N` holds whether or not cbc honours it: after the Nth model message's
    tool results cbc's turn is interrupted and ends with Claude's `error_max_turns`.

    The launch fact ``max_turns`` (the client's ``--max-turns``, passed on to cbc as well)
    switches it on. Per turn it counts the main-thread model messages; when the Nth one's
    tool calls all have their ``tool_result`` (Claude's point: it would not ask the model
    again), or a message past the Nth arrives (dropped), it sends cbc ``interrupt`` with
    its own request id. From then on the turn's main-thread frames are dropped, a
    ``can_use_tool`` cbc still asks is denied with an interrupt, and the interrupt's reply
    is swallowed. The turn ends (cbc's reply, or a result from cbc, or ``receipt_wait``
    seconds, or cbc's exit) with Claude's result: ``error_max_turns``, ``is_error``,
    ``errors: ["Reached maximum number of turns (N)"]``, ``terminal_reason: max_turns``,
    ``num_turns`` N + 1, ``stop_reason`` of the last message (``result-shape`` fills the
    rest; ``eof-wind-down`` and the headless renderer give the exit status 1, as Claude).
    cbc's own max-turns result (when it stopped first) passes for ``result-shape``. What
    cbc writes later under a stopped turn's ``_requestId`` is dropped.
    """

    rule: ClassVar[str] = "max-turns"
    reads: ClassVar[frozenset[str]] = frozenset({"control.user_lines", "max_turns", "session_id"})
    writes: ClassVar[frozenset[str]] = frozenset({"control.leftover_due"})
    kinds: ClassVar[frozenset[str] | None] = _TURN | {
        "control_request",
        "control_response",
        "system/init",
    }

    #: seconds cbc may take to answer the interrupt before the result is written anyway
    receipt_wait: float = 5.0
    _messages: int = attrs.field(default=0, init=False)  # model messages of the turn
    _message: Any = attrs.field(default=None, init=False)  # the last one's id
    _open: dict[str, None] = attrs.field(factory=dict, init=False)  # its calls unanswered
    _called: bool = attrs.field(default=False, init=False)  # it made calls
    _usage: dict[str, int] = attrs.field(factory=dict, init=False)
    _started: float = attrs.field(default=0.0, init=False)
    _request: Any = attrs.field(default=None, init=False)  # cbc's _requestId of the turn
    _stop: str | None = attrs.field(default=None, init=False)  # the interrupt of the turn
    _due: bool = attrs.field(default=False, init=False)  # stopped, its result not written
    _replies: dict[str, None] = attrs.field(factory=dict, init=False)  # interrupts unanswered
    _stopped: dict[str, None] = attrs.field(factory=dict, init=False)  # stopped _requestIds
    #: the last stopped turn's leftover is still to come (cbc wrote no result for it yet)
    _open_stop: bool = attrs.field(default=False, init=False)
    #: the client lines given to cbc when it was stopped (an init after another line is
    #: that line's turn)
    _lines: int = attrs.field(default=0, init=False)
    _sent: int = attrs.field(default=0, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        limit = ctx.state.max_turns
        if not limit:
            return None
        obj = frame.obj
        t = obj.get("type")
        if t == "control_response":
            return self._reply(frame, ctx)
        if t == "control_request":
            return self._prompt(obj, ctx)
        if t == "system":
            return self._looping(obj, ctx)
        if self._due:
            return self._stopping(obj, ctx)
        return self._counting(frame, obj, limit, ctx)

    # -- counting -------------------------------------------------------------------------
    def _counting(self, frame: Frame, obj: dict[str, Any], limit: int, ctx: Context) -> Output:
        t = obj.get("type")
        if t in _LATE and _main_thread(obj) and _request_of(frame) in self._stopped:
            ctx.count(self.rule, "dropped-late")  # what is left of a stopped turn
            if t == "result":
                self._left(ctx)
            return ()
        if t == "result":
            self._reset()
        elif t == "assistant" and obj.get("parent_tool_use_id") is None:
            return self._assistant(frame, frame.view(wire.Assistant), limit, ctx)
        elif t == "user":
            self._answered(obj, limit, ctx)
        return None

    def _assistant(self, frame: Frame, obj: wire.Assistant, limit: int, ctx: Context) -> Output:
        message = obj.get("message")
        if not isinstance(message, dict) or is_max_turns_notice(message):
            return None
        mid = message.get("id")
        if (mid is None or mid != self._message) and not self._next(frame, message, limit, ctx):
            return ()  # cbc asked the model past the limit
        for call in _calls(message):
            self._open[call] = None
            self._called = True
        return None

    def _next(self, frame: Frame, message: wire.Message, limit: int, ctx: Context) -> bool:
        """A model message starts: counted; past the limit the turn is stopped (False)."""
        if self._messages >= limit:
            self._halt(ctx, "a model message past the limit")
            return False
        self._messages += 1
        if self._messages == 1:
            self._started = ctx.now
        self._message, self._called, self._request = message.get("id"), False, _request_of(frame)
        self._open.clear()
        self._add_usage(message)
        return True

    def _add_usage(self, message: wire.Message) -> None:
        usage = message.get("usage")
        for key in _TOKENS:
            n = usage.get(key) if isinstance(usage, dict) else None
            if isinstance(n, int) and not isinstance(n, bool):
                self._usage[key] = self._usage.get(key, 0) + n

    def _answered(self, obj: dict[str, Any], limit: int, ctx: Context) -> None:
        # (a result may name a call twice: each is answered once)
        answered = [r for r in dict.fromkeys(_results(obj)) if r in self._open]
        for r in answered:
            del self._open[r]
        if answered and not self._open and self._messages >= limit:
            self._halt(ctx, f"message {self._messages}'s tool calls answered")

    def _reset(self) -> None:
        self._messages, self._message, self._called = 0, None, False
        self._open.clear()
        self._usage = {}
        self._request = None

    def _looping(self, obj: dict[str, Any], ctx: Context) -> Output:
        """cbc's init in a turn it was told to stop: it asked the model again, and ends
        the turn by itself once that request is aborted."""
        control = ctx.state.control
        if not self._open_stop or control.user_lines != self._lines:
            return None
        if obj.get("session_id") == ctx.state.session_id and control.leftover_due is None:
            control.leftover_due = ctx.now
        return None

    def _left(self, ctx: Context) -> None:
        """What was left of the stopped turn came: cbc takes lines again."""
        self._open_stop = False
        ctx.state.control.leftover_due = None

    # -- stopping -------------------------------------------------------------------------
    def _halt(self, ctx: Context, why: str) -> None:
        self._sent += 1
        rid = self._stop = f"ccbridge-max-turns-{self._sent}"
        self._due = self._open_stop = True
        self._lines = ctx.state.control.user_lines
        remember(self._replies, rid, None, cap=64)
        if self._request is not None:
            remember(self._stopped, str(self._request), None, cap=64)
        reason = f"Reached maximum number of turns ({ctx.state.max_turns})"
        body = {"subtype": "interrupt", "session_id": ctx.state.session_id, "reason": reason}
        ctx.emit("up", Frame.from_obj(ck.request(rid, body)), self.rule)
        ctx.set_timer(self, rid, self.receipt_wait)
        ctx.count(self.rule, "stopped")
        ctx.log(self.rule, f"--max-turns {ctx.state.max_turns} reached ({why}): cbc interrupted")

    def _stopping(self, obj: dict[str, Any], ctx: Context) -> Output:
        if obj.get("type") == "result":
            self._left(ctx)  # (the turn's own end: nothing is left of it)
            if not is_cbc_max_turns(obj):
                return (self._end(ctx),)
            self._due = False  # cbc stopped by itself: result-shape converts its result
            self._reset()
            return None
        return () if _main_thread(obj) else None

    def _reply(self, frame: Frame, ctx: Context) -> Output:
        rid = ck.response_of(frame.obj)[0]
        if rid is None or rid not in self._replies:
            return None
        del self._replies[rid]
        ctx.cancel_timer(self, rid)
        return (self._end(ctx),) if self._due and rid == self._stop else ()

    def _prompt(self, obj: dict[str, Any], ctx: Context) -> Output:
        rid, request = ck.request_of(obj)
        if not self._due or rid is None or request.get("subtype") != "can_use_tool":
            return None
        answer = {**_DENY, "tool_use_id": request.get("tool_use_id")}
        ctx.emit("up", Frame.from_obj(ck.success(rid, answer)), self.rule)
        return ()

    def on_timer(self, key: str, ctx: Context) -> Output:
        if not (self._due and key == self._stop):
            return None
        ctx.log(self.rule, f"no reply to the interrupt in {self.receipt_wait:g}s", "warning")
        return (self._end(ctx),)

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        return (self._end(ctx),) if self._due else None

    def _end(self, ctx: Context) -> Frame:
        """Claude's ``error_max_turns`` result for the stopped turn."""
        n = ctx.state.max_turns or 0
        result = {
            "type": "result",
            "subtype": "error_max_turns",
            "is_error": True,
            "duration_ms": max(0, int((ctx.now - self._started) * 1000)),
            "duration_api_ms": 0,
            "num_turns": n + 1,
            "stop_reason": "tool_use" if self._called else "end_turn",
            "session_id": ctx.state.session_id or "",
            "total_cost_usd": 0,
            "usage": dict(self._usage),
            "modelUsage": {},
            "permission_denials": [],
            "terminal_reason": "max_turns",
            "errors": [f"Reached maximum number of turns ({n})"],
            "uuid": ctx.env.new_uuid(),
        }
        self._due = False
        self._reset()
        return Frame.synth(result, self.rule)
