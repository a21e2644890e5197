"""Runs frames through the ordered stages of one direction.

What a rule declares is all the pipeline asks of it: the frames it acts on (``kinds``: a
type or ``type/subtype``; ``triggers``: raw substrings, where a kind cannot say it;
``invalid``: lines that are not JSON objects too), and its behaviour (``on_frame``, the
hooks). The speed is the pipeline's: a line's kind (``compat.frames.wire_kind``) selects
its *plan*, made once per kind (``Plan``: the stages interested in the kind, and those whose
triggers must be looked for in the line; at most ``MAX_PLANS`` kinds are kept). A frame
goes through its plan one stage at a time; a trigger is looked for only when its stage is
reached; a frame no stage wants is never parsed and leaves as the bytes it came in as, and
one a stage wants is parsed once, before that stage, and handed to it as a JSON object (a
line with a valid prefix and broken JSON goes on only to the ``invalid`` stages, then
passes, and the engine logs it). A direction with no stage at all never comes here
(``compat.engine``: its lines are relayed a block at a time, unread).

A substring test on a line's bytes here is ``raw.find(sub) >= 0``, not ``sub in raw``:
CPython's ``in`` on bytes first tries ``sub`` as an integer, raising and clearing a
``TypeError`` each time (~1,000 instructions). And a short ``sub`` is slow to look for
wherever its last byte or its neighbours are common bytes of JSON text (``"``, ``u``,
``h``...): ``find`` then steps one or two bytes at a time, where ``find`` of one byte is a
``memchr``: so triggers that start with the same byte are looked for only in a line that
has it (``Plan``'s lead byte).

The proof: every wire line is validated once (``compat.frames.wire_kind``: ``prove``, the
whole text in C building only ``type`` and ``subtype``, then one comparison with the prefix
that kind is written with). It proves the line is a JSON object, which a stage that edits
bytes (``private-fields``) relies on, and that its prefix names its kind: with duplicate keys
the last one counts (``JSON.parse``), so a line whose proof disagrees with its prefix, and
one the proof cannot take (a lone surrogate escape, or not JSON: ``compat.frames.loads``
then decides), goes through with the kind its parse gives.

Counting (per rule): an output that is the input passes; an output of the input's lineage
that is another object is a rewrite; an output of another lineage is a synthesis; an input
whose lineage is missing from the outputs was dropped.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import cast

from compat.factguard import Guard
from compat.frames import UNKNOWN, Frame, Kind, wire_kind
from compat.stage import Context, Direction, Output, Stage
from compat.stats import Stats

#: one step of a plan: (stage index, stage, its ``on_frame`` (bound once), triggers to look
#: for or None: the kind is wanted, the triggers' lead byte: ``_lead``)
Step = tuple[int, Stage, Callable[[Frame, Context], Output], tuple[bytes, ...] | None, bytes]
#: kinds whose plan is kept (a hostile stream can name any number of kinds: past this,
#: plans are made per line, not kept)
MAX_PLANS = 1024


def _lead(triggers: tuple[bytes, ...]) -> bytes:
    """The byte every one of ``triggers`` starts with (a line without it holds none of
    them: one ``memchr``), or ``b""`` when they start differently (``find`` of it is 0:
    each trigger is looked for)."""
    first = {t[:1] for t in triggers}
    return first.pop() if len(first) == 1 else b""


def _triggered(raw: bytes, triggers: tuple[bytes, ...], lead: bytes) -> bool:
    """One of ``triggers`` is in ``raw`` (a frame a rule rewrote has no bytes yet: every
    triggered stage sees it)."""
    if not raw:
        return True
    if raw.find(lead) < 0:
        return False
    return any(raw.find(t) >= 0 for t in triggers)


def frame_kind(frame: Frame) -> Kind | None:
    """(type, subtype) of a frame, or None when it is not a JSON object."""
    return frame.kind()


class StageError(Exception):
    pass


class Plan:
    """The steps of one kind, in stage order, made once: the stages interested in it and
    those with triggers to look for."""

    __slots__ = ("steps", "after")

    def __init__(
        self,
        stages: Sequence[Stage],
        kind: Kind,
        bind: Callable[[Stage], Callable[[Frame, Context], Output]],
    ) -> None:
        steps: list[Step] = []
        first = [0] * (len(stages) + 1)
        for i, s in enumerate(stages):
            first[i] = len(steps)
            if s.interested(*kind):
                steps.append((i, s, bind(s), None, b""))
            elif s.triggers:
                steps.append((i, s, bind(s), s.triggers, _lead(s.triggers)))
        first[len(stages)] = len(steps)
        self.steps = tuple(steps)
        #: ``after[i]``: the steps of stages ``i..`` (made once: the frame way goes on from
        #: a stage for every frame a stage gives)
        self.after = tuple(self.steps[f:] for f in first)


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
        #: the rules of the plain rewrites of the current run (counted at its end)
        self._rewrites: list[str] = []
        self._guard: Guard | None = None

    @property
    def guard(self) -> Guard | None:
        """A strict engine's fact guard (``compat.factguard``): every stage call made as
        that stage's, so it may touch only the facts it declares; None outside tests."""
        return self._guard

    @guard.setter
    def guard(self, guard: Guard | None) -> None:
        self._guard = guard
        self._plans.clear()  # (their steps call through the guard or not: ``_bound``)

    def index(self, stage: Stage) -> int:
        for i, s in enumerate(self.stages):
            if s is stage:
                return i
        raise KeyError(stage.rule)

    def plan(self, kind: Kind) -> Plan:
        plan = self._plans.get(kind)
        if plan is None:
            plan = Plan(self.stages, kind, self._bound)
            if len(self._plans) < MAX_PLANS:
                self._plans[kind] = plan
        return plan

    def _bound(self, stage: Stage) -> Callable[[Frame, Context], Output]:
        """What a plan's step calls: the stage's ``on_frame`` (bound once), or, in a strict
        engine, that call made as the stage's for the fact guard (``_call``)."""
        if self._guard is None:
            return stage.on_frame
        return functools.partial(self._call, stage)

    def run(self, frames: Sequence[Frame], ctx: Context, start: int = 0) -> list[Frame]:
        """Run ``frames`` through stages ``start..``; return what comes out, in order."""
        out: list[Frame] = []
        try:
            for frame in frames:
                self._one(frame, start, ctx, out)
        finally:
            self._count_rewrites()
        return out

    def _count_rewrites(self) -> None:
        """The plain rewrites of a run, counted per rule at its end (one count a rule)."""
        rewrites = self._rewrites
        if rewrites:
            if len(rewrites) == 1:  # (a line per read: no Counter for it)
                self.stats.rule(rewrites[0])["rewritten"] += 1
            else:
                for rule, n in Counter(rewrites).items():
                    self.stats.rule(rule)["rewritten"] += n
            rewrites.clear()

    def run_lines(self, lines: Sequence[bytes], ctx: Context) -> tuple[list[bytes], list[bytes]]:
        """Wire lines (without newlines) through every stage: the lines to write, in order,
        and the written lines that are not valid JSON (for the engine to log)."""
        out: list[bytes] = []
        invalid: list[bytes] = []
        frames: list[Frame] = []
        try:
            for raw in lines:
                kind = wire_kind(raw)
                frame = Frame(raw) if kind is UNKNOWN else Frame.wire(raw, kind, True)
                self._one(frame, 0, ctx, frames)
                self._written(frames, ctx, out, invalid)
                frames.clear()
        finally:
            self._count_rewrites()
        return out, invalid

    def _written(
        self, frames: list[Frame], ctx: Context, out: list[bytes], invalid: list[bytes]
    ) -> None:
        """The bytes of what a line became, appended to ``out`` (its invalid lines, to
        ``invalid``)."""
        if len(frames) == 1 and frames[0].raw:  # the common case: one line out
            f = frames[0]
            out.append(f.raw)
            if f.invalid:
                invalid.append(f.raw)
            return
        if all(f.raw for f in frames):
            out.extend([f.raw for f in frames])
        else:
            self.encode(frames, ctx, out)
        invalid.extend(f.raw for f in frames if f.invalid)

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

    def _one(self, frame: Frame, start: int, ctx: Context, out: list[Frame]) -> None:
        """``frame`` through stages ``start..``, what comes out appended to ``out``; what a
        stage returns goes on through the stages after it (depth first, so order holds)."""
        kind = frame.kind()
        if kind is None:
            self._not_json(frame, start, ctx, out)
            return
        plan = self._plans.get(kind) or self.plan(kind)
        # (``frame`` is known to be a JSON object: a proved line is, without a parse)
        checked = frame.proven
        for i, stage, on_frame, triggers, lead in plan.after[start]:
            if triggers is not None and not _triggered(frame.raw, triggers, lead):
                continue
            if not checked:
                if not isinstance(frame.obj, dict):
                    self._not_json(frame, start, ctx, out)  # a valid prefix, broken JSON
                    return
                checked = True
            self.holding = False
            try:  # (``_call`` without the guard, in line: once per rule and line)
                result = on_frame(frame, ctx)
            except Exception as exc:
                self.failed(stage, exc, ctx)
                continue
            if result is None or (len(result) == 1 and result[0] is frame):
                continue  # passed as it came (nothing to count)
            new = self._after(stage, frame, result)
            if new is not None and new.kind() == kind:
                # one frame of the same kind: the same plan goes on, from the next stage
                frame, start, checked = new, i + 1, new.proven
                continue
            for f in result:
                self._one(f, i + 1, ctx, out)
            return
        out.append(frame)

    def _call(self, stage: Stage, frame: Frame, ctx: Context) -> Output:
        """``stage.on_frame``, failing open (and, in a strict engine, as the stage's call
        for the fact guard)."""
        self.holding = False
        try:
            if self.guard is None:
                return stage.on_frame(frame, ctx)
            return cast(Output, self.guard.call(stage, stage.on_frame, frame, ctx))
        except Exception as exc:
            self.failed(stage, exc, ctx)
            return None

    def _after(self, stage: Stage, frame: Frame, result: Sequence[Frame]) -> Frame | None:
        """Count what ``stage`` made of ``frame``; the one frame of its lineage it gave (a
        plain rewrite, or the frame itself), if that is all it gave."""
        if len(result) != 1:
            self._account(stage.rule, frame, result)
            return None
        new = result[0]
        if new is not frame and new.lineage is frame.lineage:
            self._rewrites.append(stage.rule)  # _account's common case
            if not new.raw and new.rewritten_by is None:
                new.rewritten_by = stage.rule
        else:
            self._account(stage.rule, frame, result)
        return new

    def _not_json(self, frame: Frame, start: int, ctx: Context, out: list[Frame]) -> None:
        """A line that is not a JSON object: only the stages that take such lines
        (``invalid``) see it; otherwise it passes, and the engine logs it."""
        for i in self._invalid:
            if i < start:
                continue
            stage = self.stages[i]
            result = self._call(stage, frame, ctx)
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
            if f.synthesized_by is None and (f.raw or f.root is not None):
                counts["released"] += 1  # a wire frame the stage held (maybe rewritten before)
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
