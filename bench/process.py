"""The whole process, as a user pays it (issue 11), in one invocation of
``python -m bench.process``:

1. **Throughput.** A seeded, realistic cbc 2.163.0 stream (``bench/cbcstream.py``)
   written by a backend process (``cat FILE``) goes through, as separate processes,
   interleaved round by round (``--runs``): ``cat`` and a minimal Python line relay (fed by
   ``cat FILE``), and the bridge (``ccbridge run``) with ``identity`` and with
   ``cbc-to-claude`` (every rule on), whose backend is ``cat FILE``; ``cbc-to-claude``
   twice: with the client's stdin at EOF from the start (``/dev/null``, like a ``-p`` run:
   the whole stream in the wind-down) and held open (``cbc-to-claude-open``, like an SDK
   session); and ``framework-open``, the latter with every rule's calls made no-ops
   (``bench.throughput.hollow``: what the pipeline costs with no rule at work, the floor of
   any profile with these stages). Medians of wall and CPU time (user + system of the
   process and the children it waited for, so the bridge's ``cat`` is in its figure:
   ``cat``'s own cost is the ``cat`` row), their ratios to the relay, frames/s, peak RSS.
   The measured processes are forked from a small launcher (``bench.launcher``: Linux
   carries a parent's peak RSS into its children). ``proof-loop`` is the relay proving each
   line as the pipeline does: the floor of any pipeline that proves every line.
   ``--against REV``: REV's bridge modes (a temporary ``git worktree``) in the same rounds,
   and this tree's ``cbc-to-claude`` modes with the rules REV's profile lacks switched off
   (the same protocol work); this tree's CPU over REV's, per round.
2. **Latency.** A backend script writes stamped ``stream_event`` frames (``CLOCK_MONOTONIC``
   ns in the delta text) at 100 and 1,000 frames/s; the client reads the bridge's stdout and
   stamps each line as it reads it. The same stream read straight from the backend's pipe
   (``direct``) is the baseline: added latency is the bridge's percentile minus direct's
   (p50, p99), per profile.
3. **Start-up.** From the moment the bridge process is spawned: until its backend started
   (the backend, ``bash``, writes ``$EPOCHREALTIME`` first thing) and until the client read
   the first frame; the same for the backend started directly (what a direct start costs).
   And ``claude-on-cbc --version`` against ``python -c pass`` (medians of interleaved runs).

``--json`` prints one JSON object. Compare ratios of one run, not times across machines:
the machine may be shared, which is why every figure is a median of interleaved runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from bench.cbcstream import DEFAULT_CAPTURES, generate
from bench.launcher import REPO, Launcher, checkout, in_tree

RELAY = (
    "import sys\nr, w = sys.stdin.buffer, sys.stdout.buffer\nfor line in r:\n    w.write(line)\n"
)
#: the relay that also proves each line as the pipeline does (``compat.frames.wire_kind``):
#: the least any pipeline that proves every line can cost, in a flat loop with no process
#: start-up to speak of, no I/O layer and no stage
PROOF_LOOP = (
    "import sys\nfrom compat.frames import wire_kind\n"
    "r, w = sys.stdin.buffer, sys.stdout.buffer\nfor line in r:\n"
    "    wire_kind(line[:-1])\n    w.write(line)\n"
)
#: ``cbc-to-claude``: the client's stdin at EOF from the start (like ``-p``: the whole stream
#: goes through the wind-down, eof-wind-down reads every line); ``cbc-to-claude-open``: the
#: client keeps its stdin open (an SDK session), the session ends with the backend
#: ``framework-open``: ``cbc-to-claude-open`` with every rule's calls made no-ops
#: (``bench.throughput.hollow``): the same process, plans, dispatch and parses with no rule
#: at work, the least a profile with these rules can cost as the pipeline stands
#: ``ccbridge`` with its engine hollowed (``framework-open``); argv: ccbridge's
HOLLOW = (
    "import sys\nimport bridge.proxy as proxy\nfrom bench.throughput import hollow\n"
    "build = proxy.build_engine\nproxy.build_engine = lambda *a, **k: hollow(build(*a, **k))\n"
    "from bridge.cli import main\nsys.exit(main(sys.argv[1:]))\n"
)
RATES = (100, 1000)

#: writes ``n`` stamped stream_event frames at ``rate`` per second (absolute schedule),
#: after a system/init and before a result (a whole turn, so cbc-to-claude lets it through
#: and the session ends); stdin is ignored
STAMPER = r"""
import json, sys, time
n, rate = int(sys.argv[1]), float(sys.argv[2])
out = sys.stdout.buffer
def frame(o):
    out.write(json.dumps(o, separators=(",", ":")).encode() + b"\n"); out.flush()
