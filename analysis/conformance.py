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
table (Markdown, text, JSON); ``analysis.conformance_cmd`` does the I/O. The entries and what
they match are ``analysis.conformance_entry``, the directions and the strict reading of the
file ``analysis.conformance_known`` (their names are this module's too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from analysis.conformance_entry import NULL, Entry, Known, Where, compact
from analysis.conformance_known import (
    DIRECTIONS,
    FORWARD,
    KINDS,
    REASONS,
    REVERSE,
    RULE_IDS,
    TRANSLATION_RULES,
    TURNS,
    Direction,
    KnownError,
    implemented_rules,
    load_known,
)
from analysis.contract import Violation, check
from analysis.diff import Alignment, Difference, DiffOptions, DiffResult, diff
from compat.capture import Capture

__all__ = [
    "CATEGORIES",
    "DIRECTIONS",
    "FORWARD",
    "KINDS",
    "NULL",
    "REASONS",
    "REVERSE",
    "ROLES",
    "RULE_IDS",
    "TRANSLATION_RULES",
    "TURNS",
    "UNEXPLAINED",
    "Comparison",
    "Context",
    "Direction",
    "Entry",
    "Item",
    "Known",
    "KnownError",
    "Row",
    "Where",
    "compare",
    "explain",
    "implemented_rules",
    "load_known",
    "row",
    "unused_entries",
]

#: the roles of a twin set, in table order
ROLES = ("claude", "cbc-bridged", "cbc-raw")
UNEXPLAINED = "unexplained"
#: categories of an explained item, in display order, then "unexplained"
CATEGORIES = ("missing-rule", "cbc", "design", "timing", "checker")


def _jsons(frames: Sequence[Any]) -> tuple[str, ...]:
    return tuple(compact(f.obj) for f in frames if f is not None)


#: per context (``turn:<section>``, ``task:<name>``): its frames, as compact JSON
_Frames = dict[str, list[str]]


@attrs.frozen
class Context:
    """Per comparison: the ``Where`` of each difference (by index) and the run-wide part."""

    base: Where
    sections: tuple[str, ...]  # per difference: the key of its context
    frames_a: dict[str, tuple[str, ...]]
    frames_b: dict[str, tuple[str, ...]]

    @staticmethod
    def of(result: DiffResult, a: Capture | None = None, b: Capture | None = None) -> Context:
        fa, fb, where = _contexts(result.alignment)
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


def _contexts(al: Alignment | None) -> tuple[_Frames, _Frames, dict[int, str]]:
    """Each context's frames on side A and on side B, and the context of each difference
    (by index): a turn's, or a task lifecycle's."""
    fa: _Frames = {}
    fb: _Frames = {}
    where: dict[int, str] = {}
    if al is None:
        return fa, fb, where
    for u in al.units:
        key = _turn_key(u)
        if key:
            fa.setdefault(key, []).extend(_jsons([u.a]))
            fb.setdefault(key, []).extend(_jsons([u.b]))
        for i in u.diffs:
            where.setdefault(i, key or f"task:{u.section}")
    for name, ta, tb in al.tasks:
        fa[f"task:{name}"] = list(_jsons(ta.events)) if ta else []
        fb[f"task:{name}"] = list(_jsons(tb.events)) if tb else []
    return fa, fb, where


def _turn_key(u: Any) -> str:
    """A unit's turn context (``turn:<section>``); "" for a task's unit."""
    return f"turn:{u.section}" if u.label != "lifecycle" and not _is_task(u) else ""


def _is_task(u: Any) -> bool:
    return not (u.section.startswith("turn ") or u.section.startswith("after turn "))


def _argv(c: Capture) -> str:
    import shlex

    argv = c.header.get("argv")
    if not isinstance(argv, list):
        return ""
    return shlex.join(str(x) for x in argv[1:])


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
    why = _Explainer(
        scenario, known, implemented_rules(d.profile) if implemented is None else implemented
    )
    ctx = cmp.context
    run = ctx.base if ctx is not None else None
    items = [
        why.difference(dd, ctx.at(n) if ctx is not None else None)
        for n, dd in enumerate(cmp.diff.differences)
    ]
    items += [why.bridged(v, run) for v in cmp.violations_b]
    items += [why.reference(v, run, d) for v in cmp.violations_a]
    return attrs.evolve(cmp, items=items)


@attrs.frozen
class _Explainer:
    """The reasons ``known`` gives in one scenario (``implemented``: the profile's rules)."""

    scenario: str
    known: Known
    implemented: frozenset[str]

    def difference(self, dd: Difference, where: Where | None) -> Item:
        e = self.known.find_difference(self.scenario, dd.path, dd.kind, dd.a, dd.b, where)
        return Item(
            "difference",
            dd.path,
            dd.kind,
            dd.a,
            dd.b,
            e.category() if e else UNEXPLAINED,
            e.reason(self.implemented) if e else UNEXPLAINED,
            e.id if e else None,
        )

    def bridged(self, v: Violation, run: Where | None) -> Item:
        """A violation of side B (the bridged run)."""
        path = _violation_path(v)
        e = self.known.find_violation(self.scenario, v, "cbc", run)
        if e is not None:
            category, reason, entry = e.category(), e.reason(self.implemented), e.id
        elif v.rule not in self.implemented:
            category, entry = "missing-rule", None
            reason = f"missing rule: {v.rule} (a contract rule the bridge does not implement yet)"
        else:
            category, entry = UNEXPLAINED, None
            reason = (
                f"{UNEXPLAINED}: the bridge implements {v.rule} but its output still violates it"
            )
        return Item("violation", path, v.rule, None, v.frame, category, reason, entry)

    def reference(self, v: Violation, run: Where | None, d: Direction) -> Item:
        """A violation of side A (the reference run: the checker or the capture is wrong)."""
        path = f"{d.reference} side: " + _violation_path(v)
        e = self.known.find_violation(self.scenario, v, "claude", run)
        if e is None:
            why = (
                f"{UNEXPLAINED}: {d.reference} itself violates the contract "
                "(the checker or the capture is wrong)"
            )
            return Item("violation", path, v.rule, v.frame, None, UNEXPLAINED, why)
        category, reason = e.category(), e.reason(self.implemented)
        return Item("violation", path, v.rule, v.frame, None, category, reason, e.id)


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
