"""Conformance: what still tells cbc-through-the-bridge apart from Claude Code 2.1.220, and why.

Input: per scenario, the twin captures (``claude``: the real Claude Code 2.1.220;
``cbc-bridged``: the real cbc 2.163.0 behind ``bridge run --profile cbc-to-claude``;
``cbc-raw``: the same cbc with no bridge). ``compare`` diffs each cbc side against Claude
(``analysis.diff``) and runs the contract (``analysis.contract``) on every side's client view;
``explain`` gives every remaining difference and every contract violation of the bridged
side a reason from the *known differences* (a reviewed TOML file, ``load_known``):

    [[difference]]
    id = "init-version"                       # unique; reported when it matches nothing
    paths = ["* / system/init* / claude_code_version"]   # the whole ``Difference.path``
                                              # must match; `*`: any characters but the
                                              # " / " between path parts, `**`: anything
    kind = "only-a"                           # optional: changed | only-a | only-b
    a = "2.1.220"                             # optional: A's / B's (masked) value, exactly
                                              # ("<null>": JSON null, which TOML lacks)
    a_contains = '"parent_tool_use_id":"<tool_use#'   # optional: a substring of A's / B's
                                              # value as compact JSON (b_contains)
    # optional, the behaviour's signature in the frames around the difference (its
    # "context": the turn it is in, or the task's lifecycle when the path is a task's):
    a_context_contains = '"origin":{"kind":"task-notification"}'  # a frame of A's context
                                              # holds this (compact JSON; b_context_contains)
    b_context_lacks = '"phaseIndex":2'        # no frame of B's context holds it (a_…)
    a_session_contains = '"task_type":"local_agent"'  # some frame of A's whole run holds
                                              # it (b_session_contains), e.g. a background
                                              # agent ran
    turns = "more-a"                          # the runs' result counts: more-a | more-b |
                                              # differ | same (one side ran a turn more)
    delta = [-1, 1]                           # numeric values: B − A is one of these
    argv = '--include-partial-messages'       # the client's command line (both runs)
                                              # matches this regex (re.search)
    scenarios = ["simple-success"]            # optional, discouraged: only in these
                                              # scenarios (an entry names a behaviour)
    violations = ["init-shape"]               # or: contract violations with these rule ids
    message = "*claude_code_version*"         # optional, with `violations`: message glob
    side = "claude"                           # with `violations`: a violation of the Claude
                                              # run (default: of the bridged cbc run)
    # exactly one reason:
    missing_rule = "init-shape"               # a rule (PROTOCOL.md id) not written, or not
                                              # covering this yet
    cbc = "what cbc does that no rule can undo"   # cbc behaviour the bridge cannot change
    design = "why the bridge differs on purpose"  # a deliberate choice (a rule's default)
    timing = "which race"                     # the scenario races two events: their order
                                              # differs from run to run, on either CLI
    checker = "why the check is wrong here"   # the contract check trips on real Claude output
    evidence = "captures/twins/..., PROTOCOL.md §2"   # required with `cbc` and `checker`
    note = "free text"

A ``violations`` entry takes the session and ``argv`` conditions (a violation has no
context). The first matching entry wins. Nothing is ever hidden: a difference no entry matches is
``unexplained``; so is a violation of a rule the bridge already implements (a bug) and a
violation on the Claude side (the checker is wrong) that no ``checker`` entry names. A
violation of a rule the bridge does not implement yet is explained mechanically as
"missing rule: <id>" (the contract is the reviewed list of rules). A ``missing_rule`` entry
whose rule now exists in the profile says so ("<id> is in the profile but does not cover
this"): a gap, still visible.

The same holds in the other direction (``REVERSE``, profile ``claude-to-cbc``): the
reference is raw cbc 2.163.0 (``cbc``), the bridged side Claude Code behind the profile
(``claude-bridged``), the "before" side raw Claude (``claude-raw``), the checker cbc's
contract (``analysis.contract_cbc``), the known differences
``analysis/data/known_differences_reverse.toml`` (``load_known(..., direction=REVERSE)``:
``missing_rule`` names a reverse rule or a cbc contract rule; ``side = "reference"``, or
``"claude"`` in the forward file, is a violation of the reference run).

Pure: text in (TOML, captures), data out; ``analysis.conformance_render`` turns it into the
table (Markdown, text, JSON); ``analysis.conformance_cmd`` does the I/O.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import orjson

from analysis import contract, contract_cbc
from analysis.contract import Violation, check
from analysis.diff import DiffOptions, DiffResult, diff
from compat.capture import Capture


@attrs.frozen
class Direction:
    """Which way a conformance table looks: the profile, the roles of a twin set
    (reference, bridged, raw), the checker of the client's view, and the names the table
    gives the two CLIs."""

    profile: str
    roles: tuple[str, str, str]
    check: Callable[[Capture], list[Violation]]
    reference: str  # the CLI the client expects ("Claude")
    other: str  # the CLI behind the bridge ("cbc")
    #: the contract's own rule ids (a ``missing_rule`` may name one)
    contract_rules: frozenset[str] = frozenset()


FORWARD = Direction(
    "cbc-to-claude", ("claude", "cbc-bridged", "cbc-raw"), contract.check, "Claude", "cbc"
)
REVERSE = Direction(
    "claude-to-cbc",
    ("cbc", "claude-bridged", "claude-raw"),
    contract_cbc.check,
    "cbc",
    "Claude",
    frozenset(
        {
            "framing",
            "rev-vocabulary",
            "rev-task-type",
            "rev-interrupted-turn",
            "rev-initialize-reply",
            "rev-mcp-status",
            "rev-local-command",
            "rev-interrupt-marker",
            "rev-background-agent",
            "rev-session-id",
        }
    ),
)
DIRECTIONS = {d.profile: d for d in (FORWARD, REVERSE)}

#: the roles of a twin set, in table order
ROLES = ("claude", "cbc-bridged", "cbc-raw")
#: rules that are not pipeline stages but are implemented (pure translations, compat/argv.py,
#: compat/env.py); the stage rules come from the profile
TRANSLATION_RULES = frozenset({"argv", "env"})
KINDS = ("changed", "only-a", "only-b")
TURNS = ("more-a", "more-b", "differ", "same")
UNEXPLAINED = "unexplained"
_UNSET: Any = object()
#: every rule id of PROTOCOL.md, and the contract's own (framing, frame-fields, redact): a
#: ``missing_rule`` must be one of them or a rule of the profile (``implemented_rules``)
RULE_IDS = frozenset(
    {
        "task-type",
        "workflow-name",
        "workflow-prompt",
        "late-progress",
        "task-status",
        "task-fields",
        "terminal-guarantee",
        "tasks-snapshot",
        "task-noise",
        "task-correlation",
        "progress-final",
        "interrupt-terminal",
        "progress-snapshot",
        "init-once",
        "init-shape",
        "private-fields",
        "vocabulary",
        "result-shape",
        "interrupted-turn",
        "foreign-init",
        "tool-parent",
        "initialize-reply",
        "interrupt-request",
        "interrupt-reply",
        "permission-reply",
        "permission-cancel",
        "unsupported-control",
        "argv",
        "session-pin",
        "permission-routing",
        "env",
        "stdin-vocabulary",
        "user-line",
        "eof-wind-down",
        "framing",
        "frame-fields",
        "redact",
    }
)
REASONS = ("missing_rule", "cbc", "design", "timing", "checker")
#: categories of an explained item, in display order, then "unexplained"
CATEGORIES = ("missing-rule", "cbc", "design", "timing", "checker")
_ENTRY_KEYS = {
    "id",
    "paths",
    "violations",
    "message",
    "kind",
    "a",
    "b",
    "a_contains",
    "b_contains",
    "scenarios",
    "a_context_contains",
    "b_context_contains",
    "a_context_lacks",
    "b_context_lacks",
    "a_session_contains",
    "b_session_contains",
    "turns",
    "delta",
    "argv",
    "side",
    *REASONS,
    "evidence",
    "note",
}


_CONTEXT_KEYS = ("a_context_contains", "b_context_contains", "a_context_lacks", "b_context_lacks")


class KnownError(ValueError):
    pass


def implemented_rules(profile: str = "cbc-to-claude") -> frozenset[str]:
    from compat.profiles import known_rules

    return frozenset(known_rules(profile)) | TRANSLATION_RULES


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


def _compact(v: Any) -> str:
    return "" if v is None else orjson.dumps(v).decode()


NULL = "<null>"


def _jsons(frames: Sequence[Any]) -> tuple[str, ...]:
    return tuple(_compact(f.obj) for f in frames if f is not None)


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
class Context:
    """Per comparison: the ``Where`` of each difference (by index) and the run-wide part."""

    base: Where
    sections: tuple[str, ...]  # per difference: the key of its context
    frames_a: dict[str, tuple[str, ...]]
    frames_b: dict[str, tuple[str, ...]]

    @staticmethod
    def of(result: DiffResult, a: Capture | None = None, b: Capture | None = None) -> Context:
        al = result.alignment
        fa: dict[str, list[str]] = {}
        fb: dict[str, list[str]] = {}
        where: dict[int, str] = {}
        if al is not None:
            for u in al.units:
                key = f"turn:{u.section}" if u.label != "lifecycle" and not _is_task(u) else ""
                if key:
                    fa.setdefault(key, []).extend(_jsons([u.a]))
                    fb.setdefault(key, []).extend(_jsons([u.b]))
                for i in u.diffs:
                    where.setdefault(i, key or f"task:{u.section}")
            for name, ta, tb in al.tasks:
                fa[f"task:{name}"] = list(_jsons(ta.events)) if ta else []
                fb[f"task:{name}"] = list(_jsons(tb.events)) if tb else []
        turns = result.summary.get("turns", [0, 0])
        argv = tuple(_argv(c) for c in (a, b) if c is not None)
        base = Where(
            session_a=tuple(x for v in fa.values() for x in v),
            session_b=tuple(x for v in fb.values() for x in v),
            results=(int(turns[0]), int(turns[1])),
            argv=argv,
        )
        n = len(result.differences)
        return Context(
            base,
            tuple(where.get(i, "") for i in range(n)),
            {k: tuple(v) for k, v in fa.items()},
            {k: tuple(v) for k, v in fb.items()},
        )

    def at(self, i: int) -> Where:
        key = self.sections[i] if i < len(self.sections) else ""
        return attrs.evolve(
            self.base, context_a=self.frames_a.get(key, ()), context_b=self.frames_b.get(key, ())
        )


def _is_task(u: Any) -> bool:
    return not (u.section.startswith("turn ") or u.section.startswith("after turn "))


def _argv(c: Capture) -> str:
    import shlex

    argv = c.header.get("argv")
    if not isinstance(argv, list):
        return ""
    return shlex.join(str(x) for x in argv[1:])


def _holds(frames: tuple[str, ...], needle: str) -> bool:
    return any(needle in f for f in frames)


@attrs.frozen
class Entry:
    id: str
    paths: tuple[str, ...] = ()
    violations: tuple[str, ...] = ()
    message: str | None = None
    kind: str | None = None
    a: Any = _UNSET
    b: Any = _UNSET
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

    def _run_matches(self, w: Where | None) -> bool:
        """The run-wide conditions (session, turns, argv); no ``Where``: only an entry
        without any of them matches."""
        if w is None:
            return not (
                self.a_session_contains
                or self.b_session_contains
                or self.turns
                or self._argv
                or self.a_context_contains
                or self.b_context_contains
                or self.a_context_lacks
                or self.b_context_lacks
            )
        if self.a_session_contains is not None and not _holds(w.session_a, self.a_session_contains):
            return False
        if self.b_session_contains is not None and not _holds(w.session_b, self.b_session_contains):
            return False
        if self.turns is not None:
            t = w.turns()
            if t != self.turns and not (self.turns == "differ" and t != "same"):
                return False
        return self._argv is None or (bool(w.argv) and all(self._argv.search(x) for x in w.argv))

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

    def matches_difference(
        self, scenario: str, path: str, kind: str, a: Any, b: Any, where: Where | None = None
    ) -> bool:
        if not self._res or (self.scenarios and scenario not in self.scenarios):
            return False
        if self.kind is not None and kind != self.kind:
            return False
        if self.a is not _UNSET and not _same(self.a, a):
            return False
        if self.b is not _UNSET and not _same(self.b, b):
            return False
        if self.a_contains is not None and self.a_contains not in _compact(a):
            return False
        if self.b_contains is not None and self.b_contains not in _compact(b):
            return False
        if self.delta and not (_number(a) and _number(b) and float(b) - float(a) in self.delta):
            return False
        return any(r.fullmatch(path) for r in self._res) and self._context_matches(where)

    def matches_violation(
        self, scenario: str, v: Violation, side: str = "cbc", where: Where | None = None
    ) -> bool:
        if not self.violations or (self.scenarios and scenario not in self.scenarios):
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


def load_known(
    text: str, source: str = "<known differences>", direction: Direction | None = None
) -> Known:
    """Parse a known-differences file strictly: unknown keys, wrong types, duplicate ids,
    an entry with no match or with zero or two reasons are errors naming the entry."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise KnownError(f"{source}: not valid TOML: {e}") from e
    extra = set(data) - {"difference"}
    if extra:
        raise KnownError(
            f"{source}: unknown top-level key(s) {sorted(extra)} (only [[difference]] tables)"
        )
    raw = data.get("difference", [])
    if not isinstance(raw, list):
        raise KnownError(f"{source}: `difference` must be an array of tables ([[difference]])")
    entries, seen = [], set()
    for i, item in enumerate(raw):
        where = f"{source}: difference[{i}]"
        if not isinstance(item, dict):
            raise KnownError(f"{where}: not a table")
        entry = _entry(item, where, direction or FORWARD)
        if entry.id in seen:
            raise KnownError(f"{where}: duplicate id {entry.id!r}")
        seen.add(entry.id)
        entries.append(entry)
    return Known(tuple(entries))


