"""Runs frames through the ordered stages of one direction.

Hot path: the frame kind (``type``, ``subtype``) is read from the line's prefix with one
regex when the line starts with them (cbc always does; Claude mostly does), otherwise from
a parse. ``(type, subtype)`` -> the stages interested is computed once per kind and cached;
``triggers`` (raw substrings) are checked per line. A line no stage wants is never parsed
and leaves as the bytes it came in as.

Counting (per rule): an output that is the input passes; an output of the input's lineage
that is another object is a rewrite; an output of another lineage is a synthesis; an input
whose lineage is missing from the outputs was dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from compat.frames import Frame
from compat.stage import Context, Direction, Stage

if TYPE_CHECKING:
    from compat.engine import Stats

_PREFIX = re.compile(rb'\{"type":"([A-Za-z0-9_\-]+)"(?:,"subtype":"([A-Za-z0-9_\-]+)")?')


def frame_kind(frame: Frame) -> tuple[str | None, str | None] | None:
    """(type, subtype) of a frame, or None when it is not a JSON object."""
    raw = frame.raw
    if raw and not frame.parsed:
        m = _PREFIX.match(raw)
        if m is not None:
            t = m.group(1).decode()
            st = m.group(2)
            if st is not None:
                return t, st.decode()
            if t != "system":
                # a non-system frame may still carry a subtype (result, control frames)
                if b'"subtype"' not in raw:
                    return t, None
    obj = frame.obj
    if not isinstance(obj, dict):
        return None
    t, st = obj.get("type"), obj.get("subtype")
    return (t if isinstance(t, str) else None, st if isinstance(st, str) else None)


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
        self._dispatch: dict[tuple[str | None, str | None], tuple[int, ...]] = {}
        self._triggered = [
            (i, s.triggers) for i, s in enumerate(self.stages) if s.triggers
        ]
        #: stages that also take lines that are not JSON objects (``Stage.invalid``)
        self._invalid = [i for i, s in enumerate(self.stages) if s.invalid]

    def index(self, stage: Stage) -> int:
        for i, s in enumerate(self.stages):
            if s is stage:
                return i
        raise KeyError(stage.rule)

    def _wanted(self, frame: Frame) -> set[int] | None:
        """Indexes of the stages that want this frame; None for a non-JSON line."""
        kind = frame_kind(frame)
        if kind is None:
            return None
        idx = self._dispatch.get(kind)
        if idx is None:
            idx = self._dispatch[kind] = tuple(
                i for i, s in enumerate(self.stages) if s.interested(*kind)
            )
        wanted = set(idx)
        raw = frame.raw
        if self._triggered:
            if raw:
                for i, trig in self._triggered:
                    if i not in wanted:
                        for t in trig:
                            if t in raw:
                                wanted.add(i)
                                break
            else:  # a rewritten/synthesized frame: let the triggered stages look
                wanted.update(i for i, _ in self._triggered)
        return wanted

    def run(self, frames: Sequence[Frame], ctx: Context, start: int = 0) -> list[Frame]:
        """Run ``frames`` through stages ``start..``; return what comes out, in order."""
        out: list[Frame] = []
        stages = self.stages
        n = len(stages)
        # a small explicit stack keeps order: (frame, next stage index, wanted set)
        todo: list[tuple[Frame, int, set[int] | None]] = [
            (f, start, self._wanted(f)) for f in reversed(frames)
        ]
        while todo:
            frame, first, wanted = todo.pop()
            i = first
            if wanted is not None:
                while i < n and i not in wanted:
                    i += 1
            if wanted is None or (i < n and not isinstance(frame.obj, dict)):
                # not a JSON object (or a valid prefix, broken JSON): only the stages that
                # take such lines see it; otherwise it passes and the engine logs it
                i = next((j for j in self._invalid if j >= first), n)
            if i >= n:
                out.append(frame)
                continue
            stage = stages[i]
            result = self._call(stage, frame, ctx)
            if result is None:
                todo.append((frame, i + 1, wanted))
                continue
            self._account(stage.rule, frame, result)
            for f in reversed(result):
                todo.append((f, i + 1, wanted if f is frame else self._wanted(f)))
        return out

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

    def _call(self, stage: Stage, frame: Frame, ctx: Context) -> Sequence[Frame] | None:
        self.holding = False
        try:
            return stage.on_frame(frame, ctx)
        except Exception as exc:
            if self.strict:
                raise
            self.stats.rule(stage.rule)["errors"] += 1
            ctx.log(stage.rule, f"stage failed open ({type(exc).__name__}: {exc})", "error")
            return None

    def _account(self, rule: str, frame: Frame, result: Sequence[Frame]) -> None:
        lineage = frame.lineage
        counts = self.stats.rule(rule)
        kept = False
        for f in result:
            if f is frame:
                kept = True
            elif f.lineage is lineage:
                kept = True
                counts["rewritten"] += 1
            elif f.synthesized_by == rule and f.root is None:
                counts["synthesized"] += 1
            else:  # a frame the stage held earlier and lets go now
                counts["released"] += 1
        if not kept:
            counts["held" if self.holding else "dropped"] += 1
