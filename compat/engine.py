"""The sans-I/O session: events in, commands out.

Events: bytes from a side (``feed``), a side's EOF (``eof``), time passing
(``advance``), the backend's exit (``backend_exited``). Commands: ``Write`` to a side,
``CloseBackendInput``, ``TerminateBackend``, ``Log``. Time is only ever passed in; the driver asks
``next_deadline()`` and calls ``advance(now)`` when it is reached, so a 5 s grace window is
tested with an integer clock and no sleeping.

Sides: ``client`` (the program that thinks it runs Claude Code) and ``backend`` (the real
CLI). Bytes the client sends flow ``up``; bytes the backend sends flow ``down``.

The client's EOF closes the backend's stdin at once, unless a stage ``defers_eof``
(``eof-wind-down``: Claude finishes the turn and its background work first): then the
close waits until every such stage calls ``ctx.close_backend_input``; a stage may also
ask for ``TerminateBackend`` and decide the bridge's exit status (``exit_status``), so the
I/O side only carries those decisions out.

Lossless by construction: every line is either written (verbatim when no rule touched
it), or dropped/held by a named rule and counted; oversize lines and a partial last line
pass through verbatim; invalid JSON passes through verbatim and is logged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from compat import DEFAULT_MAX_LINE
from compat.factguard import Guard, install
from compat.frames import Frame
from compat.framing import Line, LineSplitter, Oversize, Partial
from compat.pipeline import Pipeline
from compat.session import MAX_TASKS, SessionState
from compat.stage import Context, Direction, Env, Stage
from compat.stats import Stats

Side = Literal["client", "backend"]
_SOURCE: dict[Side, Direction] = {"client": "up", "backend": "down"}
_DEST: dict[Direction, Side] = {"up": "backend", "down": "client"}
#: pending output chunks are joined into one write unless one of them is longer than this
_JOIN_LIMIT = 1 << 20
#: invalid lines logged one by one per side before only counting them
_LOG_INVALID = 20


@attrs.frozen
class Write:
    side: Side
    data: bytes


@attrs.frozen
class CloseBackendInput:
    """Close the backend's stdin. ``settled``: every stage that held the client's EOF let
    it go because the session is over as Claude would end it (its last result written,
    nothing running, nothing that can follow): what a headless client prints at the end
    is known once this event's writes are done (``bridge.headless``)."""

    settled: bool = False


@attrs.frozen
class TerminateBackend:
    """End the backend process (SIGTERM, then SIGKILL after the driver's grace)."""

    reason: str = ""


@attrs.frozen
class Log:
    level: str
    rule: str
    message: str


Command = Write | CloseBackendInput | TerminateBackend | Log


