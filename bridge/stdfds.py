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
import signal
import sys
from collections.abc import Callable
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


def run(main: Callable[[], int], name: str, *, fast: bool = False) -> NoReturn:
    """A console script's whole life: ``main``, then its standard streams flushed, then the
    exit. What no command catches ends in words, never a traceback: an interrupt (also as
    trio wraps it, in an exception group) exits 130 with ``NAME: interrupted``; a reader
    that went away (``| head``) exits 141, silently, as a shell pipeline expects. ``fast``
    (the drop-ins): Python's own teardown (freeing every module's objects, some 20 ms with
    trio and the rules loaded) is skipped, as the client waits for the exit; what the
    session opened is closed by then."""
    try:
        status = main()
        _flush()
    except BaseException as e:  # noqa: BLE001 - classified; anything else is re-raised
        status = _status_of(e, name)
    if fast:
        os._exit(status)
    sys.exit(status)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except ValueError:  # closed
            pass


def _status_of(e: BaseException, name: str) -> int:
    """The exit status for what ended a command: an interrupt or a reader gone (alone, or
    in exception groups); anything else goes on up."""
    if only(e, KeyboardInterrupt):
        _say(f"{name}: interrupted")
        return 128 + signal.SIGINT
    if only(e, BrokenPipeError):
        quiet_stdout()
        return 128 + signal.SIGPIPE
    raise e


def only(e: BaseException, kind: type[BaseException]) -> bool:
    """``e`` is a ``kind``, or an exception group whose leaves include one and are all
    ``kind`` or, for an interrupt, what the interrupt cancelled."""
    if not isinstance(e, BaseExceptionGroup):
        return isinstance(e, kind)
    if kind is KeyboardInterrupt:
        return e.subgroup(KeyboardInterrupt) is not None
    match, rest = e.split(kind)
    return match is not None and rest is None


def quiet_stdout() -> None:
    """stdout's reader is gone: what is still buffered goes nowhere (no second error when
    Python flushes it at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def _say(text: str) -> None:
    try:
        os.write(2, (text + "\n").encode("utf-8", "replace"))
    except OSError:
        pass
