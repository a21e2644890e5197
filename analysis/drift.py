"""Drift: what a candidate CLI version writes that the verified one did not (issue 14).

Pure: it takes captures (``compat.capture.Capture``: transcripts, our captures, stdout
dumps) and ``--help`` texts, and returns changes. ``ccbridge drift`` runs the CLIs and the
CI drift test reads the installed ones; both report with this module.

A session's *vocabulary* (``vocabulary``) is what its backend wrote, by frame kind:

- the kinds: ``type/subtype`` (``system/task_started``, ``result/success``), a control
  request by what it asks (``control_request/can_use_tool``) and a control reply by the
  request it answers, paired by ``request_id`` with what the client wrote
  (``control_response/initialize``, ``control_response/set_model``): a changed reply shows as
  changed fields or values of its kind;
- the fields of each kind, as dotted paths (``response.response.models[].value``,
  ``patch.status``), down to ``MAX_DEPTH``; maps keyed by data (``modelUsage``'s model
  names, a tool's ``input``) count as one field;
- value vocabularies: the strings under the keys of ``VOCAB_KEYS`` (task types, statuses,
  subtypes, stop reasons, agent states, error codes, the init's model) and the members of
  the string lists of ``VOCAB_LISTS`` (``capabilities``, the init's ``tools``);
- the order of the task lifecycle frames and ``background_tasks_changed``: which of them
  follows which (``task_notification -> background_tasks_changed``).

``compare`` reports what the candidate adds (against everything the verified sessions
showed, any scenario: a new field is new only when no verified session has it) and what it
lost (against the verified session of the same scenario: a field the scenario did not
exercise is not vanished; an order, a relation within one session, against the same
scenario's only). An addition is something the rules do not know: ``Report.
unknown`` is true when there is one, and ``ccbridge drift`` exits 1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from compat.capture import Capture
from compat.frames import dict_at, loads, str_at
from compat.text import escape

MAX_DEPTH = 4
#: keys whose value is a map keyed by data (model names, tool inputs, paths): one field
OPEN_MAPS = frozenset(
    {
        "modelUsage",
        "model_usage_since_last_result",
        "input",
        "tool_use_result",
        "memory_paths",
        "env",
        "hooks",
        "properties",
        "structured_output",
        "tool_result_meta",
        "_meta",
        "mcpServers",
        "agents",
        "subagent_stats",
    }
)
#: string fields whose values are a vocabulary (a new value is drift)
VOCAB_KEYS = frozenset(
    {
        "type",
        "subtype",
        "task_type",
        "status",
        "state",
        "stop_reason",
        "terminal_reason",
        "error_code",
        "origin",
        "permissionMode",
        "apiKeySource",
        "tokenSource",
        "apiProvider",
    }
)
#: string fields that are a vocabulary only on some kinds (kind -> keys)
VOCAB_KEYS_ON = {"system/init": frozenset({"model", "output_style"})}
#: lists of strings whose members are a vocabulary
VOCAB_LISTS = frozenset({"capabilities", "tools"})
#: the frames whose relative order is compared
ORDERED = frozenset(
    {
        "system/task_started",
        "system/task_updated",
        "system/task_notification",
        "system/background_tasks_changed",
    }
)
#: frames too frequent and too free-form to profile field by field
SKIP_KINDS = frozenset({"stream_event"})

CATEGORIES = ("kind", "field", "value", "order", "option", "command")


@attrs.define
class Vocabulary:
    """What one (or several, merged) sessions of a backend wrote."""

    kinds: dict[str, int] = attrs.Factory(dict)
    fields: dict[str, set[str]] = attrs.Factory(dict)
    #: (kind, field path) -> the values seen
    values: dict[tuple[str, str], set[str]] = attrs.Factory(dict)
    order: set[tuple[str, str]] = attrs.Factory(set)

    def merge(self, other: Vocabulary) -> Vocabulary:
        for k, n in other.kinds.items():
            self.kinds[k] = self.kinds.get(k, 0) + n
        for k, fs in other.fields.items():
            self.fields.setdefault(k, set()).update(fs)
        for kv, vs in other.values.items():
            self.values.setdefault(kv, set()).update(vs)
        self.order |= other.order
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "kinds": dict(sorted(self.kinds.items())),
            "fields": {k: sorted(v) for k, v in sorted(self.fields.items())},
            "values": {f"{k} {p}": sorted(v) for (k, p), v in sorted(self.values.items())},
            "order": [f"{a} -> {b}" for a, b in sorted(self.order)],
        }


def merged(vocabs: Iterable[Vocabulary]) -> Vocabulary:
    out = Vocabulary()
    for v in vocabs:
        out.merge(v)
    return out


def _kind(obj: dict[str, Any], requests: Mapping[str, str]) -> str:
    t = obj.get("type")
    t = t if isinstance(t, str) else "?"
    if t == "control_request":
        sub = str_at(dict_at(obj, "request"), "subtype")
        return f"{t}/{sub}" if sub else t
    if t == "control_response":
        resp = dict_at(obj, "response")
        rid = str_at(resp, "request_id")
        sub = requests.get(rid) if rid is not None else None
        return f"{t}/{sub}" if sub else t
    sub = obj.get("subtype")
    return f"{t}/{sub}" if isinstance(sub, str) else t


def _walk(kind: str, v: Any, path: str, depth: int, voc: Vocabulary) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            p = f"{path}.{k}" if path else k
            voc.fields.setdefault(kind, set()).add(p)
            _values(kind, k, x, p, top=not path, voc=voc)
            if k not in OPEN_MAPS and depth < MAX_DEPTH:
                _walk(kind, x, p, depth + 1, voc)
    elif isinstance(v, list):
        for x in v:
            _walk(kind, x, path + "[]", depth, voc)


def _values(kind: str, k: str, x: Any, p: str, *, top: bool, voc: Vocabulary) -> None:
    """Record the value of field ``p`` (key ``k``; ``top``: of the frame itself) when it is
    vocabulary: a string under a vocabulary key, or the members' names of a vocabulary list."""
    vocab_key = k in VOCAB_KEYS or (top and k in VOCAB_KEYS_ON.get(kind, frozenset()))
    if isinstance(x, str) and vocab_key:
        voc.values.setdefault((kind, p), set()).add(x)
    elif isinstance(x, list) and k in VOCAB_LISTS:
        names = {_member(m) for m in x}
        voc.values.setdefault((kind, p + "[]"), set()).update(n for n in names if n)


