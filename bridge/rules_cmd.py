"""``ccbridge rules``: every rule id, its modes, and the profiles' stage order."""

from __future__ import annotations

from compat.profiles import PROFILES, describe


def main(argv: list[str]) -> int:
    for rule, summary, modes in describe():
        print(f"{rule:<20} [{'|'.join(('on', *[m for m in modes if m != 'on']))}|off]  {summary}")
    print()
    for name, dirs in PROFILES.items():
        for direction, stages in dirs.items():
            print(f"{name} {direction}: {' > '.join(stages) or '(none)'}")
    return 0
