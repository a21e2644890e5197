"""``stdin-vocabulary`` and ``user-line``: the client's stdin as cbc takes it (PROTOCOL.md
§3 ``stdin-vocabulary``, ``user-line``): lines cbc has no use for absorbed, user lines passed
and remembered, and held while cbc would lose them. They share ``ControlState`` with the
control rules (``compat/stages/control.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
from compat import wire
from compat.frames import Frame
from compat.session import MAX_OWN
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.lifecycle_cmd import lifecycle
from compat.taskkit import remember
from compat.text import clip


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