frame({"type": "system", "subtype": "init", "session_id": "s", "uuid": "u0", "cwd": "/w",
       "tools": [], "model": "m", "permissionMode": "default", "apiKeySource": "none"})
time.sleep(0.2)
start = time.monotonic_ns()
step = int(1e9 / rate)
for i in range(n):
    due = start + i * step
    while (now := time.monotonic_ns()) < due:
        time.sleep(max(0.0, (due - now) / 1e9 - 0.0002))
    frame({"type": "stream_event", "uuid": "e%d" % i, "session_id": "s",
           "parent_tool_use_id": None,
           "event": {"type": "content_block_delta", "index": 0,
                     "delta": {"type": "text_delta", "text": "t=%d" % time.monotonic_ns()}}})
frame({"type": "result", "subtype": "success", "is_error": False, "result": "", "uuid": "r",
       "session_id": "s", "duration_ms": 1, "duration_api_ms": 1, "num_turns": 1,
       "total_cost_usd": 0, "usage": {}, "modelUsage": {}, "permission_denials": []})
"""


def _exe(name: str) -> list[str]:
    """The installed console script beside this Python (what a user runs), else ``-m``."""
    script = Path(sys.executable).with_name(name)
    if script.is_file():
        return [str(script)]
    return (
        [sys.executable, "-m", "bridge"]
        if name == "ccbridge"
        else [sys.executable, "-c", "import sys; from bridge.dropin import main; sys.exit(main())"]
    )


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCBRIDGE_")}
    env["CCBRIDGE_CONFIG"] = os.devnull  # no user config file changes what is measured
    return env


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] if s else float("nan")


def bridge_run(profile: str, backend: list[str], switches: Sequence[str] = ()) -> list[str]:
    """``ccbridge run``: the backend through ``sh -c`` so the argv cbc-to-claude appends
    (cbc's options) is ignored, alike for both profiles; ``switches``: ``--rule`` options."""
    return [*_exe("ccbridge"), *run_args(profile, backend, switches)]


def run_args(profile: str, backend: list[str], switches: Sequence[str] = ()) -> list[str]:
    """``ccbridge``'s arguments for ``bridge_run``."""
    script = shlex.join(backend)
    wrapped = shlex.join(["sh", "-c", f"exec {script}", "sh"])
    return ["run", "--profile", profile, *switches, "--backend", wrapped]


# -- 1. throughput -------------------------------------------------------------------------
class Mode(NamedTuple):
    """One command of the throughput part: its argv, whether it reads the stream on stdin
    (``cat FILE`` feeds it) or runs ``cat FILE`` as its backend, whether the client's stdin
    is held open (``-open``), and whether its output must be the stream byte for byte (no
    rule at work)."""

    argv: list[str]
    feed: bool = False
    hold: bool = False
    verbatim: bool = False


#: the bridge modes (``bridge_modes``), each measured for this tree and for ``--against``'s
BRIDGE_MODES = ("identity", "cbc-to-claude", "cbc-to-claude-open", "framework-open")
#: what ``--against`` adds: this tree's profile with the rules the other revision's lacks
#: switched off (the same protocol work as that revision's)
SAME_RULES = ("cbc-to-claude", "cbc-to-claude-open")
#: the rule ids of profile ``cbc-to-claude``, as JSON (run in the tree asked about)
RULES_OF = (
    "import json\nfrom compat.profiles import PROFILES\n"
    "print(json.dumps([r for d in PROFILES['cbc-to-claude'].values() for r in d]))\n"
)
MAIN = "import sys\nfrom bridge.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def bridge_modes(src: Path, tree: Path | None = None, off: Sequence[str] = ()) -> dict[str, Mode]:
    """``identity``, ``cbc-to-claude`` (stdin at EOF, and ``-open``) and ``framework-open``
    with ``cat src`` as the backend: this tree's bridge (``tree`` None), or that of the
    checkout ``tree``, run by this Python; ``off``: rules switched off."""
    switches = [a for rule in off for a in ("--rule", f"{rule}=off")]
    modes: dict[str, Mode] = {}
    for mode in BRIDGE_MODES:
        hollow = mode == "framework-open"
        profile = "cbc-to-claude" if hollow else mode.removesuffix("-open")
        args = run_args(profile, ["cat", str(src)], switches)
        hold, verbatim = mode.endswith("-open"), mode in ("identity", "framework-open")
        modes[mode] = Mode([*_bridge(tree, hollow), *args], hold=hold, verbatim=verbatim)
    return modes


def _bridge(tree: Path | None, hollow: bool) -> list[str]:
    """How a bridge mode starts ``ccbridge``: this tree's installed script (what a user
    runs), else this Python with the hollowing script or another tree's packages first."""
    if tree is None and not hollow:
        return _exe("ccbridge")
    script = HOLLOW if hollow else MAIN
    return [sys.executable, "-c", script if tree is None else in_tree(tree, script)]


def rules_of(tree: Path | None) -> list[str]:
    """The rules of profile ``cbc-to-claude`` in ``tree`` (None: this one)."""
    script = RULES_OF if tree is None else in_tree(tree, RULES_OF)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"cannot list the rules of {tree}: {done.stderr.strip()[-300:]}")
    rules: list[str] = json.loads(done.stdout)
    return rules


