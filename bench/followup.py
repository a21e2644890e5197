"""Follow-up turns (issue 27): what a user pays per turn through the bridge, and that no
follow-up line is lost, in one invocation of ``python -m bench.followup``.

The real cbc (``find_backend("cbc")``) answers the stand-in model (``harness.model``,
scripted to echo: ``line N`` -> ``ack N``), once through the bridge (``ccbridge run
--profile cbc-to-claude``, every rule on; ``--rule`` tunes it) and once bare, session by
session, interleaved (bridge, bare, bare, bridge, ...: the machine's drift falls on both).
A session is a fresh cbc in a fresh HOME: the first line, then ``--lines`` follow-up lines,
each written ``0``-``--max-delay`` seconds (seeded, spread over the range; the same delays
for both targets) after the client read the previous line's answer, the way an SDK client
writes its next ``query()`` right after ``receive_response()``. A line is answered when the
result ``ack N`` of its own turn comes; one with no answer within ``--timeout`` is lost, one
answered twice is duplicated (both are what cbc 2.163.0 does with a line that reaches it
while it starts its drain poll: ``compat/stages/user_line.py``, rule ``user-line``).

Figures: per-turn time (writing the line -> reading its answer), mean and median, for the
first follow-up of a session (the one ``user-line`` may hold) and the later ones; the
added time per follow-up turn (bridge - bare) and the ratio; lost and duplicated lines per
target, and the bare cbc's failures by the delay they were written at. A turn's time counts
only while its session had no failure (a duplicated turn delays the next line's answer).
Compare ratios of one run; the machine may be shared.

    python -m bench.followup                      # 50 sessions x 20 follow-ups per target
    python -m bench.followup --sessions 10 --lines 5 --json
    python -m bench.followup --only bridge --rule user-line.settle=0   # the race unguarded
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import signal
import statistics
import subprocess
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio

from bridge.backends import find_backend
from harness import runner
from harness.brain import ModelScript, Rule
from harness.model import ModelServer

REPO = Path(__file__).resolve().parents[1]
TARGETS = ("bridge", "bare")
#: the stand-in model echoes the line's number: each answer says which line it answers
ECHO = Rule(regex=r"line (\d+)", text="ack $1")
_ACK = re.compile(r"ack (\d+)")
#: the client's argv (Claude's; the bridge translates it for cbc, which takes it as is)
CLIENT_ARGS = ("-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose")
FIRST_TIMEOUT = 120.0  # the first turn includes cbc's start-up (slow on a busy machine)
STOP_GRACE = 2.0  # seconds a session's process gets to exit after its stdin closes


@attrs.define
class Line:
    """One follow-up line: written ``delay`` s after the previous answer; ``turn``: seconds
    from writing it to reading its answer (None: lost); ``clean``: no failure in its session
    before its answer came."""

    delay: float
    turn: float | None = None
    clean: bool = False
    duplicated: bool = False


@attrs.define
class Session:
    target: str
    lines: list[Line]
    error: str | None = None


@attrs.define
class _Answers:
    """The answers read from one session's stdout: line number -> when (trio time)."""

    at: dict[int, float] = attrs.Factory(dict)
    duplicated: set[int] = attrs.Factory(set)
    failures: int = 0
    closed: bool = False  # the process closed its stdout (it exited)
    changed: trio.Event = attrs.Factory(trio.Event)

    async def read(self, stream: trio.abc.ReceiveStream) -> None:
        buf = b""
        async for chunk in stream:
            now = trio.current_time()
            *lines, buf = (buf + chunk).split(b"\n")
            for raw in lines:
                self._take(raw, now)
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    def _take(self, raw: bytes, now: float) -> None:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return
        if not isinstance(obj, dict) or obj.get("type") != "result":
            return
        m = _ACK.fullmatch(str(obj.get("result") or "").strip())
        if m is None:
            return
        n = int(m.group(1))
        if n in self.at:
            self.duplicated.add(n)
            self.failures += 1
        else:
            self.at[n] = now
        self._wake()

    async def wait(self, n: int, within: float) -> bool:
        with trio.move_on_after(within):
            while n not in self.at and not self.closed:
                await self.changed.wait()
        return n in self.at


def user_line(n: int) -> bytes:
    obj = {
        "type": "user",
        "session_id": "",
        "message": {"role": "user", "content": f"line {n}"},
        "parent_tool_use_id": None,
    }
    return orjson.dumps(obj) + b"\n"


