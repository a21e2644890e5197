"""What ``ccbridge demo`` prints: a frame in a few words (``summarize``); each frame of the
session with what the bridge did to it (``Row``, its ``fate``); the default one-screen view
(``render_summary``: the frames the bridge changed, dropped, held or made, grouped, each
group with the rules that did it); every frame (``render_rows``, ``--all``); the ``legend``
of marks and colours; the closing ``verdict``; the bridge's statistics (``stats_table``).

No line is wider than the width asked for: text is wrapped between words (a rule name is
never broken at its hyphens) and what is still too long is cut with an ellipsis
(``compat.text.clip``). Everything shown from the stream is escaped first (``summarize``,
``compat.text.escape``): backend strings are untrusted. Colour is the caller's decision
(``bridge.colour``); only our own marks and words are coloured.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from compat.text import clip, escape


def summarize(obj: Any) -> str:
    if not isinstance(obj, dict):
        return "(not JSON)"
    t, st = obj.get("type"), obj.get("subtype")
    label = f"{t}/{st}" if t == "system" else str(t)
    return escape(" ".join([label, *_details(obj, t, st)]))


_TASK_EVENTS = ("task_started", "task_progress", "task_updated", "task_notification")


def _details(obj: dict[str, Any], t: Any, st: Any) -> list[str]:
    """What ``summarize`` shows of a frame after its type."""
    if st in _TASK_EVENTS:
        return _task_details(obj)
    if st == "background_tasks_changed":
        return [f"tasks={len(obj.get('tasks', []))}"]
    details = _DETAILS.get(t) if isinstance(t, str) else None
    return details(obj) if details is not None else []


def _task_details(obj: dict[str, Any]) -> list[str]:
    bits = [f"{k}={obj[k]}" for k in ("workflow_name", "task_type", "status") if k in obj]
    if "patch" in obj:
        bits.append(f"patch.status={obj['patch'].get('status')}")
    agents = [
        e.get("state")
        for e in obj.get("workflow_progress", [])
        if isinstance(e, dict) and e.get("type") == "workflow_agent"
    ]
    if agents:
        bits.append("agents=" + ",".join(map(str, agents)))
    if "prompt" in obj:
        bits.append("prompt=<script>")
    return bits


def _request_details(obj: dict[str, Any]) -> list[str]:
    req = obj.get("request") or {}
    bits = [str(req.get("subtype"))]
    if isinstance(req, dict):
        bits += [f"{k}={req[k]}" for k in ("session_id", "reason", "tool_name") if k in req]
    return bits


def _response_details(obj: dict[str, Any]) -> list[str]:
    resp = obj.get("response", {})
    inner = resp.get("response") or {}
    return [f"{resp.get('subtype')} {', '.join(sorted(inner))}"]


def _message_details(obj: dict[str, Any]) -> list[str]:
    content = (obj.get("message") or {}).get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list) and content:
        b = content[0]
        return [str(b.get("name") or b.get("text") or b.get("type"))]
    return []


def _result_details(obj: dict[str, Any]) -> list[str]:
    return [f"{obj.get('subtype')} is_error={obj.get('is_error')}"]


#: what ``summarize`` shows of a frame, by type (besides the task events)
_DETAILS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "control_request": _request_details,
    "control_response": _response_details,
    "assistant": _message_details,
    "user": _message_details,
    "result": _result_details,
}


# -- a frame of the session, and what became of it -------------------------------------


@attrs.define
class Row:
    """One frame of the session: who sent it, what it was, what the bridge did to it."""

    t: float  # when (the recording's time, when known)
    direction: str  # "up" (client -> cbc) or "down" (cbc -> client)
    sent: str  # summary of what was sent ("" for a frame the bridge made)
    got: str | None = None  # summary of what the other side received, when it differs
    rules: list[str] = attrs.Factory(list)  # the rules that rewrote it, in order
    action: str = "passed"  # passed, rewritten, dropped, held, synthesized
    by: str | None = None  # the rule that dropped, held or synthesized it
    sent_on: bool = False  # it reached the other side (a held frame may never)
    held_by: str | None = None  # the rule that held it (``sent_on``: released later)
    dropped_by: str | None = None  # the rule that dropped a frame the bridge made


#: what became of a frame, in the order the legend tells them
FATES = ("passed", "rewritten", "dropped", "held", "synthesized")
MARKS = {"passed": "·", "rewritten": "~", "dropped": "-", "held": ">", "synthesized": "+"}
_MEANING = {
    "passed": "as sent",
    "rewritten": "rewritten",
    "dropped": "dropped on purpose",
    "held": "held",
    "synthesized": "synthesized",
}
#: SGR colours; a frame dropped on purpose is blue, not an error's red
_COLOURS = {
    "passed": "2",
    "rewritten": "33",
    "dropped": "34",
    "held": "35",
    "synthesized": "32",
    "rule": "36",
    "head": "1",
}


def fate(r: Row) -> str:
    """What became of the frame: dropped (held and never sent too), synthesized (the bridge
    made it), held (sent later), rewritten, or passed as sent."""
    held = r.held_by is not None or r.action == "held"
    if r.action == "dropped" or r.dropped_by is not None or (held and not r.sent_on):
        return "dropped"
    if r.action == "synthesized":
        return "synthesized"
    if held:
        return "held"
    return "rewritten" if r.rules or r.got is not None else "passed"


def rules_of(r: Row) -> list[str]:
    """The rules behind the row's fate, in the order they acted (escaped): the one that
    dropped it; else the one that made it, those that rewrote it, the one that held it."""
    held = r.held_by or (r.by if r.action == "held" else None)
    if fate(r) == "dropped":
        names = [r.dropped_by or held or r.by]
    else:
        names = [r.by if r.action == "synthesized" else None, *r.rules, held]
    return list(dict.fromkeys(escape(str(n)) for n in names if n))


def _paint(text: str, what: str, colour: bool) -> str:
    return f"\x1b[{_COLOURS[what]}m{text}\x1b[0m" if colour and text else text


def wrap(text: str, width: int, **kw: Any) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken between words only (a rule
    name is never broken at its hyphens; a word longer than a line is)."""
    return textwrap.wrap(text, max(1, width), break_on_hyphens=False, **kw) or [""]


