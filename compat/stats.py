"""Counters of one engine: frames in/out per direction, per-rule counts, the framing's
peak buffer. The pipeline counts what stages return; stages count what they do out of band
(``Context.count``); ``--stats`` and every capture's last record print ``as_dict()``."""

from __future__ import annotations

from collections import Counter
from typing import Any


class Stats:
    """Frames in/out per direction, per-rule counters, and the odd lines seen."""

    def __init__(self) -> None:
        self.frames: dict[str, Counter[str]] = {"up": Counter(), "down": Counter()}
        self.rules: dict[str, Counter[str]] = {}
        self.peak_buffer = 0

    def rule(self, rule: str) -> Counter[str]:
        c = self.rules.get(rule)
        if c is None:
            c = self.rules[rule] = Counter()
        return c

    def count(self, rule: str, what: str, n: int = 1) -> None:
        self.rule(rule)[what] += n

    def as_dict(self) -> dict[str, Any]:
        return {
            "frames": {d: dict(c) for d, c in self.frames.items()},
            "rules": {r: dict(c) for r, c in sorted(self.rules.items()) if c},
            "peak_buffer": self.peak_buffer,
        }
