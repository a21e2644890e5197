"""Runs frames through the ordered stages of one direction.

Hot path (ARCHITECTURE.md "Hot path"; ``bench/throughput.py`` measures it): the frame kind
(``Frame.kind()``: ``type``/``subtype`` read from the line's prefix) selects a *plan*, the
stages that may want that kind, computed once per kind and cached: those interested in the
kind, and those whose ``triggers`` (raw substrings) must be looked for in the line. Frames
then go one at a time through their plan; a trigger is only searched for when its stage is
reached, and a frame no stage wants is never parsed and leaves as the bytes it came in as.

Before a stage sees a frame, the frame is parsed (a line with a valid prefix but broken
JSON goes on only to the ``invalid`` stages, then passes, and the engine logs it), unless
the stage sets ``lazy = True``: such a stage decides from ``kind()`` and ``raw`` when it
can, and when it must parse, treats an ``obj`` that is not a dict as "pass unchanged"
(``session``, ``init-once``, ``private-fields``, ``control-state``, ``task-correlation``,
``interrupt-terminal``, ``interrupted-turn``, ``eof-wind-down``). Most cbc lines are then
never parsed, so a broken line whose prefix is fine passes verbatim without being logged
unless some rule had to look inside.

Cold steps: a lazy stage may also say, from its state alone, that an unparsed frame of a
kind would pass it untouched and change nothing (``cold(kind, ctx) -> bool``: e.g.
``control-state`` inside a turn, ``init-once`` with nothing held); such steps are skipped
without a call. The answers are cached per kind for one ``run`` (one block of frames:
``ctx.now`` is fixed and no timer fires during it) and forgotten whenever a stage that is
not ``pure`` (one whose calls change nothing other stages or ``cold`` read, like
``private-fields``) is called, since that call may change some stage's state.

The proof (``run_lines``): every wire line whose prefix names a kind
(``compat.frames.prefix_kind``) is validated once (``compat.frames.prove``: the whole text, in
C, building only ``type`` and ``subtype``). It proves the line is a JSON object, which a stage
that edits bytes (``private-fields``) relies on, and confirms its kind: with duplicate keys the
last one counts (``JSON.parse``), so a line whose proof disagrees with its prefix, and one the
proof cannot take (a lone surrogate escape, or not JSON: ``compat.frames.loads`` then decides),
takes the frame way with the kind its parse gives.

Fast lines (``run_lines``, what the engine feeds wire lines through): a line whose kind the
prefix tells and the proof confirms, and whose plan, once the cold steps are left
out, holds only stages that can act on its bytes (``raw_pass``: lazy and pure, like
``private-fields``) and triggers that are not in it, never becomes a ``Frame``: those
stages' ``on_raw`` run on the bytes and the result is written as it is. A stage's
``on_raw`` answering None, a trigger found, or any other step sends the line the frame
way (``_one``) from its original bytes. The per-kind answer lives as long as the cold
answers it was computed from.

Counting (per rule): an output that is the input passes; an output of the input's lineage
that is another object is a rewrite; an output of another lineage is a synthesis; an input
whose lineage is missing from the outputs was dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from compat.frames import PROOF_ERRORS, UNKNOWN, Frame, Kind, prefix_kind, prove_kind
from compat.stage import Context, Direction, Stage
from compat.stats import Stats

#: one step of a plan: (stage index, stage, lazy, triggers to look for or None = wanted)
Step = tuple[int, Stage, bool, tuple[bytes, ...] | None]
#: a kind's plan from each stage index on: ``plan[start]`` = the steps of stages ``start..``
Plan = tuple[tuple[Step, ...], ...]
#: a fast line's steps: (``on_raw`` of a ``raw_pass`` stage, or None for a triggered stage
#: that must not see the line, its triggers, the rule id)
FastStep = tuple[Callable[[bytes], bytes | None] | None, tuple[bytes, ...], str]
_NOT_YET: Any = object()


def frame_kind(frame: Frame) -> Kind | None:
    """(type, subtype) of a frame, or None when it is not a JSON object."""
    return frame.kind()


class StageError(Exception):
    pass


class Pipeline:
    def __init__(self, direction: Direction, stages: Sequence[Stage], stats: Stats) -> None:
        self.direction = direction
        self.stages = list(stages)
        self.stats = stats
        self.strict = False
        #: set by ``Context.hold`` during a stage call: the dropped input will be released
        self.holding = False
        self._plans: dict[Kind, Plan] = {}
        #: stages that also take lines that are not JSON objects (``Stage.invalid``)
        self._invalid = [i for i, s in enumerate(self.stages) if s.invalid]
        #: per kind: the indexes of the stages that are cold for it now (see "Cold steps")
        self._cold: dict[Kind, frozenset[int]] = {}
        self._coolers = [(i, s) for i, s in enumerate(self.stages) if s.cools]
        #: per kind: the coolers interested in it
        self._kind_coolers: dict[Kind, tuple[tuple[int, Stage], ...]] = {}
        self._pure = frozenset(i for i, s in enumerate(self.stages) if s.pure)
        #: per kind: the steps of a fast line, None when it must take the frame way
        self._fast: dict[Kind, tuple[FastStep, ...] | None] = {}
        #: cold steps and fast lines on (tests switch them off to compare with the
        #: calling path)
        self.use_cold = True
        self.use_fast = True

    def index(self, stage: Stage) -> int:
        for i, s in enumerate(self.stages):
            if s is stage:
                return i
        raise KeyError(stage.rule)

    def _plan(self, kind: Kind) -> Plan:
        steps: list[Step] = []
        for i, s in enumerate(self.stages):
            if s.interested(*kind):
                steps.append((i, s, s.lazy, None))
            elif s.triggers:
                steps.append((i, s, s.lazy, s.triggers))
        plan = tuple(
            tuple(step for step in steps if step[0] >= start)
            for start in range(len(self.stages) + 1)
        )
        self._plans[kind] = plan
        self._kind_coolers[kind] = tuple((i, s) for i, s in self._coolers if s.interested(*kind))
        return plan

    def run(self, frames: Sequence[Frame], ctx: Context, start: int = 0) -> list[Frame]:
        """Run ``frames`` through stages ``start..``; return what comes out, in order."""
        out: list[Frame] = []
        self._cold = {}
        self._fast = {}
        try:
            for frame in frames:
                self._one(frame, start, ctx, out)
        finally:
            self._cold = {}
            self._fast = {}
        return out

    def run_lines(self, lines: Sequence[bytes], ctx: Context) -> tuple[list[bytes], list[bytes]]:
        """Wire lines (without newlines) through every stage: the lines to write, in order,
        and the written lines that are not valid JSON (for the engine to log)."""
        out: list[bytes] = []
        invalid: list[bytes] = []
        rewrites: list[str] = []
        frames: list[Frame] = []
        self._cold = {}
        self._fast = {}
        try:
            for raw in lines:
                kind = prefix_kind(raw)
                if kind is not UNKNOWN:
                    try:  # ``compat.frames.prove``, inlined (every wire line comes here)
                        k = prove_kind(raw)
                        if not raw.isascii():
                            raw.decode()
                        if k.type != kind[0] or k.subtype != kind[1]:
                            kind = UNKNOWN  # duplicate keys: the last one is the kind
                    except PROOF_ERRORS:  # a lone surrogate, or not JSON: the frame way,
                        kind = UNKNOWN  # where ``loads`` decides
                if kind is not UNKNOWN:
                    steps = self._fast.get(kind, _NOT_YET)
                    if steps is _NOT_YET:
                        steps = self._fast_steps(kind, ctx)
                    if steps is not None:
                        new = self._fast_line(raw, steps, rewrites)
                        if new is not None:
                            out.append(new)
                            continue
                frame = Frame(raw) if kind is UNKNOWN else Frame.wire(raw, kind, True)
                self._one(frame, 0, ctx, frames)
                for f in frames:
                    if not f.raw:
                        self.encode(frames, ctx, out)
                        break
                else:
                    out.extend([f.raw for f in frames])
                for f in frames:
                    if f.invalid:
                        invalid.append(f.raw)
                frames.clear()
        finally:
            self._cold = {}
            self._fast = {}
            for rule, n in Counter(rewrites).items():
                self.stats.rule(rule)["rewritten"] += n
        return out, invalid

    def encode(self, frames: Sequence[Frame], ctx: Context, out: list[bytes]) -> None:
        """Append the bytes of ``frames`` to ``out``. Fails open: a frame whose object cannot
        be written (``dumps`` raised: a rule built something that is not JSON) is counted
        as its rule's error and logged, and the wire line it came from passes in its place
        (once per batch; a frame the rule invented is dropped, counted)."""
        passed: set[int] | None = None
        for f in frames:
            raw = f.raw
            if raw:
                out.append(raw)
                continue
            try:
                out.append(f.encode())
                continue
            except (TypeError, ValueError, RecursionError) as exc:
                rule = f.rule or "pipeline"
                if self.strict:
                    raise StageError(f"{rule}: cannot encode a frame ({exc})") from exc
                self.stats.rule(rule)["errors"] += 1
                ctx.log(
                    rule,
                    f"frame not written, cannot encode it ({type(exc).__name__}: "
                    f"{exc}); passed the original line",
                    "error",
                )
            root = f.root
            passed = set() if passed is None else passed
            if root is not None and root.raw and id(root) not in passed:
                passed.add(id(root))
                f.raw = root.raw
                out.append(root.raw)
            else:
                self.stats.rule(f.rule or "pipeline")["dropped"] += 1
                f.raw = b""

    @staticmethod
    def _fast_line(raw: bytes, steps: tuple[FastStep, ...], rewrites: list[str]) -> bytes | None:
        """A fast line through its steps (see "Fast lines"); None: it takes the frame way."""
        new = raw
        done = len(rewrites)
        for on_raw, triggers, rule in steps:
            if on_raw is None:
                for t in triggers:
                    if t in new:
                        del rewrites[done:]
                        return None
                continue
            got = on_raw(new)
            if got is None:
                del rewrites[done:]
                return None
            if got is not new:
                rewrites.append(rule)
                new = got
        return new

    def _fast_steps(self, kind: Kind, ctx: Context) -> tuple[FastStep, ...] | None:
        plan = self._plans.get(kind)
        if plan is None:
            plan = self._plan(kind)
        got = self._cold.get(kind)
        cold = self._cold_for(kind, ctx) if got is None else got
        steps: list[FastStep] | None = [] if self.use_fast else None
        for i, stage, lazy, triggers in plan[0]:
            if steps is None:
                break
            if i in cold:
                continue
            if triggers is not None:
                steps.append((None, triggers, stage.rule))
            elif lazy and stage.raw_pass and i in self._pure:
                steps.append((stage.on_raw, (), stage.rule))
            else:
                steps = None
        found = None if steps is None else tuple(steps)
        self._fast[kind] = found
        return found

    def _cold_for(self, kind: Kind, ctx: Context) -> frozenset[int]:
        coolers = self._kind_coolers.get(kind)
        if coolers is None:
            self._plan(kind)
            coolers = self._kind_coolers[kind]
        cold = (
            frozenset(i for i, s in coolers if s.cold(kind, ctx)) if self.use_cold else frozenset()
        )
        self._cold[kind] = cold
        return cold

    def _one(self, frame: Frame, start: int, ctx: Context, out: list[Frame]) -> None:
        """``frame`` through stages ``start..``, what comes out appended to ``out``; what a
        stage returns goes on through the stages after it (depth first, so order holds)."""
        kind = frame.kind()
        if kind is None:
            self._not_json(frame, start, ctx, out)
            return
        plan = self._plans.get(kind)
        if plan is None:
            plan = self._plan(kind)
        raw = frame.raw
        if frame.parsed or not raw:
            cold: frozenset[int] = frozenset()
        else:
            got = self._cold.get(kind)
            cold = self._cold_for(kind, ctx) if got is None else got
        for i, stage, lazy, triggers in plan[start]:
            if i in cold:
                continue  # it would pass this unparsed frame and change nothing
            if triggers is not None and raw:  # a frame without raw is one a rule rewrote:
                for t in triggers:  # let the triggered stages look at it
                    if t in raw:
                        break
                else:
                    continue
            if not lazy and not isinstance(frame.obj, dict):
                self._not_json(frame, start, ctx, out)  # a valid prefix, broken JSON
                return
            self.holding = False
            if i not in self._pure:
                self._cold = {}  # the call may change what is cold (and so fast)
                self._fast = {}
                cold = frozenset()
            try:
                result = stage.on_frame(frame, ctx)
            except Exception as exc:
                self.failed(stage, exc, ctx)
                continue
            if result is None:
                continue
            if len(result) == 1:
                new = result[0]
                if new is not frame and new.lineage is frame.lineage:
                    self.stats.rule(stage.rule)["rewritten"] += 1  # _account's common case
                    if not new.raw and new.rewritten_by is None:
                        new.rewritten_by = stage.rule
                else:
                    self._account(stage.rule, frame, result)
                if new.kind() == kind:
                    frame = new  # one frame of the same kind: the same plan goes on
                    raw = frame.raw
                    start = i + 1
                    continue
            else:
                self._account(stage.rule, frame, result)
            for f in result:
                self._one(f, i + 1, ctx, out)
            return
        out.append(frame)

    def _not_json(self, frame: Frame, start: int, ctx: Context, out: list[Frame]) -> None:
        """A line that is not a JSON object: only the stages that take such lines
        (``invalid``) see it; otherwise it passes, and the engine logs it."""
        for i in self._invalid:
            if i < start:
                continue
            stage = self.stages[i]
            self.holding = False
            try:
                result = stage.on_frame(frame, ctx)
            except Exception as exc:
                self.failed(stage, exc, ctx)
                continue
            if result is not None:
                self._account(stage.rule, frame, result)
                for f in result:
                    self._one(f, i + 1, ctx, out)
                return
        out.append(frame)

    def failed(self, stage: Stage, exc: Exception, ctx: Context) -> None:
        """Fail open, for every call into a stage (frames here, hooks and timers in the
        engine): count it as the rule's ``errors`` and log it; the frame goes on unchanged
        (``strict``, in tests: raise)."""
        if self.strict:
            raise exc
        self.stats.rule(stage.rule)["errors"] += 1
        ctx.log(stage.rule, f"stage failed open ({type(exc).__name__}: {exc})", "error")

    def run_from(self, stage: Stage, frames: Sequence[Frame], ctx: Context) -> list[Frame]:
        """Frames a stage produced out of band (timer, EOF, exit): count them as its
        syntheses and run them through the stages after it."""
        counts = self.stats.rule(stage.rule)
        for f in frames:
            if f.synthesized_by is None and f.root is None and f.raw:
                counts["released"] += 1  # a wire frame the stage held
            else:
                if f.synthesized_by is None:
                    f.synthesized_by = stage.rule
                counts["synthesized"] += 1
        return self.run(frames, ctx, self.index(stage) + 1)

    def _account(self, rule: str, frame: Frame, result: Sequence[Frame]) -> None:
        lineage = frame.lineage
        counts = self.stats.rule(rule)
        if len(result) == 1 and result[0] is not frame and result[0].lineage is lineage:
            counts["rewritten"] += 1  # the common case, a plain rewrite
            if not result[0].raw and result[0].rewritten_by is None:
                result[0].rewritten_by = rule
            return
        kept = False
        for f in result:
            if f is frame:
                kept = True
            elif f.lineage is lineage:
                kept = True
                counts["rewritten"] += 1
                if not f.raw and f.rewritten_by is None:
                    f.rewritten_by = rule
            elif f.synthesized_by == rule and f.root is None:
                counts["synthesized"] += 1
            else:  # a frame the stage held earlier and lets go now
                counts["released"] += 1
        if not kept:
            counts["held" if self.holding else "dropped"] += 1