class Engine:
    def __init__(
        self,
        up: Sequence[Stage],
        down: Sequence[Stage],
        env: Env,
        *,
        max_line: int = DEFAULT_MAX_LINE,
        strict: bool = False,
    ) -> None:
        self.stats = Stats()
        self.state = SessionState()
        self.ctx = Context(self, env, self.state)
        self.pipelines: dict[Direction, Pipeline] = {
            "up": Pipeline("up", up, self.stats),
            "down": Pipeline("down", down, self.stats),
        }
        #: strict (the tests'): every stage call may touch only the facts it declares
        self.guard: Guard | None = None
        if strict:
            self.guard = Guard()
            install(self.state, self.guard)
        for p in self.pipelines.values():
            p.strict = strict
            p.guard = self.guard
        self._splitters: dict[Side, LineSplitter] = {
            "client": LineSplitter(max_line),
            "backend": LineSplitter(max_line),
        }
        #: the sides whose direction has no stage: relayed a block of lines at a time, no
        #: line looked at (counted by newlines; oversize and partial lines as everywhere)
        self._relayed = {side for side, d in _SOURCE.items() if not self.pipelines[d].stages}
        self._out: list[Command] = []
        self._pending: dict[Side, list[bytes]] = {"client": [], "backend": []}
        self._timers: dict[tuple[int, str], tuple[float, Stage]] = {}
        self._current: Pipeline | None = None
        self._invalid: Counter[Side] = Counter()
        self._eof: set[Side] = set()
        self.backend_status: int | None = None
        #: ids of the defers_eof stages still holding the client's EOF
        self._eof_holds: set[int] = set()
        #: per release of the client's EOF by such a stage: it said the session settled
        self._released: list[bool] = []
        self._closed = False
        self._terminated = False
        #: the reason a stage gave when it asked for the backend's end
        self._terminated_why: str | None = None
        self._exit_status: int | None = None
        #: per rule, the frames it had dropped when the client's EOF came
        self._drops_at_eof: dict[str, int] | None = None
        self._forgotten_live = 0

    # -- events -----------------------------------------------------------------------
    def feed(self, side: Side, data: bytes, now: float) -> list[Command]:
        self.ctx.now = now
        if side in self._relayed:
            self._relay(side, data)
            return self._commands()
        pipeline = self.pipelines[_SOURCE[side]]
        splitter = self._splitters[side]
        lines = splitter.split(data)
        if lines is not None:
            self._run_lines(pipeline, lines)
            return self._commands()
        run: list[bytes] = []  # a line may be over the limit: event by event
        for ev in splitter.feed(data):
            if type(ev) is Line:
                run.append(ev.data)
            else:
                self._run_lines(pipeline, run)
                run = []
                self._passthrough(side, ev)
        self._run_lines(pipeline, run)
        return self._commands()

    def eof(self, side: Side, now: float) -> list[Command]:
        """The side stopped sending (client closed stdin / backend closed stdout)."""
        self._side_eof(side, now)
        return self._commands()

    def _side_eof(self, side: Side, now: float) -> None:
        self.ctx.now = now
        if side in self._eof:
            return
        self._eof.add(side)
        for ev in self._splitters[side].eof():
            self._passthrough(side, ev)
        direction = _SOURCE[side]
        pipeline = self.pipelines[direction]
        for stage in pipeline.stages:
            self._run_hook(pipeline, stage, stage.on_input_eof, self.ctx)
        if side == "client":
            self._drops_at_eof = {r: c.get("dropped", 0) for r, c in self.stats.rules.items()}
            deferring = self._deferring()
            self._eof_holds = {id(s) for _, s in deferring}
            for p, stage in deferring:
                self._run_hook(p, stage, stage.on_client_eof, self.ctx)
            if not self._eof_holds:
                self._close()

    def advance(self, now: float) -> list[Command]:
        """Fire every timer due at ``now``, in deadline order."""
        self.ctx.now = now
        while True:
            due = [(d, k, s) for k, (d, s) in self._timers.items() if d <= now]
            if not due:
                break
            due.sort(key=lambda x: x[0])
            deadline, key, stage = due[0]
            del self._timers[key]
            pipeline = self.pipelines[stage.direction]
            self._run_hook(pipeline, stage, stage.on_timer, key[1], self.ctx)
        return self._commands()

    def input_closed(self, now: float) -> list[Command]:
        """The I/O side has closed the backend's stdin (after ``CloseBackendInput``, once
        every line queued before it was written): grace timers start from here, not from
        the moment the close was asked for."""
        self.ctx.now = now
        for p in self.pipelines.values():
            for stage in p.stages:
                self._run_hook(p, stage, stage.on_backend_input_closed, self.ctx)
        return self._commands()

    def backend_exited(self, status: int, now: float, cause: str | None = None) -> list[Command]:
        """The backend has exited with ``status`` (a shell's: 128 + N for a signal N).
        ``cause``: what ended it, in words, when the I/O side knows more than the status
        (it was killed by a signal; the bridge ended it, and why); else the engine's own
        words: the stage that asked for its end, or its status."""
        self.ctx.now = now
        self.backend_status = status
        self.ctx.backend_end = cause or self._end_cause(status)
        self._side_eof("backend", now)
        pipeline = self.pipelines["down"]
        for stage in pipeline.stages:
            self._run_hook(pipeline, stage, stage.on_backend_exit, status, self.ctx)
        self._timers.clear()
        self._log_dropped_after_eof()
        return self._commands()

    def _end_cause(self, status: int) -> str:
        if self._terminated_why is not None:
            return f"the bridge terminated the backend ({self._terminated_why})"
        return f"the backend exited with status {status}"

    def _log_dropped_after_eof(self) -> None:
        """What rules dropped from the backend's output after the client's EOF (Claude
        fidelity: e.g. a killed task's late frames) is said once, never silent."""
        if self._drops_at_eof is None:
            return
        after = {
            r: c.get("dropped", 0) - self._drops_at_eof.get(r, 0)
            for r, c in self.stats.rules.items()
        }
        after = {r: n for r, n in after.items() if n > 0}
        if after:
            self.stats.count("framing", "dropped-after-eof", sum(after.values()))
            self.log(
                "info",
                "framing",
                f"{sum(after.values())} frame(s) dropped after the "
                "client's EOF: " + ", ".join(f"{r} {n}" for r, n in sorted(after.items())),
            )

    def exit_status(self) -> int | None:
        """The status a stage decided the bridge exits with (eof-wind-down: Claude's 0, or
        1 after an error result); None: the backend's own."""
        return self._exit_status

    def eof_budget(self) -> float | None:
        """Seconds after the client's EOF by which the deferring stages promise to have
        released it (None: no stage defers; the close is immediate)."""
        budgets = [s.eof_budget() for _, s in self._deferring()]
        if not budgets:
            return None
        if any(b is None for b in budgets):
            return None
        return max(b for b in budgets if b is not None)

    def next_deadline(self) -> float | None:
        if not self._timers:
            return None
        return min(d for d, _ in self._timers.values())

    def statistics(self) -> dict[str, Any]:
        self.stats.peak_buffer = max(s.peak_buffer for s in self._splitters.values())
        return self.stats.as_dict()

    # -- the Host protocol (compat.stage): called by Context only ---------------------------
    def set_timer(self, stage: Stage, key: str, deadline: float) -> None:
        self._timers[(id(stage), key)] = (deadline, stage)

    def cancel_timer(self, stage: Stage, key: str) -> None:
        self._timers.pop((id(stage), key), None)

    def _deferring(self) -> list[tuple[Pipeline, Stage]]:
        return [(p, s) for p in self.pipelines.values() for s in p.stages if s.defers_eof]

    def release_eof(self, stage: Stage, settled: bool = False) -> None:
        self._eof_holds.discard(id(stage))
        self._released.append(settled)
        if "client" in self._eof and not self._eof_holds:
            self._close()

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            self._flush_pending()
            settled = bool(self._released) and all(self._released)
            self._out.append(CloseBackendInput(settled))

    def terminate(self, stage: Stage, reason: str) -> None:
        if not self._terminated and self.backend_status is None:
            self._terminated = True
            self._terminated_why = reason
            self.log("info", stage.rule, f"terminating the backend: {reason}")
            self._flush_pending()
            self._out.append(TerminateBackend(reason))

    def set_exit_status(self, status: int | None) -> None:
        self._exit_status = status

    def hold(self) -> None:
        if self._current is not None:
            self._current.holding = True

    def emit_direct(self, direction: Direction, frame: Frame, rule: str) -> None:
        if frame.synthesized_by is None:
            frame.synthesized_by = rule
        self.stats.rule(rule)["synthesized"] += 1
        self._write_frames(direction, [frame])

    def log(self, level: str, rule: str, message: str) -> None:
        self._out.append(Log(level, rule, message))

    # -- internals ----------------------------------------------------------------------
    def _run_lines(self, pipeline: Pipeline, lines: list[bytes]) -> None:
        if not lines:
            return
        direction = pipeline.direction
        counter = self.stats.frames[direction]
        counter["in"] += len(lines)
        self._current = pipeline
        out, invalid = pipeline.run_lines(lines, self.ctx)
        self._current = None
        if out:
            counter["out"] += len(out)
            pending = self._pending[_DEST[direction]]
            pending.append(b"\n".join(out))
            pending.append(b"\n")
        for raw in invalid:
            self._note_invalid(direction, raw)

    def _relay(self, side: Side, data: bytes) -> None:
        """``data`` from a side whose direction has no stage: its complete lines go on as
        one block, uninspected (a line that is not JSON is not looked for either), counted
        in and out by their newlines; a line over the limit and a partial last line are
        passed and counted as on the staged path."""
        direction = _SOURCE[side]
        counter = self.stats.frames[direction]
        pending = self._pending[_DEST[direction]]
        splitter = self._splitters[side]
        got = splitter.block(data)
        if got is not None:
            block, n = got
            if n:
                counter["in"] += n
                counter["out"] += n
                pending.append(block)
            return
        for ev in splitter.feed(data):  # a line may be over the limit: event by event
            if type(ev) is Line:
                counter["in"] += 1
                counter["out"] += 1
                pending.append(ev.data)
                pending.append(b"\n")
            else:
                self._passthrough(side, ev)

    def _run_hook(self, pipeline: Pipeline, stage: Stage, hook: Any, *args: Any) -> None:
        self._current = pipeline
        try:
            produced = hook(*args) if self.guard is None else self.guard.call(stage, hook, *args)
        except Exception as exc:
            pipeline.failed(stage, exc, self.ctx)  # the one fail-open path
            produced = None
        if produced:
            out = pipeline.run_from(stage, list(produced), self.ctx)
            self._write_frames(pipeline.direction, out)
        self._current = None

    def _write_frames(self, direction: Direction, frames: Sequence[Frame]) -> None:
        if not frames:
            return
        lines: list[bytes] = []
        self.pipelines[direction].encode(frames, self.ctx, lines)  # (fails open, counted)
        if not lines:
            return
        self.stats.frames[direction]["out"] += len(lines)
        pending = self._pending[_DEST[direction]]
        pending.append(b"\n".join(lines))
        pending.append(b"\n")
        for f in frames:
            if f.invalid:  # never parses: a line no rule looked inside is written unparsed
                self._note_invalid(direction, f.raw)

    def _note_invalid(self, direction: Direction, raw: bytes) -> None:
        side: Side = "client" if direction == "up" else "backend"
        self._invalid[side] += 1
        self.stats.count("framing", f"invalid-{direction}")
        if self._invalid[side] <= _LOG_INVALID:
            try:
                raw.decode("utf-8")
                what = "not valid JSON"
            except UnicodeDecodeError:
                what = "not valid UTF-8"
            self.log(
                "warning",
                "framing",
                f"{side} sent a line that is {what} ({len(raw)} bytes); passed through unchanged",
            )

    def _passthrough(self, side: Side, ev: Oversize | Partial | Line) -> None:
        direction = _SOURCE[side]
        dest = _DEST[direction]
        if type(ev) is Oversize:
            if ev.end:
                self.stats.count("framing", f"oversize-{direction}")
                self.log(
                    "warning",
                    "framing",
                    f"{side} sent a line over the {self._splitters[side].max_line}-byte "
                    "limit; passed through unchanged, not inspected",
                )
                self.stats.frames[direction]["in"] += 1
                self.stats.frames[direction]["out"] += 1
            self._pending[dest].append(ev.data)
        elif type(ev) is Partial:
            self.stats.count("framing", f"partial-{direction}")
            self.log(
                "warning",
                "framing",
                f"{side} ended with a partial line ({len(ev.data)} bytes, no newline); "
                "passed through unchanged",
            )
            self._pending[dest].append(ev.data)

    def _flush_pending(self) -> None:
        for side, chunks in self._pending.items():
            if not chunks:
                continue
            if len(chunks) > 1 and any(len(c) > _JOIN_LIMIT for c in chunks):
                # a long line is written as it is, not copied into one write with its
                # neighbours (memory for a 64 MiB line stays ~2x the line)
                self._out.extend(Write(side, c) for c in chunks)
            else:
                self._out.append(Write(side, b"".join(chunks)))
            chunks.clear()

    def _commands(self) -> list[Command]:
        forgotten = self.state.forgotten_live
        if forgotten != self._forgotten_live:
            if not self._forgotten_live:
                self.log(
                    "warning",
                    "session",
                    f"more than {MAX_TASKS} tasks open at once: "
                    "the oldest live tasks are forgotten (counted: session "
                    "forgotten-live-tasks)",
                )
            self.stats.count("session", "forgotten-live-tasks", forgotten - self._forgotten_live)
            self._forgotten_live = forgotten
        self._flush_pending()
        out, self._out = self._out, []
        return out