def _fit(text: str, width: int, lines: int) -> list[str]:
    """``text`` wrapped to ``width``, at most ``lines`` lines, the last cut with an
    ellipsis when there was more."""
    out = wrap(text, width)
    if len(out) > lines:
        rest = " ".join(out[lines - 1 :])
        out = [*out[: lines - 1], clip(rest, width)]
    return out


def legend(width: int, colour: bool = False) -> str:
    """The marks and their colours, wrapped between items."""
    items = [(f"{MARKS[f]} {_MEANING[f]}", f) for f in FATES]
    lines, cur, n, sep = [], "legend:", len("legend:"), " "
    for text, what in items:
        if n + len(sep) + len(text) > width:
            lines.append(cur)
            cur, n, sep = " " * 7, 7, " "
        cur, n = f"{cur}{sep}{_paint(text, what, colour)}", n + len(sep) + len(text)
        sep = "  "
    return "\n".join([*lines, cur])


# -- every frame (--all) ----------------------------------------------------------------

_ARROW = {"up": "client → cbc", "down": "cbc → client"}


def render_rows(rows: list[Row], width: int, colour: bool = False) -> str:
    """The timeline, wrapped (never cut) to ``width`` columns: each frame with who sent it,
    what it was and, when the bridge touched it, the rules that did and what it became."""
    indent = " " * 25
    text_w = max(20, width - len(indent))
    head = wrap("what was sent (→ what the other side received)", text_w)
    out = [
        _paint(f"{'t (s)':>6}   {'direction':<15} {head[0]}", "head", colour),
        *(_paint(indent + h, "head", colour) for h in head[1:]),
        "-" * min(width, 100),
    ]
    for r in rows:
        out += _row_lines(r, indent, text_w, colour)
    return "\n".join(out)


def _row_lines(r: Row, indent: str, text_w: int, colour: bool) -> list[str]:
    shown = fate(r)
    first = wrap(r.sent or "(nothing)", text_w)
    mark = _paint(MARKS[shown], shown, colour)
    lines = [f"{r.t:6.2f} {mark} {_arrow(r):<15} " + _paint(first[0], shown, colour)]
    lines += [indent + _paint(x, shown, colour) for x in first[1:]]
    said = _what_the_bridge_did(r)
    if said:
        for x in wrap("↳ " + "; ".join(said), text_w, subsequent_indent="  "):
            lines.append(indent + _paint(x, "rule", colour))
    if r.got is not None:
        for x in wrap("→ " + r.got, text_w, subsequent_indent="  "):
            lines.append(indent + _paint(x, shown, colour))
    return lines


