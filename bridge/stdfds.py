"""The standard descriptors, before anything else runs.

A daemon may start us with stdin, stdout or stderr closed. Then the first file the bridge
opens (its log, a capture, the backend's pipes) would take the free number, and what the
bridge says on "stderr" would land in it, or in the client's protocol channel; and Python
leaves ``sys.stderr`` None, so ``print(..., file=sys.stderr)`` would print to stdout. Every
entry point calls ``ensure`` first: a closed 0, 1 or 2 is opened on ``/dev/null``, and a
missing ``sys.stdin``/``sys.stdout``/``sys.stderr`` is made on it.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

_MODES = ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w"))


def ensure() -> None:
    """Descriptors 0-2 open (closed ones on ``/dev/null``), and their ``sys`` streams set."""
    for fd, name, mode in _MODES:
        if not _is_open(fd):
            _open_null(fd)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False, encoding="utf-8", errors="replace"))


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _open_null(fd: int) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    if null != fd:
        os.dup2(null, fd, inheritable=True)
        os.close(null)
    else:
        os.set_inheritable(fd, True)


def exit_now(status: int) -> NoReturn:
    """End a drop-in's process once its session is over: Python's own teardown (freeing
    every module's objects, some 20 ms with trio and the rules loaded) is skipped, as the
    client waits for the exit. What the session opened is closed by then; the standard
    streams are flushed here (a client gone makes that a no-op)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
