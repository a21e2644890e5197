"""Whether a command colours its output: one decision for every command that does (``check``,
``diff``, ``ab``, ``demo``).

In order, the first that applies decides:

1. ``--color always`` / ``--color never`` (the ``choice``; ``auto``, the default, goes on);
2. ``NO_COLOR`` set and not empty: no colour (https://no-color.org: an empty ``NO_COLOR=``
   is as if unset);
3. ``FORCE_COLOR`` set and not empty: colour, whatever its value and wherever the output
   goes (https://force-color.org);
4. ``TERM=dumb``: no colour (a terminal that does not read escape sequences);
5. colour only when the output is a terminal.

Only the commands' own markup is coloured: what a peer sent is escaped first
(``compat.text.escape``), so no escape sequence of its own ever reaches the terminal.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

#: the values of ``--color``
CHOICES = ("auto", "always", "never")


def use_colour(
    stream: Any, environ: Mapping[str, str] | None = None, *, choice: str = "auto"
) -> bool:
    """Colour what goes to ``stream`` (a file object: its ``isatty`` is asked)?
    ``environ`` defaults to ``os.environ``; ``choice`` is ``--color``'s value."""
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", ""):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def add_option(parser: argparse.ArgumentParser) -> None:
    """``--color auto|always|never`` on a command that colours."""
    parser.add_argument(
        "--color",
        choices=CHOICES,
        default="auto",
        metavar="WHEN",
        help="colour the output: auto (on a terminal, unless NO_COLOR is set and not empty; "
        "a non-empty FORCE_COLOR forces it, TERM=dumb turns it off), always or never "
        "(default: %(default)s)",
    )
