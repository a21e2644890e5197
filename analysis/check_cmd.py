"""``ccbridge check CAPTURE|-``: does a stream honour the Claude Code 2.1.220 contract?

Reads a ccbridge capture, a reference transcript or a plain stdout dump (``-``: stdin) and
checks what its client saw (``analysis.contract``). Exit 0: no violations; 1: violations;
2: the input could not be read or parsed (or bad usage). ``--json`` for programs,
``--rules`` lists the rule ids. ``--contract cbc``: cbc 2.163.0's contract instead
(``analysis.contract_cbc``: what a CodeBuddy SDK client relies on; profile ``claude-to-cbc``).

Everything printed that came from the stream is escaped (``contract.format_text`` does it
for text; JSON output has C1/bidi/zero-width characters as ``\\uXXXX``: ``compat.text``).
Colour: ``--color``, else the one policy of every command (``bridge.colour``).
"""

from __future__ import annotations

import re
import sys

import orjson

from analysis.contract import RULES, check, format_text, to_json
from bridge.cli import Parser, judged, parser
from bridge.colour import add_option, use_colour
from compat import capture
from compat.capture import Capture, CaptureError
from compat.exits import Exit
from compat.text import escape, escape_json

EXIT_OK, EXIT_FOUND, EXIT_ERROR = Exit.OK, Exit.FAILED, Exit.USAGE
_RULE_TAG = re.compile(r"^((?:line \d+|end of stream): )\[([a-z-]+)\]", re.M)


def read_capture(path: str, prog: str) -> Capture | None:
    """The capture at ``path`` (``-``: stdin; ``compat.capture.read``: what a capture is),
    or ``None`` after one line on stderr: ``ccbridge PROG: PATH: why``."""
    try:
        cap = capture.read(sys.stdin.buffer.read()) if path == "-" else capture.load(path)
    except CaptureError as e:
        where = "stdin" if path == "-" else path
        print(f"ccbridge {prog}: {escape(where)}: {escape(str(e))}", file=sys.stderr)
        return None
    return cap


def build_parser() -> Parser:
    p = parser(
        "check",
        "does a stream honour the Claude Code 2.1.220 contract (or cbc 2.163.0's)?",
        examples=[
            "ccbridge check run.jsonl",
            "ccbridge check --contract cbc reverse.jsonl",
            "claude-on-cbc -p hi --output-format stream-json --verbose | ccbridge check -",
            "ccbridge check --rules",
        ],
        exits=judged(
            "no violations",
            "violations (each with its rule, line and frame)",
            "a usage error, or the input is not a capture",
        ),
    )
    p.add_argument(
        "capture",
        nargs="?",
        metavar="CAPTURE|-",
        help="a capture, a reference transcript or a stdout dump; - reads stdin",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--contract",
        choices=("claude", "cbc"),
        default="claude",
        help="whose contract: Claude Code 2.1.220's, or cbc 2.163.0's (what a CodeBuddy SDK "
        "client relies on; profile claude-to-cbc) (default: %(default)s)",
    )
    p.add_argument("--rules", action="store_true", help="list the rule ids and exit")
    add_option(p)
    return p


def main(argv: list[str]) -> int:
    p = build_parser()
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
            print(rule_list(rules, use_colour(sys.stdout, choice=args.color)))
        return EXIT_OK
    if args.capture is None:
        print(
            "ccbridge check: a CAPTURE (or - for stdin) is required (try ccbridge check --help)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    cap = read_capture(args.capture, "check")
    if cap is None:
        return EXIT_ERROR
    violations = check_fn(cap)
    if args.json:
        print(escape_json(to_json(violations)))
    else:
        text = fmt(violations)  # escapes every string from the stream
        if use_colour(sys.stdout, choice=args.color):
            text = _colour(text, bool(violations))
        sys.stdout.write(text)
    return EXIT_FOUND if violations else EXIT_OK


def rule_list(rules: dict[str, str], colour: bool = False, width: int | None = None) -> str:
    """Each rule id (coloured like the tags of a report), then what it checks, wrapped
    beside it to the terminal's width (``width``: given; ``bridge.render``)."""
    from rich.text import Text

    from bridge.render import beside, render

    table = beside((Text.styled(rule, _TAG), Text(what)) for rule, what in rules.items())
    return render(table, width=width, colour=colour)


#: the styles of a report's rule tags and of its last line (no violations, violations)
_TAG, _GOOD, _BAD = "yellow", "green", "red"


def _colour(text: str, bad: bool) -> str:
    """Colour the rule tags and the summary. Only our own tokens are styled, and the text
    is never read as markup: it was escaped before, so no sequence from the stream can
    reach the terminal, and a ``[red]`` from the stream stays those five characters."""
    from rich.text import Text

    from bridge.render import render

    styled = Text(text.rstrip("\n"))
    for m in _RULE_TAG.finditer(styled.plain):
        styled.stylize(_TAG, m.start(2) - 1, m.end(2) + 1)
    last = styled.plain.rfind("\n") + 1
    styled.stylize(_BAD if bad else _GOOD, last, len(styled))
    return render(styled, width=80, colour=True, wrap=False) + "\n"
