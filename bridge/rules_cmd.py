"""``ccbridge rules [ID ...]``: every rule id (or the ones named), its modes, what it does,
its options with their defaults (``--rule ID.option=VALUE``), and the profiles' stage
order."""

from __future__ import annotations

import shutil
import sys
import textwrap

from bridge.cli import Parser
from compat.profiles import PROFILES, describe, options_of


def main(argv: list[str]) -> int:
    p = Parser(
        prog="ccbridge rules",
        description="list the rules (PROTOCOL.md ids): modes (--rule ID=MODE), what each "
        "does, options (--rule ID.option=VALUE) with defaults, and the profiles' order",
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="only these rules")
    args = p.parse_args(argv)
    rows = describe()
    known = {rule for rule, _, _ in rows}
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        print(f"ccbridge rules: unknown rule id(s): {', '.join(unknown)} "
              f"(known: {', '.join(sorted(known))})", file=sys.stderr)  # fmt: skip
        return 2
    width = min(shutil.get_terminal_size((100, 24)).columns, 100)
    for rule, summary, modes in rows:
        if args.ids and rule not in args.ids:
            continue
        print(f"{rule}  [{'|'.join(('on', *[m for m in modes if m != 'on']))}|off]")
        print(textwrap.fill(summary, width, initial_indent="    ", subsequent_indent="    "))
        for name, default in options_of(rule):
            print(f"    --rule {rule}.{name}={default!s}")
    if not args.ids:
        print()
        for name, dirs in PROFILES.items():
            for direction, stages in dirs.items():
                print(f"{name} {direction}: {' > '.join(stages) or '(none)'}")
    return 0
