"""Throughput and memory of the bridge engine against a minimal line relay (issue "Core").

One run of ``python -m bench.throughput``:

1. generates, deterministically (``--seed``), a long cbc 2.163.0 stdout stream (``--frames``,
   default 200 000) into a temporary file (``bench/cbcstream.py``: the real frames of
   ``captures/cbc-2.163.0``, ``--captures``, with fresh ids and text; mostly turns of
   ``stream_event`` / ``assistant`` / ``user`` frames, and between them whole captured
   sessions with background shells, agents and workflows, every id renamed);
2. times (best of ``--runs`` by CPU time, steadier on a shared machine; wall time is shown
   too) a minimal relay (``for line in f_in: f_out.write(line)`` to /dev/null) and the
   engine (``build_engine("cbc-to-claude")``, every rule on, fed 64 KiB reads like
   ``bridge.driver``, each ``Write`` written to /dev/null, timers fired as the driver
   would);
3. measures the engine's peak memory (tracemalloc; RSS as a cross-check) on the stream and
   on a 4x shorter one, and says whether it grows with the stream's length;
4. times the engine on the stream's first ``--line-reads`` lines (default 50 000) fed one
   line per read, 1 ms apart (a model streaming slowly: what a real session mostly is),
   against the same lines in 64 KiB reads: CPU per line both ways.

It prints the ratio bridge/relay, both times, frames/s, the memory figures and the engine's
``statistics()`` (so a reader sees the rules fire). ``--breakdown`` also times the engine
with every rule's calls made no-ops (``hollow``: the framework alone, every line dispatched
as with the rules), with no rule at all and with ``private-fields`` alone (the rule that
rewrites nearly every cbc line), to show what the framing and the rules each cost;
``--calls`` times every stage call of one run by what it gave (the frame passed unchanged: a
call that only keeps its stage's state; frames), the bound on what
merging the calls that only keep state could save. ``--json`` prints one JSON object
instead; ``--check`` exits 1 when the ratio is above ``--max-ratio`` (3.0, the issue's
target) or memory grows, so it can gate CI; ``--profile`` adds a cProfile of one engine run.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cbcstream import DEFAULT_CAPTURES, TURN_TEMPLATE, generate
from bridge.driver import READ_SIZE
from bridge.proxy import build_engine
from compat.engine import Engine, Write
from compat.profiles import make_stage
from compat.session import MAX_TASKS, MAX_TOOL_USES
from compat.stage import Env, Stage

MAX_RATIO = 3.0
EPOCH_MS = 1_800_000_000_000
#: peak(N) may exceed peak(N/4) by this factor (plus MEM_SLACK bytes) before we call it growth
MEM_FACTOR = 1.25
MEM_SLACK = 1 << 20
#: the last quarter's CPU per frame may exceed the first's by this factor before we call
#: the cost per frame not flat over the session's length
FLAT_FACTOR = 1.25
#: engine seconds per 64 KiB read (~1000 frames/s from the backend): drives the timers
SECONDS_PER_READ = 0.05
#: and per read of one line (``--line-reads``)
SECONDS_PER_LINE = 0.001

# -- the measurements ---------------------------------------------------------------------


def relay(path: Path) -> int:
    """The floor: a synchronous Python line relay."""
    n = 0
    with open(path, "rb") as f_in, open(os.devnull, "wb") as f_out:
        for line in f_in:
            f_out.write(line)
            n += 1
    return n


def full_engine() -> Engine:
    """Profile ``cbc-to-claude``, every rule on (what the target is about)."""
    return build_engine("cbc-to-claude", epoch_ms=EPOCH_MS)


def _noop_frame(self: Stage, frame: Any, ctx: Any) -> None:
    return None


def hollow(engine: Engine) -> Engine:
    """``engine`` with every stage's calls made no-ops (a frame passes, a timer or hook
    gives nothing), each stage keeping its interest: the same plans, proof, dispatch,
    parses and writing with no rule at work. What it costs is the framework's share of the
    engine (issue 11's "framework tax"); what the full engine costs more, the rules' own
    work."""
    hollowed: dict[type[Stage], type[Stage]] = {}
    for pipeline in engine.pipelines.values():
        for stage in pipeline.stages:
            cls = type(stage)
            if cls not in hollowed:
                body: dict[str, Any] = {"__slots__": (), "on_frame": _noop_frame}
                for hook in ("on_timer", "on_input_eof", "on_client_eof"):
                    body[hook] = lambda self, ctx: None
                body["on_backend_exit"] = lambda self, status, ctx: None
                hollowed[cls] = type(f"Hollow{cls.__name__}", (cls,), body)
            stage.__class__ = hollowed[cls]
    return engine


#: ``--breakdown``: the engine with less and less to do, to show where the time goes
BREAKDOWN: dict[str, Callable[[], Engine]] = {
    "every rule's calls no-ops": lambda: hollow(full_engine()),
    "no rules": lambda: build_engine("identity", epoch_ms=EPOCH_MS),
    "private-fields only": lambda: Engine(
        [],
        [s for s in [make_stage("private-fields", {})] if s is not None],
        Env(new_uuid=str, epoch_ms=EPOCH_MS),
    ),
}


def bridge(
    path: Path,
    sample: Callable[[], None] | None = None,
    out: str = os.devnull,
    make: Callable[[], Engine] = full_engine,
    client_eof: bool = False,
    line_per_read: bool = False,
    on_read: Callable[[bytes], None] | None = None,
) -> Engine:
    """The engine over the same bytes, fed and drained the way ``bridge.driver`` does;
    ``client_eof``: the client's EOF first (a ``-p`` run: the stream goes through the
    wind-down); ``line_per_read``: one line per read, 1 ms apart (a backend writing each
    frame as it has it), instead of 64 KiB reads; ``on_read``: called with each read once
    the engine has taken it."""
    engine = make()
    if client_eof:
        engine.eof("client", 0.0)
    now = 0.0
    reads = 0
    step = SECONDS_PER_LINE if line_per_read else SECONDS_PER_READ
    with (
        open(path, "rb", buffering=-1 if line_per_read else 0) as f_in,
        open(out, "wb") as f_out,
    ):
        write = f_out.write
        chunks = iter(f_in) if line_per_read else iter(lambda: f_in.read(READ_SIZE), b"")
        for chunk in chunks:
            for cmd in engine.feed("backend", chunk, now):
                if type(cmd) is Write:
                    write(cmd.data)
            deadline = engine.next_deadline()
            now += step
            if deadline is not None and deadline <= now:
                for cmd in engine.advance(now):
                    if type(cmd) is Write:
                        write(cmd.data)
            reads += 1
            if on_read is not None:
                on_read(chunk)
            if sample is not None and reads % 64 == 0:
                sample()
        for cmd in engine.backend_exited(0, now):
            if type(cmd) is Write:
                write(cmd.data)
    return engine


def _head(path: Path, out: Path, limit: int) -> int:
    """``path``'s first ``limit`` lines, as a file of their own; how many it has."""
    n = 0
    with open(path, "rb") as f_in, open(out, "wb") as f_out:
        for line in f_in:
            if n == limit:
                break
            f_out.write(line)
            n += 1
    return n