def _entry(item: dict[str, Any], where: str, direction: Direction) -> Entry:
    unknown = set(item) - _ENTRY_KEYS
    if unknown:
        raise KnownError(f"{where}: unknown key(s) {sorted(unknown)}")
    where = f"{where} ({item.get('id', '?')})"

    def text(key: str, required: bool = False) -> str | None:
        v = item.get(key)
        if v is None and not required:
            return None
        if not isinstance(v, str) or not v.strip():
            raise KnownError(f"{where}: `{key}` must be a non-empty string")
        return v

    def strings(key: str) -> tuple[str, ...]:
        v = item.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise KnownError(f"{where}: `{key}` must be a list of non-empty strings")
        return tuple(v)

    paths, violations = strings("paths"), strings("violations")
    if not paths and not violations:
        raise KnownError(f"{where}: give `paths` (diff paths) or `violations` (rule ids)")
    if item.get("message") is not None and not violations:
        raise KnownError(f"{where}: `message` goes with `violations`")
    kind = text("kind")
    if kind is not None and kind not in KINDS:
        raise KnownError(f"{where}: `kind` must be one of {', '.join(KINDS)}")
    reasons = {k: text(k) for k in REASONS}
    given = [k for k, v in reasons.items() if v is not None]
    if len(given) != 1:
        raise KnownError(
            f"{where}: give exactly one reason: {', '.join(REASONS)} "
            f"(got {', '.join(given) or 'none'})"
        )
    rule = reasons["missing_rule"]
    ids = RULE_IDS if direction is FORWARD else direction.contract_rules
    if rule is not None and rule not in ids and rule not in implemented_rules(direction.profile):
        raise KnownError(
            f"{where}: `missing_rule` {rule!r} is neither a "
            f"{'PROTOCOL.md' if direction is FORWARD else 'contract'} rule id "
            f"nor a rule of the {direction.profile} profile"
        )
    if given[0] in ("cbc", "checker") and text("evidence") is None:
        raise KnownError(f"{where}: a `{given[0]}` reason needs its `evidence`")
    turns = text("turns")
    if turns is not None and turns not in TURNS:
        raise KnownError(f"{where}: `turns` must be one of {', '.join(TURNS)}")
    raw_delta = item.get("delta", [])
    deltas = raw_delta if isinstance(raw_delta, list) else [raw_delta]
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in deltas):
        raise KnownError(f"{where}: `delta` must be a number or a list of numbers")
    argv = text("argv")
    if argv is not None:
        try:
            re.compile(argv)
        except re.error as e:
            raise KnownError(f"{where}: `argv` is not a valid regex: {e}") from None
    context = [k for k in _CONTEXT_KEYS if item.get(k) is not None]
    if context and not paths:
        raise KnownError(f"{where}: `{context[0]}` goes with `paths` (a violation has no context)")
    # "cbc"/"claude": the forward names of the bridged and the reference run
    given_side = text("side") or "cbc"
    side = {"bridged": "cbc", "reference": "claude"}.get(given_side, given_side)
    if side not in ("cbc", "claude"):
        raise KnownError(f"{where}: `side` must be bridged or reference (cbc or claude)")
    if side == "claude" and (not violations or given[0] != "checker"):
        raise KnownError(
            f"{where}: a reference side is for `violations` of the {direction.reference} "
            "run, with a `checker` reason"
        )
    return Entry(
        id=text("id", True) or "",
        paths=paths,
        violations=violations,
        message=text("message"),
        kind=kind,
        a=item.get("a", _UNSET),
        b=item.get("b", _UNSET),
        a_contains=text("a_contains"),
        b_contains=text("b_contains"),
        scenarios=strings("scenarios"),
        a_context_contains=text("a_context_contains"),
        b_context_contains=text("b_context_contains"),
        a_context_lacks=text("a_context_lacks"),
        b_context_lacks=text("b_context_lacks"),
        a_session_contains=text("a_session_contains"),
        b_session_contains=text("b_session_contains"),
        turns=turns,
        delta=tuple(float(x) for x in deltas),
        argv=argv,
        side=side,
        evidence=text("evidence") or "",
        note=text("note") or "",
        backend=direction.other,
        **reasons,
    )


