"""``ccbridge check CAPTURE|-``: does a stream honour the Claude Code 2.1.220 contract?

Reads a ccbridge capture, a reference transcript or a plain stdout dump (``-``: stdin) and
checks what its client saw (``analysis.contract``). Exit 0: no violations; 1: violations;
2: the input could not be read or parsed (or bad usage). ``--json`` for programs,
``--rules`` lists the rule ids. ``--contract cbc``: cbc 2.163.0's contract instead
(``analysis.contract_cbc``: what a CodeBuddy SDK client relies on; profile ``claude-to-cbc``).

Everything printed that came from the stream is escaped (``contract.format_text`` does it
for text; JSON output has C1/bidi/zero-width characters as ``\\uXXXX``: ``compat.text``).
Colour only when stdout is a terminal and ``NO_COLOR`` is unset (https://no-color.org).
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO

import orjson

from analysis.contract import RULES, check, format_text, to_json
from bridge.cli import parser
from compat.capture import Capture, CaptureError, parse
from compat.exits import Exit
from compat.text import escape, escape_json

EXIT_OK, EXIT_FOUND, EXIT_ERROR = Exit.OK, Exit.FAILED, Exit.USAGE
_RULE_TAG = re.compile(r"^((?:line \d+|end of stream): )\[([a-z-]+)\]", re.M)


def use_color(stream: IO[str], environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", "") != "":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def read_capture(path: str, prog: str) -> Capture | None:
    """The capture at ``path`` (``-``: stdin), or ``None`` after a message on stderr."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
        return parse(data.split(b"\n"))
    except (OSError, CaptureError) as e:
        where = "stdin" if path == "-" else path
        print(f"ccbridge {prog}: {escape(repr(where))}: {escape(str(e))}", file=sys.stderr)
        return None


def main(argv: list[str]) -> int:
    p = parser("check", __doc__.split("\n\n")[0].split(": ", 1)[1])
    p.add_argument(
        "capture",
        nargs="?",
        metavar="CAPTURE|-",
        help="a capture, reference transcript or stdout dump; - reads stdin",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--contract",
        choices=("claude", "cbc"),
        default="claude",
        help="whose contract: Claude Code 2.1.220 (default) or cbc 2.163.0 "
        "(what a CodeBuddy SDK client relies on; profile claude-to-cbc)",
    )
    p.add_argument("--rules", action="store_true", help="list the rule ids and exit")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code or 0)
    rules, check_fn, fmt = RULES, check, format_text
    if args.contract == "cbc":
        from analysis import contract_cbc

        rules, check_fn, fmt = contract_cbc.RULES, contract_cbc.check, contract_cbc.format_text
    if args.rules:
        if args.json:
            print(escape_json(orjson.dumps(rules).decode()))
        else:
            print("\n".join(f"{rule:<20} {what}" for rule, what in rules.items()))
        return EXIT_OK
    if args.capture is None:
        p.print_usage(sys.stderr)
        print("ccbridge check: a CAPTURE (or - for stdin) is required", file=sys.stderr)
        return EXIT_ERROR
    capture = read_capture(args.capture, "check")
    if capture is None:
        return EXIT_ERROR
    violations = check_fn(capture)
    if args.json:
        print(escape_json(to_json(violations)))
    else:
        text = fmt(violations)  # escapes every string from the stream
        if use_color(sys.stdout):
            text = _colour(text, bool(violations))
        sys.stdout.write(text)
    return EXIT_FOUND if violations else EXIT_OK


def _colour(text: str, bad: bool) -> str:
    """Colour the rule tags and the summary. Only our own tokens are wrapped: the text was
    escaped before, so no sequence from the stream can reach the terminal."""
    text = _RULE_TAG.sub(lambda m: f"{m.group(1)}\x1b[33m[{m.group(2)}]\x1b[0m", text)
    head, _, last = text.rstrip("\n").rpartition("\n")
    last = f"\x1b[{'31' if bad else '32'}m{last}\x1b[0m"
    return (f"{head}\n" if head else "") + last + "\n"
