"""``ccbridge scenario from-capture REC [-o FILE.toml] [--files DIR] [--name NAME]
[--max-delay SECONDS]``: a recorded session as a scenario (``harness.from_capture``).

The scenario goes to FILE (0600, like the capture it comes from) or to stdout; warnings
(what could not be carried over) and a summary line go to stderr. Exit 0 when the
scenario is written; 2 for a usage error, a file that is not a capture, a capture without
the client's side, or a ``--files`` that is not a directory.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bridge.cli import epilog
from compat.exits import Exit

PROG = "ccbridge scenario from-capture"
DESCRIPTION = """\
turn a recorded session into a scenario: a capture (CCBRIDGE_RECORD, --record,
ccbridge record, ccbridge scenario run) or a reference transcript, of Claude Code
or cbc, direct or through the bridge, stream-json or -p. The client's lines, each
waiting for the frame it followed; the model's recorded replies as the stand-in's
rules; no credential (its top says so, and which tool results will differ)."""
EXAMPLES = [
    "ccbridge scenario from-capture session.jsonl -o mine.toml --files ~/src/proj",
    "ccbridge scenario run mine.toml --backend cbc --via cbc-to-claude --out cbc.jsonl",
]


def fill(sub: Any) -> argparse.ArgumentParser:
    """Add ``from-capture`` to the ``scenario`` command's subparsers."""
    f: argparse.ArgumentParser = sub.add_parser(
        "from-capture",
        help="turn a recorded session into a scenario",
        description=DESCRIPTION,
        epilog=epilog(
            EXAMPLES,
            {
                Exit.OK: "the scenario is written",
                Exit.FAILED: "the scenario made does not validate (a bug: please report it)",
                Exit.USAGE: "a usage error, a file that is not a capture, a capture "
                "without the client's side, a --files that is not a directory",
            },
        ),
    )
    f.add_argument("capture", metavar="REC", help="the capture (or reference transcript)")
    f.add_argument(
        "-o",
        "--out",
        metavar="FILE.toml",
        default=None,
        help="write the scenario to FILE (default: stdout)",
    )
    f.add_argument(
        "--files",
        metavar="DIR",
        default=None,
        help="add DIR's text files to the scenario's files (what the session's tools read)",
    )
    f.add_argument(
        "--name", default=None, help="the scenario's name (default: the capture's file name)"
    )
    f.add_argument(
        "--max-delay",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="the longest recorded pause kept, of the client and of the model (default: 30; "
        "0: none)",
    )
    return f


def main(args: argparse.Namespace, p: argparse.ArgumentParser) -> int:
    from harness import from_capture
    from harness.scenario import ScenarioError, loads

    if args.max_delay < 0:
        p.error("--max-delay must be >= 0")
    if args.out:
        from bridge import config

        config.check_out_file("--out", args.out)
    try:
        cap, n_lines = from_capture.read(args.capture)
        conv = from_capture.convert(
            cap,
            source=args.capture,
            name=args.name,
            files_dir=args.files,
            max_delay=args.max_delay,
            n_lines=n_lines,
        )
        text = conv.text()
        loads(text, args.out or "<the scenario>")
    except from_capture.FromCaptureError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return Exit.USAGE
    except ScenarioError as e:  # a bug of ours: say so, write nothing
        print(f"{PROG}: the scenario made does not validate: {e}", file=sys.stderr)
        return Exit.FAILED
    for w in conv.warnings:
        print(f"{PROG}: warning: {w}", file=sys.stderr)
    if args.out:
        from bridge.files import write_private

        write_private(args.out, text)
    else:
        sys.stdout.write(text)
    print(
        f"{PROG}: {args.capture} -> {args.out or 'stdout'}: {conv.n_steps} steps, "
        f"{conv.n_rules} model rules",
        file=sys.stderr,
    )
    return 0