def _arrow(r: Row) -> str:
    """Who sent the frame to whom."""
    if r.action == "synthesized":
        return "bridge → " + ("client" if r.direction == "down" else "cbc")
    return _ARROW[r.direction]


def _what_the_bridge_did(r: Row) -> list[str]:
    said = []
    if r.action == "synthesized":
        said.append(f"synthesized by {escape(str(r.by))}")
    if r.rules:
        said.append("rewritten by " + escape(", ".join(r.rules)))
    held = r.held_by or (r.by if r.action == "held" else None)
    if held:
        said.append(f"held by {escape(held)}" + (", sent later" if r.sent_on else ", never sent"))
    dropped = r.dropped_by or (r.by if r.action == "dropped" else None)
    if dropped:
        said.append(f"dropped by {escape(dropped)}")
    return said


# -- the summary: one screen --------------------------------------------------------------


@attrs.define
class Entry:
    """One line of the summary: a frame, or frames of one phase that met the same fate from
    the same rules."""

    t: float
    fate: str
    who: str  # client, cbc, bridge
    rules: tuple[str, ...]
    labels: list[str]  # each frame's type (system frames: their subtype)
    what: str  # one frame: its summary
    delta: str | None = None  # what the other side received instead, as a change


def _label(summary: str) -> str:
    return summary.split(" ", 1)[0].removeprefix("system/")


def _short(summary: str) -> str:
    return summary.removeprefix("system/")


def _who(r: Row) -> str:
    """Who sent the frame: the client, cbc, the bridge (to the client, or to cbc)."""
    if r.action == "synthesized":
        return "bridge" if r.direction == "down" else "to cbc"
    return "client" if r.direction == "up" else "cbc"


#: a word of a summary: ``key=value`` (the value runs to the next `` key=``) or a bare word
_TOKEN = re.compile(r"[^\s=,]+=.*?(?=\s[^\s=,]+=|$)|[^\s,]+")


def delta(sent: str, got: str) -> str:
    """What the other side received, as a change of what was sent: ``key=value`` for a
    value changed, ``+word`` added, ``-word`` removed (the whole ``got`` when its type
    differs)."""
    a, b = _TOKEN.findall(sent), _TOKEN.findall(got)
    if a[:1] != b[:1]:
        return got
    keys = {t.split("=", 1)[0] for t in a if "=" in t}
    bkeys = {t.split("=", 1)[0] for t in b if "=" in t}
    out = [t if t.split("=", 1)[0] in keys else "+" + t for t in b[1:] if t not in a]
    out += ["-" + t for t in a[1:] if t not in b and t.split("=", 1)[0] not in bkeys]
    return " ".join(map(_brief, out)) or got


def _brief(token: str) -> str:
    """A ``key=value`` word with its value cut short (an id is long, and says little)."""
    key, eq, value = token.partition("=")
    return f"{key}={clip(value, 16)}" if eq else token


def folded(rows: Sequence[Row]) -> dict[str, tuple[int, int, str]]:
    """The rules that rewrote nearly every frame of a peer (at least 5, and three in four):
    named once, above the summary, instead of on every line. Rule -> (frames it rewrote,
    frames that peer sent, the peer)."""
    out: dict[str, tuple[int, int, str]] = {}
    for direction, who in (("up", "the client"), ("down", "cbc")):
        peer = [r for r in rows if r.direction == direction and r.action != "synthesized"]
        counts = Counter(rule for r in peer for rule in dict.fromkeys(r.rules))
        for rule, n in counts.items():
            if n >= 5 and 4 * n >= 3 * len(peer):
                out[escape(rule)] = (n, len(peer), who)
    return out


def entries(rows: Sequence[Row], fold: Mapping[str, Any] = {}, gap: float = 5.0) -> list[Entry]:
    """The summary's lines: the client's own frames (context), and every frame the bridge
    changed (the ``fold`` rules aside), dropped, held or made. Within a phase (from one
    client line, or a pause of ``gap`` seconds, to the next) the frames of one fate and
    sender share a line when the same rules rewrote them, or the same rule made or dropped
    them; a frame whose content changed has a line of its own."""
    out: list[Entry] = []
    phase: dict[tuple[str, str, tuple[str, ...]], Entry] = {}
    last_t: float | None = None
    for r in rows:
        e = _entry(r, fold)
        if e.who == "client" or (last_t is not None and r.t - last_t >= gap):
            phase = {}
        last_t = r.t
        if e.who != "client" and not e.rules:
            continue  # nothing left to say: passed as sent, or only a folded rule touched it
        key = (e.fate, e.who, e.rules[:1] if e.fate in ("dropped", "synthesized") else e.rules)
        into = phase.get(key) if e.delta is None and e.who != "client" else None
        if into is not None:
            into.labels += e.labels
            into.rules += tuple(x for x in e.rules if x not in into.rules)
            continue
        out.append(e)
        if e.delta is None:
            phase[key] = e
    return out