def modes_of(src: Path, against: tuple[str, Path] | None) -> dict[str, Mode]:
    """Every command of one round, in order: ``cat``, the relay, the proof loop, this
    tree's bridge modes; with ``against`` (a revision and its checkout), that tree's bridge
    modes (``REV: mode``) and this tree's with that tree's rules (``mode, REV's rules``)."""
    modes = {
        "cat": Mode(["cat"], feed=True, verbatim=True),
        "relay": Mode([sys.executable, "-c", RELAY], feed=True, verbatim=True),
        "proof-loop": Mode([sys.executable, "-c", PROOF_LOOP], feed=True, verbatim=True),
        **bridge_modes(src),
    }
    if against is not None:
        rev, tree = against
        theirs = set(rules_of(tree))
        added = [r for r in rules_of(None) if r not in theirs]
        modes.update({f"{rev}: {m}": mode for m, mode in bridge_modes(src, tree).items()})
        same = bridge_modes(src, off=added)
        modes.update({f"{m}, {rev}'s rules": same[m] for m in SAME_RULES})
    return modes


def throughput(
    d: Path, frames: int, runs: int, seed: int, captures: Path, against: str | None = None
) -> dict[str, Any]:
    src = d / "stream.jsonl"
    info = generate(src, frames, seed, captures)
    with contextlib.ExitStack() as stack:
        other = None
        if against is not None:
            other = (against, stack.enter_context(checkout(against, d / "against")))
        modes = modes_of(src, other)
        got = _rounds(d, src, modes, runs)
    report: dict[str, Any] = {
        "stream": {"frames": info["frames"], "bytes": info["bytes"]},
        "runs": runs,
        "modes": _rows(got, info["frames"]),
    }
    if against is not None:
        report["against"] = {"rev": against, "cpu_ratios": _against(got, against)}
    return report


