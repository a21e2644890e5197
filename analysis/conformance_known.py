"""The known-differences files (format and policy: ``analysis.conformance``), one per
``Direction`` (forward, cbc-to-claude: ``known_differences.toml``; reverse, claude-to-cbc:
``known_differences_reverse.toml``), read strictly into ``analysis.conformance_entry``'s
``Known``: unknown keys, wrong types, duplicate ids, an entry with no match or with zero or
two reasons are errors (``KnownError``) naming the entry. Pure.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from typing import Any, NoReturn

import attrs

from analysis import contract, contract_cbc
from analysis.conformance_entry import UNSET, Entry, Known
from analysis.contract import Violation
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

#: rules that are not pipeline stages but are implemented (pure translations, compat/argv.py,
#: compat/env.py); the stage rules come from the profile
TRANSLATION_RULES = frozenset({"argv", "env"})
KINDS = ("changed", "only-a", "only-b")
TURNS = ("more-a", "more-b", "differ", "same")
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
ENTRY_KEYS = {
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
CONTEXT_KEYS = ("a_context_contains", "b_context_contains", "a_context_lacks", "b_context_lacks")


class KnownError(ValueError):
    pass


def implemented_rules(profile: str = "cbc-to-claude") -> frozenset[str]:
    from compat.profiles import known_rules

    return frozenset(known_rules(profile)) | TRANSLATION_RULES


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
        entry = parse_entry(item, where, direction or FORWARD)
        if entry.id in seen:
            raise KnownError(f"{where}: duplicate id {entry.id!r}")
        seen.add(entry.id)
        entries.append(entry)
    return Known(tuple(entries))


@attrs.frozen
class _Table:
    """A ``[[difference]]`` table, read strictly: every error names the entry (``where``)."""

    item: dict[str, Any]
    where: str

    def fail(self, message: str) -> NoReturn:
        raise KnownError(f"{self.where}: {message}")

    def text(self, key: str, required: bool = False) -> str | None:
        v = self.item.get(key)
        if v is None and not required:
            return None
        if not isinstance(v, str) or not v.strip():
            self.fail(f"`{key}` must be a non-empty string")
        return v

    def strings(self, key: str) -> tuple[str, ...]:
        v = self.item.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            self.fail(f"`{key}` must be a list of non-empty strings")
        return tuple(v)

    def choice(self, key: str, allowed: tuple[str, ...]) -> str | None:
        v = self.text(key)
        if v is not None and v not in allowed:
            self.fail(f"`{key}` must be one of {', '.join(allowed)}")
        return v


def parse_entry(item: dict[str, Any], where: str, direction: Direction) -> Entry:
    """One ``[[difference]]`` table (``where``: its place in the file) as an ``Entry``."""
    unknown = set(item) - ENTRY_KEYS
    if unknown:
        raise KnownError(f"{where}: unknown key(s) {sorted(unknown)}")
    t = _Table(item, f"{where} ({item.get('id', '?')})")
    paths, violations = _matches(t)
    kind = t.choice("kind", KINDS)
    reasons, reason = _reasons(t, direction)
    turns = t.choice("turns", TURNS)
    deltas = _deltas(t)
    argv = _regex(t, "argv")
    context = [k for k in CONTEXT_KEYS if item.get(k) is not None]
    if context and not paths:
        t.fail(f"`{context[0]}` goes with `paths` (a violation has no context)")
    side = _side(t, violations, reason, direction)
    return Entry(
        id=t.text("id", True) or "",
        paths=paths,
        violations=violations,
        message=t.text("message"),
        kind=kind,
        a=item.get("a", UNSET),
        b=item.get("b", UNSET),
        a_contains=t.text("a_contains"),
        b_contains=t.text("b_contains"),
        scenarios=t.strings("scenarios"),
        a_context_contains=t.text("a_context_contains"),
        b_context_contains=t.text("b_context_contains"),
        a_context_lacks=t.text("a_context_lacks"),
        b_context_lacks=t.text("b_context_lacks"),
        a_session_contains=t.text("a_session_contains"),
        b_session_contains=t.text("b_session_contains"),
        turns=turns,
        delta=deltas,
        argv=argv,
        side=side,
        evidence=t.text("evidence") or "",
        note=t.text("note") or "",
        backend=direction.other,
        **reasons,
    )


def _matches(t: _Table) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the entry matches: its ``paths`` and its ``violations`` (one at least)."""
    paths, violations = t.strings("paths"), t.strings("violations")
    if not paths and not violations:
        t.fail("give `paths` (diff paths) or `violations` (rule ids)")
    if t.item.get("message") is not None and not violations:
        t.fail("`message` goes with `violations`")
    return paths, violations


def _reasons(t: _Table, direction: Direction) -> tuple[dict[str, str | None], str]:
    """Every reason key's value (exactly one given), and which one is given."""
    reasons = {k: t.text(k) for k in REASONS}
    given = [k for k, v in reasons.items() if v is not None]
    if len(given) != 1:
        t.fail(f"give exactly one reason: {', '.join(REASONS)} (got {', '.join(given) or 'none'})")
    _missing_rule(t, reasons["missing_rule"], direction)
    if given[0] in ("cbc", "checker") and t.text("evidence") is None:
        t.fail(f"a `{given[0]}` reason needs its `evidence`")
    return reasons, given[0]


def _missing_rule(t: _Table, rule: str | None, direction: Direction) -> None:
    """A ``missing_rule`` names a rule: of PROTOCOL.md (forward) or of the contract
    (reverse), or of the direction's profile."""
    forward = direction is FORWARD
    ids = RULE_IDS if forward else direction.contract_rules
    if rule is not None and rule not in ids and rule not in implemented_rules(direction.profile):
        t.fail(
            f"`missing_rule` {rule!r} is neither a "
            f"{'PROTOCOL.md' if forward else 'contract'} rule id "
            f"nor a rule of the {direction.profile} profile"
        )


def _deltas(t: _Table) -> tuple[float, ...]:
    raw = t.item.get("delta", [])
    deltas = raw if isinstance(raw, list) else [raw]
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in deltas):
        t.fail("`delta` must be a number or a list of numbers")
    return tuple(float(x) for x in deltas)


def _regex(t: _Table, key: str) -> str | None:
    v = t.text(key)
    if v is not None:
        try:
            re.compile(v)
        except re.error as e:
            raise KnownError(f"{t.where}: `{key}` is not a valid regex: {e}") from None
    return v


def _side(t: _Table, violations: tuple[str, ...], reason: str, direction: Direction) -> str:
    """Whose violations the entry explains: "cbc" (the bridged run) or "claude" (the
    reference run: only a ``checker`` reason for ``violations``)."""
    # "cbc"/"claude": the forward names of the bridged and the reference run
    given = t.text("side") or "cbc"
    side = {"bridged": "cbc", "reference": "claude"}.get(given, given)
    if side not in ("cbc", "claude"):
        t.fail("`side` must be bridged or reference (cbc or claude)")
    if side == "claude" and (not violations or reason != "checker"):
        t.fail(
            f"a reference side is for `violations` of the {direction.reference} "
            "run, with a `checker` reason"
        )
    return side
