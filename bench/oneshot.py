"""A ``-p`` run (issue 27): what a one-shot ``claude -p`` costs through the drop-in, in one
invocation of ``python -m bench.oneshot``.

The real cbc (``find_backend("cbc")``) answers the stand-in model (``harness.model``,
scripted: ``line N`` -> ``ack N``) for ``PROMPT``, run bare (``cbc -p PROMPT``) and through
the drop-in (``claude-on-cbc -p PROMPT``, the console script beside this Python, cbc behind
it through ``CCBRIDGE_BACKEND``), one process at a time, interleaved (bridge, bare, bare,
bridge, ...: the machine's drift falls on both), each in a fresh HOME. Per run: the wall
time from spawning to the exit, the time to the first byte on stdout, the CPU of the whole
process tree (``RUSAGE_CHILDREN`` before and after), and for the bridge its own peak RSS
and CPU (``/proc/PID``, sampled every ``SAMPLE`` s while it runs: its last sample is within
that of its exit). A run counts when its stdout says ``ack 1``.

Figures: medians per target, the added wall time and time to the first byte (the median of
the paired differences), the bridge's RSS and its CPU as a share of cbc's (the tree's CPU
minus the bridge's own). Compare ratios of one run; the machine may be shared.

    python -m bench.oneshot                   # 20 runs per target
    python -m bench.oneshot --runs 5 --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from bench.followup import ECHO, session_env
from bridge.backends import find_backend
from harness import runner
from harness.brain import ModelScript
from harness.model import ModelServer

TARGETS = ("bridge", "bare")
PROMPT = "line 1"
SAMPLE = 0.005  # seconds between two looks at the bridge's /proc entry
TIMEOUT = 120.0
_TICK = os.sysconf("SC_CLK_TCK")


@attrs.define
class Run:
    target: str
    wall: float = 0.0
    first_byte: float | None = None
    cpu: float = 0.0  # the process tree's
    own_cpu: float | None = None  # the bridge's own
    own_rss: int | None = None  # the bridge's peak, KiB
    ok: bool = False
    error: str | None = None


def dropin_argv() -> list[str]:
    """``claude-on-cbc`` as a user runs it: the console script beside this Python."""
    script = Path(sys.executable).with_name("claude-on-cbc")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from bridge.dropin import main; sys.exit(main())"]


def _proc_sample(pid: int) -> tuple[float, int] | None:
    """(CPU seconds, peak RSS in KiB) of ``pid`` itself; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime
    hwm = next((int(x.split()[1]) for x in status.splitlines() if x.startswith("VmHWM:")), 0)
    return cpu, hwm


async def _watch(pid: int, run: Run) -> None:
    while True:
        got = _proc_sample(pid)
        if got is None:
            return
        run.own_cpu = got[0]
        run.own_rss = max(run.own_rss or 0, got[1]) or None  # (0: a zombie's entry)
        await trio.sleep(SAMPLE)


async def _read(stream: trio.abc.ReceiveStream, start: float, run: Run, out: list[bytes]) -> None:
    async for chunk in stream:
        if run.first_byte is None:
            run.first_byte = trio.current_time() - start
        out.append(bytes(chunk))


async def one_run(target: str, argv: list[str], url: str, cbc: Sequence[str]) -> Run:
    run = Run(target)
    dirs = runner.make_root()
    mark = os.urandom(8).hex()
    env = session_env(url, dirs, mark)
    if target == "bridge":
        env["CCBRIDGE_BACKEND"] = shlex.join(cbc)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: list[bytes] = []
    start = trio.current_time()
    proc = await trio.lowlevel.open_process(
        [*argv, "-p", PROMPT],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=dirs["CWD"],
        env=env,
        start_new_session=True,
    )
    try:
        with trio.move_on_after(TIMEOUT) as scope:
            async with trio.open_nursery() as nursery:
                assert proc.stdout is not None
                nursery.start_soon(_read, proc.stdout, start, run, out)
                if target == "bridge":
                    nursery.start_soon(_watch, proc.pid, run)
                await proc.wait()
        run.wall = trio.current_time() - start
        if scope.cancelled_caught:
            run.error = f"no exit within {TIMEOUT:g}s"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await trio.to_thread.run_sync(runner.sweep, mark)
        await trio.to_thread.run_sync(_remove, dirs["ROOT"])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run.cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    text = b"".join(out).decode(errors="replace")
    run.ok = run.error is None and proc.returncode == 0 and "ack 1" in text
    if not run.ok and run.error is None:
        run.error = f"exit {proc.returncode}: {text.strip()[:200]!r}"
    return run


