"""One rule fed by a test, as mitmproxy's ``Playbook`` feeds a layer: events in, what the
rule did out, as records compared with ``==`` (docs/rule-contract.md, "Testing one rule").

The rule (an id with its options as ``--rule`` gives them, or a ``Stage``) runs alone in its
direction through ``compat.pipeline.Pipeline``, as a strict engine runs it: a frame of a
kind it did not declare passes without a call; each call is under the fact guard
(``compat.factguard``); a rule that raises, or returns what cannot be written, fails the
test. The playbook is its engine (``compat.stage.Host``): an event returns what the rule
asked of it, in order, then the frames its call gave: ``Out(frame)`` (on its direction;
``.raw``: the bytes; a line that is not JSON is bytes), ``Emit(direction, frame)``,
``Timer(key, deadline)`` (None: cancelled), ``Fire(key, at)``, ``Log(message, level)``,
``Count(what, n)``, ``Hold()``, ``TerminateBackend(reason)``, ``CloseBackendInput()``,
``ExitStatus(status)``. Facts are set by name outside any call (``facts=``, ``set_facts``,
``pb.state``). Before an event at ``at`` (default: the last one's time) each timer due fires
at its deadline. Pure: no clock, no I/O; uuids from a counter (``playbook_env``).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, get_args

import attrs

from compat import reverse_state
from compat.engine import CloseBackendInput as CloseBackendInput
from compat.engine import TerminateBackend as TerminateBackend
from compat.factguard import Guard, install
from compat.facts import FACTS
from compat.frames import Frame, dumps, loads
from compat.pipeline import Pipeline
from compat.profiles import make_stage
from compat.session import SessionState
from compat.stage import Context, Direction, Env, Stage
from compat.stats import Stats


@attrs.frozen
class Out:
    frame: Any
    raw: bytes = attrs.field(default=b"", eq=False, repr=False)


@attrs.frozen
class Emit:
    direction: Direction
    frame: Any


@attrs.frozen
class Timer:
    key: str
    deadline: float | None


@attrs.frozen
class Fire:
    key: str
    at: float


@attrs.frozen
class Log:
    message: str
    level: str = "info"


@attrs.frozen
class Count:
    what: str
    n: int = 1


@attrs.frozen
class Hold:
    pass


@attrs.frozen
class ExitStatus:
    status: int | None


_Asked = TerminateBackend | CloseBackendInput | ExitStatus
Record = Out | Emit | Timer | Fire | Log | Count | Hold | _Asked


def outs(records: Iterable[Record]) -> list[Any]:
    """The frames of the ``Out`` records."""
    return [r.frame for r in records if isinstance(r, Out)]


def only(records: Iterable[Record], *types: type) -> list[Record]:
    return [r for r in records if isinstance(r, types)]


def playbook_env(scripts: Mapping[str, str] | None = None) -> Env:
    """A deterministic ``Env``: uuids from a counter, a fixed epoch, ``scripts`` by path."""
    uuids = (f"00000000-0000-4000-8000-{n:012d}" for n in itertools.count(1))
    read = (scripts or {}).get
    return Env(lambda: next(uuids), lambda cwd, path: read(path), 1_800_000_000_000)


class _Stats(Stats):
    """Statistics that also record the rule's own counts (``ctx.count``, ``drop_held``)."""

    def __init__(self, records: list[Record]) -> None:
        super().__init__()
        self.records = records

    def count(self, rule: str, what: str, n: int = 1) -> None:
        self.records.append(Count(what, n))
        super().count(rule, what, n)


