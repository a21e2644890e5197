"""The A/B report as one self-contained HTML page (``--html FILE`` of ``ccbridge ab``, ``diff``
and ``conformance``). Pure: captures and the diff's alignment in, text out.

The page shows the two client views side by side as ``analysis.diff`` aligned them
(``DiffResult.alignment``: turns, then each task pair after the turn it started in), every
frame collapsible with its masked JSON pretty-printed (the values the diff compared:
``<task#1>``, ``{CWD}``… are marked as masked), the fields a difference names highlighted on
each side, each difference's reason from the known differences (``analysis.conformance``)
beside it, a filter "only differences", and a summary at the top (scenario, backends and
versions, contract violations per side, differences by reason). ``render_index`` is the
table of several reports (``conformance --html``, ``ab --html`` with several scenarios).

Everything that came from a stream (or a file) is untrusted: every text goes through
``compat.text.escape`` (control, bidi and zero-width characters visible) and ``html.escape``;
no data is embedded in a script. The one inline script is a constant that toggles classes,
and the page's Content-Security-Policy allows that script only (by hash), no other script,
no network, no external asset.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import attrs
import orjson

from analysis.conformance import UNEXPLAINED, Item, Known, compare, explain
from analysis.contract import Violation
from analysis.diff import Aligned, DiffOptions, DiffResult, _entries
from analysis.diffside import Frame, Task
from analysis.replay_diffs import REASON as REPLAY_REASON
from analysis.replay_diffs import replay_caused
from compat.capture import Capture
from compat.text import escape
from harness.scenario import Differs

#: longest string shown whole in a frame's JSON (longer ones are cut, with the count)
MAX_STRING = 4000
_MASK = re.compile(r"<[a-z_]+(?:#\d+)?>|\{(?:CWD_SLUG|CWD|HOME|TMP)\}")
_INDEX = re.compile(r"\[(\d+)\]")
NO_REASON = "no-reason"  # a difference when no known-differences list was given
#: the category of a difference the replay of a recording causes (``analysis.replay_diffs``)
REPLAY = "replay"


def esc(s: object) -> str:
    """Any text as HTML text (or an attribute value): terminal-unsafe characters made
    visible, then ``& < > " '`` escaped."""
    return html.escape(escape(str(s)), quote=True)


# -- the model ---------------------------------------------------------------------------


@attrs.frozen
class SideInfo:
    role: str  # "A" | "B"
    name: str  # what the user named: a capture path, a backend spec
    backend: str | None = None
    version: str | None = None
    via: str | None = None
    exit: str | None = None
    violations: tuple[Violation, ...] = ()


@attrs.frozen
class Report:
    title: str
    scenario: str | None
    a: SideInfo
    b: SideInfo
    result: DiffResult
    reasons: tuple[Item | None, ...] = ()  # per difference (empty: no known list)
    violation_items: tuple[Item, ...] = ()  # the violations with their reasons
    back: str | None = None  # a link to the index this report belongs to
    #: the differences (indices) the replay of a recording causes (``analysis.replay_diffs``)
    replayed: frozenset[int] = frozenset()


def side_info(role: str, name: str, capture: Capture, violations: Sequence[Violation]) -> SideInfo:
    h = capture.header
    exit_ = next((r.text for r in reversed(capture.records) if r.kind == "exit"), None)

    def get(k: str) -> str | None:
        v = h.get(k)
        return None if v is None else str(v)

    return SideInfo(
        role, name, get("backend"), get("backend_version"), get("via"), exit_, tuple(violations)
    )


def build(
    a: Capture,
    b: Capture,
    names: tuple[str, str],
    *,
    scenario: str | None = None,
    known: Known | None = None,
    options: DiffOptions | None = None,
    title: str | None = None,
    back: str | None = None,
    differs: Sequence[Differs] = (),
) -> Report:
    """Diff ``a`` against ``b`` (and check both), give every difference and violation its
    reason from ``known`` (when given) or the replay (``differs``: the calls a scenario made
    from a recording cannot reproduce), and make the report. ``scenario`` defaults to the
    captures' header."""
    name = scenario or a.header.get("scenario") or b.header.get("scenario")
    name = str(name) if name else None
    cmp = compare(a, b, options)
    reasons: tuple[Item | None, ...] = ()
    vitems: tuple[Item, ...] = ()
    if known is not None:
        items = explain(cmp, name or "", known).items
        reasons = tuple(i for i in items if i.what == "difference")
        vitems = tuple(i for i in items if i.what == "violation")
    replayed = replay_caused(cmp.diff, differs)
    if replayed:
        reasons = _replay_reasons(cmp.diff, reasons, replayed)
    return Report(
        title or (f"A/B: {name}" if name else f"A/B: {names[0]} vs {names[1]}"),
        name,
        side_info("A", names[0], a, cmp.violations_a),
        side_info("B", names[1], b, cmp.violations_b),
        cmp.diff,
        reasons,
        vitems,
        back,
        replayed,
    )


