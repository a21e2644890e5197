"""SIGTERM and SIGHUP end a harness command (``ccbridge scenario run``, ``ab``,
``conformance --regenerate``, ``drift``) as Ctrl-C does: the run is cancelled, the backend it
started is killed, the capture is written, the exit status is 128 + the signal (before, the
command died at once and left its backend running, orphaned). A real-process smoke test:
the backend is a Python script that writes its pid and waits forever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .. import conftest

SCENARIO = conftest.REPO / "scenarios" / "simple-success.toml"

BACKEND = """
import os, sys, time
if "--version" in sys.argv:  # (the harness asks first)
    sys.exit(0)
open(sys.argv[1], "w").write(str(os.getpid()))
while True:
    time.sleep(1)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # (a zombie is gone but for its reaping)
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


def _scenario_run(tmp_path: Path, **popen: Any) -> tuple[subprocess.Popen[bytes], int]:
    """``ccbridge scenario run`` with the waiting backend, once that backend runs: the
    process and the backend's pid."""
    script = tmp_path / "backend.py"
    script.write_text(BACKEND)
    pid_file = tmp_path / "backend.pid"
    backend = f"{sys.executable} {script} {pid_file}"
    argv = [sys.executable, "-m", "bridge", "scenario", "run", str(SCENARIO)]
    proc = subprocess.Popen(
        [*argv, "--backend", backend, "--out", str(tmp_path / "run.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=conftest.REPO,
        **popen,
    )
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the backend never started: {proc.communicate()}")
        time.sleep(0.05)
    return proc, int(pid_file.read_text())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_a_scenario_run_and_its_backend(tmp_path: Path, signum: int) -> None:
    proc, pid = _scenario_run(tmp_path)
    try:
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, err
    assert f"{signal.Signals(signum).name}: stopping".encode() in err
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the backend outlived the run"
    assert (tmp_path / "run.jsonl").is_file()  # the capture of what happened until then


def test_ctrl_c_to_the_process_group_exits_130_in_one_line(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the whole group (the command, its backend): trio wraps
    the interrupt in exception groups, which once printed a 50-line traceback and exit 1."""
    proc, pid = _scenario_run(tmp_path, start_new_session=True)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    assert b"ExceptionGroup" not in err
    assert not _alive(pid), "the backend outlived the run"
