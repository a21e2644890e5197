"""The complexity gate (``.ci/run``, and ``tests/test_complexity.py`` in the suite): every
function of ``compat``, ``bridge``, ``analysis`` and ``harness`` has a cyclomatic complexity
(radon's) of at most ``LIMIT``, and rule code (``compat/stages``) averages at most
``RULE_MEAN``.

On the way there, ``tests/data/complexity.json`` lists the functions still over the limit
with their complexity today, and the rule code's mean today: a ratchet. A listed function
may only get simpler, one that reaches the limit must leave the list (a stale entry fails
too, so the list only shrinks), no other function may pass the limit, and the rules' mean
may not rise. The list is empty, and the mean at ``RULE_MEAN``, when the work is done.

    python -m tests.complexity            # the report; exit 1 when the gate fails
    python -m tests.complexity --write    # record today's list (only after making it shorter)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

REPO = Path(__file__).resolve().parent.parent
RATCHET = REPO / "tests" / "data" / "complexity.json"
PACKAGES = ("compat", "bridge", "analysis", "harness")
RULES = "compat/stages"
LIMIT = 15
RULE_MEAN = 5.0


def functions(path: Path) -> Iterator[tuple[str, int]]:
    """(``file:Class.function``, complexity) of every function and method in ``path``."""
    rel = path.relative_to(REPO).as_posix()
    for block in cc_visit(path.read_text(encoding="utf-8")):
        if isinstance(block, Class):
            for m in block.methods:
                yield f"{rel}:{block.name}.{m.name}", m.complexity
        elif isinstance(block, Function) and not block.is_method:  # (methods: above, once)
            yield f"{rel}:{block.name}", block.complexity


def measure() -> tuple[dict[str, int], float]:
    """Every function's complexity, and the mean of the rule code's."""
    every: dict[str, int] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            every.update(functions(path))
    rules = [c for name, c in every.items() if name.startswith(RULES + "/")]
    return every, sum(rules) / len(rules)


def problems(every: dict[str, int], mean: float, ratchet: dict[str, object]) -> list[str]:
    allowed = dict(ratchet.get("over", {}))  # type: ignore[call-overload]
    out = []
    for name, c in sorted(every.items()):
        ceiling = allowed.get(name, LIMIT)
        if c > ceiling:
            was = f"listed at {ceiling}" if name in allowed else f"the limit is {LIMIT}"
            out.append(f"{name}: complexity {c} ({was})")
    for name in sorted(allowed):
        if every.get(name, 0) <= LIMIT:
            out.append(f"{name}: now within {LIMIT} (or gone): remove it from {RATCHET.name}")
    mean_max = max(RULE_MEAN, float(ratchet.get("rule_mean", RULE_MEAN)))  # type: ignore[arg-type]
    if mean > mean_max + 1e-9:
        out.append(f"rule code's mean complexity {mean:.2f} (at most {mean_max:.2f})")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.complexity")
    ap.add_argument("--write", action="store_true", help=f"record today's list in {RATCHET}")
    args = ap.parse_args(argv)
    every, mean = measure()
    over = {n: c for n, c in sorted(every.items()) if c > LIMIT}
    if args.write:
        ceiling = math.ceil(mean * 1000) / 1000
        RATCHET.write_text(json.dumps({"rule_mean": ceiling, "over": over}, indent=1) + "\n")
    found = problems(every, mean, json.loads(RATCHET.read_text()))
    print(
        f"complexity: {len(every)} functions, {len(over)} over {LIMIT} "
        f"(max {max(every.values())}); rule code's mean {mean:.2f} (target {RULE_MEAN})",
        file=sys.stderr,
    )
    for p in found:
        print(f"  {p}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