def _replay_reasons(
    result: DiffResult, reasons: tuple[Item | None, ...], replayed: frozenset[int]
) -> tuple[Item | None, ...]:
    """``reasons`` (one per difference) with the replay's differences given its reason."""
    out = list(reasons) or [None] * len(result.differences)
    for i in replayed:
        d = result.differences[i]
        out[i] = Item("difference", d.path, d.kind, d.a, d.b, REPLAY, REPLAY_REASON)
    return tuple(out)


# -- JSON as highlighted HTML ------------------------------------------------------------

Path = tuple[str | int, ...]


#: one step along a difference path: the location parts it adds, the value it reaches and
#: the path text left; None: the value lacks what the path names
_Step = tuple[list[str | int], Any, str] | None
_WORKFLOW = " / workflow_progress "


def _resolve(obj: Any, rel: str) -> Path | None:
    """The location in ``obj`` a difference path's tail names (``message.content[0].text``,
    `` / workflow_progress agent "x" (phase 1).state``), or None when ``obj`` lacks it.
    Keys may hold dots: the longest key of the object that the text starts with wins."""
    out: list[str | int] = []
    cur, s = obj, rel
    while s:
        step = _step(cur, s)
        if step is None:
            return None
        parts, cur, s = step
        out += parts
    return tuple(out)


def _step(cur: Any, s: str) -> _Step:
    if s.startswith("."):
        return [], cur, s[1:]
    if s.startswith(_WORKFLOW) and isinstance(cur, dict):
        return _step_workflow(cur, s[len(_WORKFLOW) :])
    m = _INDEX.match(s)
    if m is not None:
        return _step_index(cur, int(m.group(1)), s[m.end() :])
    return _step_key(cur, s)


def _step_workflow(cur: dict[str, Any], s: str) -> _Step:
    """A workflow agent, named as ``analysis.diff`` names it (the longest name that fits)."""
    wp = cur.get("workflow_progress")
    if not isinstance(wp, list):
        return None
    entries = _entries(wp)
    key = max((k for k in entries if s.startswith(k)), key=len, default=None)
    if key is None:
        return None
    idx = next(i for i, e in enumerate(wp) if e is entries[key])
    return ["workflow_progress", idx], wp[idx], s[len(key) :]


def _step_index(cur: Any, i: int, rest: str) -> _Step:
    if not isinstance(cur, list) or i >= len(cur):
        return None
    return [i], cur[i], rest


def _step_key(cur: Any, s: str) -> _Step:
    if not isinstance(cur, dict):
        return None
    keys = [k for k in cur if s.startswith(k) and (len(s) == len(k) or s[len(k)] in ".[")]
    if not keys:
        return None
    k = max(keys, key=len)
    return [k], cur[k], s[len(k) :]


def _string(v: str) -> str:
    text = orjson.dumps(v).decode()
    cut = ""
    if len(text) > MAX_STRING:
        cut = f'<span class="cut">…(+{len(text) - MAX_STRING} chars)</span>'
        text = text[:MAX_STRING]
    parts, pos = [], 0
    for m in _MASK.finditer(text):
        parts.append(esc(text[pos : m.start()]))
        parts.append(f'<span class="mask" title="masked by the diff">{esc(m.group())}</span>')
        pos = m.end()
    parts.append(esc(text[pos:]))
    return f'<span class="s">{"".join(parts)}</span>{cut}'


def _scalar(v: Any) -> str:
    if isinstance(v, str):
        return _string(v)
    if v is None or isinstance(v, bool):
        return f'<span class="l">{esc(orjson.dumps(v).decode())}</span>'
    try:
        text = orjson.dumps(v).decode()
    except TypeError:
        text = repr(v)
    return f'<span class="n">{esc(text)}</span>'


