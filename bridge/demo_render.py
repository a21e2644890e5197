"""What ``ccbridge demo`` prints (the frames and what became of them: ``bridge.demo_rows``),
drawn with rich (``bridge.render``): the default one-screen view (``render_summary``: the
frames the bridge changed, dropped, held or made, grouped, each group with the rules that
did it); every frame (``render_rows``, ``--all``); the ``legend`` of marks and colours; the
closing ``verdict``; the bridge's statistics (``stats_table``).

No line is wider than the width asked for: text is wrapped between words (a rule name is
never broken at its hyphens) and what is still too long is cut with an ellipsis. Every
string from the stream was escaped first (``bridge.demo_rows``) and is handed to rich as
text, never as markup. Colour is the caller's decision (``bridge.colour``); only our own
marks and words are coloured. rich is imported only when something is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bridge.demo_rows import (
    FATES,
    MARKS,
    MEANING,
    Counts,
    Entry,
    Row,
    described,
    entries,
    fate,
    folded,
    passed_as_sent,
)
from compat.text import escape

if TYPE_CHECKING:  # rich loads only when a view is drawn (bridge.render)
    from rich.console import JustifyMethod, RenderableType
    from rich.table import Table
    from rich.text import Text


#: the styles of the marks and words (rich's, the 8 standard colours); a frame dropped on
#: purpose is blue, not an error's red
STYLES = {
    "passed": "dim",
    "rewritten": "yellow",
    "dropped": "blue",
    "held": "magenta",
    "synthesized": "green",
    "rule": "cyan",
    "head": "bold",
}


def _grid(*widths: int, wrap_last: bool = False) -> Table:
    """One line of cells of these widths (0: as wide as it needs), one space apart, the
    first right-aligned: a cell too long is cut with an ellipsis, but the last is wrapped
    between words when ``wrap_last`` (a rule name is never broken at its hyphens)."""
    from rich.table import Table

    grid = Table.grid(padding=(0, 1))
    for i, w in enumerate(widths):
        wraps = wrap_last and i == len(widths) - 1
        grid.add_column(width=w or None, justify="right" if i == 0 else "left", no_wrap=not wraps)
    return grid


def legend(width: int, colour: bool = False) -> str:
    """The marks and their colours, wrapped between items."""
    from rich.columns import Columns
    from rich.text import Text

    from bridge.render import beside, render

    items = [Text.styled(f"{MARKS[f]} {MEANING[f]}", STYLES[f]) for f in FATES]
    line = beside([(Text("legend:"), Columns(items, padding=(0, 2)))])
    return render(line, width=width, colour=colour)


# -- every frame (--all) ----------------------------------------------------------------

_ARROW = {"up": "client → cbc", "down": "cbc → client"}


def render_rows(rows: list[Row], width: int, colour: bool = False) -> str:
    """The timeline, wrapped (never cut) to ``width`` columns: each frame with who sent it,
    what it was and, when the bridge touched it, the rules that did and what it became."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from bridge.render import render

    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=0,
        expand=True,
        header_style=STYLES["head"],
    )
    table.add_column("t (s)", justify="right", width=6, no_wrap=True)
    table.add_column("", width=1, no_wrap=True)
    table.add_column("direction", width=15, no_wrap=True)
    table.add_column("what was sent (→ what the other side received)", overflow="fold")
    for r in rows:
        shown = fate(r)
        mark = Text.styled(MARKS[shown], STYLES[shown])
        table.add_row(Text(f"{r.t:6.2f}"), mark, Text(_arrow(r)), _frame(r, shown))
    return render(table, width=width, colour=colour)


def _frame(r: Row, shown: str) -> RenderableType:
    """What was sent, what the bridge did to it and what the other side received."""
    from rich.console import Group
    from rich.text import Text

    said = _what_the_bridge_did(r)
    return Group(
        Text.styled(r.sent or "(nothing)", STYLES[shown]),
        *([_marked("↳", "; ".join(said), "rule")] if said else []),
        *([_marked("→", r.got, shown)] if r.got is not None else []),
    )


def _marked(mark: str, text: str, style: str) -> Table:
    """``mark``, and ``text`` wrapped beside it (each line as far in), in ``style``."""
    from rich.text import Text

    from bridge.render import beside

    return beside([(Text.styled(mark, STYLES[style]), Text.styled(text, STYLES[style]))], True)


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
    from rich.text import Text

    from bridge.render import render

    fold = folded(rows)
    es = entries(rows, fold)
    rule_w = min(22, max((len(x) + 1 for e in es for x in e.rules), default=4))
    widths = (6, 1, max(20, width - _LEAD - 2 - rule_w), rule_w + 1)
    head = _grid(*widths)
    head.add_row(*(Text.styled(x, STYLES["head"]) for x in _HEAD))
    out: list[RenderableType] = [*_fold_lines(fold, width, about), head]
    last = ""
    for e in es:
        t = f"{e.t:6.2f}"
        if last and e.t - float(last) >= 5.0:
            out.append(_gap(e.t - float(last)))
        out.append(_entry_line(e, t if t != last else "", widths, width))
        last = t
    left = passed_as_sent(rows, fold)
    if left:
        out.append(Text(f"({left} more frame{'s' * (left != 1)} passed as sent: --all lists them)"))
    return render(*out, width=width, colour=colour)


