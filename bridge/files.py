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

Writing: captures, logs and reports may quote credentials the redaction did not
recognise, and a name the bridge picks (``session-<UTC second>-<pid>.jsonl``) can be
guessed, so nothing is written through a link or over a file the bridge did not create:

- a file under a name the bridge picks is created exclusively (``create_exclusive``:
  ``O_CREAT|O_EXCL|O_NOFOLLOW``, mode 0600 given to ``os.open``, never a chmod after the
  fact); a name already taken, by a file or a planted link, gets the next free one;
- a file the user names (``--record FILE``, ``CCBRIDGE_LOG``) is opened without following
  a link (``open_named``: ``O_NOFOLLOW``; a link is a ``LinkRefused``, which the commands
  report as a usage error, exit 2); a new one is created 0600, an existing one is the
  user's and keeps its mode;
- a report or output file a command rewrites under a fixed name (``write_private``) is
  written to an exclusive temporary name beside it and renamed over it: the rename
  replaces a link at that name, it never writes through one;
- the directories the bridge creates are 0700 (``private_dirs``).
"""

from __future__ import annotations

import contextlib
import errno
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


class LinkRefused(OSError):
    """A path the user named is a symbolic link: the bridge does not write through it."""


#: flags of every file the bridge writes: no link followed, not inherited by the backend
_WRITE = os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
#: how many numbered names ``create_exclusive`` tries after the one it was given
MAX_TRIES = 100


def open_named(path: str, append: bool = False) -> int:
    """A descriptor open for writing ``path``, a file the user named: never through a link
    (``LinkRefused``); created 0600 (with 0700 directories) when missing, else kept as the
    user has it (its mode), truncated unless ``append``."""
    private_dirs(os.path.dirname(os.path.abspath(path)))
    flags = _WRITE | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    try:
        return os.open(path, flags, FILE_MODE)
    except OSError as e:
        if os.path.islink(path):
            raise LinkRefused(e.errno, "is a symbolic link; not written through", path) from None
        raise


def create_exclusive(path: str) -> tuple[int, str]:
    """A new file at ``path`` or, when that name is taken (a file, a link, anything),
    at ``STEM-2.EXT``, ``STEM-3.EXT``, ...: created by this call (``O_EXCL``), mode 0600,
    never through a link. Returns the descriptor and the name used."""
    private_dirs(os.path.dirname(os.path.abspath(path)))
    stem, ext = os.path.splitext(path)
    for n in range(1, MAX_TRIES + 2):
        name = path if n == 1 else f"{stem}-{n}{ext}"
        try:
            return os.open(name, _WRITE | os.O_CREAT | os.O_EXCL, FILE_MODE), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"{MAX_TRIES + 1} names taken", path)


def write_private(path: str, data: bytes | str) -> None:
    """``path``'s content replaced by ``data`` (text as UTF-8): written to an exclusive
    temporary file beside it (0600), then renamed over ``path`` (a link there is replaced,
    never written through)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    fd, tmp = create_exclusive(f"{path}.{os.getpid()}.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