Runs = dict[str, list[dict[str, Any]]]


def _rounds(d: Path, src: Path, modes: dict[str, Mode], runs: int) -> Runs:
    """``runs`` rounds of every mode, interleaved (the machine's load hits every mode alike)."""
    launcher = Launcher()
    got: Runs = {m: [] for m in modes}
    try:
        for _ in range(runs):
            for name, mode in modes.items():
                out = d / "out.jsonl"
                r = launcher.run(mode.argv, out, src if mode.feed else None, _env(), mode.hold)
                if r["status"] != 0:
                    raise SystemExit(f"{name}: exit status {r['status']}")
                if mode.verbatim and out.read_bytes() != src.read_bytes():
                    raise SystemExit(f"{name}: the output differs from the stream")
                r["lines"] = out.read_bytes().count(b"\n")
                got[name].append(r)
    finally:
        launcher.close()
    return got


def _rows(got: Runs, frames: int) -> dict[str, Any]:
    """Per mode: medians of wall and CPU time, their ratios to the relay's, frames/s, peak
    RSS, the lines it wrote."""
    relay_wall = _median([r["took"] for r in got["relay"]])
    relay_cpu = _median([r["cpu"] for r in got["relay"]])
    rows: dict[str, Any] = {}
    for mode, rs in got.items():
        wall = _median([r["took"] for r in rs])
        cpu = _median([r["cpu"] for r in rs])
        rows[mode] = {
            "wall_s": round(wall, 4),
            "cpu_s": round(cpu, 4),
            "wall_ratio": round(wall / relay_wall, 2),
            "cpu_ratio": round(cpu / relay_cpu, 2),
            "frames_per_s": round(frames / wall),
            "peak_rss_mib": round(max(r["rss"] for r in rs) / (1 << 20), 1),
            "lines_out": rs[-1]["lines"],
        }
    return rows


def _against(got: Runs, rev: str) -> dict[str, Any]:
    """Per bridge mode: this tree's CPU over ``rev``'s in each round (both were run in the
    same round, one after the other), and their median; and the same for this tree with
    ``rev``'s rules."""
    pairs = {m: (m, f"{rev}: {m}") for m in BRIDGE_MODES}
    for m in SAME_RULES:
        pairs[f"{m}, {rev}'s rules"] = (f"{m}, {rev}'s rules", f"{rev}: {m}")
    ratios: dict[str, Any] = {}
    for name, (mine, theirs) in pairs.items():
        per = [a["cpu"] / b["cpu"] for a, b in zip(got[mine], got[theirs], strict=True)]
        ratios[name] = {"rounds": [round(x, 3) for x in per], "median": round(_median(per), 3)}
    return ratios


# -- 2. latency ----------------------------------------------------------------------------
def _latency_once(argv: list[str]) -> list[float]:
    """Run ``argv`` (a stamper, bare or behind the bridge) and return the read latency (ms)
    of every stamped line."""
    lat: list[float] = []
    marker = b'"text":"t='
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env=_env(),
    ) as p:
        assert p.stdout is not None
        for line in p.stdout:
            now = time.monotonic_ns()
            k = line.find(marker)
            if k < 0:
                continue
            stamp = int(line[k + len(marker) : line.index(b'"', k + len(marker))])
            lat.append((now - stamp) / 1e6)
    if p.returncode != 0:
        raise SystemExit(f"latency run {argv[:3]}: exit status {p.returncode}")
    return lat