def best_of(runs: int, fn: Callable[[], Any]) -> dict[str, Any]:
    """Best of ``runs`` by CPU time (the process's own: steadier than wall time on a shared
    machine, and the same thing for a loop that never waits), with the wall times too."""
    cpu, wall = [], []
    for _ in range(runs):
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return {"best_s": min(cpu), "cpu_s": cpu, "best_wall_s": min(wall), "wall_s": wall}


def per_rule(path: Path, runs: int, client_eof: bool = False) -> dict[str, float]:
    """What each rule of the stream's direction costs: the engine's CPU with every rule on
    minus its CPU with that rule off (``--rule ID=off``), each pair run back to back (a load
    that drifts over the minutes this takes hits both alike), the median of ``runs`` pairs.
    A negative figure is noise, or a rule whose work saves others theirs (a dropped frame
    no later rule sees)."""
    from compat.profiles import ALWAYS_ON, PROFILES

    rules = [r for r in PROFILES["cbc-to-claude"]["down"] if r not in ALWAYS_ON]

    def cpu(off: str | None) -> float:
        settings = [f"{off}=off"] if off else []
        gc.collect()
        c0 = time.process_time()
        bridge(
            path,
            make=lambda: build_engine("cbc-to-claude", settings, epoch_ms=EPOCH_MS),
            client_eof=client_eof,
        )
        return time.process_time() - c0

    pairs: dict[str, list[float]] = {r: [] for r in rules}
    for _ in range(runs):
        for rule in rules:
            pairs[rule].append(cpu(None) - cpu(rule))
    return {r: statistics.median(d) for r, d in pairs.items()}