class Playbook:
    """One rule with a scripted context (the module docstring); its ``compat.stage.Host``."""

    def __init__(
        self,
        rule: str | Stage,
        options: Mapping[str, str] | None = None,
        facts: Mapping[str, Any] | None = None,
        env: Env | None = None,
    ) -> None:
        stage = rule if isinstance(rule, Stage) else make_stage(rule, options or {})
        if stage is None:
            raise ValueError(f"rule {rule} is off")
        self.stage = stage
        self._records: list[Record] = []
        self.stats: Stats = _Stats(self._records)
        self.state, self.guard = SessionState(), Guard()
        install(self.state, self.guard)
        self.set_facts(facts or {})
        self.ctx = Context(self, env or playbook_env(), self.state)
        self.pipelines = {d: self._pipeline(d) for d in get_args(Direction)}
        self._mine = self.pipelines[stage.direction]
        self._timers: dict[str, float] = {}
        self._eof: set[str] = set()
        self._deferring = self.closed = False
        self.terminated: str | None = None
        self.exit_status: int | None = None

    def _pipeline(self, direction: Direction) -> Pipeline:
        stages = [self.stage] if direction == self.stage.direction else []
        p = Pipeline(direction, stages, self.stats)
        p.strict, p.guard = True, self.guard
        return p

    @property
    def counts(self) -> dict[str, int]:
        """The rule's counters: the pipeline's (rewritten, dropped, held, ...) and its own."""
        return dict(self.stats.rules.get(self.stage.rule, {}))

    def set_facts(self, facts: Mapping[str, Any]) -> None:
        """Facts by name (``session_id``, ``control.turn_active``, ``rev.in_turn``; a task's
        are set on it: ``state.task(id)``); a list for a deque fact is made one."""
        st = self.state
        owners = {"": st, "control": st.control, "rev": reverse_state.of(st)}
        for name, value in facts.items():
            prefix, _, short = name.rpartition(".")
            if name not in FACTS or prefix not in owners:
                raise KeyError(f"{name!r}: not a fact of the session, control or rev")
            owner: Any = owners[prefix]
            attr = next(f.name for f in attrs.fields(type(owner)) if f.name.lstrip("_") == short)
            current = getattr(owner, attr)
            if isinstance(current, deque) and not isinstance(value, deque):
                value = deque(value, maxlen=current.maxlen)
            setattr(owner, attr, value)

    # -- events: each returns the records it made ------------------------------------------
    def frame(self, frame: Any, at: float | None = None) -> list[Record]:
        """A frame read from the rule's side (a JSON value, or bytes: each of its lines)."""
        data = frame if isinstance(frame, bytes) else dumps(frame)
        return self._event(at, self._lines, data.removesuffix(b"\n").split(b"\n"))

    def advance(self, to: float) -> list[Record]:
        return self._event(to, lambda: None)

    def timer(self) -> list[Record]:
        """The next timer fires (with any other due at its deadline)."""
        if not self._timers:
            raise LookupError(f"rule {self.stage.rule} has no timer set")
        return self.advance(min(self._timers.values()))

    def client_eof(self, at: float | None = None) -> list[Record]:
        return self._event(at, self._side_eof, "client")

    def input_closed(self, at: float | None = None) -> list[Record]:
        return self._event(at, self._hook, self.stage.on_backend_input_closed)

    def backend_exit(self, status: int, at: float | None = None, cause: str = "") -> list[Record]:
        """The backend exited (``cause``: in words; by default the engine's): its EOF, then
        ``on_backend_exit`` (a rule downstream); no timer fires after it."""
        return self._event(at, self._exited, status, cause)

    # -- the engine's part (``compat.engine.Engine``, strict) -------------------------------
    def _event(self, at: float | None, fn: Callable[..., None], *args: Any) -> list[Record]:
        self._due(at)
        fn(*args)
        out, self._records[:] = self._records[:], []
        return out

    def _due(self, at: float | None) -> None:
        """Each timer due by ``at`` fires at its deadline (in order; ties: as set)."""
        to = self.ctx.now if at is None else at
        if to < self.ctx.now:
            raise ValueError(f"time goes forward: {to} is before {self.ctx.now}")
        while due := [(d, k) for k, d in self._timers.items() if d <= to]:
            deadline, key = min(due, key=lambda x: x[0])
            del self._timers[key]
            self.ctx.now = max(deadline, self.ctx.now)
            self._records.append(Fire(key, self.ctx.now))
            self._hook(self.stage.on_timer, key)
        self.ctx.now = to

    def _hook(self, hook: Callable[..., Any], *args: Any) -> None:
        """``hook`` called as ``Engine._run_hook`` calls it (strict); its frames go out."""
        produced = self.guard.call(self.stage, hook, *args, self.ctx)
        if produced:
            frames = self._mine.run_from(self.stage, list(produced), self.ctx)
            lines: list[bytes] = []
            self._mine.encode(frames, self.ctx, lines)
            self._lines(lines, run=False)

    def _lines(self, lines: list[bytes], run: bool = True, emit: Direction | None = None) -> None:
        """``lines`` (run through the rule first) recorded as ``Out``, or ``Emit``."""
        if run:
            lines, _ = self._mine.run_lines(lines, self.ctx)
        for raw in lines:
            try:
                obj = loads(raw)
            except ValueError:
                obj = raw
            self._records.append(Out(obj, raw) if emit is None else Emit(emit, obj))

    def _side_eof(self, side: str) -> None:
        if side in self._eof:
            return
        self._eof.add(side)
        if {"client": "up", "backend": "down"}[side] == self.stage.direction:
            self._hook(self.stage.on_input_eof)
        if side == "client":
            self._deferring = self.stage.defers_eof
            if self._deferring:
                self._hook(self.stage.on_client_eof)
            if not self._deferring:
                self.release_eof(self.stage)

    def _exited(self, status: int, cause: str) -> None:
        if not cause and self.terminated is not None:
            cause = f"the bridge terminated the backend ({self.terminated})"
        self.ctx.backend_end = cause or f"the backend exited with status {status}"
        self._eof.add("exit")
        self._side_eof("backend")
        if self.stage.direction == "down":
            self._hook(self.stage.on_backend_exit, status)
        self._timers.clear()

    # -- compat.stage.Host: called by the rule's Context ------------------------------------
    def set_timer(self, stage: Stage, key: str, deadline: float) -> None:
        self._timers[key] = deadline
        self._records.append(Timer(key, deadline))

    def cancel_timer(self, stage: Stage, key: str) -> None:
        self._timers.pop(key, None)
        self._records.append(Timer(key, None))

    def emit_direct(self, direction: Direction, frame: Frame, rule: str) -> None:
        frame.synthesized_by = frame.synthesized_by or rule
        self.stats.rule(rule)["synthesized"] += 1
        lines: list[bytes] = []
        self.pipelines[direction].encode([frame], self.ctx, lines)
        self._lines(lines, run=False, emit=direction)

    def hold(self) -> None:
        self._mine.holding = True
        self._records.append(Hold())

    def release_eof(self, stage: Stage, settled: bool = False) -> None:
        self._deferring = False
        if "client" in self._eof and not self.closed:
            self.closed = True
            self._records.append(CloseBackendInput(settled))

    def terminate(self, stage: Stage, reason: str) -> None:
        if self.terminated is None and "exit" not in self._eof:
            self.terminated = reason
            self._records.append(TerminateBackend(reason))

    def set_exit_status(self, status: int | None) -> None:
        self.exit_status = status
        self._records.append(ExitStatus(status))

    def log(self, level: str, rule: str, message: str) -> None:
        self._records.append(Log(message, level))
