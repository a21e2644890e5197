"""What ``ccbridge demo`` shows, before it is drawn (``bridge.demo_render``): a frame in a
few words (``summarize``); each frame of the session with what the bridge did to it
(``Row``, its ``fate``, the rules behind it: ``rules_of``); the summary's lines
(``entries``: the frames the bridge changed, dropped, held or made, grouped; what the
other side received instead, as a change: ``delta``; the rules that touched nearly every
frame, said once: ``folded``); the session in numbers (``counts``).

Everything shown from the stream is escaped here (``summarize``, ``rules_of``,
``compat.text.escape``): backend strings are untrusted.
"""

from __future__ import annotations

import re
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
MEANING = {
    "passed": "as sent",
    "rewritten": "rewritten",
    "dropped": "dropped on purpose",
    "held": "held",
    "synthesized": "synthesized",
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


# -- the summary's lines -------------------------------------------------------------------


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


def sender(r: Row) -> str:
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
    return Entry(r.t, f, sender(r), rules, [_label(r.sent)], _short(r.sent), change)


def described(e: Entry) -> str:
    """The entry's frames: one frame's summary, or each type with its count; who sent them
    when it was not cbc (the client's; the bridge's own, to cbc)."""
    counts = Counter(e.labels)
    what = (
        e.what
        if len(e.labels) == 1
        else ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in counts.items())
    )
    return {"client": "client: ", "to cbc": "to cbc: "}.get(e.who, "") + what


def passed_as_sent(rows: Sequence[Row], fold: Mapping[str, Any]) -> int:
    """The frames of cbc (and the bridge) the summary leaves out: nothing but the ``fold``
    rules touched them."""
    return sum(
        1 for r in rows if sender(r) != "client" and not [x for x in rules_of(r) if x not in fold]
    )


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
