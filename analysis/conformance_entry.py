"""One known difference (the file format and the policy: ``analysis.conformance``): an
``Entry``, what it matches and the reason it gives; ``Where``, what it may know about a
difference beyond its path and values; ``Known``, the entries of a file (the first match
wins). ``analysis.conformance_known`` reads them from the TOML file. Pure.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import orjson

from analysis.contract import Violation

#: an entry's ``a``/``b`` when not given (None is a value: JSON null)
UNSET: Any = object()
#: ``a``/``b`` = this: JSON null, which TOML lacks
NULL = "<null>"


def _glob(pattern: str) -> re.Pattern[str]:
    """``**`` matches anything, ``*`` anything but the `` / `` that separates path parts."""
    one = "(?:(?! / ).)*"
    return re.compile(
        ".*".join(one.join(re.escape(q) for q in p.split("*")) for p in pattern.split("**")), re.S
    )


def _number(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        return True
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _same(expected: Any, actual: Any) -> bool:
    return actual is None if expected == NULL else bool(expected == actual)


def compact(v: Any) -> str:
    """A value as compact JSON (what ``a_contains`` sees); None: the empty string."""
    return "" if v is None else orjson.dumps(v).decode()


def _exactly(expected: Any, actual: Any) -> bool:
    """``a``/``b``: not given, or the value itself."""
    return expected is UNSET or _same(expected, actual)


def _contains(needle: str | None, actual: Any) -> bool:
    """``a_contains``/``b_contains``: not given, or a substring of the compact JSON."""
    return needle is None or needle in compact(actual)


def _holds(frames: tuple[str, ...], needle: str) -> bool:
    return any(needle in f for f in frames)


def _holds_if(frames: tuple[str, ...], needle: str | None) -> bool:
    """A ``*_session_contains`` condition: not given, or some frame holds it."""
    return needle is None or _holds(frames, needle)


@attrs.frozen
class Where:
    """What a matcher may know about a difference beyond its path and values: the frames
    of its context on each side (the turn it is in, or its task's lifecycle), each side's
    whole run, the runs' result counts and the client's command lines. Frames are the
    masked objects as compact JSON (what ``a_contains`` sees)."""

    context_a: tuple[str, ...] = ()
    context_b: tuple[str, ...] = ()
    session_a: tuple[str, ...] = ()
    session_b: tuple[str, ...] = ()
    results: tuple[int, int] = (0, 0)
    argv: tuple[str, ...] = ()

    def turns(self) -> str:
        a, b = self.results
        return "more-a" if a > b else "more-b" if b > a else "same"


@attrs.frozen
class Entry:
    id: str
    paths: tuple[str, ...] = ()
    violations: tuple[str, ...] = ()
    message: str | None = None
    kind: str | None = None
    a: Any = UNSET
    b: Any = UNSET
    a_contains: str | None = None
    b_contains: str | None = None
    scenarios: tuple[str, ...] = ()
    a_context_contains: str | None = None
    b_context_contains: str | None = None
    a_context_lacks: str | None = None
    b_context_lacks: str | None = None
    a_session_contains: str | None = None
    b_session_contains: str | None = None
    turns: str | None = None
    delta: tuple[float, ...] = ()
    argv: str | None = None
    side: str = "cbc"
    missing_rule: str | None = None
    cbc: str | None = None
    design: str | None = None
    timing: str | None = None
    checker: str | None = None
    evidence: str = ""
    note: str = ""
    #: the CLI behind the bridge, as a ``cbc`` reason names it (Claude in the reverse file)
    backend: str = "cbc"
    _res: tuple[re.Pattern[str], ...] = attrs.field(init=False, eq=False, repr=False)
    _msg: re.Pattern[str] | None = attrs.field(init=False, eq=False, repr=False)
    _argv: re.Pattern[str] | None = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_res", tuple(_glob(p) for p in self.paths))
        object.__setattr__(self, "_msg", _glob(self.message) if self.message else None)
        object.__setattr__(self, "_argv", re.compile(self.argv) if self.argv else None)

    def _needs_where(self) -> bool:
        """Whether the entry has a condition on the run or the context (a ``Where``)."""
        return any(
            (
                self.a_session_contains,
                self.b_session_contains,
                self.turns,
                self._argv,
                self.a_context_contains,
                self.b_context_contains,
                self.a_context_lacks,
                self.b_context_lacks,
            )
        )

    def _run_matches(self, w: Where | None) -> bool:
        """The run-wide conditions (session, turns, argv); no ``Where``: only an entry
        without any of them matches."""
        if w is None:
            return not self._needs_where()
        return (
            _holds_if(w.session_a, self.a_session_contains)
            and _holds_if(w.session_b, self.b_session_contains)
            and self._turns_match(w)
            and self._argv_matches(w.argv)
        )

    def _turns_match(self, w: Where) -> bool:
        if self.turns is None:
            return True
        t = w.turns()
        return t == self.turns or (self.turns == "differ" and t != "same")

    def _argv_matches(self, argv: tuple[str, ...]) -> bool:
        """Every command line matches the ``argv`` regex (there must be one)."""
        return self._argv is None or (bool(argv) and all(self._argv.search(x) for x in argv))

    def _context_matches(self, w: Where | None) -> bool:
        if w is None:
            return self._run_matches(None)
        for needle, frames, want in (
            (self.a_context_contains, w.context_a, True),
            (self.b_context_contains, w.context_b, True),
            (self.a_context_lacks, w.context_a, False),
            (self.b_context_lacks, w.context_b, False),
        ):
            if needle is not None and _holds(frames, needle) != want:
                return False
        return self._run_matches(w)

    def category(self) -> str:
        return (
            "missing-rule"
            if self.missing_rule
            else "cbc"
            if self.cbc
            else "design"
            if self.design
            else "timing"
            if self.timing
            else "checker"
        )

    def reason(self, implemented: frozenset[str]) -> str:
        note = f" — {self.note}" if self.note else ""
        ev = f" (evidence: {self.evidence})" if self.evidence else ""
        if self.missing_rule:
            r = f"missing rule: {self.missing_rule}"
            if self.missing_rule in implemented:
                r += f" ({self.missing_rule} is in the profile but does not cover this)"
            return r + note
        if self.cbc:
            return f"{self.backend} behaviour the bridge cannot change: {self.cbc}{ev}"
        if self.design:
            return f"by design: {self.design}{ev}"
        if self.timing:
            return f"a race in the scenario: {self.timing}{ev}"
        return f"contract check too strict for real Claude output: {self.checker}{ev}"

    def _in_scenario(self, scenario: str) -> bool:
        return not self.scenarios or scenario in self.scenarios

    def matches_difference(
        self, scenario: str, path: str, kind: str, a: Any, b: Any, where: Where | None = None
    ) -> bool:
        if not self._res or not self._in_scenario(scenario):
            return False
        if self.kind is not None and kind != self.kind:
            return False
        if not self._values_match(a, b):
            return False
        return any(r.fullmatch(path) for r in self._res) and self._context_matches(where)

    def _values_match(self, a: Any, b: Any) -> bool:
        """``a``/``b`` exactly, ``a_contains``/``b_contains``, and ``delta`` (B − A)."""
        if not (_exactly(self.a, a) and _exactly(self.b, b)):
            return False
        if not (_contains(self.a_contains, a) and _contains(self.b_contains, b)):
            return False
        return not self.delta or (_number(a) and _number(b) and float(b) - float(a) in self.delta)

    def matches_violation(
        self, scenario: str, v: Violation, side: str = "cbc", where: Where | None = None
    ) -> bool:
        if not self.violations or not self._in_scenario(scenario):
            return False
        if side != self.side:
            return False
        if v.rule not in self.violations and "*" not in self.violations:
            return False
        if self._msg is not None and not self._msg.fullmatch(v.message):
            return False
        return self._run_matches(where)


@attrs.frozen
class Known:
    entries: tuple[Entry, ...]

    def find_difference(
        self, scenario: str, path: str, kind: str, a: Any, b: Any, where: Where | None = None
    ) -> Entry | None:
        return next(
            (e for e in self.entries if e.matches_difference(scenario, path, kind, a, b, where)),
            None,
        )

    def find_violation(
        self, scenario: str, v: Violation, side: str = "cbc", where: Where | None = None
    ) -> Entry | None:
        return next(
            (e for e in self.entries if e.matches_violation(scenario, v, side, where)), None
        )
