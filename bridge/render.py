"""The tool commands' terminal output (``demo``, ``check``, ``diff``, ``rules``,
``conformance``), drawn with rich: its tables, wrapping between words, ellipses and colour,
measured in terminal cells.

Imported only by those renderers, and only when they render: ``rich`` never loads in a
drop-in session or at ``ccbridge`` start-up (tests/bridge/test_startup.py).

Every console made here (``console``) keeps two promises:

- its colour is exactly ``bridge.colour.use_colour``'s decision and its width the one the
  command asked for: every setting rich would otherwise guess from the environment (the
  no-color and force-color variables, ``TERM``, ``COLORTERM``, ``TTY_COMPATIBLE``,
  ``COLUMNS``, ``LINES``, a notebook) is given, so that ``bridge.colour`` stays the one
  place that reads them;
- nothing is read as rich markup, an emoji code or something to highlight: markup, emoji
  and highlighting are off, and the renderers hand every string that came from a peer
  over as a ``rich.text.Text`` (escaped first, ``compat.text.escape``), never inside a
  markup string.
"""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterable
from typing import IO

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

#: an SGR sequence at the end of a line (colour on: padding can sit between them)
_SGR_END = re.compile(r"\x1b\[[0-9;]*m$")


def columns(limit: int = 100) -> int:
    """The columns to fill: the terminal's (``COLUMNS`` first), 80 when the output is not
    a terminal, at most ``limit``."""
    return max(20, min(shutil.get_terminal_size((80, 24)).columns, limit))


def console(width: int, colour: bool, *, wrap: bool = True, file: IO[str] | None = None) -> Console:
    """A console writing to ``file`` (default: memory), ``width`` columns wide, coloured
    (the 8 standard colours) only when ``colour``; ``wrap`` False: a line longer than the
    width is left whole."""
    return Console(
        file=io.StringIO() if file is None else file,
        width=width,
        height=25,  # both given: rich neither asks the terminal nor reads COLUMNS / LINES
        color_system="standard" if colour else None,
        force_terminal=colour,
        no_color=not colour,
        force_jupyter=False,
        force_interactive=False,
        legacy_windows=False,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=not wrap,
    )


def render(
    *parts: RenderableType,
    width: int | None = None,
    colour: bool = False,
    wrap: bool = True,
    limit: int = 100,
) -> str:
    """``parts``, one below the other, as a terminal ``width`` columns wide shows them
    (default: ``columns(limit)``; a ``str`` is literal text), without the newline after
    the last line or trailing spaces."""
    buf = io.StringIO()
    c = console(width or columns(limit), colour, wrap=wrap, file=buf)
    for part in parts:
        c.print(Text(part) if isinstance(part, str) else part)
    out = buf.getvalue()
    return "\n".join(_trim(line) for line in out.removesuffix("\n").split("\n"))


def beside(rows: Iterable[tuple[Text, RenderableType]], fold: bool = False) -> Table:
    """Each label, then what it labels wrapped between words beside it, every line of it
    as far in as the widest label (``fold``: a word longer than that is folded, not cut
    with an ellipsis)."""
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold" if fold else "ellipsis")
    for label, text in rows:
        table.add_row(label, text)
    return table


def clamp(text: Text, width: int, lines: int) -> Text:
    """``text`` wrapped between words to ``width``, at most ``lines`` lines: the last is
    cut with an ellipsis when there was more."""
    wrapped = _wrap(text, width)
    if len(wrapped) <= lines:
        return text
    last = Text(" ").join(wrapped[lines - 1 :])
    last.truncate(width, overflow="ellipsis")
    return Text("\n").join([*wrapped[: lines - 1], last])


def hanging(text: Text, width: int, indent: int) -> RenderableType:
    """``text`` wrapped between words to ``width``, every line after the first indented by
    ``indent`` columns (a hanging indent)."""
    wrapped = _wrap(text, width)
    if len(wrapped) == 1:
        return text
    rest = Text(" ").join(wrapped[1:])
    return Group(wrapped[0], Padding(rest, (0, 0, 0, indent)))


def _wrap(text: Text, width: int) -> list[Text]:
    """``text``'s lines wrapped between words to ``width`` (no trailing spaces)."""
    lines = list(text.wrap(console(width, False), width))
    for line in lines:
        line.rstrip()
    return lines


def _trim(line: str) -> str:
    """The line without trailing spaces, the SGR sequences among them kept."""
    codes: list[str] = []
    while True:
        line = line.rstrip(" ")
        m = _SGR_END.search(line)
        if m is None:
            return line + "".join(reversed(codes))
        codes.append(m.group())
        line = line[: m.start()]