def _member(m: Any) -> str | None:
    """A list member's name: a string, or a ``{name}`` object's name."""
    if isinstance(m, str):
        return m
    return str_at(m, "name") if isinstance(m, dict) else None


def vocabulary(cap: Capture) -> Vocabulary:
    """The vocabulary of what ``cap``'s backend wrote (``stdout``; ``client_out`` when
    there is no ``stdout``, e.g. a bridged capture's client view only)."""
    out_kind = "stdout" if cap.lines("stdout") else "client_out"
    in_kind = "stdin" if out_kind == "stdout" else "client_in"
    voc = Vocabulary()
    requests: dict[str, str] = {}
    last_ordered: str | None = None
    for r in cap.records:
        if r.kind not in (in_kind, out_kind):
            continue
        try:
            obj = loads(r.data)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if r.kind == in_kind:
            if obj.get("type") == "control_request":
                rid, sub = str_at(obj, "request_id"), str_at(dict_at(obj, "request"), "subtype")
                if rid is not None and sub is not None:
                    requests[rid] = sub
            continue
        kind = _kind(obj, requests)
        voc.kinds[kind] = voc.kinds.get(kind, 0) + 1
        if obj.get("type") in SKIP_KINDS:
            continue
        _walk(kind, obj, "", 0, voc)
        if kind in ORDERED:
            if last_ordered is not None and last_ordered != kind:
                voc.order.add((last_ordered, kind))
            last_ordered = kind
    return voc


# -- --help ---------------------------------------------------------------------------

_OPTION = re.compile(r"^\s{1,6}((?:-[A-Za-z0-9], |--[\w-]+, )*--?[\w][\w-]*)")
_COMMAND = re.compile(r"^\s{1,6}([a-z][\w-]*(?:\|[a-z][\w-]*)*)(?=\s|$)")