# -- one comparison ----------------------------------------------------------------------


@attrs.frozen
class Item:
    """One remaining difference or contract violation, with its reason."""

    what: str  # "difference" | "violation"
    path: str  # the diff path, or "contract [rule] line N: message"
    kind: str  # changed/only-a/only-b; for a violation: its rule id
    a: Any
    b: Any
    category: str  # "missing-rule" | "cbc" | "unexplained"
    reason: str
    entry: str | None = None  # the known-differences id that explained it

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Comparison:
    """Side B (a cbc run) against side A (Claude)."""

    diff: DiffResult
    violations_a: list[Violation]
    violations_b: list[Violation]
    items: list[Item] = attrs.Factory(list)
    context: Context | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def equivalent(self) -> bool:
        return self.diff.equivalent

    @property
    def unexplained(self) -> list[Item]:
        return [i for i in self.items if i.category == UNEXPLAINED]

    @property
    def equivalent_but_explained(self) -> bool:
        """Equivalent to Claude except for explained differences the bridge is not
        missing a rule for (cbc behaviour, by design, a race, the checker), with no
        contract violation: issue "Whole-session fidelity"'s target."""
        return not self.violations_b and all(
            i.category not in ("missing-rule", UNEXPLAINED) for i in self.items
        )

    def counts(self) -> dict[str, int]:
        c = dict.fromkeys((*CATEGORIES, UNEXPLAINED), 0)
        for i in self.items:
            c[i.category] += 1
        return c