def json_html(v: Any, marks: dict[Path, str], path: Path = (), indent: int = 0) -> str:
    """``v`` pretty-printed (two spaces) as HTML; the member or element at each path of
    ``marks`` wrapped in ``<span class="hl CLASS">`` (``()`` marks the whole value)."""
    pad = "  " * (indent + 1)
    if isinstance(v, dict) and v:
        items = []
        for k, x in v.items():
            inner = f'<span class="k">{esc(orjson.dumps(k).decode())}</span>: ' + json_html(
                x, marks, (*path, k), indent + 1
            )
            items.append(pad + _mark(inner, marks.get((*path, k))))
        body = "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    elif isinstance(v, list) and v:
        items = [
            pad + _mark(json_html(x, marks, (*path, i), indent + 1), marks.get((*path, i)))
            for i, x in enumerate(v)
        ]
        body = "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"
    elif isinstance(v, (dict, list)):
        body = "{}" if isinstance(v, dict) else "[]"
    else:
        body = _scalar(v)
    return _mark(body, marks.get(())) if not path else body


def _mark(inner: str, cls: str | None) -> str:
    return f'<span class="hl {cls}">{inner}</span>' if cls else inner


# -- the page ----------------------------------------------------------------------------

_SCRIPT = (
    "(function(){var b=document.body,c=document.getElementById('only-diffs');"
    "function set(on){b.classList.toggle('only-diffs',on);c.checked=on;}"
    "c.addEventListener('change',function(){set(c.checked);});"
    "if(location.hash==='#only-differences'){set(true);}"
    "document.querySelectorAll('button[data-open]').forEach(function(x){"
    "x.addEventListener('click',function(){var o=x.getAttribute('data-open')==='1';"
    "document.querySelectorAll('details.frame').forEach(function(d){d.open=o;});});});"
    "})();"
)
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
_CSP = (
    f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; "
    "img-src 'none'; base-uri 'none'; form-action 'none'"
)