@attrs.frozen
class Help:
    options: frozenset[str]  # long names (and a short one's name when it has no long)
    commands: frozenset[str]


def parse_help(text: str) -> Help:
    """The options and subcommands a commander-style ``--help`` lists."""
    options: set[str] = set()
    commands: set[str] = set()
    section = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = line.split(":", 1)[0].strip().lower()
            continue
        if section == "options":
            m = _OPTION.match(line)
            if m:
                names = [n.strip() for n in m.group(1).split(",")]
                longs = [n for n in names if n.startswith("--")]
                options.update(longs or names)
        elif section == "commands":
            m = _COMMAND.match(line)
            if m and len(line) - len(line.lstrip()) <= 2:
                commands.add(m.group(1).split("|")[0])
    return Help(frozenset(options), frozenset(commands))


# -- comparison -----------------------------------------------------------------------


@attrs.frozen
class Change:
    category: str  # one of CATEGORIES
    change: str  # "new" | "vanished"
    kind: str  # the frame kind ("" for options and commands)
    item: str  # the field path, value, order pair, option or command
    scenario: str = ""

    @property
    def unknown(self) -> bool:
        """Something appeared that the rules do not know."""
        return self.change == "new"

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "change": self.change,
            "kind": self.kind,
            "item": self.item,
            "scenario": self.scenario,
        }

    def text(self) -> str:
        sign = "+" if self.change == "new" else "-"
        where = f"{self.kind}: " if self.kind else ""
        return f"{sign} {self.category} {where}{self.item}"


def compare(
    verified: Vocabulary,
    candidate: Vocabulary,
    *,
    known: Vocabulary | None = None,
    scenario: str = "",
) -> list[Change]:
    """What ``candidate`` adds to ``known`` (default ``verified``: every verified session,
    merged) and what it lost against ``verified`` (the same scenario's session)."""
    known = verified if known is None else known
    found = [
        *_kind_changes(verified, candidate, known),
        *_field_changes(verified, candidate, known),
        *_value_changes(verified, candidate, known),
        *_order_changes(verified, candidate),
    ]
    return [Change(cat, change, kind, item, scenario) for cat, change, kind, item in found]


#: (category, change, kind, item) of a ``Change``, before its scenario
_Found = Iterator[tuple[str, str, str, str]]


def _kind_changes(verified: Vocabulary, candidate: Vocabulary, known: Vocabulary) -> _Found:
    for k in sorted(set(candidate.kinds) - set(known.kinds)):
        yield "kind", "new", k, k
    for k in sorted(set(verified.kinds) - set(candidate.kinds)):
        yield "kind", "vanished", k, k


def _field_changes(verified: Vocabulary, candidate: Vocabulary, known: Vocabulary) -> _Found:
    for k in sorted(candidate.fields):
        if k not in known.kinds:
            continue  # a new kind: its fields are all new, said once
        for f in sorted(candidate.fields[k] - known.fields.get(k, set())):
            yield "field", "new", k, f
    for k in sorted(verified.fields):
        if k not in candidate.kinds:
            continue
        for f in sorted(verified.fields[k] - candidate.fields.get(k, set())):
            yield "field", "vanished", k, f


def _value_changes(verified: Vocabulary, candidate: Vocabulary, known: Vocabulary) -> _Found:
    for k, p in sorted(candidate.values):
        if k not in known.kinds or (k, p) not in known.values:
            continue  # a new kind or field: already said
        for v in sorted(candidate.values[(k, p)] - known.values[(k, p)]):
            yield "value", "new", k, f"{p} = {v}"
    for k, p in sorted(verified.values):
        if (k, p) not in candidate.values:
            continue
        for v in sorted(verified.values[(k, p)] - candidate.values[(k, p)]):
            yield "value", "vanished", k, f"{p} = {v}"


def _order_changes(verified: Vocabulary, candidate: Vocabulary) -> _Found:
    # an order is a relation within one session: compared with the same scenario's only
    for a, b in sorted(candidate.order - verified.order):
        yield "order", "new", "", f"{a} -> {b}"
    both = set(verified.kinds) & set(candidate.kinds)
    for a, b in sorted(verified.order - candidate.order):
        if a in both and b in both:
            yield "order", "vanished", "", f"{a} -> {b}"