def compare(
    a: Capture, b: Capture, options: DiffOptions | None = None, direction: Direction | None = None
) -> Comparison:
    """Diff and contract check (the direction's checker), without reasons (``explain``
    adds them)."""
    chk = check if direction is None else direction.check
    d = diff(a, b, options)
    return Comparison(d, chk(a), chk(b), context=Context.of(d, a, b))


def explain(
    cmp: Comparison,
    scenario: str,
    known: Known,
    implemented: frozenset[str] | None = None,
    direction: Direction | None = None,
) -> Comparison:
    """``cmp`` with an ``Item`` (and its reason) for every difference, every violation of
    side B and every violation of side A."""
    d = direction or FORWARD
    impl = implemented_rules(d.profile) if implemented is None else implemented
    items: list[Item] = []
    ctx = cmp.context
    run = ctx.base if ctx is not None else None
    for n, dd in enumerate(cmp.diff.differences):
        e = known.find_difference(
            scenario, dd.path, dd.kind, dd.a, dd.b, ctx.at(n) if ctx is not None else None
        )
        items.append(
            Item(
                "difference",
                dd.path,
                dd.kind,
                dd.a,
                dd.b,
                e.category() if e else UNEXPLAINED,
                e.reason(impl) if e else UNEXPLAINED,
                e.id if e else None,
            )
        )
    for v in cmp.violations_b:
        path = _violation_path(v)
        e = known.find_violation(scenario, v, "cbc", run)
        if e is not None:
            category, reason, entry = e.category(), e.reason(impl), e.id
        elif v.rule not in impl:
            category, entry = "missing-rule", None
            reason = f"missing rule: {v.rule} (a contract rule the bridge does not implement yet)"
        else:
            category, entry = UNEXPLAINED, None
            reason = (
                f"{UNEXPLAINED}: the bridge implements {v.rule} but its output still violates it"
            )
        items.append(Item("violation", path, v.rule, None, v.frame, category, reason, entry))
    for v in cmp.violations_a:
        path = f"{d.reference} side: " + _violation_path(v)
        e = known.find_violation(scenario, v, "claude", run)
        if e is not None:
            items.append(
                Item("violation", path, v.rule, v.frame, None, e.category(), e.reason(impl), e.id)
            )
        else:
            items.append(
                Item(
                    "violation",
                    path,
                    v.rule,
                    v.frame,
                    None,
                    UNEXPLAINED,
                    f"{UNEXPLAINED}: {d.reference} itself violates the contract "
                    "(the checker or the capture is wrong)",
                )
            )
    return attrs.evolve(cmp, items=items)


