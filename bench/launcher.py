"""One small process that starts the measured commands and reports, per command, its wall
time, CPU (rusage of it and its waited children), peak RSS and exit status.

It is started before a benchmark holds any large buffer: Linux carries a process's peak RSS
across fork and exec (``ru_maxrss`` of a child forked from a big parent starts at the
parent's size), so the measured processes must be forked from a small one.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

#: one command per request line, run with its stdin from ``feed`` (a ``cat FILE`` pipe), a
#: pipe held open until it exits (``hold``: a client that never closes its input) or
#: /dev/null, and its stdout to ``out``
LAUNCHER = r"""
import json, os, subprocess, sys, time
for req in sys.stdin:
    r = json.loads(req)
    with open(r["out"], "wb") as out, open(os.devnull, "wb") as err:
        feeder = None
        stdin = subprocess.PIPE if r.get("hold") else subprocess.DEVNULL
        if r["feed"]:
            feeder = subprocess.Popen(["cat", r["feed"]], stdout=subprocess.PIPE)
            stdin = feeder.stdout
        started = time.perf_counter()
        p = subprocess.Popen(r["argv"], stdin=stdin, stdout=out, stderr=err, cwd=r["cwd"],
                             env=r["env"])
        if feeder is not None:
            feeder.stdout.close()
        _, status, ru = os.wait4(p.pid, 0)
        took = time.perf_counter() - started
        if p.stdin is not None:
            p.stdin.close()
        if feeder is not None:
            feeder.wait()
    print(json.dumps({"took": took, "cpu": ru.ru_utime + ru.ru_stime,
                      "rss": ru.ru_maxrss * 1024,
                      "status": os.waitstatus_to_exitcode(status)}), flush=True)
"""


class Launcher:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(
        self,
        argv: list[str],
        out: Path,
        feed: Path | None = None,
        env: dict[str, str] | None = None,
        hold: bool = False,
    ) -> dict[str, Any]:
        """``{"took", "cpu", "rss", "status"}`` of one run of ``argv`` (``hold``: its stdin
        a pipe left open until it exited)."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        req = {
            "argv": argv,
            "out": str(out),
            "feed": str(feed) if feed else None,
            "cwd": str(REPO),
            "env": env,
            "hold": hold,
        }
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        r: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return r

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait()
        self.proc.stdout.close()


@contextlib.contextmanager
def checkout(rev: str, into: Path) -> Iterator[Path]:
    """A git revision of this repository checked out at ``into`` (``git worktree``,
    detached), removed again on the way out: to measure another tree beside this one."""
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(into), rev], check=True
    )
    try:
        yield into
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(into)], check=False
        )


def in_tree(tree: Path, script: str) -> str:
    """``script`` (``python -c``'s) with ``tree``'s packages first on ``sys.path``: another
    revision's bridge run by this Python."""
    return f"import sys\nsys.path[0:0] = [{str(tree)!r}]\n{script}"