def _gap(seconds: float) -> Table:
    """The line that says the time jumps."""
    from rich.text import Text

    line = _grid(6, 1, 0)
    line.add_row("", *(Text.styled(x, STYLES["passed"]) for x in ("⋮", f"{seconds:.1f} s later")))
    return line


#: the summary's column heads
_HEAD = ("t (s)", "", "frames (from cbc, unless said)", " rule")


def _fold_lines(
    fold: Mapping[str, tuple[int, int, str]], width: int, about: Mapping[str, str]
) -> list[Text]:
    """Each folded rule in a sentence of at most two lines."""
    from rich.text import Text

    from bridge.render import clamp

    out = []
    for rule, (n, total, who) in fold.items():
        does = f": {escape(about[rule])}" if rule in about else ""
        said = f" rewrote {n} of {who}'s {total} frames (not repeated below){does}."
        out.append(clamp(Text.assemble((rule, STYLES["rule"]), said), width, 2))
    return out


def _entry_line(e: Entry, t: str, widths: tuple[int, ...], width: int) -> Table:
    """An entry: its frames (and what the other side received instead), one line each, cut
    to fit; its rules on the right, as many lines as they take (a name is never cut at a
    hyphen); no rules: the frames take the whole line."""
    from rich.padding import Padding
    from rich.text import Text

    what = Text.styled(described(e), STYLES[e.fate])
    if e.delta is not None:
        what.append("\n→ " + e.delta, STYLES[e.fate])
    cells: list[RenderableType] = [Text(t), Text.styled(MARKS[e.fate], STYLES[e.fate]), what]
    if not e.rules and e.delta is None:
        line = _grid(6, 1, width - _LEAD)
    else:
        line = _grid(*widths, wrap_last=True)
        rules = Text.styled(", ".join(e.rules), STYLES["rule"])
        cells.append(Padding(rules, (0, 0, 0, 1)))  # two columns apart from the frames
    line.add_row(*cells)
    return line


# -- the verdict ----------------------------------------------------------------------------


def verdict(
    c: Counts, target: str, violations: int | None, width: int, colour: bool = False
) -> str:
    """The closing lines: what cbc sent and the bridge did, then the verdict on what the
    client saw (``violations``: the contract check's count; None: not checked)."""
    from rich.text import Text

    from bridge.render import hanging, render

    checked = (
        "the contract not checked (ccbridge check is not installed)"
        if violations is None
        else f"{violations} contract violation{'s' * (violations != 1)}"
    )
    did = f"cbc sent {c.sent} frames: the bridge dropped {c.dropped} on purpose and made {c.made}."
    said = (
        f"the client saw a Claude Code {target} session: {c.received} frames, "
        f"{c.changed} changed by {c.rules} rules, {checked}"
    )
    verdict = Text.assemble(("verdict:", STYLES["head"]), " ", said)
    return render(Text(did), hanging(verdict, width, 2), width=width, colour=colour)


# -- the statistics -------------------------------------------------------------------------

#: the statistics columns of the rules' table; any other count goes in the table below it
_MAIN = ("rewritten", "dropped", "synthesized", "held", "released")


def stats_table(stats: dict[str, Any], width: int = 80, colour: bool = False) -> str:
    """The bridge's statistics as small tables of at most ``width`` columns: frames per
    direction; per rule the main counts that are not zero; then every other count that is
    not zero, by rule. A counter's name can be a peer's (an unknown frame's type): every
    name and count is escaped (``compat.text.escape``), and cut to fit."""
    from rich.text import Text

    from bridge.render import render

    frames = _table(("frames", "left", 0, 0), ("in", "right", 5, 0), ("out", "right", 5, 0))
    for d in ("up", "down"):
        f = stats.get("frames", {}).get(d, {})
        frames.add_row(Text(d), *(Text(escape(str(f.get(k, 0)))) for k in ("in", "out")))
    parts: list[RenderableType] = [frames]
    for table in _rule_tables(stats.get("rules") or {}):
        parts += ["", table] if table.row_count else []
    return render(*parts, width=width, colour=colour)


def _rule_tables(rules: dict[Any, Any]) -> tuple[Table, Table]:
    """Per rule (escaped), its main counts; and its other counts, one a line."""
    from rich.text import Text

    main = _table(("rule", "left", 0, 24), *((c, "right", len(c), len(c)) for c in _MAIN))
    other = _table(("rule", "left", 0, 24), ("other count", "left", 0, 0), ("n", "right", 0, 12))
    other.columns[1].no_wrap = False  # the column that gives way (a peer's name can be long)
    shown = {escape(str(k)): v for k, v in rules.items() if isinstance(v, dict) and any(v.values())}
    for rule, counts in sorted(shown.items()):
        main.add_row(Text(rule), *(Text(escape(str(counts.get(c, 0) or ""))) for c in _MAIN))
        more = sorted(((str(k), n) for k, n in counts.items() if k not in _MAIN and n), key=_first)
        for i, (k, n) in enumerate(more):
            other.add_row(Text(rule if i == 0 else ""), Text(escape(k)), Text(escape(str(n))))
    return main, other


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]


def _table(*columns: tuple[str, JustifyMethod, int, int]) -> Table:
    """A table without lines, its heads in bold, two spaces between columns, each column
    (head, justify, at least, at most: 0 for no bound) on one line: what is too long is cut
    with an ellipsis."""
    from rich.table import Table

    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style=STYLES["head"])
    for head, justify, least, most in columns:
        table.add_column(
            head, justify=justify, min_width=least or None, max_width=most or None, no_wrap=True
        )
    return table
