"""The engine's cost in instructions, counted by valgrind, to compare two trees (issue 11).

Timings on a shared machine swing by 2x within an hour (the host's other tenants), so two
trees timed an hour apart, or even interleaved, cannot show a change of a few percent. An
instruction count does not move with the load: ``python -m bench.instructions`` runs the
engine under ``valgrind --tool=callgrind`` and prints the instructions it executed per line.

1. It generates the seeded stream of ``bench/cbcstream.py`` (``--frames``, default 30 000:
   callgrind runs Python about 50x slower).
2. A child process runs the engine (profile ``cbc-to-claude``, every rule on, fed 64 KiB
   reads: ``bench.throughput.bridge``) over it under callgrind, and again over an empty
   stream (start-up: the imports and the build). The difference is the engine's instructions
   on the stream, per line.
3. With ``--against REV`` it does the same for that revision (checked out with ``git worktree``
   into a temporary directory, removed after) and prints the ratio this tree / REV.

It needs ``valgrind`` on ``PATH`` (exit status 2 and a message when it is missing). The count
says nothing of memory stalls or system calls; the whole-process figures are
``bench.process``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.cbcstream import DEFAULT_CAPTURES, generate
from bench.launcher import checkout

ROOT = Path(__file__).resolve().parent.parent
#: what the child runs (in the tree measured, with that tree on ``sys.path``)
CHILD = "import sys; from pathlib import Path; from bench import throughput; "
CHILD += "throughput.bridge(Path(sys.argv[1]))"
_COLLECTED = re.compile(rb"==\d+== Collected : (\d+)")


def collected(stderr: bytes) -> int:
    """The instruction count callgrind reports on ``stderr`` (``== Collected : N``)."""
    found = _COLLECTED.search(stderr)
    if found is None:
        raise RuntimeError("valgrind reported no instruction count:\n" + stderr.decode()[-2000:])
    return int(found.group(1))


def count(tree: Path, stream: Path) -> int:
    """Instructions of one child run of the engine in ``tree`` over ``stream``."""
    valgrind = shutil.which("valgrind") or "valgrind"
    argv = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    argv += [sys.executable, "-c", CHILD, str(stream)]
    env = {**os.environ, "PYTHONPATH": str(tree)}  # (the tree measured, not this one)
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"the engine under valgrind exited {done.returncode}:\n" + done.stderr.decode()[-2000:]
        )
    return collected(done.stderr)


def engine_cost(tree: Path, stream: Path, empty: Path, lines: int) -> dict[str, Any]:
    """The engine's instructions on ``stream`` (start-up taken off), and per line. The
    tree's modules are compiled first, so that neither run counts their compilation."""
    packages = [p for p in ("compat", "bridge", "bench") if (tree / p).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], cwd=tree, check=True)
    total, start = count(tree, stream), count(tree, empty)
    return {
        "total": total,
        "start_up": start,
        "engine": total - start,
        "per_line": (total - start) / lines,
    }


def halves(tree: Path, stream: Path, empty: Path, d: Path) -> dict[str, Any]:
    """Whether a line costs the same late in a session: the stream's second half counted
    inside the whole run (the whole minus its first half alone) against the same lines fed
    to a fresh engine, per line (``late / fresh``: 1.0 is flat; the session's registries
    have filled by then)."""
    lines = stream.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    first, second = d / "first.jsonl", d / "second.jsonl"
    first.write_bytes(b"".join(lines[:half]))
    second.write_bytes(b"".join(lines[half:]))
    start = count(tree, empty)
    whole, early, fresh = (count(tree, f) - start for f in (stream, first, second))
    late = (whole - early) / (len(lines) - half)
    alone = fresh / (len(lines) - half)
    return {"late_per_line": late, "fresh_per_line": alone, "late_over_fresh": late / alone}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.instructions", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--frames", type=int, default=30_000, help="stream length (default 30000)")
    ap.add_argument("--seed", type=int, default=2163)
    ap.add_argument("--captures", type=Path, default=DEFAULT_CAPTURES)
    ap.add_argument("--against", metavar="REV", help="also count a git revision, and the ratio")
    ap.add_argument(
        "--halves",
        action="store_true",
        help="also: the second half's cost per line in the run against a fresh engine's",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print(
            "bench.instructions: valgrind is not installed (apt-get install valgrind)",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="ccbridge-instr-") as d:
        stream, empty = Path(d) / "stream.jsonl", Path(d) / "empty.jsonl"
        made = generate(stream, args.frames, args.seed, args.captures)
        empty.write_bytes(b"")
        lines = made["frames"]
        report: dict[str, Any] = {"frames": lines, "tree": engine_cost(ROOT, stream, empty, lines)}
        if args.against:
            with checkout(args.against, Path(d) / "against") as other:
                report["against"] = {
                    "rev": args.against,
                    **engine_cost(other, stream, empty, lines),
                }
            report["ratio"] = report["tree"]["engine"] / report["against"]["engine"]
        if args.halves:
            report["halves"] = halves(ROOT, stream, empty, Path(d))
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"engine instructions (callgrind), {lines} frames, profile cbc-to-claude, every rule on")
    rows = [("this tree", report["tree"])]
    if "against" in report:
        rows.append((args.against, report["against"]))
    for name, r in rows:
        per_line = f"{r['per_line']:,.0f} a line; start-up {r['start_up']:,}"
        print(f"  {name:<14} {r['engine']:>15,} ({per_line})")
    if "ratio" in report:
        print(f"  this tree / {args.against}: {report['ratio']:.4f}")
    if "halves" in report:
        h = report["halves"]
        print(
            f"  the second half, per line: {h['late_per_line']:,.0f} in the run, "
            f"{h['fresh_per_line']:,.0f} to a fresh engine: x{h['late_over_fresh']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
