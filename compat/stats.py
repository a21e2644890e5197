"""Counters of one engine: frames in/out per direction, per-rule counts, the framing's
peak buffer. The pipeline counts what stages return; stages count what they do out of band
(``Context.count``); ``--stats`` and every capture's last record print ``as_dict()``.

A counter's names may come from a peer (``vocabulary``'s ``dropped:<type>``, ``control``'s
``absorbed:<type>``), so what ``count`` keeps is bounded whatever the peer invents: a name
is cut to ``MAX_NAME`` characters (``compat.text.clip``), and a counter holds at most
``MAX_NAMES`` distinct names; past them a new name counts under ``OTHER`` (names already
there keep counting, and ``KEPT``, the pipeline's own, always count by name). Memory and
the ``--stats`` line stay flat: 100,000 invented frame types make one ``other`` count.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from compat.text import clip

#: distinct names one counter of ``count`` holds (besides ``KEPT`` and ``OTHER``)
MAX_NAMES = 64
#: the longest name ``count`` keeps, in characters (a longer one is cut, ending in "…")
MAX_NAME = 64
#: where a name past ``MAX_NAMES`` is counted
OTHER = "other"
#: the names the flow balance is made of: never folded into ``OTHER``
KEPT = frozenset({"rewritten", "dropped", "synthesized", "held", "released", "errors"})


class Stats:
    """Frames in/out per direction, per-rule counters, and the odd lines seen."""

    def __init__(self) -> None:
        self.frames: dict[str, Counter[str]] = {"up": Counter(), "down": Counter()}
        self.rules: dict[str, Counter[str]] = {}
        self.peak_buffer = 0

    def rule(self, rule: str) -> Counter[str]:
        """The counter of ``rule``; a caller that adds to it directly uses fixed names only
        (a name from a peer goes through ``count``)."""
        c = self.rules.get(rule)
        if c is None:
            c = self.rules[rule] = Counter()
        return c

    def count(self, rule: str, what: str, n: int = 1) -> None:
        c = self.rule(rule)
        if what in c:
            c[what] += n
        else:
            c[bounded_name(c, what)] += n

    def as_dict(self) -> dict[str, Any]:
        return {
            "frames": {d: dict(c) for d, c in self.frames.items()},
            "rules": {r: dict(c) for r, c in sorted(self.rules.items()) if c},
            "peak_buffer": self.peak_buffer,
        }


def bounded_name(counter: Counter[str], what: str) -> str:
    """The key a name not yet in ``counter`` is counted under: the name cut to ``MAX_NAME``,
    or ``OTHER`` once ``counter`` holds ``MAX_NAMES`` names of its own."""
    if what in KEPT:
        return what
    name = clip(what, MAX_NAME)
    if name in counter:
        return name
    held = len(counter) - sum(1 for k in (OTHER, *KEPT) if k in counter)
    return OTHER if held >= MAX_NAMES else name