def bridge_argv(cbc: Sequence[str], rules: Sequence[str]) -> list[str]:
    """``ccbridge run`` as a user runs it (the console script beside this Python, else
    ``-m bridge``), cbc behind it, the client's argv after ``--``."""
    script = Path(sys.executable).with_name("ccbridge")
    exe = [str(script)] if script.is_file() else [sys.executable, "-m", "bridge"]
    tuned = [w for r in rules for w in ("--rule", r)]
    backend = shlex.join(cbc)
    return [
        *exe,
        "run",
        "--profile",
        "cbc-to-claude",
        "--backend",
        backend,
        *tuned,
        "--",
        *CLIENT_ARGS,
    ]


def session_env(url: str, dirs: dict[str, str], mark: str) -> dict[str, str]:
    """cbc's environment as the scenario runner builds it (fresh HOME, the stand-in's URL,
    dummy keys), without cbc's task reminders (they would add a user message after the
    line every tenth turn: the model would not see the line last), no ccbridge config."""
    env = runner.backend_env("cbc", url, dirs, mark)
    env["CODEBUDDY_DISABLE_TASK_REMINDERS"] = "1"
    env["CCBRIDGE_CONFIG"] = os.devnull
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return env


async def _stop(proc: trio.Process, mark: str) -> None:
    """Close the session: stdin closed, a moment to exit, then the process group and
    whatever still carries the run's mark (cbc lingers after its stdin closes)."""
    with trio.CancelScope(shield=True):
        if proc.stdin is not None:
            await proc.stdin.aclose()
        with trio.move_on_after(STOP_GRACE):
            await proc.wait()
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            await proc.wait()
        await trio.to_thread.run_sync(runner.sweep, mark)


async def _play(proc: trio.Process, answers: _Answers, lines: list[Line], patience: float) -> None:
    assert proc.stdin is not None
    await proc.stdin.send_all(user_line(0))
    if not await answers.wait(0, FIRST_TIMEOUT):
        why = ": it exited" if answers.closed else ""
        raise TimeoutError(f"the first line got no answer{why}")
    last = answers.at[0]
    for n, line in enumerate(lines, 1):
        await trio.sleep_until(last + line.delay)
        sent = trio.current_time()
        await proc.stdin.send_all(user_line(n))
        if await answers.wait(n, patience):
            line.turn = answers.at[n] - sent
            line.clean = answers.failures == 0 and all(x.turn is not None for x in lines[:n])
            last = answers.at[n]
        else:
            last = trio.current_time()
    await trio.sleep(min(0.5, patience))  # an answer given twice shows by now
    for n in answers.duplicated:
        if 1 <= n <= len(lines):
            lines[n - 1].duplicated = True


async def run_session(
    target: str, argv: list[str], url: str, delays: Sequence[float], patience: float
) -> Session:
    """One session: a fresh process (cbc, or the bridge with cbc), the first line, then one
    follow-up line per delay."""
    dirs = runner.make_root()
    mark = os.urandom(8).hex()
    lines = [Line(d) for d in delays]
    got = Session(target, lines)
    proc = await trio.lowlevel.open_process(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=dirs["CWD"],
        env=session_env(url, dirs, mark),
        start_new_session=True,
    )
    tail: deque[bytes] = deque(maxlen=1)  # its stderr's last line
    answers = _Answers()
    try:
        async with trio.open_nursery() as nursery:
            assert proc.stdout is not None
            assert proc.stderr is not None
            nursery.start_soon(answers.read, proc.stdout)
            nursery.start_soon(_last_lines, proc.stderr, tail)
            try:
                await _play(proc, answers, lines, patience)
            except (TimeoutError, trio.BrokenResourceError) as e:
                got.error = f"{type(e).__name__}: {e}"
            nursery.cancel_scope.cancel()
    finally:
        await _stop(proc, mark)
        if got.error is not None and tail:  # what it said last (a bridge that failed to start)
            got.error += f" ({tail[0].decode(errors='replace').strip()[:300]})"
        await trio.to_thread.run_sync(_remove, dirs["ROOT"])
    return got


async def _last_lines(stream: trio.abc.ReceiveStream, tail: deque[bytes]) -> None:
    buf = b""
    async for chunk in stream:
        *lines, buf = (buf + chunk).split(b"\n")
        tail.extend(x for x in lines if x.strip())