_CSS = """
:root{--a:#b3261e;--b:#1b6e2e;--bg:#f6f7f9;--line:#d9dde3;--ink:#1d2330;--mute:#667085}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);
background:var(--bg)}
header.top{background:#1d2330;color:#fff;padding:14px 24px}
header.top h1{margin:0;font-size:20px;font-weight:600}
header.top .sub{color:#c9d1dd;font-size:13px;margin-top:2px}
header.top a{color:#9cc3ff}
main{padding:16px 24px 48px;max-width:1800px;margin:0 auto}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 16px;
margin:0 0 14px}
.card h2{font-size:15px;margin:0 0 8px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;vertical-align:top;padding:5px 8px;border-bottom:1px solid #eceef2}
th{font-size:12px;color:var(--mute);font-weight:600;text-transform:uppercase;letter-spacing:.03em}
.verdict{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;font-size:13px}
.verdict.same{background:#dcf3e3;color:#14532d}.verdict.differ{background:#fde7d9;color:#7c2d12}
.toolbar{position:sticky;top:0;z-index:5;display:flex;gap:16px;align-items:center;
background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px 14px;margin:0 0 14px}
.toolbar label{font-weight:600;cursor:pointer}
.toolbar button{font:inherit;padding:3px 10px;border:1px solid var(--line);border-radius:6px;
background:#f3f4f6;cursor:pointer}
.legend{margin-left:auto;color:var(--mute);font-size:12px}
.sect{margin:0 0 18px}
.sect>h2{font-size:15px;margin:0 0 6px;padding:6px 10px;background:#e8ebf0;border-radius:6px}
.sect.task>h2{background:#e6e9f7}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:8px;font-size:12px;color:var(--mute);
font-weight:600;padding:0 2px 4px}
.row{background:#fff;border:1px solid var(--line);border-left:4px solid var(--line);
border-radius:6px;margin:0 0 6px;padding:6px 8px}
.row.has-diff{border-left-color:#e08a00}
.rhead{display:flex;gap:8px;align-items:baseline;margin-bottom:4px}
.sig{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-weight:600}
.badge{font-size:11px;border-radius:10px;padding:0 7px;background:#fff1d6;color:#7a4b00;
font-weight:600}
.cells{display:grid;grid-template-columns:1fr 1fr;gap:8px}
.cell{min-width:0}
.cell.absent{color:var(--mute);font-style:italic;padding:4px 8px;border:1px dashed var(--line);
border-radius:4px}
.cell.only{outline:2px solid #f2b8b5;border-radius:4px}.cell.b.only{outline-color:#a7d8b4}
details.frame>summary{cursor:pointer;font-size:12px;color:var(--mute);padding:2px 4px}
details.frame>summary .st{color:var(--ink);font-family:ui-monospace,Menlo,Consolas,monospace}
pre{margin:2px 0 0;padding:8px;background:#fbfbfc;border:1px solid #eceef2;border-radius:4px;
overflow:auto;max-height:420px;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
white-space:pre-wrap;word-break:break-word}
.k{color:#0b4f9c}.s{color:#7a3e00}.n{color:#1b6e2e}.l{color:#7b2fa3}
.mask{background:#eef0f4;color:#475467;border-radius:3px;padding:0 2px;font-style:italic}
.cut{color:var(--mute)}
.pv{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11px;color:#98a2b3;
white-space:nowrap;overflow:hidden;text-overflow:ellipsis;display:inline-block;max-width:70%;
vertical-align:bottom}
details[open]>summary .pv{display:none}
.hl{border-radius:3px;padding:0 1px}
.hl.changed{background:#fff0b3;box-shadow:0 0 0 1px #e8c44b}
.a .hl.only-a{background:#fde2e0;box-shadow:0 0 0 1px #f2b8b5}
.b .hl.only-b{background:#dff3e4;box-shadow:0 0 0 1px #a7d8b4}
table.diffs{margin-top:6px;font-size:12.5px}
table.diffs td{border-bottom:1px solid #f0f1f4}
td.path{font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all;width:30%}
td.va,td.vb{font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all;width:17%}
td.va{color:var(--a)}td.vb{color:var(--b)}
td.why{width:36%}
.kind{font-size:11px;color:var(--mute)}
.cat{display:inline-block;font-size:11px;font-weight:700;border-radius:4px;padding:0 6px;
margin-right:4px;text-transform:uppercase;letter-spacing:.02em}
.cat-unexplained{background:#b3261e;color:#fff}.cat-missing-rule{background:#fde2e0;color:#8c1d18}
.cat-cbc{background:#ede4fb;color:#4b1f8f}.cat-design{background:#dbeafe;color:#1e40af}
.cat-timing{background:#fef3c7;color:#854d0e}.cat-checker{background:#e5e7eb;color:#374151}
.cat-no-reason{background:#e5e7eb;color:#374151}.cat-replay{background:#e0f2fe;color:#075985}
.lifecycle{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;padding:4px 6px;
background:#fbfbfc;border:1px solid #eceef2;border-radius:4px}
.others summary{cursor:pointer;color:var(--mute);font-size:12px}
.ok{color:#14532d}.bad{color:#8c1d18;font-weight:600}
.verdict-line{font-size:15px;font-weight:600;margin:0 0 14px;padding:10px 16px;border-radius:8px;
border:1px solid var(--line)}
.verdict-line.same{background:#dcf3e3;color:#14532d}.verdict-line.differ{background:#fde7d9;
color:#7c2d12}
.mute{color:var(--mute)}
body.only-diffs .row.same,body.only-diffs .sect.same{display:none}
"""


def verdict(rep: Report) -> tuple[str, str]:
    """The report in one line, and its tone (``same``: nothing to look at; ``differ``):
    equivalent (or the same session but for what the replay of a recording causes) or how
    many differences (explained, unexplained), and the contract violations of each side."""
    r = rep.result
    k = len(rep.replayed)
    n = len(r.differences) - k
    if not n:
        what = "equivalent: B's client saw what A's saw (volatile values masked)"
    else:
        what = f"{n} difference{'s' * (n != 1)} between what A's and B's clients saw"
        if rep.reasons and any(i is not None and i.category != REPLAY for i in rep.reasons):
            unexplained = sum(1 for i in rep.reasons if i is None or i.category == UNEXPLAINED)
            what += f" ({n - unexplained} explained, {unexplained} unexplained)"
    if k:
        what += f"; {k} more from the replay (tool results that read what the recording lacks)"
    va, vb = len(rep.a.violations), len(rep.b.violations)
    vio = "no contract violations" if not va + vb else f"contract violations: A {va}, B {vb}"
    return f"Verdict: {what}; {vio}.", "same" if not n and not va + vb else "differ"


