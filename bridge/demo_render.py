"""What ``ccbridge demo`` prints: a frame in a few words (``summarize``), the session's
timeline of frames with what the bridge did to each (``Row``, ``render_rows``), and the
bridge's statistics as a table (``stats_table``).

Everything shown from the stream is escaped first: backend strings are untrusted.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import attrs

from compat.text import escape


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


@attrs.define
class Row:
    """One frame of the session: who sent it, what it was, what the bridge did to it."""

    t: float
    direction: str  # "up" (client -> cbc) or "down" (cbc -> client)
    sent: str  # summary of what was sent ("" for a frame the bridge made)
    got: str | None = None  # summary of what the other side received, when it differs
    rules: list[str] = attrs.Factory(list)  # the rules that rewrote it, in order
    action: str = "passed"  # passed, rewritten, dropped, held, synthesized
    by: str | None = None  # the rule that dropped, held or synthesized it
    sent_on: bool = False  # it reached the other side (a held frame may never)


_COLOURS = {
    "passed": "2",
    "rewritten": "33",
    "dropped": "31",
    "held": "35",
    "synthesized": "32",
    "rule": "36",
    "head": "1",
}
_ARROW = {"up": "client → cbc", "down": "cbc → client"}


def _paint(text: str, what: str, colour: bool) -> str:
    return f"\x1b[{_COLOURS[what]}m{text}\x1b[0m" if colour and text else text


def render_rows(rows: list[Row], width: int, colour: bool = False) -> str:
    """The timeline, wrapped (never cut) to ``width`` columns: each frame with who sent it,
    what it was and, when the bridge touched it, the rules that did and what it became."""
    indent = " " * 24
    text_w = max(20, width - len(indent))
    head = textwrap.wrap("what was sent (→ what the other side received)", text_w)
    out = [
        _paint(f"{'time':>6}  {'direction':<15} {head[0]}", "head", colour),
        *(_paint(indent + h, "head", colour) for h in head[1:]),
        "-" * min(width, 100),
    ]
    for r in rows:
        out += _row_lines(r, indent, text_w, colour)
    return "\n".join(out)


def _row_lines(r: Row, indent: str, text_w: int, colour: bool) -> list[str]:
    arrow = _arrow(r)
    first = textwrap.wrap(r.sent or "(nothing)", text_w) or [""]
    shown = r.action if r.action != "held" or not r.sent_on else "rewritten"
    lines = [f"{r.t:6.2f}  {arrow:<15} " + _paint(first[0], shown, colour)]
    lines += [indent + _paint(x, shown, colour) for x in first[1:]]
    said = _what_the_bridge_did(r)
    if said:
        for x in textwrap.wrap("↳ " + "; ".join(said), text_w, subsequent_indent="  "):
            lines.append(indent + _paint(x, "rule", colour))
    if r.got is not None:
        for x in textwrap.wrap("→ " + r.got, text_w, subsequent_indent="  "):
            lines.append(indent + _paint(x, shown, colour))
    return lines


def _arrow(r: Row) -> str:
    """Who sent the frame to whom."""
    if r.action == "synthesized":
        return "bridge → " + ("client" if r.direction == "down" else "cbc")
    return _ARROW[r.direction]


def _what_the_bridge_did(r: Row) -> list[str]:
    said = []
    if r.rules:
        said.append("rewritten by " + escape(", ".join(r.rules)))
    if r.action == "held":
        said.append(
            f"held by {escape(str(r.by))}" + (", sent later" if r.sent_on else ", never sent")
        )
    elif r.action in ("dropped", "synthesized"):
        said.append(f"{r.action} by {escape(str(r.by))}")
    return said


#: the statistics columns shown on their own; any other count goes in the last column
_MAIN = ("rewritten", "dropped", "synthesized", "held", "released")


def stats_table(stats: dict[str, Any]) -> str:
    """The bridge's statistics as a small table: frames per direction, then per rule the
    counts that are not zero. A counter's name can be a peer's (an unknown frame's type):
    every name and count is escaped (``compat.text.escape``)."""
    frames = stats.get("frames", {})
    lines = [f"{'frames':<8}{'in':>6}{'out':>6}"]
    for d in ("up", "down"):
        f = frames.get(d, {})
        lines.append(f"{d:<8}{escape(str(f.get('in', 0))):>6}{escape(str(f.get('out', 0))):>6}")
    rules = {
        escape(str(k)): v
        for k, v in (stats.get("rules") or {}).items()
        if isinstance(v, dict) and any(v.values())
    }
    if rules:
        w = max(len(r) for r in [*rules, "rule"])
        lines += ["", f"{'rule':<{w}}  " + " ".join(f"{c:>11}" for c in _MAIN) + "  other"]
        for rule, counts in sorted(rules.items()):
            lines.append(f"{rule:<{w}}  {_counts_row(counts)}".rstrip())
    return "\n".join(lines)


def _counts_row(counts: dict[Any, Any]) -> str:
    """One rule's counts: the main columns, then every other count by (escaped) name."""
    main = " ".join(f"{escape(str(counts.get(c, 0) or '')):>11}" for c in _MAIN)
    other = ", ".join(
        f"{escape(str(k))} {escape(str(n))}"
        for k, n in sorted(counts.items(), key=lambda kv: str(kv[0]))
        if k not in _MAIN and n
    )
    return f"{main}  {other}"