def _remove(root: str) -> None:
    import shutil

    shutil.rmtree(root, ignore_errors=True)


def schedule(sessions: int, lines: int, max_delay: float, seed: int) -> list[list[float]]:
    """Each session's delays: ``lines`` values spread over [0, max_delay], stratified so
    every stretch of the range gets its share (first follow-ups included), shuffled."""
    rnd = random.Random(seed)
    total = sessions * lines
    flat = [(i + rnd.random()) / total * max_delay for i in range(total)]
    rnd.shuffle(flat)
    return [flat[s * lines : (s + 1) * lines] for s in range(sessions)]


async def measure(
    cbc: Sequence[str],
    sessions: int,
    lines: int,
    *,
    max_delay: float = 0.020,
    patience: float = 5.0,
    seed: int = 1,
    rules: Sequence[str] = (),
    only: str | None = None,
    progress: bool = False,
) -> list[Session]:
    """Run the sessions, the targets interleaved; one process at a time."""
    server = ModelServer(ModelScript(rules=(ECHO,)))
    argv = {"bridge": bridge_argv(cbc, rules), "bare": [*cbc, *CLIENT_ARGS]}
    out: list[Session] = []
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        for s, delays in enumerate(schedule(sessions, lines, max_delay, seed)):
            order = TARGETS if s % 2 == 0 else TARGETS[::-1]
            for target in order:
                if only is None or target == only:
                    got = await run_session(target, argv[target], url, delays, patience)
                    out.append(got)
                    if progress:
                        print(_progress_line(s, got), file=sys.stderr, flush=True)
        nursery.cancel_scope.cancel()
    return out


def _progress_line(s: int, got: Session) -> str:
    bad = [
        f"line {i} at {1000 * x.delay:.1f} ms {'lost' if x.turn is None else 'duplicated'}"
        for i, x in enumerate(got.lines, 1)
        if x.turn is None or x.duplicated
    ]
    return f"session {s + 1} {got.target}: {', '.join(bad) or 'all answered'} {got.error or ''}"


# -- figures -----------------------------------------------------------------------------------
def _ms(xs: list[float], how: str) -> float | None:
    if not xs:
        return None
    return round(1000 * (statistics.median(xs) if how == "median" else statistics.fmean(xs)), 2)


def summary(got: list[Session], target: str) -> dict[str, Any]:
    mine = [s for s in got if s.target == target]
    all_lines = [x for s in mine for x in s.lines]
    clean = [x.turn for x in all_lines if x.clean and x.turn is not None]
    first = [s.lines[0].turn for s in mine if s.lines and s.lines[0].clean and s.lines[0].turn]
    later = [x.turn for s in mine for x in s.lines[1:] if x.clean and x.turn is not None]
    return {
        "sessions": len(mine),
        "follow_ups": len(all_lines),
        "answered": sum(x.turn is not None for x in all_lines),
        "lost": sum(x.turn is None for x in all_lines),
        "duplicated": sum(x.duplicated for x in all_lines),
        "errors": [s.error for s in mine if s.error],
        "timed_turns": len(clean),
        "mean_ms": _ms(clean, "mean"),
        "median_ms": _ms(clean, "median"),
        "first_mean_ms": _ms(first, "mean"),
        "first_median_ms": _ms(first, "median"),
        "later_mean_ms": _ms(later, "mean"),
        "later_median_ms": _ms(later, "median"),
    }


def failures_by_delay(got: list[Session], target: str, step: float = 0.005) -> dict[str, Any]:
    """Lines by the delay they were written at (``step`` s buckets): how many, how many
    lost or duplicated, and of those how many were a session's first follow-up."""
    out: dict[str, dict[str, int]] = {}
    for s in got:
        if s.target != target:
            continue
        for i, x in enumerate(s.lines):
            lo = int(x.delay / step) * step
            key = f"{1000 * lo:g}-{1000 * (lo + step):g} ms"
            row = out.setdefault(key, {"lines": 0, "failed": 0, "failed_first": 0})
            row["lines"] += 1
            if x.turn is None or x.duplicated:
                row["failed"] += 1
                row["failed_first"] += i == 0
    return dict(sorted(out.items(), key=lambda kv: float(kv[0].split("-")[0])))


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 2)


