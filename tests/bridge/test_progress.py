"""Progress of long work (analysis.progress): a status line on a terminal (a real pty here),
lines only elsewhere, nothing with --quiet; wired into run_jobs."""

from __future__ import annotations

import io
import os
import pty
import select
from pathlib import Path

import trio

from analysis import ab_cmd
from analysis.progress import CLEAR, Progress
from harness.scenario import load

from ..conftest import REPO

RUNS = [("bg-agent", "claude"), ("bg-agent", "cbc via cbc-to-claude"), ("simple", "claude")]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def read_all(fd: int) -> str:
    """Everything written to the pty so far."""
    out = b""
    while select.select([fd], [], [], 0.2)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out.decode()


def test_status_line_on_a_pty() -> None:
    master, slave = pty.openpty()
    clock = Clock()
    with os.fdopen(slave, "w") as stream:
        p = Progress(RUNS, stream, clock=clock, width=200)
        assert p.live
        p.started(0)
        clock.now += 3
        p.started(1)
        clock.now += 62
        p.refresh()
        out = read_all(master)
        assert CLEAR in out
        last = out.rsplit(CLEAR, 1)[1]
        assert last == (
            "0/3 runs done · running: bg-agent on claude 1m05s, bg-agent on cbc via "
            "cbc-to-claude 1m02s · left: 1 run (simple) · 1m05s"
        )
        assert not p.done(0)  # bg-agent still has a run going
        assert p.done(1, ok=False)  # its last run: the caller prints the scenario's line
        p.line("bg-agent: 3 differences")
        out = read_all(master)
        # the line replaces the status, then the status comes back below it
        assert f"{CLEAR}bg-agent: 3 differences\r\n{CLEAR}2/3 runs done (1 failed)" in out
        p.close()
        assert read_all(master).endswith(CLEAR)
    os.close(master)


def test_the_status_fits_the_terminal_and_is_escaped() -> None:
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as stream:
        p = Progress([("\x1b[31mred", "claude")] * 9, stream, clock=Clock(), width=40)
        p.started(0)
        last = read_all(master).rsplit(CLEAR, 1)[1]
        assert len(last) <= 39
        assert last.endswith("…")
        assert "\x1b[31m" not in last
        assert "\\x1b" in last
    os.close(master)


def test_not_a_tty_lines_only_and_quiet_nothing() -> None:
    s = io.StringIO()
    p = Progress(RUNS, s, clock=Clock())
    assert not p.live
    p.started(0)
    p.done(0)
    p.line("bg-agent: equivalent")
    assert s.getvalue() == "bg-agent: equivalent\n"
    q = io.StringIO()
    p = Progress(RUNS, q, quiet=True, live=True)
    p.started(0)
    p.line("x")
    p.close()
    assert q.getvalue() == ""


def test_run_jobs_reports_to_the_tracker(tmp_path: Path) -> None:
    f = REPO / "scenarios" / "simple-success.toml"
    s = load(f)
    side = ab_cmd.Side("/nonexistent/cli", None, "x")
    jobs = [
        ab_cmd.Job(f, s, side, tmp_path / "a.jsonl"),
        ab_cmd.Job(f, s, side, tmp_path / "b.jsonl"),
    ]
    out = io.StringIO()
    tracker = Progress([(j.scenario.name, j.side.describe()) for j in jobs], out)
    seen: list[int] = []
    messages: list[str] = []

    async def on_done(i: int, o: ab_cmd.Outcome) -> None:
        seen.append(i)

    outcomes = trio.run(
        lambda: ab_cmd.run_jobs(
            jobs, deadline=60, tracker=tracker, on_done=on_done, progress=messages.append
        )
    )
    assert sorted(seen) == [0, 1]
    assert all(o.error for o in outcomes)
    assert tracker.finished == {0, 1}
    assert tracker.failed == 2
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert all(ln.startswith("simple-success on /nonexistent/cli: error") for ln in lines)
    assert messages == []  # the tracker took the per-run lines
