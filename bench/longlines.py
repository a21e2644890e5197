"""Long lines through the whole bridge process, against a plain relay (issue "Robust core").

One run of ``python -m bench.longlines`` writes one JSON line of 1, 16 and 64 MiB (an
``assistant`` frame whose text is that long, so ``cbc-to-claude`` parses and rewrites it),
then, for each size, runs as separate processes in one interleaved round per ``--runs``:

- ``relay``: ``cat FILE | python -c <a minimal line relay>`` (what any line-oriented tool
  pays for the line);
- ``identity``: ``ccbridge run --profile identity --backend 'cat FILE'`` (framing only);
- ``cbc-to-claude``: the same with every rule on (the line is parsed and re-encoded);
- ``cbc-to-claude --record``: the same, recording the session to a capture file.

Each run checks the output (identity: byte-identical; the others: one line, same text)
and reports the best wall time, seconds per MiB, the ratio to the relay and the peak RSS of
the bridge process itself (``wait4``), that RSS as a multiple of the line, and (``+RSS/line``)
what the line adds: RSS over the same mode's RSS at the smallest size, per MiB of line. ``--json``
prints one JSON object. Compare ratios of one run, not times across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from bench.launcher import Launcher

SIZES_MIB = (1, 16, 64)
RELAY = (
    "import sys\nr, w = sys.stdin.buffer, sys.stdout.buffer\nfor line in r:\n    w.write(line)\n"
)
MODES = ("relay", "identity", "cbc-to-claude", "cbc-to-claude --record")


def make_line(path: Path, mib: int) -> None:
    frame = {
        "type": "assistant",
        "session_id": "s",
        "parent_tool_use_id": None,
        "message": {
            "id": "m",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": "y" * (mib << 20)}],
        },
    }
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "",
        "session_id": "s",
        "uuid": "r",
        "duration_ms": 1,
        "duration_api_ms": 1,
        "num_turns": 1,
        "total_cost_usd": 0,
        "usage": {},
        "modelUsage": {},
        "permission_denials": [],
    }  # (so the session ends as a turn does: exit 0)
    path.write_bytes(orjson.dumps(frame) + b"\n" + orjson.dumps(result) + b"\n")


def command(mode: str, src: Path, out_dir: Path) -> tuple[list[str], str]:
    """(argv, shell-free description) of one mode."""
    bridge = [sys.executable, "-m", "bridge", "run"]
    if mode == "relay":
        return [sys.executable, "-c", RELAY], "relay"
    if mode == "identity":
        return [*bridge, "--profile", "identity", "--backend", shlex.join(["cat", str(src)])], mode
    argv = [
        *bridge,
        "--profile",
        "cbc-to-claude",
        "--backend",
        shlex.join(["sh", "-c", f"cat {shlex.quote(str(src))}", "sh"]),
    ]
    if mode.endswith("--record"):
        argv += ["--record", str(out_dir / "capture.jsonl")]
    return argv, mode


def run_once(launcher: Launcher, mode: str, src: Path, out_dir: Path) -> tuple[float, int]:
    argv, _ = command(mode, src, out_dir)
    r = launcher.run(argv, out_dir / "out.jsonl", src if mode == "relay" else None)
    took, rss, status = r["took"], r["rss"], r["status"]
    if status != 0:
        raise SystemExit(f"{mode}: exit status {status}")
    return took, rss


def check(mode: str, src: Path, out: Path) -> None:
    want, got = src.read_bytes(), out.read_bytes()
    if mode in ("relay", "identity"):
        if got != want:
            raise SystemExit(f"{mode}: output differs from the input ({len(got)} bytes)")
        return
    lines = got.splitlines()
    text = orjson.loads(want.splitlines()[0])["message"]["content"][0]["text"]
    if not lines or orjson.loads(lines[0])["message"]["content"][0]["text"] != text:
        raise SystemExit(f"{mode}: the line did not come through whole")


def measure(sizes: tuple[int, ...], runs: int) -> dict[str, Any]:
    report: dict[str, Any] = {"runs": runs, "sizes": {}}
    launcher = Launcher()
    with tempfile.TemporaryDirectory(prefix="ccb-longlines-") as tmp:
        d = Path(tmp)
        for mib in sizes:
            src = d / f"line-{mib}.jsonl"
            make_line(src, mib)
            best: dict[str, tuple[float, int]] = {}
            for _ in range(runs):
                for mode in MODES:  # interleaved: load on the machine hits every mode alike
                    took, rss = run_once(launcher, mode, src, d)
                    check(mode, src, d / "out.jsonl")
                    if mode not in best or took < best[mode][0]:
                        best[mode] = (took, rss)
            relay = best["relay"][0]
            line_bytes = src.stat().st_size
            report["sizes"][mib] = {
                mode: {
                    "seconds": round(t, 4),
                    "s_per_mib": round(t / mib, 4),
                    "ratio": round(t / relay, 2),
                    "peak_rss_mib": round(rss / (1 << 20), 1),
                    "rss_per_line": round(rss / line_bytes, 2),
                }
                for mode, (t, rss) in best.items()
            }
            os.unlink(src)
    launcher.close()
    # the memory a line costs: RSS over the same mode's RSS at the smallest size
    smallest = report["sizes"][min(sizes)]
    for mib, modes in report["sizes"].items():
        for mode, r in modes.items():
            extra = (
                (r["peak_rss_mib"] - smallest[mode]["peak_rss_mib"]) / (mib - min(sizes))
                if mib > min(sizes)
                else None
            )
            r["extra_rss_per_line"] = round(extra, 2) if extra is not None else None
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.longlines",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--sizes",
        default=",".join(map(str, SIZES_MIB)),
        help="line sizes in MiB, comma-separated (default 1,16,64)",
    )
    ap.add_argument("--runs", type=int, default=3, help="rounds; the best of each is shown")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = tuple(int(x) for x in args.sizes.split(",") if x.strip())
    report = measure(sizes, max(1, args.runs))
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"long lines, best of {report['runs']} interleaved runs (wall time; RSS of the "
        "process itself)"
    )
    print(
        f"{'MiB':>4}  {'mode':<24} {'s':>8} {'s/MiB':>8} {'x relay':>8} {'RSS MiB':>8} "
        f"{'RSS/line':>8} {'+RSS/line':>9}"
    )
    for mib, modes in report["sizes"].items():
        for mode, r in modes.items():
            print(
                f"{mib:>4}  {mode:<24} {r['seconds']:>8.3f} {r['s_per_mib']:>8.4f} "
                f"{r['ratio']:>8.2f} {r['peak_rss_mib']:>8.1f} {r['rss_per_line']:>8.2f} "
                + (
                    f"{r['extra_rss_per_line']:>9.2f}"
                    if r["extra_rss_per_line"] is not None
                    else f"{'-':>9}"
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