def _remove(root: str) -> None:
    import shutil

    shutil.rmtree(root, ignore_errors=True)


async def measure(cbc: Sequence[str], runs: int, progress: bool = False) -> list[Run]:
    server = ModelServer(ModelScript(rules=(ECHO,)))
    argv = {"bridge": dropin_argv(), "bare": list(cbc)}
    got: list[Run] = []
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        for i in range(runs):
            for target in TARGETS if i % 2 == 0 else TARGETS[::-1]:
                r = await one_run(target, argv[target], url, cbc)
                got.append(r)
                if progress:
                    print(f"{i + 1} {target}: {r.wall:.3f}s {r.error or ''}", file=sys.stderr)
        nursery.cancel_scope.cancel()
    return got


def _median(xs: Sequence[float | int | None]) -> float | None:
    vals = [float(x) for x in xs if x is not None]
    return round(statistics.median(vals), 4) if vals else None


def _paired(got: list[Run], attr: str) -> float | None:
    """The median of (bridge - bare) over the runs' pairs (both ok)."""
    bridge = [r for r in got if r.target == "bridge"]
    bare = [r for r in got if r.target == "bare"]
    diffs = [
        getattr(a, attr) - getattr(b, attr)
        for a, b in zip(bridge, bare, strict=False)
        if a.ok and b.ok and getattr(a, attr) is not None and getattr(b, attr) is not None
    ]
    return _median(diffs)


def report(got: list[Run]) -> dict[str, Any]:
    rep: dict[str, Any] = {"prompt": PROMPT}
    for target in TARGETS:
        ok = [r for r in got if r.target == target and r.ok]
        rep[target] = {
            "runs": sum(1 for r in got if r.target == target),
            "ok": len(ok),
            "wall_s": _median([r.wall for r in ok]),
            "first_byte_s": _median([r.first_byte for r in ok]),
            "cpu_s": _median([r.cpu for r in ok]),
        }
    bridge = [r for r in got if r.target == "bridge" and r.ok]
    own = _median([r.own_cpu for r in bridge])
    rep["added_wall_ms"] = _ms(_paired(got, "wall"))
    rep["added_first_byte_ms"] = _ms(_paired(got, "first_byte"))
    rep["bridge_rss_mib"] = _mib(_median([r.own_rss for r in bridge]))
    rep["bridge_cpu_s"] = own
    cbc_cpu = _median([r.cpu - (r.own_cpu or 0.0) for r in bridge])
    rep["bridge_cpu_share_of_cbc"] = round(own / cbc_cpu, 3) if own and cbc_cpu else None
    rep["errors"] = [f"{r.target}: {r.error}" for r in got if r.error]
    return rep


def _ms(x: float | None) -> float | None:
    return None if x is None else round(1000 * x, 1)


def _mib(kib: float | None) -> float | None:
    return None if kib is None else round(kib / 1024, 1)


def _print(rep: dict[str, Any]) -> None:
    for target in TARGETS:
        t = rep[target]
        print(
            f"{target:7} {t['ok']}/{t['runs']} ok  wall {t['wall_s']} s  first byte "
            f"{t['first_byte_s']} s  CPU (tree) {t['cpu_s']} s"
        )
    print(
        f"added by the bridge: wall {rep['added_wall_ms']} ms, first byte "
        f"{rep['added_first_byte_ms']} ms (medians of paired runs)"
    )
    print(
        f"the bridge itself: peak RSS {rep['bridge_rss_mib']} MiB, CPU {rep['bridge_cpu_s']} s "
        f"= {rep['bridge_cpu_share_of_cbc']} of cbc's"
    )
    for e in rep["errors"]:
        print(f"  {e}")


def main(argv: list[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n\n")[0]
    ap = argparse.ArgumentParser(prog="python -m bench.oneshot", description=summary)
    ap.add_argument("--runs", type=int, default=20, help="runs per target (default 20)")
    ap.add_argument("--json", action="store_true", help="the report as JSON")
    ap.add_argument("--progress", action="store_true", help="a line per run on stderr")
    args = ap.parse_args(argv)
    cbc = find_backend("cbc")
    if cbc is None:
        print("bench.oneshot: no cbc found (ccbridge backends install)", file=sys.stderr)
        return 2
    got = trio.run(measure, cbc, args.runs, args.progress)
    rep = report(got)
    print(json.dumps(rep, indent=2)) if args.json else _print(rep)
    return 0 if not rep["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