def _entry(r: Row, fold: Mapping[str, Any]) -> Entry:
    """The row on a line of its own (the ``fold`` rules left out)."""
    f = fate(r)
    change = delta(r.sent, r.got) if r.got is not None and f != "dropped" else None
    rules = tuple(x for x in rules_of(r) if x not in fold)
    return Entry(r.t, f, _who(r), rules, [_label(r.sent)], _short(r.sent), change)


def _what(e: Entry) -> str:
    """The entry's frames: one frame's summary, or each type with its count; who sent them
    when it was not cbc (the client's; the bridge's own, to cbc)."""
    counts = Counter(e.labels)
    what = (
        e.what
        if len(e.labels) == 1
        else ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in counts.items())
    )
    return {"client": "client: ", "to cbc": "to cbc: "}.get(e.who, "") + what


#: the columns before a summary line's frames: its time and mark
_LEAD = 9


def render_summary(
    rows: Sequence[Row],
    width: int,
    colour: bool = False,
    about: Mapping[str, str] = {},
) -> str:
    """The frames the bridge changed, dropped, held or made, grouped (``entries``), each
    line with its time, mark, sender, frames and the rules behind it, the client's own
    lines for context; the rules that touched nearly every frame said once, above
    (``about``: what a rule does, in a sentence). At most ``width`` columns."""
    fold = folded(rows)
    es = entries(rows, fold)
    rule_w = min(22, max((len(x) + 1 for e in es for x in e.rules), default=4))
    what_w = max(20, width - _LEAD - 2 - rule_w)
    out = _fold_lines(fold, width, colour, about)
    head = f"{'t (s)':>6}   {'frames (from cbc, unless said)':<{what_w}}  rule"
    out.append(_paint(head, "head", colour))
    last = ""
    for e in es:
        t = f"{e.t:6.2f}"
        if out and last and e.t - float(last) >= 5.0:
            out.append(_paint(f"{'':>6} ⋮ {e.t - float(last):.1f} s later", "passed", colour))
        out += _entry_lines(e, t if t != last else "", (what_w, rule_w, width), colour)
        last = t
    left = sum(
        1 for r in rows if _who(r) != "client" and not [x for x in rules_of(r) if x not in fold]
    )
    if left:
        out.append(f"({left} more frame{'s' * (left != 1)} passed as sent: --all lists them)")
    return "\n".join(out)


def _fold_lines(
    fold: Mapping[str, tuple[int, int, str]], width: int, colour: bool, about: Mapping[str, str]
) -> list[str]:
    out = []
    for rule, (n, total, who) in fold.items():
        does = f": {escape(about[rule])}" if rule in about else ""
        text = f"{rule} rewrote {n} of {who}'s {total} frames (not repeated below){does}."
        lines = _fit(text, width, 2)
        first = lines[0].replace(rule, _paint(rule, "rule", colour), 1)
        out += [first, *lines[1:]]
    return out


def _entry_lines(e: Entry, t: str, widths: tuple[int, int, int], colour: bool) -> list[str]:
    """An entry's lines: its frames (and what the other side received instead) on the
    left, one line each, cut to fit; its rules on the right, as many lines as they take
    (a name is never cut at a hyphen); no rules: the frames take the whole line."""
    what_w, rule_w, width = widths
    if not e.rules and e.delta is None:
        what_w = width - _LEAD
    left = [clip(_what(e), what_w)]
    if e.delta is not None:
        left.append(clip("→ " + e.delta, what_w))
    right = wrap(", ".join(e.rules), rule_w) if e.rules else []
    lines = []
    for i in range(max(len(left), len(right))):
        text = left[i] if i < len(left) else ""
        cell = _paint(text, e.fate, colour) + " " * (what_w - len(text))
        mark = _paint(MARKS[e.fate], e.fate, colour)
        start = f"{t:>6} {mark} " if i == 0 else " " * _LEAD
        rule = _paint(right[i], "rule", colour) if i < len(right) else ""
        lines.append(f"{start}{cell}  {rule}".rstrip())
    return lines