class Quarters:
    """CPU per frame in each quarter of the stream (by frames read), for one engine run
    (the report takes each quarter's best over the timed runs):
    a rule whose work grows with what the session has seen shows as a later quarter
    costlier than the first (the stream's make-up is the same throughout: seeded turns and
    sessions drawn alike)."""

    def __init__(self, frames: int) -> None:
        self.bounds = [frames * k // 4 for k in (1, 2, 3)]
        self.seen = 0
        self.marks: list[tuple[int, float]] = []
        self.start = time.process_time()

    def __call__(self, chunk: bytes) -> None:
        self.seen += chunk.count(b"\n")
        while len(self.marks) < len(self.bounds) and self.seen >= self.bounds[len(self.marks)]:
            self.marks.append((self.seen, time.process_time()))

    def finish(self) -> float:
        """The run is over (the last quarter ends here): its CPU time."""
        self.marks.append((self.seen, time.process_time()))
        return self.marks[-1][1] - self.start

    def per_frame_us(self) -> list[float]:
        """µs of CPU per frame in each quarter of a finished run."""
        points = [(0, self.start), *self.marks]
        return [
            (t1 - t0) / max(n1 - n0, 1) * 1e6
            for (n0, t0), (n1, t1) in zip(points, points[1:], strict=False)
        ]


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: the high-water mark, coarser
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory(path: Path) -> dict[str, int]:
    """Peak traced allocation during one engine run, what the engine still holds after it,
    the RSS growth (sampled every 64 reads) of a run without tracing, and how full the
    session's bounded registries are (``compat.session``: tool calls and tasks)."""
    gc.collect()
    base_rss = _rss()
    peak_rss = base_rss

    def sample() -> None:
        nonlocal peak_rss
        peak_rss = max(peak_rss, _rss())

    engine = bridge(path, sample)
    sample()
    del engine
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    engine = bridge(path)
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    state = engine.state
    del engine
    return {
        "peak": peak - base,
        "retained": current - base,
        "rss_growth": peak_rss - base_rss,
        "tool_uses": len(state.tool_uses),
        "tasks": len(state.tasks),
    }


def profile(path: Path, top: int = 30, client_eof: bool = False) -> str:
    prof = cProfile.Profile()
    prof.runcall(bridge, path, client_eof=client_eof)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


#: ``--calls``: what a stage call gave: None (the frame passed unchanged: a call that only
#: keeps the stage's state) or frames
CALL_KINDS = ("passed", "changed")


def calls(
    path: Path, client_eof: bool = False, top: int = 12, make: Callable[[], Engine] = full_engine
) -> dict[str, Any]:
    """The stages' calls in one engine run, by what they gave (``CALL_KINDS``): how many,
    and the seconds spent inside them (``perf_counter`` around each call of the stage
    classes' hooks, restored after). What a redesign that merges the calls which only keep
    state ("passed") could save at most, and what the rules' own changes cost whatever
    the framework."""
    seconds: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], int] = {}
    clock = time.perf_counter
    saved: list[tuple[type, str, Any]] = []

    def wrap(klass: type, hook: str) -> None:
        fn = klass.__dict__[hook]
        saved.append((klass, hook, fn))

        def timed(self: Any, *args: Any) -> Any:
            t0 = clock()
            got = fn(self, *args)
            dt = clock() - t0
            what = "passed" if got is None else "changed"
            key = (self.rule, what)  # (a hook a class inherits is its caller's rule's)
            seconds[key] = seconds.get(key, 0.0) + dt
            counts[key] = counts.get(key, 0) + 1
            return got

        setattr(klass, hook, timed)

    engine = make()
    for pipeline in engine.pipelines.values():
        for stage in pipeline.stages:
            for klass in type(stage).__mro__:
                for hook in ("on_frame",):
                    if hook in klass.__dict__ and not any(
                        k is klass and h == hook for k, h, _ in saved
                    ):
                        wrap(klass, hook)
    try:
        gc.collect()
        bridge(path, make=lambda: engine, client_eof=client_eof)
    finally:
        for klass, hook, fn in reversed(saved):
            setattr(klass, hook, fn)
    by_kind = {
        k: {
            "calls": sum(n for (_, w), n in counts.items() if w == k),
            "s": round(sum(t for (_, w), t in seconds.items() if w == k), 3),
        }
        for k in CALL_KINDS
    }
    ranked = sorted(seconds.items(), key=lambda kv: -kv[1])[:top]
    return {
        "by_kind": by_kind,
        "top": [
            {"rule": r, "gave": w, "calls": counts[(r, w)], "s": round(t, 3)}
            for (r, w), t in ranked
        ],
    }