def latency(d: Path, seconds: float, runs: int) -> dict[str, Any]:
    script = d / "stamper.py"
    script.write_text(STAMPER)
    report: dict[str, Any] = {}
    for rate in RATES:
        n = max(20, int(rate * seconds))
        stamper = [sys.executable, str(script), str(n), str(rate)]
        modes = {
            "direct": stamper,
            "identity": bridge_run("identity", stamper),
            "cbc-to-claude": bridge_run("cbc-to-claude", stamper),
        }
        lat: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(runs):
            for mode, argv in modes.items():
                got = _latency_once(argv)
                if len(got) != n:
                    raise SystemExit(f"latency {mode} at {rate}/s: {len(got)} of {n} frames")
                lat[mode] += got
        base50, base99 = _pct(lat["direct"], 50), _pct(lat["direct"], 99)
        report[str(rate)] = {
            mode: {
                "p50_ms": round(_pct(xs, 50), 3),
                "p99_ms": round(_pct(xs, 99), 3),
                "added_p50_ms": round(_pct(xs, 50) - base50, 3),
                "added_p99_ms": round(_pct(xs, 99) - base99, 3),
                "frames": len(xs),
            }
            for mode, xs in lat.items()
        }
    return report


# -- 3. start-up ---------------------------------------------------------------------------
def _first_frame(argv: list[str], stampfile: Path, env: dict[str, str]) -> tuple[float, float]:
    """(ms from spawning ``argv`` to its backend's first instruction, to the first line the
    client read). The client keeps stdin open until it has that line."""
    stampfile.unlink(missing_ok=True)
    t0 = time.time()
    with subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env=env,
    ) as p:
        assert p.stdout is not None
        assert p.stdin is not None
        p.stdout.readline()
        first = time.time()
        p.stdin.close()
        p.stdout.read()
    backend = float(stampfile.read_text().strip())
    return (backend - t0) * 1000, (first - t0) * 1000


def startup(d: Path, runs: int) -> dict[str, Any]:
    bash = shutil.which("bash")
    report: dict[str, Any] = {}
    if bash is not None:
        stampfile = d / "started"
        frame = d / "init.jsonl"
        frame.write_text(
            '{"type":"system","subtype":"init","session_id":"s","uuid":"u",'
            '"cwd":"/w","tools":[],"model":"m"}\n'
        )
        # bash writes the wall clock ($EPOCHREALTIME, bash 5) first thing, then is cat
        backend = [
            bash,
            "-c",
            f'echo "$EPOCHREALTIME" > {shlex.quote(str(stampfile))}; '
            f"exec cat {shlex.quote(str(frame))}; ",
            "backend",
        ]
        env = _env()
        dropin_env = {**env, "CCBRIDGE_BACKEND": shlex.join(backend)}
        stream = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
        modes: dict[str, tuple[list[str], dict[str, str]]] = {
            "direct": (backend, env),
            "claude-on-cbc": ([*_exe("claude-on-cbc"), *stream], dropin_env),
            "ccbridge run identity": (
                [
                    *_exe("ccbridge"),
                    "run",
                    "--profile",
                    "identity",
                    "--backend",
                    shlex.join(backend),
                ],
                env,
            ),
        }
        got: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
        for _ in range(runs):
            for mode, (argv, e) in modes.items():
                got[mode].append(_first_frame(argv, stampfile, e))
        report["first_frame"] = {
            mode: {
                "to_backend_start_ms": round(_median([a for a, _ in xs]), 1),
                "to_first_frame_ms": round(_median([b for _, b in xs]), 1),
            }
            for mode, xs in got.items()
        }
    times: dict[str, list[float]] = {
        "python -c pass": [],
        "claude-on-cbc --version": [],
        "ccbridge --version": [],
    }
    cmds = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "claude-on-cbc --version": [*_exe("claude-on-cbc"), "--version"],
        "ccbridge --version": [*_exe("ccbridge"), "--version"],
    }
    for _ in range(max(5, runs * 3)):
        for name, argv in cmds.items():
            t = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, env=_env())
            times[name].append((time.perf_counter() - t) * 1000)
    base = _median(times["python -c pass"])
    report["version"] = {
        name: {"ms": round(_median(xs), 1), "ratio": round(_median(xs) / base, 2)}
        for name, xs in times.items()
    }
    return report