# -- the verdict ----------------------------------------------------------------------------


@attrs.frozen
class Counts:
    """The session in numbers, as the client and cbc saw it."""

    received: int  # frames the client received
    changed: int  # of those, rewritten, held or made by the bridge
    rules: int  # the rules that changed them
    sent: int  # frames cbc sent
    dropped: int  # of those, never sent on
    made: int  # frames the bridge made


def counts(rows: Sequence[Row], received: int) -> Counts:
    down = [r for r in rows if r.direction == "down"]
    reached = [r for r in down if r.sent_on]
    changed = [r for r in reached if fate(r) != "passed"]
    peer = [r for r in down if r.action != "synthesized"]
    return Counts(
        received,
        len(changed),
        len({x for r in changed for x in rules_of(r)}),
        len(peer),
        sum(1 for r in peer if fate(r) == "dropped"),
        sum(1 for r in down if r.action == "synthesized"),
    )


def verdict(
    c: Counts, target: str, violations: int | None, width: int, colour: bool = False
) -> str:
    """The closing lines: what cbc sent and the bridge did, then the verdict on what the
    client saw (``violations``: the contract check's count; None: not checked)."""
    checked = (
        "the contract not checked (ccbridge check is not installed)"
        if violations is None
        else f"{violations} contract violation{'s' * (violations != 1)}"
    )
    did = f"cbc sent {c.sent} frames: the bridge dropped {c.dropped} on purpose and made {c.made}."
    said = (
        f"verdict: the client saw a Claude Code {target} session: {c.received} frames, "
        f"{c.changed} changed by {c.rules} rules, {checked}"
    )
    said_lines = wrap(said, width, subsequent_indent="  ")
    said_lines[0] = said_lines[0].replace("verdict:", _paint("verdict:", "head", colour), 1)
    return "\n".join([*wrap(did, width), *said_lines])


# -- the statistics -------------------------------------------------------------------------

#: the statistics columns shown on their own; any other count goes in the last column
_MAIN = ("rewritten", "dropped", "synthesized", "held", "released")


def stats_table(stats: dict[str, Any], width: int = 80) -> str:
    """The bridge's statistics as a small table of at most ``width`` columns: frames per
    direction, then per rule the counts that are not zero (the other counts after the
    main ones, on the lines below when they do not fit). A counter's name can be a peer's
    (an unknown frame's type): every name and count is escaped (``compat.text.escape``) and
    cut to the width."""
    frames = stats.get("frames", {})
    lines = [f"{'frames':<8}{'in':>6}{'out':>6}"]
    for d in ("up", "down"):
        f = frames.get(d, {})
        lines.append(f"{d:<8}{escape(str(f.get('in', 0))):>6}{escape(str(f.get('out', 0))):>6}")
    rules = {
        clip(escape(str(k)), 24): v
        for k, v in (stats.get("rules") or {}).items()
        if isinstance(v, dict) and any(v.values())
    }
    if rules:
        w = max(len(r) for r in [*rules, "rule"])
        lines += ["", f"{'rule':<{w}} " + " ".join(_MAIN) + "  other"]
        for rule, counts in sorted(rules.items()):
            lines += _stats_row(rule, w, counts, width)
    return "\n".join(lines)


def _stats_row(rule: str, w: int, counts: dict[Any, Any], width: int) -> list[str]:
    """One rule's counts: the main columns, then every other count by (escaped) name, on
    the lines below when they do not fit."""
    main = " ".join(f"{clip(escape(str(counts.get(c, 0) or '')), len(c)):>{len(c)}}" for c in _MAIN)
    head = f"{rule:<{w}} {main}"
    other = [
        clip(f"{escape(str(k))} {escape(str(n))}", width - w - 1)
        for k, n in sorted(counts.items(), key=lambda kv: str(kv[0]))
        if k not in _MAIN and n
    ]
    lines, line = [], head.rstrip()
    for i, item in enumerate(other):
        sep = " " * (len(head) + 2 - len(line)) if i == 0 else ", "
        if len(line) + len(sep) + len(item) > width:
            lines.append(line)
            line, sep = " " * (w + 1), ""
        line += sep + item
    return [*lines, line]