def verify(path: Path) -> dict[str, int]:
    """Contract violations of the engine's output, by rule (informational)."""
    from analysis.contract import check_lines, counts

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "out.jsonl"
        bridge(path, out=str(out))
        with open(out, "rb") as f:
            return counts(check_lines(line.rstrip(b"\n") for line in f))


def run(args: argparse.Namespace) -> dict[str, Any]:
    captures = Path(args.captures)
    if not (captures / TURN_TEMPLATE).is_file():
        raise SystemExit(f"no cbc 2.163.0 captures in {captures} (use --captures DIR)")
    with tempfile.TemporaryDirectory(prefix="ccbridge-bench-") as d:
        full, short = Path(d) / "full.jsonl", Path(d) / "quarter.jsonl"
        t0 = time.perf_counter()
        stream = generate(full, args.frames, args.seed, captures)
        quarter = generate(short, args.frames // 4, args.seed, captures)
        gen_s = time.perf_counter() - t0
        mem_q = memory(short)
        mem_f = memory(full)
        relay_t = best_of(args.runs, lambda: relay(full))
        holder: list[Engine] = []
        eof = args.client_eof
        quarters: list[Quarters] = []

        def timed() -> None:
            quarters.append(Quarters(stream["frames"]))
            holder.append(bridge(full, client_eof=eof, on_read=quarters[-1]))
            quarters[-1].finish()

        bridge_t = best_of(args.runs, timed)
        stats = holder[-1].statistics()
        holder.clear()
        # each quarter's best over the runs (a burst of load in one run's quarter says
        # nothing about the stream; the best of each is what the best of a run is)
        flat = [min(us) for us in zip(*(q.per_frame_us() for q in quarters), strict=True)]
        breakdown = (
            {
                name: best_of(args.runs, lambda make=make: bridge(full, make=make, client_eof=eof))  # type: ignore[misc]
                for name, make in BREAKDOWN.items()
            }
            if args.breakdown
            else None
        )
        head = Path(d) / "head.jsonl"
        n_head = _head(full, head, args.line_reads)
        reads = {
            "lines": n_head,
            "one_line": best_of(args.runs, lambda: bridge(head, line_per_read=True)),
            "blocks": best_of(args.runs, lambda: bridge(head)),
        }
        prof = profile(full, client_eof=eof) if args.profile else None
        rules = per_rule(full, args.runs, eof) if args.per_rule else None
        stage_calls = calls(full, eof) if args.calls else None
        violations = verify(full) if args.verify else None
    n = stream["frames"]
    grows = mem_f["peak"] > MEM_FACTOR * mem_q["peak"] + MEM_SLACK
    slows = flat[-1] > FLAT_FACTOR * flat[0]
    ratio = bridge_t["best_s"] / relay_t["best_s"]
    for t in (relay_t, bridge_t, *(breakdown or {}).values()):
        t["frames_per_s"] = n / t["best_s"]
    if breakdown is not None:
        for t in breakdown.values():
            t["ratio"] = t["best_s"] / relay_t["best_s"]
    result: dict[str, Any] = {
        "python": sys.version.split()[0],
        "seed": args.seed,
        "client_eof": args.client_eof,
        "generate_s": round(gen_s, 2),
        "stream": stream,
        "relay": relay_t,
        "bridge": bridge_t,
        "ratio": ratio,
        "ratio_wall": bridge_t["best_wall_s"] / relay_t["best_wall_s"],
        "max_ratio": args.max_ratio,
        "memory": {
            "frames": {"full": n, "quarter": quarter["frames"]},
            "full": mem_f,
            "quarter": mem_q,
            "grows": grows,
        },
        "statistics": stats,
        "line_reads": reads,
        "per_frame_us_by_quarter": flat,
        "slows": slows,
        "ok": ratio <= args.max_ratio and not grows and not slows,
    }
    if breakdown is not None:
        result["breakdown"] = breakdown
    if violations is not None:
        result["contract_violations"] = violations
    if prof is not None:
        result["profile"] = prof
    if rules is not None:
        result["per_rule"] = rules
    if stage_calls is not None:
        result["calls"] = stage_calls
    return result


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def report(r: dict[str, Any]) -> str:
    s, m = r["stream"], r["memory"]
    lines = [
        f"stream: {s['frames']} frames, {_mib(s['bytes'])} (seed {r['seed']}, "
        f"generated in {r['generate_s']} s)",
        "  frames: " + ", ".join(f"{k} {v}" for k, v in s["kinds"].items()),
        "  captured sessions replayed: " + ", ".join(f"{k} {v}" for k, v in s["episodes"].items()),
        *(
            f"{side:<6}: {t['best_s']:.3f} s CPU ({t['frames_per_s']:,.0f} frames/s), "
            f"best wall {t['best_wall_s']:.3f} s; runs (CPU) "
            + ", ".join(f"{x:.3f}" for x in t["cpu_s"])
            for side, t in (("relay", r["relay"]), ("bridge", r["bridge"]))
        ),
        f"ratio bridge/relay: {r['ratio']:.2f} by CPU time, {r['ratio_wall']:.2f} by wall time"
        f"  (target <= {r['max_ratio']:g})",
        *(
            f"  engine with {name}: {t['best_s']:.3f} s CPU, ratio {t['ratio']:.2f}"
            for name, t in r.get("breakdown", {}).items()
        ),
        "memory (engine run)        quarter ({q} frames)   full ({f} frames)".format(
            q=m["frames"]["quarter"], f=m["frames"]["full"]
        ),
    ]
    for key, label in (
        ("peak", "tracemalloc peak"),
        ("retained", "held after the run"),
        ("rss_growth", "RSS growth"),
    ):
        lines.append(f"  {label:<24} {_mib(m['quarter'][key]):>22} {_mib(m['full'][key]):>18}")
    q, f = m["quarter"], m["full"]
    fill_q = f"tool calls {q['tool_uses']}, tasks {q['tasks']}"
    fill_f = f"{f['tool_uses']}, {f['tasks']}"
    lines.append(
        f"  {'session registries':<24} {fill_q:>22} {fill_f:>18}"
        f"  (caps {MAX_TOOL_USES}, {MAX_TASKS})"
    )
    lines.append(
        f"peak memory grows with stream length: {'YES' if m['grows'] else 'no'} "
        f"(growth = full peak > {MEM_FACTOR:g} x quarter peak + {_mib(MEM_SLACK)})"
    )
    flat = r["per_frame_us_by_quarter"]
    lines.append(
        "CPU per frame by quarter of the stream: "
        + ", ".join(f"{us:.1f}" for us in flat)
        + f" us (last/first x{flat[-1] / flat[0]:.2f}; slows down: "
        f"{'YES' if r['slows'] else 'no'}, at > x{FLAT_FACTOR:g})"
    )
    lr = r["line_reads"]
    per_line = {k: lr[k]["best_s"] / lr["lines"] * 1e6 for k in ("one_line", "blocks")}
    lines.append(
        f"the first {lr['lines']} lines, CPU per line: {per_line['one_line']:.1f} us one line "
        f"per read, {per_line['blocks']:.1f} us in 64 KiB reads "
        f"(x{per_line['one_line'] / per_line['blocks']:.2f})"
    )
    st = r["statistics"]
    lines.append(
        "engine statistics: frames "
        + "; ".join(
            f"{d} " + ", ".join(f"{k} {v}" for k, v in c.items())
            for d, c in st["frames"].items()
            if c
        )
        + f"; peak buffer {st['peak_buffer']} B"
    )
    for rule, counts in st["rules"].items():
        lines.append(f"  {rule:<20} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if "contract_violations" in r:
        v = r["contract_violations"]
        lines.append(
            "contract violations of the output: "
            + (", ".join(f"{k} {n}" for k, n in sorted(v.items())) or "none")
        )
    lines.append(
        "OK"
        if r["ok"]
        else "NOT OK: "
        + "; ".join(
            w
            for w, bad in (
                ("ratio above target", r["ratio"] > r["max_ratio"]),
                ("memory grows", m["grows"]),
                ("a frame costs more late in the stream", r["slows"]),
            )
            if bad
        )
    )
    if "per_rule" in r:
        total = r["bridge"]["best_s"]
        lines.append("CPU of each rule (all on minus it off, back to back, median of runs):")
        for rule, cost in sorted(r["per_rule"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {rule:<20} {cost:+.3f} s  {cost / total:+6.1%}")
    if "calls" in r:
        total, c = r["bridge"]["best_s"], r["calls"]
        inside = sum(v["s"] for v in c["by_kind"].values())
        lines.append(
            f"inside the stages' calls (one run, each call timed): {inside:.3f} s; the engine's"
            f" best {total:.3f} s CPU leaves {total - inside:.3f} s to the rest (the walk, the"
            " proof, parse, encode, splitting)"
        )
        for what, v in c["by_kind"].items():
            lines.append(f"  {what:<17} {v['calls']:>8} calls {v['s']:>8.3f} s")
        lines.append(
            "  costliest: " + ", ".join(f"{t['rule']} {t['gave']} {t['s']:.3f} s" for t in c["top"])
        )
    if "profile" in r:
        lines.append(r["profile"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.throughput",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--frames", type=int, default=200_000, help="frames in the stream (>= this)")
    p.add_argument("--runs", type=int, default=3, help="timed runs of each side (best is kept)")
    p.add_argument("--seed", type=int, default=2163)
    p.add_argument(
        "--captures",
        default=os.environ.get("CCBRIDGE_CBC_CAPTURES", str(DEFAULT_CAPTURES)),
        help="the cbc-2.163.0 reference captures",
    )
    p.add_argument(
        "--line-reads",
        type=int,
        default=50_000,
        help="lines timed one line per read against 64 KiB reads",
    )
    p.add_argument("--max-ratio", type=float, default=MAX_RATIO)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the ratio is above --max-ratio, memory grows or a frame costs more"
        " late in the stream",
    )
    p.add_argument("--profile", action="store_true", help="add a cProfile of one engine run")
    p.add_argument(
        "--breakdown",
        action="store_true",
        help="also time the engine with no rule and with private-fields only",
    )
    p.add_argument(
        "--per-rule",
        action="store_true",
        help="also time the engine once with each rule off: what each rule costs (slow)",
    )
    p.add_argument(
        "--calls",
        action="store_true",
        help="also time the stages' calls in one run, by what they gave (passed, changed)",
    )
    p.add_argument(
        "--client-eof",
        action="store_true",
        help="the client's EOF before the stream (a -p run: every line in the wind-down)",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="check the engine's output with analysis.contract (informational)",
    )
    args = p.parse_args(argv)
    if args.frames < 4 or args.runs < 1:
        p.error("--frames must be >= 4 and --runs >= 1")
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 1 if args.check and not result["ok"] else 0


if __name__ == "__main__":
    sys.exit(main())