def report(got: list[Session], params: dict[str, Any]) -> dict[str, Any]:
    rows = {t: summary(got, t) for t in TARGETS}
    br, bare = rows["bridge"], rows["bare"]
    added = {
        "mean_ms": _diff(br["mean_ms"], bare["mean_ms"]),
        "median_ms": _diff(br["median_ms"], bare["median_ms"]),
        "first_mean_ms": _diff(br["first_mean_ms"], bare["first_mean_ms"]),
        "later_mean_ms": _diff(br["later_mean_ms"], bare["later_mean_ms"]),
    }
    ratio = round(br["mean_ms"] / bare["mean_ms"], 3) if br["mean_ms"] and bare["mean_ms"] else None
    return {
        "params": params,
        "targets": rows,
        "added": added,
        "ratio": ratio,
        "bare_failures_by_delay": failures_by_delay(got, "bare"),
        "bridge_failures_by_delay": failures_by_delay(got, "bridge"),
    }


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _print(rep: dict[str, Any]) -> None:
    p = rep["params"]
    print(
        f"follow-up turns: {p['sessions']} sessions x {p['lines']} follow-up lines per target, "
        f"each written 0-{1000 * p['max_delay']:g} ms after the previous answer "
        f"(seed {p['seed']}; bridge rules: {' '.join(p['rules']) or 'defaults'})"
    )
    head = "target     lines  answered  lost  dup   mean ms  median ms  first mean  later mean"
    print(head)
    for t in TARGETS:
        r = rep["targets"][t]
        if not r["sessions"]:
            continue
        print(
            f"{t:9s} {r['follow_ups']:6d} {r['answered']:9d} {r['lost']:5d} {r['duplicated']:4d}"
            f" {_fmt(r['mean_ms']):>9s} {_fmt(r['median_ms']):>10s}"
            f" {_fmt(r['first_mean_ms']):>11s} {_fmt(r['later_mean_ms']):>11s}"
        )
        for e in r["errors"]:
            print(f"  {t}: {e}")
    a = rep["added"]
    if a["mean_ms"] is not None:
        print(
            f"added per follow-up turn (bridge - bare): {_fmt(a['mean_ms'])} ms mean, "
            f"{_fmt(a['median_ms'])} ms median, ratio {rep['ratio']}x; first follow-up "
            f"{_fmt(a['first_mean_ms'])} ms, later ones {_fmt(a['later_mean_ms'])} ms (means)"
        )
    for t in TARGETS:
        rows = rep[f"{t}_failures_by_delay"]
        if any(r["failed"] for r in rows.values()):
            cells = ", ".join(
                f"{k}: {r['failed']}/{r['lines']} ({r['failed_first']} first)"
                for k, r in rows.items()
                if r["failed"]
            )
            print(f"{t} lines lost or duplicated, by delay after the answer: {cells}")
    br = rep["targets"]["bridge"]
    if br["sessions"]:
        print(
            f"lost lines through the bridge: {br['lost'] + br['duplicated']} of {br['follow_ups']}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.followup", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--sessions", type=int, default=50, help="sessions per target (50)")
    ap.add_argument("--lines", type=int, default=20, help="follow-up lines per session (20)")
    ap.add_argument("--max-delay", type=float, default=0.020, help="seconds (0.020)")
    ap.add_argument("--timeout", type=float, default=5.0, help="s before a line is lost (5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rule", action="append", default=[], help="ID.option=VALUE, the bridge's")
    ap.add_argument("--only", choices=TARGETS, help="one target only")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--quiet", action="store_true", help="no per-session progress on stderr")
    a = ap.parse_args(argv)
    cbc = find_backend("cbc")
    if cbc is None:
        print("cbc not installed: pip install codebuddy-agent-sdk", file=sys.stderr)
        return 2
    params = {
        "sessions": a.sessions,
        "lines": a.lines,
        "max_delay": a.max_delay,
        "timeout": a.timeout,
        "seed": a.seed,
        "rules": a.rule,
        "cbc": cbc[0],
    }
    got = trio.run(
        lambda: measure(
            cbc,
            a.sessions,
            a.lines,
            max_delay=a.max_delay,
            patience=a.timeout,
            seed=a.seed,
            rules=a.rule,
            only=a.only,
            progress=not a.quiet,
        )
    )
    rep = report(got, params)
    if a.json:
        print(json.dumps(rep, indent=1))
    else:
        _print(rep)
    br = rep["targets"]["bridge"]
    return 1 if br["lost"] or br["duplicated"] or br["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