def _violation_path(v: Violation) -> str:
    where = f"line {v.lineno}" if v.lineno else "end of stream"
    return f"contract [{v.rule}] {where}: {v.message}"


# -- the table ---------------------------------------------------------------------------


@attrs.frozen
class Row:
    scenario: str
    bridged: Comparison | None  # None: a capture of the pair is missing
    raw: Comparison | None
    missing: tuple[str, ...] = ()  # roles whose capture is missing
    meta: dict[str, Any] = attrs.Factory(dict)  # per role: version, exit, duration, created

    @property
    def unexplained(self) -> int:
        n = len(self.bridged.unexplained) if self.bridged else 0
        # the reference or the bridged capture is missing: there is no comparison
        return n + (1 if self.bridged is None and self.missing else 0)


def row(
    scenario: str,
    caps: dict[str, Capture],
    known: Known,
    implemented: frozenset[str] | None = None,
    direction: Direction | None = None,
) -> Row:
    """One scenario's row from its twin captures (keys: the direction's roles, ``ROLES``
    forward; some may be absent)."""
    d = direction or FORWARD
    ref_role, bridged_role, raw_role = d.roles
    missing = tuple(r for r in d.roles if r not in caps)
    ref = caps.get(ref_role)
    bridged = raw = None
    if ref is not None and bridged_role in caps:
        cmp = compare(ref, caps[bridged_role], direction=d)
        bridged = explain(cmp, scenario, known, implemented, d)
    if ref is not None and raw_role in caps:
        raw = compare(ref, caps[raw_role], direction=d)
    meta = {r: _meta(c) for r, c in caps.items()}
    return Row(scenario, bridged, raw, missing, meta)


def _meta(c: Capture) -> dict[str, Any]:
    h = c.header
    return {
        k: h.get(k)
        for k in ("backend", "backend_version", "via", "created")
        if h.get(k) is not None
    } | {"exit": next((r.text for r in reversed(c.records) if r.kind == "exit"), None)}


def unused_entries(known: Known, rows: Sequence[Row]) -> list[str]:
    """Ids of entries that explained nothing in ``rows`` (stale, or for a scenario not run)."""
    used = {i.entry for r in rows if r.bridged for i in r.bridged.items}
    return [e.id for e in known.entries if e.id not in used]
