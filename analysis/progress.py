"""Progress of long work (``ccbridge ab --all``, ``ccbridge conformance --regenerate``).

On a terminal, one status line redrawn in place (at most once a second): how many runs are
done, which scenario is running on which backend and for how long, the time so far, and
what is left (runs, and the scenarios not finished). Lines printed meanwhile (a one-line
summary per finished scenario, errors) go above it. Not on a terminal there is no status
line, only those lines; ``quiet`` prints nothing. Every string from a scenario or a backend
is escaped (``compat.text.escape``) before it reaches the terminal.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

import trio

from compat.text import escape

CLEAR = "\r\x1b[2K"


def _elapsed(s: float) -> str:
    s = max(0, int(s))
    return (
        f"{s // 3600}h{s // 60 % 60:02d}m{s % 60:02d}s"
        if s >= 3600
        else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")
    )


class Progress:
    def __init__(
        self,
        runs: Sequence[tuple[str, str]],
        stream: TextIO | None = None,
        *,
        quiet: bool = False,
        live: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        width: int | None = None,
    ) -> None:
        """``runs``: (scenario, backend) per job, in the jobs' order."""
        self.stream = sys.stderr if stream is None else stream
        self.quiet = quiet
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.live = not quiet and (tty if live is None else live)
        self.clock = clock
        self.width = width
        self.runs = list(runs)
        self.running: dict[int, float] = {}
        self.finished: set[int] = set()
        self.failed = 0
        self.t0 = clock()
        self._shown = False

    # -- what happened ---------------------------------------------------------------

    def started(self, i: int) -> None:
        self.running[i] = self.clock()
        self.refresh()

    def done(self, i: int, ok: bool = True) -> bool:
        """Run ``i`` finished; True when it was its scenario's last run."""
        self.running.pop(i, None)
        self.finished.add(i)
        self.failed += not ok
        self.refresh()
        scenario = self.runs[i][0]
        return all(k in self.finished for k, (s, _) in enumerate(self.runs) if s == scenario)

    def line(self, text: str) -> None:
        """A line above the status (nothing when quiet)."""
        if self.quiet:
            return
        self._write((CLEAR if self._shown else "") + escape(text) + "\n")
        self._shown = False
        self.refresh()

    # -- the status line --------------------------------------------------------------

    def status(self) -> str:
        now = self.clock()
        n = len(self.runs)
        parts = [
            f"{len(self.finished)}/{n} runs done"
            + (f" ({self.failed} failed)" if self.failed else "")
        ]
        if self.running:
            now_running = sorted(self.running.items(), key=lambda kv: kv[1])
            parts.append(
                "running: "
                + ", ".join(
                    f"{self.runs[i][0]} on {self.runs[i][1]} {_elapsed(now - t)}"
                    for i, t in now_running
                )
            )
        left = [i for i in range(n) if i not in self.finished and i not in self.running]
        if left:
            names = list(dict.fromkeys(self.runs[i][0] for i in left))
            shown = ", ".join(names[:3]) + (f", +{len(names) - 3} more" if len(names) > 3 else "")
            parts.append(f"left: {len(left)} run{'s' * (len(left) != 1)} ({shown})")
        parts.append(_elapsed(now - self.t0))
        return escape(" · ".join(parts))

    def refresh(self) -> None:
        if not self.live:
            return
        width = self.width or shutil.get_terminal_size((100, 24)).columns
        text = self.status()
        if len(text) > width - 1:
            text = text[: max(0, width - 2)] + "…"
        self._write(CLEAR + text)
        self._shown = True

    def close(self) -> None:
        if self.live and self._shown:
            self._write(CLEAR)
            self._shown = False

    async def ticker(self, interval: float = 1.0) -> None:
        """Redraw every ``interval`` seconds (elapsed times move) until cancelled."""
        while True:
            await trio.sleep(interval)
            self.refresh()

    def _write(self, s: str) -> None:
        try:
            self.stream.write(s)
            self.stream.flush()
        except (OSError, ValueError):
            self.live = False  # the terminal went away: keep working, silently