def index_verdict(
    rows: Sequence[IndexRow], yes: str = "as expected", no: str = "not"
) -> tuple[str, str]:
    """An index's line: how many scenarios, how many ``yes`` (their row ok), ``no``,
    without a result."""
    ok = sum(1 for r in rows if r.ok)
    bad = sum(1 for r in rows if r.ok is False)
    none = len(rows) - ok - bad
    parts = [f"{ok} {yes}", f"{bad} {no}"] + ([f"{none} without a result"] if none else [])
    tone = "same" if not bad and not none else "differ"
    return f"Verdict: {len(rows)} scenario{'s' * (len(rows) != 1)}: {', '.join(parts)}.", tone


def _verdict_html(line: tuple[str, str]) -> str:
    text, tone = line
    return f'<p class="verdict-line {esc(tone)}" id="verdict">{esc(text)}</p>'


def _page(title: str, subtitle: str, body: str, toolbar: bool, top: str = "") -> str:
    """The page: its header, then ``top`` (the verdict line), the toolbar, ``body``."""
    tools = ""
    if toolbar:
        tools = (
            '<div class="toolbar"><label><input type="checkbox" id="only-diffs"> '
            "only differences</label>"
            '<button type="button" data-open="1">expand all</button>'
            '<button type="button" data-open="0">collapse all</button>'
            '<span class="legend"><span class="hl changed">changed</span> '
            '<span class="a"><span class="hl only-a">only in A</span></span> '
            '<span class="b"><span class="hl only-b">only in B</span></span> '
            '<span class="mask">&lt;masked&gt;</span></span></div>'
        )
    script = f"<script>{_SCRIPT}</script>" if toolbar else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        f'<header class="top"><h1>{esc(title)}</h1><div class="sub">{subtitle}</div>'
        f"</header><main>{top}{tools}{body}</main>{script}</body></html>\n"
    )


def _short(v: Any, width: int = 160) -> str:
    s = orjson.dumps(v).decode() if not isinstance(v, str) or not v.startswith("<") else v
    s = s if len(s) <= width else s[: width - 1] + "…"
    return esc(s)


def _reason_cell(item: Item | None, known: bool) -> str:
    """A difference's reason: its item's (a known difference's, or the replay's); else
    "unexplained", or "no list" when no known-differences list was given."""
    if item is None:
        cat = UNEXPLAINED if known else NO_REASON
        return f'<span class="cat cat-{cat}">{UNEXPLAINED if known else "no list"}</span>'
    entry = f' <span class="mute">[{esc(item.entry)}]</span>' if item.entry else ""
    return (
        f'<span class="cat cat-{esc(item.category)}">{esc(item.category)}</span>'
        f"{esc(item.reason)}{entry}"
    )


def _diff_rows(rep: Report, idx: Sequence[int]) -> str:
    if not idx:
        return ""
    known = any(i is not None and i.category != REPLAY for i in rep.reasons)
    rows = []
    for i in idx:
        d = rep.result.differences[i]
        va = "(absent)" if d.kind == "only-b" else _short(d.a)
        vb = "(absent)" if d.kind == "only-a" else _short(d.b)
        item = rep.reasons[i] if i < len(rep.reasons) else None
        rows.append(
            f'<tr class="d {esc(d.kind)}" id="d-{i}"><td class="path">{esc(d.path)}'
            f' <span class="kind">{esc(d.kind)}</span></td>'
            f'<td class="va">A {va}</td><td class="vb">B {vb}</td>'
            f'<td class="why">{_reason_cell(item, known)}</td></tr>'
        )
    return f'<table class="diffs">{"".join(rows)}</table>'


def _marks(rep: Report, u: Aligned) -> tuple[dict[Path, str], dict[Path, str]]:
    """Per side, the locations the unit's differences name, with their kind."""
    ma: dict[Path, str] = {}
    mb: dict[Path, str] = {}
    for i in u.diffs:
        d = rep.result.differences[i]
        rest = d.path.split(" / ", 1)[1] if " / " in d.path else d.path
        if not rest.startswith(u.base):
            continue
        rel = rest[len(u.base) :]
        for frame, marks, side in ((u.a, ma, "only-a"), (u.b, mb, "only-b")):
            if frame is None:
                continue
            at = _resolve(frame.obj, rel)
            if at is not None:
                marks[at] = d.kind if d.kind in ("changed", side) else "changed"
    return ma, mb


