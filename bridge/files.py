"""The files the bridge touches: workflow scripts it reads, captures and logs it writes.

Reading a workflow script for its ``meta`` (rules ``workflow-name``, ``workflow-prompt``),
safely: only below the session's real working directory (``script_reader``'s ``root``: the
directory the bridge started the backend in, never the ``cwd`` the backend reports, which a
hostile backend can set to ``/``) or extra roots the user configured (``script_roots``),
only regular files, at most ``MAX_SCRIPT_BYTES``, and never through a symlink that leads out
of the allowed roots: the path is resolved and checked *after* resolution, then opened with
``O_NOFOLLOW`` on the final component. Any failure is ``None`` (the rule logs a fallback),
never an exception. (Whether what was read may reach a client is the rule's decision:
``compat.taskkit.resolve_workflow``.)

Writing: captures and logs may quote credentials the redaction did not recognise, so they
are created owner-only (``open_private``: mode 0600, given to ``os.open``, never a chmod
after the fact; an existing file keeps its mode), and the directories the bridge creates
for them are 0700 (``private_dirs``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence

MAX_SCRIPT_BYTES = 512 * 1024


#: modes of what the bridge creates (before the umask, which can only narrow them)
FILE_MODE = 0o600
DIR_MODE = 0o700


def script_reader(
    root: str, extra_roots: Sequence[str] = (), max_bytes: int = MAX_SCRIPT_BYTES
) -> Callable[[str, str], str | None]:
    """``Env.read_script`` for a session whose backend runs in ``root``: the ``cwd`` the
    backend reports is ignored (a relative path is resolved against ``root``)."""
    real = os.path.abspath(root)

    def read(reported_cwd: str, path: str) -> str | None:
        return read_script(real, path, extra_roots, max_bytes)

    return read


def private_dirs(directory: str) -> None:
    """Create ``directory`` and its missing parents, each mode 0700 (existing ones are
    left as they are)."""
    directory = os.path.abspath(directory)
    missing: list[str] = []
    while not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            pass


def open_private(path: str, append: bool = False) -> int:
    """A file descriptor open for writing ``path``, created mode 0600 (with 0700
    directories) when it does not exist; truncated unless ``append``."""
    private_dirs(os.path.dirname(os.path.abspath(path)))
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if append else os.O_TRUNC
    return os.open(path, flags, FILE_MODE)


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
