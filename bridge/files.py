"""Reading a workflow script for its ``meta`` (rule ``workflow-name``), safely.

Only below the session ``cwd`` (or extra roots the user configured), only regular
files, at most ``MAX_SCRIPT_BYTES``, and never through a symlink that leads out of the
allowed roots: the path is resolved and checked *after* resolution, then opened with
``O_NOFOLLOW`` on the final component. Any failure is ``None`` (the rule logs a fallback),
never an exception.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence

MAX_SCRIPT_BYTES = 512 * 1024


def script_reader(
    extra_roots: Sequence[str] = (), max_bytes: int = MAX_SCRIPT_BYTES
) -> Callable[[str, str], str | None]:
    def read(cwd: str, path: str) -> str | None:
        return read_script(cwd, path, extra_roots, max_bytes)

    return read


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def read_script(
    cwd: str, path: str, extra_roots: Sequence[str] = (), max_bytes: int = MAX_SCRIPT_BYTES
) -> str | None:
    if not cwd or not path or "\x00" in path or "\x00" in cwd:
        return None
    try:
        root = os.path.realpath(cwd)
        target = os.path.realpath(os.path.join(root, path))
        roots = [root, *(os.path.realpath(r) for r in extra_roots)]
        if not any(_inside(target, r) for r in roots):
            return None
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        data = os.read(fd, max_bytes + 1)
        if len(data) > max_bytes:
            return None
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