def _frame_cell(side: str, f: Frame | None, marks: dict[Path, str], open_: bool, only: bool) -> str:
    if f is None:
        return f'<div class="cell {side} absent">(absent)</div>'
    m = dict(marks)
    if only:
        m[()] = f"only-{side}"
    op = " open" if open_ else ""
    cls = f"cell {side}" + (" only" if only else "")
    return (
        f'<div class="{cls}"><details class="frame"{op}><summary>{side.upper()} · '
        f'<span class="st">{esc(f.sig)}</span> · turn {f.turn} '
        f'<span class="pv">{_short(f.obj, 110)}</span></summary>'
        f"<pre>{json_html(f.obj, m)}</pre></details></div>"
    )


def _row(rep: Report, u: Aligned, label: str | None = None) -> str:
    ma, mb = _marks(rep, u)
    has = bool(u.diffs)
    badge = (
        f'<span class="badge">{len(u.diffs)} difference{"s" * (len(u.diffs) != 1)}</span>'
        if has
        else ""
    )
    cells = _frame_cell("a", u.a, ma, has, has and u.b is None) + _frame_cell(
        "b", u.b, mb, has, has and u.a is None
    )
    return (
        f'<div class="row {"has-diff" if has else "same"}"><div class="rhead">'
        f'<span class="sig">{esc(label or u.label)}</span>{badge}</div>'
        f'<div class="cells">{cells}</div>{_diff_rows(rep, u.diffs)}</div>'
    )


def _shape(t: Task | None) -> str:
    if t is None:
        return '<div class="cell absent">(no such task)</div>'
    words: list[str] = []
    for e in t.events:
        st = e.sig.removeprefix("system/")
        w = {
            "task_started": "started",
            "task_progress": "progress",
            "background_tasks_changed": "snapshot",
        }.get(st, st.removeprefix("task_"))
        if not (w == "progress" and words and words[-1].startswith("progress")):
            words.append(w)
        elif words[-1] == "progress" or words[-1].startswith("progress×"):
            n = int(words[-1][9:] or 1) + 1 if words[-1] != "progress" else 2
            words[-1] = f"progress×{n}"
    return (
        f'<div class="lifecycle">{esc(" → ".join(words))} <span class="mute">'
        f"(id {esc(t.id)}, {len(t.events)} frames)</span></div>"
    )


def _others(side: str, t: Task | None, shown: set[int]) -> str:
    if t is None:
        return f'<div class="cell {side} absent">(absent)</div>'
    rest = [f for f in t.events if id(f) not in shown]
    if not rest:
        return f'<div class="cell {side} mute">(none)</div>'
    inner = "".join(_frame_cell(side, f, {}, False, False) for f in rest)
    return (
        f'<div class="cell {side}"><details class="others"><summary>{len(rest)} frame(s)'
        f"</summary>{inner}</details></div>"
    )


def _task_section(
    rep: Report, name: str, ta: Task | None, tb: Task | None, units: list[Aligned]
) -> str:
    ndiff = sum(len(u.diffs) for u in units)
    rows = []
    shown: set[int] = set()
    for u in units:
        if u.label == "lifecycle":
            has = bool(u.diffs)
            badge = f'<span class="badge">{len(u.diffs)}</span>' if has else ""
            rows.append(
                f'<div class="row {"has-diff" if has else "same"}"><div class="rhead">'
                f'<span class="sig">lifecycle</span>{badge}</div><div class="cells">'
                f'<div class="cell a">{_shape(ta)}</div><div class="cell b">'
                f"{_shape(tb)}</div></div>{_diff_rows(rep, u.diffs)}</div>"
            )
            continue
        shown.update(id(f) for f in (u.a, u.b) if f is not None)
        rows.append(_row(rep, u))
    if ta is not None or tb is not None:
        rows.append(
            '<div class="row same"><div class="rhead"><span class="sig">the task\'s '
            'other frames</span><span class="mute">(not compared one by one: their '
            "number and the intermediate snapshots are timing)</span></div>"
            f'<div class="cells">{_others("a", ta, shown)}{_others("b", tb, shown)}'
            "</div></div>"
        )
    turn = units[0].turn if units else 0
    return (
        f'<section class="sect task {"has-diff" if ndiff else "same"}"><h2>'
        f'{esc(name)} <span class="mute">· starts in turn {turn}</span> '
        f"{_count(ndiff)}</h2>{''.join(rows)}</section>"
    )