def measure(
    frames: int,
    runs: int,
    seed: int,
    captures: Path,
    seconds: float,
    parts: set[str],
    against: str | None = None,
) -> dict[str, Any]:
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ccb-process-") as tmp:
        d = Path(tmp)
        if "throughput" in parts:
            report["throughput"] = throughput(d, frames, runs, seed, captures, against)
        if "latency" in parts:
            report["latency"] = latency(d, seconds, runs)
        if "startup" in parts:
            report["startup"] = startup(d, runs)
    return report


def _print(report: dict[str, Any]) -> None:
    if "throughput" in report:
        t = report["throughput"]
        print(
            f"throughput: {t['stream']['frames']} frames, {t['stream']['bytes']} bytes, "
            f"medians of {t['runs']} interleaved runs"
        )
        width = max(19, *(len(m) + 2 for m in t["modes"]))
        print(
            f"  {'mode':<{width}}{'wall s':>8}{'x relay':>9}{'CPU s':>8}{'x relay':>9}"
            f"{'frames/s':>10}{'RSS MiB':>9}"
        )
        for mode, r in t["modes"].items():
            print(
                f"  {mode:<{width}}{r['wall_s']:>8.3f}{r['wall_ratio']:>9.2f}{r['cpu_s']:>8.3f}"
                f"{r['cpu_ratio']:>9.2f}{r['frames_per_s']:>10}{r['peak_rss_mib']:>9.1f}"
            )
        if "against" in t:
            rev = t["against"]["rev"]
            print(f"  CPU of this tree over {rev}'s, per round (median):")
            for mode, r in t["against"]["cpu_ratios"].items():
                rounds = " ".join(f"{x:.2f}" for x in r["rounds"])
                print(f"    {mode:<{width}}{rounds}  ({r['median']:.2f})")
    if "latency" in report:
        print("latency (backend write -> client read), ms; added = minus direct's")
        for rate, modes in report["latency"].items():
            for mode, r in modes.items():
                print(
                    f"  {rate:>5}/s {mode:<14} p50 {r['p50_ms']:>7.3f} p99 {r['p99_ms']:>7.3f}"
                    f"   added p50 {r['added_p50_ms']:>7.3f} p99 {r['added_p99_ms']:>7.3f}"
                )
    if "startup" in report:
        s = report["startup"]
        for mode, r in s.get("first_frame", {}).items():
            print(
                f"  start {mode:<22} backend started {r['to_backend_start_ms']:>7.1f} ms, "
                f"first frame read {r['to_first_frame_ms']:>7.1f} ms"
            )
        for name, r in s["version"].items():
            print(f"  {name:<26} {r['ms']:>7.1f} ms  x{r['ratio']:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.process",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--frames", type=int, default=200_000, help="throughput stream length")
    ap.add_argument("--runs", type=int, default=5, help="interleaved rounds (medians)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--captures", type=Path, default=DEFAULT_CAPTURES)
    ap.add_argument(
        "--seconds",
        type=float,
        default=3.0,
        help="latency: seconds of stamped frames per rate and run",
    )
    ap.add_argument(
        "--only", default="throughput,latency,startup", help="parts to run, comma-separated"
    )
    ap.add_argument(
        "--against",
        metavar="REV",
        help="throughput: also run REV's bridge (a git worktree), and this tree's with REV's "
        "rules, in the same rounds; print this tree's CPU over REV's",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    parts = {p.strip() for p in args.only.split(",") if p.strip()}
    report = measure(
        args.frames, max(1, args.runs), args.seed, args.captures, args.seconds, parts, args.against
    )
    if args.json:
        print(json.dumps(report))
    else:
        _print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
