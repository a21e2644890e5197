"""Runs frames through the ordered stages of one direction.

Hot path (ARCHITECTURE.md "Hot path"; ``bench/throughput.py`` and ``bench/process.py``
measure it): a line's kind (``compat.frames.wire_kind``, below) selects its *plan*, made once
per kind (``Plan``: the stages interested in the kind, and those whose ``triggers``, raw
substrings, must be looked for in the line; at most ``MAX_PLANS`` kinds are kept). Frames then
go one at a time through their plan; a trigger is only searched for when its stage is
reached, and a frame no stage wants is never parsed and leaves as the bytes it came in as. A
direction with no stage at all never comes here (``compat.engine``: its lines are relayed
a block at a time, unread). A substring test on a line's bytes on this path is
``raw.find(sub) >= 0``, not ``sub in raw``: CPython's ``in`` on bytes first tries ``sub``
as an integer, raising and clearing a ``TypeError`` each time (~1,000 instructions). And
a short ``sub`` is slow to look for wherever its last byte or its neighbours are common
bytes of JSON text (``"``, ``u``, ``h``…): ``find`` then steps one or two bytes at a time
(``line-separators``' 3-byte triggers took 0.86 us each on a 1 KB line), where ``find``
of one byte is a ``memchr`` (0.16 us): so triggers that start with the same byte are
looked for only in a line that has it (``Plan``'s lead byte).

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
without a call. On the frame way a stage is asked when its call is due, and the answer is
kept for the kind only until a stage that is not ``pure`` is called (``generation``), or
anything else ran that may change stage state (the engine's ``invalidate``: the other
direction's lines, a timer, a hook): it is the state's as it stands then, and so a cold
answer reads the stages' state and the shared facts, never the clock; a stage whose
``on_frame`` decides from ``kind()`` alone where ``cold`` does (``cold_parsed``) is also
skipped for a frame an earlier stage parsed or rewrote.

The proof: every wire line is validated once (``compat.frames.wire_kind``: ``prove``, the
whole text in C building only ``type`` and ``subtype``, then one comparison with the prefix
that kind is written with). It proves the line is a JSON object, which a stage that edits
bytes (``private-fields``) relies on, and that its prefix names its kind: with duplicate keys
the last one counts (``JSON.parse``), so a line whose proof disagrees with its prefix, and
one the proof cannot take (a lone surrogate escape, or not JSON: ``compat.frames.loads``
then decides), takes the frame way with the kind its parse gives.

Fast lines (``run_lines``, what the engine feeds wire lines through): a line whose kind is
proved, and whose plan, once the cold steps are left out, holds only stages that can act
on its bytes (``raw_pass``: lazy and pure, like ``private-fields``) and triggers that are
not in it, never becomes a ``Frame``: those stages' ``on_raw`` run on the bytes and the
result is written as it is. A stage's ``on_raw`` answering None, a trigger found, or any
other step sends the line the frame way (``_one``) from that stage on, as the steps before
it left it (they ran once: an ``on_raw`` may keep its stage's own state as ``on_frame``
would). Whether a kind can have fast lines at all is the plan's (``Plan.fast``); the
steps, which depend on the cold answers, are kept per kind until a stage that is not
``pure`` is called (forgotten when the line it was called for is done: nothing reads them
before the next line's start), or the engine says something else ran (``invalidate``),
and only then asked again, for the next line of that kind; a kind whose last line was
sent the frame way by a stage that is not cold asks that stage first (``Plan.blocker``).

Counting (per rule): an output that is the input passes; an output of the input's lineage
that is another object is a rewrite; an output of another lineage is a synthesis; an input
whose lineage is missing from the outputs was dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from compat.factguard import Guard
from compat.frames import UNKNOWN, Frame, Kind, wire_kind
from compat.stage import Context, Direction, Stage
from compat.stats import Stats

#: one step of a plan: (stage index, stage, lazy, cools (0: no; 1: for an unparsed wire
#: line; 2: for any frame, ``cold_parsed``), pure, triggers to look for or None: the kind is
#: wanted, the triggers' lead byte: ``_lead``)
Step = tuple[int, Stage, bool, int, bool, tuple[bytes, ...] | None, bytes]
#: a fast line's steps: (``on_raw`` of a ``raw_pass`` stage, or None for a triggered stage
#: that must not see the line, its triggers, their lead byte, the rule id, the stage's
#: index)
FastStep = tuple[Callable[[bytes], bytes | None] | None, tuple[bytes, ...], bytes, str, int]
_NOT_YET: Any = object()
#: kinds whose plan is kept (a hostile stream can name any number of kinds: past this,
#: plans are made per line, not kept)
MAX_PLANS = 1024


def _lead(triggers: tuple[bytes, ...]) -> bytes:
    """The byte every one of ``triggers`` starts with (a line without it holds none of
    them: one ``memchr``), or ``b""`` when they start differently (``find`` of it is 0:
    each trigger is looked for)."""
    first = {t[:1] for t in triggers}
    return first.pop() if len(first) == 1 else b""


def frame_kind(frame: Frame) -> Kind | None:
    """(type, subtype) of a frame, or None when it is not a JSON object."""
    return frame.kind()


class StageError(Exception):
    pass


class Plan:
    """The steps of one kind, in stage order, made once: the stages interested in it and
    those with triggers to look for; ``fast``: every step can be settled without a frame
    (a ``raw_pass`` stage, a trigger, or a stage that may be cold), so whether a line of
    this kind is a fast line depends only on the cold answers."""

    __slots__ = ("steps", "after", "fast", "blocker", "cold_at", "cold_is")

    def __init__(self, stages: Sequence[Stage], kind: Kind) -> None:
        steps: list[Step] = []
        first = [0] * (len(stages) + 1)
        for i, s in enumerate(stages):
            first[i] = len(steps)
            cools = 2 if s.cold_parsed else int(s.cools)
            if s.interested(*kind):
                steps.append((i, s, s.lazy, cools, s.pure, None, b""))
            elif s.triggers:
                steps.append((i, s, s.lazy, cools, s.pure, s.triggers, _lead(s.triggers)))
        first[len(stages)] = len(steps)
        self.steps = tuple(steps)
        #: ``after[i]``: the steps of stages ``i..`` (made once: the frame way goes on from
        #: a stage for every frame a stage gives, a slice each was a copy each)
        self.after = tuple(self.steps[f:] for f in first)
        self.fast = all(
            triggers is not None or cools or (lazy and s.raw_pass and pure)
            for _, s, lazy, cools, pure, triggers, _ in steps
        )
        #: the stage (one that may be cold) that last sent a line of this kind the frame way
        self.blocker: Stage | None = None
        #: per stage index: the ``Pipeline.generation`` its cold answer for this kind was
        #: given in, and the answer (the frame way asks again only in a later generation)
        self.cold_at = [-1] * len(stages)
        self.cold_is = [False] * len(stages)


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
        self._coolers = [(i, s) for i, s in enumerate(self.stages) if s.cools]
        #: per kind: the steps of a fast line, None when it must take the frame way; kept
        #: until a stage that is not ``pure`` is called (it may change a cold answer)
        self._fast: dict[Kind, tuple[FastStep, ...] | None] = {}
        #: the rules of the plain rewrites of the current run (counted at its end)
        self._rewrites: list[str] = []
        #: bumped after every call of a stage that is not ``pure`` and at each run: cold
        #: answers given in the current generation still hold
        self.generation = 0
        #: cold steps and fast lines on (tests switch them off to compare with the
        #: calling path)
        self.use_cold = True
        self.use_fast = True
        #: a strict engine's fact guard (``compat.factguard``): every stage call made as
        #: that stage's, so it may touch only the facts it declares; None outside tests
        self.guard: Guard | None = None

    def index(self, stage: Stage) -> int:
        for i, s in enumerate(self.stages):
            if s is stage:
                return i
        raise KeyError(stage.rule)

    def plan(self, kind: Kind) -> Plan:
        plan = self._plans.get(kind)
        if plan is None:
            plan = Plan(self.stages, kind)
            if len(self._plans) < MAX_PLANS:
                self._plans[kind] = plan
        return plan

    def run(self, frames: Sequence[Frame], ctx: Context, start: int = 0) -> list[Frame]:
        """Run ``frames`` through stages ``start..``; return what comes out, in order."""
        out: list[Frame] = []
        self.invalidate()  # (out of band: a timer or hook may have changed any state)
        try:
            for frame in frames:
                self._one(frame, start, ctx, out)
        finally:
            self._fast.clear()  # (what the stages did may change what is cold)
            self._count_rewrites()
        return out

    def invalidate(self) -> None:
        """Forget every kept cold answer and fast line's steps: something other than this
        pipeline's own stage calls may have changed the state they were read from (the
        engine calls it when another pipeline, a timer or a hook ran since this one last
        did)."""
        self._fast.clear()
        self.generation += 1

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
        rewrites = self._rewrites
        frames: list[Frame] = []
        fast = self._fast
        try:
            for raw in lines:
                kind = wire_kind(raw)
                if kind is not UNKNOWN:
                    steps = fast.get(kind, _NOT_YET)
                    if steps is _NOT_YET:
                        steps = self._fast_steps(kind, ctx)
                    start = 0
                    frame = None
                    if steps is not None:
                        new, start = self._fast_line(raw, steps, rewrites)
                        if start < 0:
                            out.append(new)
                            continue
                        if new is not raw:  # the steps before ``start`` rewrote it
                            frame = Frame.wire(raw, kind, True).replace_raw(new, proven=True)
                    if frame is None:
                        frame = Frame.wire(raw, kind, True)
                else:
                    start = 0
                    frame = Frame(raw)
                generation = self.generation
                self._one(frame, start, ctx, frames)
                if self.generation != generation:
                    fast.clear()  # a stage that is not pure ran: it may change what is cold
                if len(frames) == 1 and frames[0].raw:  # the common case: one line out
                    f = frames[0]
                    out.append(f.raw)
                    if f.invalid:
                        invalid.append(f.raw)
                    frames.clear()
                    continue
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
            self._count_rewrites()
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
    def _fast_line(
        raw: bytes, steps: tuple[FastStep, ...], rewrites: list[str]
    ) -> tuple[bytes, int]:
        """A fast line through its steps (see "Fast lines"): the line as they left it, and
        -1 when it is done, else the index of the stage the frame way goes on from (a
        trigger found, or an ``on_raw`` that answered None: the steps before it are
        settled, their rewrites counted, and are not run again)."""
        new = raw
        for on_raw, triggers, lead, rule, index in steps:
            if on_raw is None:
                if new.find(lead) >= 0:
                    for t in triggers:
                        if new.find(t) >= 0:
                            return new, index
                continue
            got = on_raw(new)
            if got is None:
                return new, index
            if got is not new:
                rewrites.append(rule)
                new = got
        return new, -1

    def _fast_steps(self, kind: Kind, ctx: Context) -> tuple[FastStep, ...] | None:
        """A fast line's steps for ``kind`` as the cold answers stand (see "Fast lines")."""
        plan = self.plan(kind)
        found: tuple[FastStep, ...] | None = None
        use_cold = self.use_cold
        blocker = plan.blocker
        if not (self.use_fast and plan.fast):
            pass
        elif blocker is not None and use_cold and not self._cold(blocker, kind, ctx):
            pass  # still not cold: the line takes the frame way (one question, not a walk)
        else:
            steps: list[FastStep] = []
            for i, stage, lazy, cools, pure, triggers, lead in plan.steps:
                if cools and use_cold and self._cold(stage, kind, ctx):
                    continue
                if triggers is not None:
                    steps.append((None, triggers, lead, stage.rule, i))
                elif lazy and stage.raw_pass and pure:
                    steps.append((self._on_raw(stage), (), b"", stage.rule, i))
                else:
                    plan.blocker = stage  # (a stage that may be cold: ``Plan.fast``)
                    break
            else:
                found = tuple(steps)
        self._fast[kind] = found
        return found

    def _cold(self, stage: Stage, kind: Kind, ctx: Context) -> bool:
        if self.guard is None:
            return stage.cold(kind, ctx)
        return bool(self.guard.call(stage, stage.cold, kind, ctx))

    def _on_raw(self, stage: Stage) -> Callable[[bytes], bytes | None]:
        guard = self.guard
        if guard is None:
            return stage.on_raw
        return lambda raw: guard.call(stage, stage.on_raw, raw)

    def _one(self, frame: Frame, start: int, ctx: Context, out: list[Frame]) -> None:
        """``frame`` through stages ``start..``, what comes out appended to ``out``; what a
        stage returns goes on through the stages after it (depth first, so order holds).

        A stage that may be cold is asked (``cold``) when its call is due, while the frame
        is an unparsed wire line (or any frame, ``cold_parsed``): the answer is the state's
        as it stands then; it is kept (``Plan.cold_at``) only until a stage that is not
        ``pure`` is called, which may change it."""
        kind = frame.kind()
        if kind is None:
            self._not_json(frame, start, ctx, out)
            return
        raw = frame.raw
        use_cold = self.use_cold
        plan = self._plans.get(kind) or self.plan(kind)
        cold_at = plan.cold_at
        checked = False  # (``frame`` is known to be a JSON object: asked once a frame)
        for i, stage, lazy, cools, pure, triggers, lead in plan.after[start]:
            if cools and use_cold and (cools == 2 or (raw and not frame.parsed)):
                if cold_at[i] == self.generation:
                    cold = plan.cold_is[i]
                else:
                    cold = plan.cold_is[i] = self._cold(stage, kind, ctx)
                    cold_at[i] = self.generation
                if cold:
                    continue  # it would pass this frame and change nothing
            if triggers is not None:
                if raw:
                    if raw.find(lead) < 0:
                        continue
                    for t in triggers:
                        if raw.find(t) >= 0:
                            break
                    else:
                        continue
                elif stage.raw_triggers:  # a frame a rule rewrote: dumps does its job
                    continue  # (the other triggered stages look at it)
            if not lazy and not checked:
                if not isinstance(frame.obj, dict):
                    self._not_json(frame, start, ctx, out)  # a valid prefix, broken JSON
                    return
                checked = True
            self.holding = False
            try:
                if self.guard is None:
                    result = stage.on_frame(frame, ctx)
                else:
                    result = self.guard.call(stage, stage.on_frame, frame, ctx)
            except Exception as exc:
                result = None
                self.failed(stage, exc, ctx)
            if not pure:
                self.generation += 1  # (after the call: what it changed, answers ask again)
            if result is None:
                continue
            if len(result) == 1:
                new = result[0]
                if new is not frame and new.lineage is frame.lineage:
                    self._rewrites.append(stage.rule)  # _account's common case
                    if not new.raw and new.rewritten_by is None:
                        new.rewritten_by = stage.rule
                else:
                    self._account(stage.rule, frame, result)
                if new.kind() == kind:
                    # one frame of the same kind: the same plan goes on, from the next stage
                    frame = new
                    raw = frame.raw
                    start = i + 1
                    checked = False
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
                if self.guard is None:
                    result = stage.on_frame(frame, ctx)
                else:
                    result = self.guard.call(stage, stage.on_frame, frame, ctx)
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