def _count(n: int) -> str:
    return f'<span class="badge">{n} difference{"s" * (n != 1)}</span>' if n else ""


def _side_row(s: SideInfo, frames: Any, turns: Any, tasks: Any) -> str:
    vs = s.violations
    if vs:
        by = ", ".join(f"{esc(k)}: {n}" for k, n in sorted(Counter(v.rule for v in vs).items()))
        vio = f'<span class="bad">{len(vs)}</span> ({by})'
    else:
        vio = '<span class="ok">none</span>'
    ver = esc(s.version) if s.version else '<span class="mute">unknown</span>'
    return (
        f"<tr><td><b>{s.role}</b></td><td>{esc(s.name)}</td>"
        f"<td>{esc(s.backend or '?')} {ver}</td><td>{esc(s.via or '—')}</td>"
        f"<td>{esc(s.exit if s.exit is not None else '?')}</td><td>{esc(frames)}</td>"
        f"<td>{esc(turns)}</td><td>{esc(tasks)}</td><td>{vio}</td></tr>"
    )


def _summary(rep: Report) -> str:
    r, s = rep.result, rep.result.summary

    def pick(key: str, i: int) -> Any:
        v = s.get(key)
        return v[i] if isinstance(v, list) and len(v) > i else "?"

    n = len(r.differences)
    badge = (
        '<span class="verdict same">equivalent</span>'
        if r.equivalent
        else f'<span class="verdict differ">{n} difference{"s" * (n != 1)}</span>'
    )
    kinds = ", ".join(f"{esc(k)}: {v}" for k, v in s.get("kinds", {}).items())
    sides = _side_row(rep.a, pick("frames", 0), pick("turns", 0), pick("tasks", 0)) + _side_row(
        rep.b, pick("frames", 1), pick("turns", 1), pick("tasks", 1)
    )
    out = [
        f'<div class="card"><h2>Summary</h2><p>Scenario: <b>'
        f"{esc(rep.scenario or '(not named in the captures)')}</b> &nbsp; {badge} "
        f'<span class="mute">{kinds}</span></p><table><tr><th>side</th><th>capture</th>'
        "<th>backend</th><th>via</th><th>exit</th><th>frames</th><th>turns</th>"
        f"<th>tasks</th><th>contract violations</th></tr>{sides}</table>"
        '<p class="mute">Frames are shown as the diff compares them: volatile values '
        "(ids numbered by first appearance, clocks, durations, costs, token counts, paths "
        "under the working directory, HOME and /tmp, model names) are masked, e.g. "
        '<span class="mask">&lt;task#1&gt;</span>, <span class="mask">{CWD}</span>.</p>'
        "</div>"
    ]
    if n:
        out.append(_by_reason(rep))
    vio = _violations(rep)
    if vio:
        out.append(vio)
    return "".join(out)


def _by_reason(rep: Report) -> str:
    groups: dict[tuple[str, str], list[int]] = {}
    for i in range(len(rep.result.differences)):
        item = rep.reasons[i] if i < len(rep.reasons) else None
        key = (
            (item.category, item.reason)
            if item is not None
            else (UNEXPLAINED if rep.reasons else NO_REASON, "")
        )
        groups.setdefault(key, []).append(i)
    order = sorted(groups.items(), key=lambda kv: (kv[0][0] != UNEXPLAINED, -len(kv[1])))
    rows = []
    for (cat, reason), idx in order:
        text = (
            esc(reason)
            if reason
            else ("no known-differences list applied" if cat == NO_REASON else "no known reason")
        )
        rows.append(
            f'<tr><td><span class="cat cat-{esc(cat)}">{esc(cat)}</span></td>'
            f"<td>{len(idx)}</td><td>{text}</td>"
            f'<td><a href="#d-{idx[0]}">first</a></td></tr>'
        )
    return (
        '<div class="card"><h2>Differences by reason</h2><table><tr><th>category</th>'
        f"<th>count</th><th>reason</th><th></th></tr>{''.join(rows)}</table></div>"
    )


