"""Nothing the backend started outlives the session.

The backend runs in its own process group, and the group is killed on the way out; but a
descendant that called ``setsid()`` (a daemonising tool, a detached server) leaves the
group. So the bridge also finds the backend's process tree:

- on Linux it becomes a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): a descendant
  orphaned by its parent's exit is re-parented to the bridge instead of to init, so after
  the backend has gone every remaining child of the bridge is one of the backend's;
- before the backend is killed, its descendants are read from ``/proc`` (parent links);
- each of them is sent SIGTERM, then SIGKILL, and reaped.

Elsewhere (no ``prctl``, no ``/proc``) only the process group is killed: a descendant that
left the group and whose parent already exited escapes (documented in docs/robustness.md).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process ``/proc`` shows (empty without ``/proc``)."""
    out: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            out[int(name)] = int(fields[1])
    return out


def descendants(roots: Iterable[int]) -> list[int]:
    """Every process below ``roots`` (not the roots themselves), parents first."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _parents().items():
        children.setdefault(ppid, []).append(pid)
    out: list[int] = []
    todo = list(roots)
    seen = set(todo)
    while todo:
        for c in children.get(todo.pop(0), ()):
            if c not in seen:
                seen.add(c)
                out.append(c)
                todo.append(c)
    return out


def own_children() -> list[int]:
    me = os.getpid()
    return [pid for pid, ppid in _parents().items() if ppid == me]


def signal_all(pids: Iterable[int], signum: int) -> int:
    """Send ``signum`` to each pid still there; how many got it."""
    n = 0
    for pid in pids:
        try:
            os.kill(pid, signum)
            n += 1
        except (ProcessLookupError, PermissionError):
            pass
    return n


def reap(pids: Iterable[int]) -> None:
    """Collect the exit of those of ``pids`` that are our children (no zombies left)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


def alive(pids: Iterable[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[-1].split()[:1]
            if state != [b"Z"]:
                out.append(pid)
        except OSError:
            try:
                os.kill(pid, 0)
                out.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
    return out
