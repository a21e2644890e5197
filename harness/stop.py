"""SIGTERM and SIGHUP end a harness run the way Ctrl-C does: cancelled, so every process it
started is killed and reaped on the way out (``harness.runner`` cleans up in shielded
``finally`` blocks), never left running. Python's default for those signals ends the
process at once, cleanup and all, and leaves the CLIs it started behind, orphaned (they
then wait forever for a model server that is gone).

``run(fn)`` is ``trio.run(fn)`` with that: on the signal the run is cancelled, a line on
stderr says so, and ``Stopped`` (a ``SystemExit`` with status 128 + the signal's number,
what a shell reports for a process a signal ended) is raised once the cleanup is done.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

T = TypeVar("T")

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(SystemExit):
    """The run was ended by a signal (``code``: 128 + its number)."""


def run(fn: Callable[[], Awaitable[T]], what: str = "ccbridge") -> T:
    """``trio.run(fn)``; SIGTERM or SIGHUP cancel it and raise ``Stopped``. What ``fn``
    raises comes out as it is (no task group around it: the watcher is a system task)."""
    got: list[int] = []

    async def main() -> T:
        with trio.CancelScope() as scope:

            async def watch() -> None:
                with trio.open_signal_receiver(*SIGNALS) as signals:
                    async for signum in signals:
                        got.append(signum)
                        print(
                            f"{what}: {signal.Signals(signum).name}: stopping, and every "
                            "process this run started",
                            file=sys.stderr,
                            flush=True,
                        )
                        scope.cancel()
                        return

            trio.lowlevel.spawn_system_task(watch)
            return await fn()
        raise Stopped(128 + (got[0] if got else signal.SIGTERM))

    return trio.run(main)
