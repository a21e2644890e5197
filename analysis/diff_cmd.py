"""``ccbridge diff A B``: a semantic diff of two captures (what each side's client saw).

Volatile values (ids, timestamps, durations, costs, token counts, paths under the working
directory, HOME and /tmp, model names unless ``--keep-model``) are masked; turns, frames
and task lifecycles are aligned; each difference is printed as ``path: A <value>, B
<value>`` (see ``analysis.diff``). Either side may be ``-`` (stdin). Exit 0: equivalent;
1: different; 2: a capture could not be read (or bad usage). ``--json`` for programs.
Strings from the streams are escaped; colour: ``--color``, else ``bridge.colour``'s policy.
"""

from __future__ import annotations

import argparse
import sys

from analysis.check_cmd import read_capture
from analysis.diff import DEFAULT_OPAQUE, DiffOptions, diff, format_text, to_json
from bridge.cli import judged, parser
from bridge.colour import add_option, use_colour
from compat.capture import Capture
from compat.exits import Exit

EXIT_SAME, EXIT_DIFFERENT, EXIT_ERROR = Exit.OK, Exit.FAILED, Exit.USAGE


def build_parser() -> argparse.ArgumentParser:
    p = parser(
        "diff",
        "a semantic diff of two captures: what each side's client saw, volatile values masked",
        examples=[
            "ccbridge diff captures/twins/simple-success.claude.jsonl \\",
            "    captures/twins/simple-success.cbc-bridged.jsonl",
            "ccbridge diff a.jsonl b.jsonl --html diff.html --ignore message.id",
            "ccbridge diff --json a.jsonl b.jsonl > diff.json",
        ],
        exits=judged("equivalent", "different", "a usage error, or an input is not a capture"),
    )
    p.add_argument(
        "a", metavar="A", help="a capture, a reference transcript or a stdout dump (- reads stdin)"
    )
    p.add_argument("b", metavar="B", help="the capture to compare it with (- reads stdin)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--html",
        metavar="FILE",
        default=None,
        help="also write the two sides side by side as a self-contained HTML page",
    )
    p.add_argument("--keep-model", action="store_true", help="compare model names too")
    p.add_argument(
        "--strict",
        action="store_true",
        help="also compare the content of the keys ignored by default "
        f"({', '.join(sorted(DEFAULT_OPAQUE))}) and model names",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="KEY",
        help="skip KEY entirely (a key name, a dotted suffix such as message.id, "
        "or system/init.KEY); repeatable, comma lists allowed",
    )
    add_option(p)
    return p


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code or 0)
    sides = _read(args)
    if sides is None:
        return EXIT_ERROR
    a, b = sides
    opts = _options(args)
    result = diff(a, b, opts)
    names = (_name(args.a), _name(args.b))
    if args.html:
        from analysis.report import write_html_diff

        if not write_html_diff(args.html, a, b, names, opts):
            return EXIT_ERROR
    if args.json:
        print(to_json(result, names))
    else:
        sys.stdout.write(
            format_text(result, color=use_colour(sys.stdout, choice=args.color), names=names)
        )
    return EXIT_SAME if result.equivalent else EXIT_DIFFERENT


def _read(args: argparse.Namespace) -> tuple[Capture, Capture] | None:
    """Both captures, or None (why is printed)."""
    if args.a == "-" and args.b == "-":
        print("ccbridge diff: only one side can be read from stdin", file=sys.stderr)
        return None
    a = read_capture(args.a, "diff")
    b = read_capture(args.b, "diff") if a is not None else None
    return None if a is None or b is None else (a, b)


def _options(args: argparse.Namespace) -> DiffOptions:
    ignore = {k.strip() for item in args.ignore for k in item.split(",") if k.strip()}
    return DiffOptions(ignore=frozenset(ignore), keep_model=args.keep_model, strict=args.strict)


def _name(side: str) -> str:
    return "stdin" if side == "-" else side