def _violations(rep: Report) -> str:
    if not rep.a.violations and not rep.b.violations:
        return ""
    items = {(i.path, i.kind): i for i in rep.violation_items}
    rows = []
    for side in (rep.a, rep.b):
        for v in side.violations:
            where = f"line {v.lineno}" if v.lineno else "end of stream"
            path = f"contract [{v.rule}] {where}: {v.message}"
            item = items.get(("Claude side: " + path if side.role == "A" else path, v.rule))
            why = _reason_cell(item, True) if rep.violation_items else ""
            rows.append(
                f"<tr><td><b>{side.role}</b></td><td>{esc(v.rule)}</td>"
                f"<td>{esc(where)}</td><td>{esc(v.message)}</td><td>{why}</td></tr>"
            )
    return (
        '<div class="card"><h2>Contract violations</h2><table><tr><th>side</th>'
        "<th>rule</th><th>where</th><th>message</th><th>reason</th></tr>"
        f"{''.join(rows)}</table></div>"
    )


def render_report(rep: Report) -> str:
    """The whole page for one comparison."""
    al = rep.result.alignment
    assert al is not None, "a DiffResult from analysis.diff.diff carries its alignment"
    sections: dict[str, list[Aligned]] = {}
    for u in al.units:
        sections.setdefault(u.section, []).append(u)
    task_names = {name for name, _, _ in al.tasks}
    tasks_at: dict[int, list[tuple[str, Task | None, Task | None]]] = {}
    for t in al.tasks:
        units = sections.get(t[0], [])
        tasks_at.setdefault(units[0].turn if units else 0, []).append(t)
    cols = (
        f'<div class="cols"><div>A · {esc(rep.a.name)}</div><div>B · {esc(rep.b.name)}</div></div>'
    )
    body: list[str] = []

    def tasks_of(turn: int) -> None:
        for name, ta, tb in tasks_at.pop(turn, []):
            body.append(_task_section(rep, name, ta, tb, sections.get(name, [])))

    tasks_of(0)
    for sect, units in sections.items():
        if sect in task_names:
            continue
        n = sum(len(u.diffs) for u in units)
        rows = "".join(_row(rep, u) for u in units)
        body.append(
            f'<section class="sect {"has-diff" if n else "same"}"><h2>{esc(sect)} '
            f"{_count(n)}</h2>{cols}{rows}</section>"
        )
        tasks_of(units[0].turn)
    for turn in sorted(tasks_at):
        tasks_of(turn)
    sub = f"A: {esc(rep.a.name)} &nbsp;·&nbsp; B: {esc(rep.b.name)}"
    if rep.back:
        sub += f' &nbsp;·&nbsp; <a href="{esc(rep.back)}">all scenarios</a>'
    top = _verdict_html(verdict(rep))
    return _page(rep.title, sub, _summary(rep) + "".join(body), toolbar=True, top=top)


# -- an index of reports -----------------------------------------------------------------


@attrs.frozen
class IndexRow:
    scenario: str
    href: str | None  # the scenario's report, relative to the index
    cells: tuple[str, ...]  # plain text, escaped here
    ok: bool | None = None  # None: unknown / error


def render_index(
    title: str,
    intro: str,
    columns: Sequence[str],
    rows: Sequence[IndexRow],
    notes: Sequence[str] = (),
    verdict_line: tuple[str, str] | None = None,
) -> str:
    """A table with one row per scenario and a link to its report (every text escaped),
    opened by ``verdict_line`` (text, tone; default ``index_verdict``'s)."""
    head = "".join(f"<th>{esc(c)}</th>" for c in ("scenario", *columns))
    out = []
    for r in rows:
        name = f'<a href="{esc(r.href)}">{esc(r.scenario)}</a>' if r.href else esc(r.scenario)
        cls = "" if r.ok is None else ("ok" if r.ok else "bad")
        cells = "".join(f"<td>{esc(c)}</td>" for c in r.cells)
        out.append(f'<tr><td class="{cls}"><b>{name}</b></td>{cells}</tr>')
    extra = "".join(f'<p class="mute">{esc(n)}</p>' for n in notes)
    body = (
        f'<div class="card"><p>{esc(intro)}</p><table><tr>{head}</tr>{"".join(out)}'
        f"</table>{extra}</div>"
    )
    top = _verdict_html(verdict_line or index_verdict(rows))
    return _page(title, f"{len(rows)} scenario(s)", body, toolbar=False, top=top)
