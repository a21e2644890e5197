"""``ccbridge conformance --regenerate``: run the twin jobs (``analysis.ab_cmd.run_jobs``)
into the twins directory, a line per scenario once its runs are done, and each run's
duration in the directory's ``index.json`` (``analysis.conformance_cmd`` makes the jobs).
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Any

import orjson
import trio

from analysis import ab_cmd, conformance
from analysis.progress import Progress as Tracker
from compat.capture import Capture, CaptureError
from harness import runner


async def regenerate(
    d: Path,
    work: list[ab_cmd.Job],
    *,
    jobs: int,
    deadline: float,
    tracker: Tracker | None = None,
    known: conformance.Known | None = None,
    direction: conformance.Direction = conformance.FORWARD,
) -> list[ab_cmd.Outcome]:
    """Run the twin jobs into ``d`` and record their durations in ``d/index.json``; with a
    ``tracker``, a one-line summary of each scenario once all its runs are done."""
    t0 = time.monotonic()
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    finished: dict[int, ab_cmd.Outcome] = {}

    async def on_done(i: int, o: ab_cmd.Outcome) -> None:
        finished[i] = o
        name = work[i].scenario.name
        mine = [k for k, j in enumerate(work) if j.scenario.name == name]
        if tracker is not None and all(k in finished for k in mine):
            line = await trio.to_thread.run_sync(
                scenario_line, name, [finished[k] for k in mine], known, direction
            )
            tracker.line(line)

    outcomes = await ab_cmd.run_jobs(
        work, limit=jobs, deadline=deadline, tracker=tracker, on_done=on_done
    )
    if tracker is not None:
        tracker.close()
    wall = time.monotonic() - t0
    await trio.to_thread.run_sync(_write_index, d, outcomes, started, wall, jobs)
    return outcomes


def scenario_line(
    name: str,
    outcomes: list[ab_cmd.Outcome],
    known: conformance.Known | None,
    direction: conformance.Direction = conformance.FORWARD,
) -> str:
    """``bg-agent: claude 2.1.220 exit 0 24.1s · cbc-bridged … · bridged vs Claude: 12
    differences, 0 unexplained`` (the comparison when both captures are there)."""
    runs = []
    caps: dict[str, Capture] = {}
    for o in outcomes:
        r, role = o.result, o.job.side.label
        if r is None or o.error:
            runs.append(f"{role}: {o.error}")
            continue
        ver = f" {r.backend_version}" if r.backend_version else ""
        runs.append(f"{role}{ver} exit {r.exit} {r.duration:.1f}s")
        try:
            caps[role] = ab_cmd.read(o.job.out)
        except (OSError, CaptureError):
            pass
    tail = ""
    if known is not None and all(r in caps for r in direction.roles[:2]):
        row = conformance.row(name, caps, known, direction=direction)
        if row.bridged is not None:
            n = len(row.bridged.diff.differences)
            tail = (
                f" · bridged vs {direction.reference}: {n} difference{'s' * (n != 1)}, "
                f"{row.unexplained} unexplained"
            )
    return f"{name}: " + " · ".join(runs) + tail


def _write_index(
    d: Path, outcomes: list[ab_cmd.Outcome], started: str, wall: float, jobs: int
) -> None:
    path = d / "index.json"
    try:
        index: dict[str, Any] = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        index = {}
    runs = index.setdefault("runs", {})
    for o in outcomes:
        r = o.result
        if r is None:
            continue
        runs[o.job.out.name] = {
            "scenario": o.job.scenario.name,
            "role": o.job.side.label,
            "backend_version": r.backend_version,
            "exit": r.exit,
            "duration": round(r.duration, 1),
            "frames": len(r.frames),
        }
    index["runs"] = dict(sorted(runs.items()))
    index["last_regeneration"] = {
        "started": started,
        "wall_seconds": round(wall, 1),
        "bridge": _revision(),
        "jobs": jobs,
        "runs": len(outcomes),
        "failed": sorted(o.job.out.name for o in outcomes if not o.ok),
    }
    path.write_bytes(orjson.dumps(index, option=orjson.OPT_INDENT_2) + b"\n")


def _revision() -> str | None:
    """The git commit the bridge ran from (``+dirty`` with uncommitted changes), if known."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(runner.REPO), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return done.stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")