def compare_help(verified: Help, candidate: Help) -> list[Change]:
    out = [Change("option", "new", "", o) for o in sorted(candidate.options - verified.options)]
    out += [
        Change("option", "vanished", "", o) for o in sorted(verified.options - candidate.options)
    ]
    out += [Change("command", "new", "", c) for c in sorted(candidate.commands - verified.commands)]
    out += [
        Change("command", "vanished", "", c) for c in sorted(verified.commands - candidate.commands)
    ]
    return out


@attrs.frozen
class Report:
    name: str  # "claude" | "cbc" | "cbc-bridged"
    verified: str | None  # the verified version compared against
    candidate: str | None  # the candidate's version
    changes: tuple[Change, ...]
    notes: tuple[str, ...] = ()  # e.g. "not a verified version", contract violations

    @property
    def unknown(self) -> bool:
        return any(c.unknown for c in self.changes)

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for c in self.changes:
            d = out.setdefault(c.category, {"new": 0, "vanished": 0})
            d[c.change] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verified": self.verified,
            "candidate": self.candidate,
            "unknown": self.unknown,
            "counts": self.counts(),
            "notes": list(self.notes),
            "changes": [c.to_dict() for c in self.changes],
        }


def dedupe(changes: Iterable[Change]) -> list[Change]:
    """One change per (category, change, kind, item); the scenarios that showed it joined."""
    seen: dict[tuple[str, str, str, str], list[str]] = {}
    for c in changes:
        key = (c.category, c.change, c.kind, c.item)
        names = seen.setdefault(key, [])
        if c.scenario and c.scenario not in names:
            names.append(c.scenario)
    return [Change(*k, scenario=", ".join(v)) for k, v in seen.items()]


def report(
    name: str,
    verified_version: str | None,
    candidate_version: str | None,
    pairs: Sequence[tuple[str, Vocabulary, Vocabulary]],
    *,
    known: Vocabulary | None = None,
    help_pair: tuple[Help, Help] | None = None,
    notes: Sequence[str] = (),
) -> Report:
    """A backend's drift: ``pairs`` are (scenario, verified vocabulary, candidate
    vocabulary); ``known`` what every verified session showed (default: the pairs'
    verified sides merged)."""
    base = known if known is not None else merged(v for _, v, _ in pairs)
    changes: list[Change] = []
    for scen, ver, cand in pairs:
        changes += compare(ver, cand, known=base, scenario=scen)
    if help_pair is not None:
        changes += compare_help(*help_pair)
    return Report(name, verified_version, candidate_version, tuple(dedupe(changes)), tuple(notes))


def format_text(reports: Sequence[Report]) -> str:
    """At a glance: per backend a verdict line and counts, then the changes grouped by
    category (new first); every name from a stream or a backend's help escaped."""
    lines: list[str] = []
    for r in reports:
        verdict = (
            "UNKNOWN: something the rules do not know appeared"
            if r.unknown
            else "no new frame types, fields, values or options"
        )
        lines.append(
            f"== {escape(r.name)} {escape(r.candidate or '?')} against verified "
            f"{escape(r.verified or '?')}: {verdict}"
        )
        for n in r.notes:
            lines.append(f"  ! {escape(n)}")
        counts = r.counts()
        if counts:
            lines.append(
                "  "
                + ", ".join(f"{cat}: +{d['new']} -{d['vanished']}" for cat, d in counts.items())
            )
        for cat in CATEGORIES:
            group = [c for c in r.changes if c.category == cat]
            group.sort(key=lambda c: (c.change != "new", c.kind, c.item))
            for c in group:
                names = c.scenario.split(", ") if c.scenario else []
                where = (
                    f"  [{escape(names[0])}]"
                    if len(names) == 1
                    else f"  [{len(names)} scenarios]"
                    if names
                    else ""
                )
                lines.append(f"  {escape(c.text())}{where}")
    return "\n".join(lines) + "\n"
