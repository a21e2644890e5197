"""The drop-in writes Claude's session store (docs/session-store.md).

Programs that drive ``claude`` list and reopen past sessions by reading
``$CLAUDE_CONFIG_DIR/projects/<slug>/<session>.jsonl`` (default ``~/.claude``) themselves;
cbc keeps its sessions elsewhere, in another format. ``SessionStore`` is fed the bytes the
client wrote (``client_data``) and the bytes it received (``frame_data``: the bridged,
Claude-shaped stream-json, before any ``-p`` rendering) and appends the records Claude would
have written (``compat.claude_store``) as the session runs, one write per record.

The file: named by the session id of the ``system/init`` frame the client received (a UUID,
or nothing is written); created exclusively (``O_CREAT|O_EXCL|O_NOFOLLOW``), mode 0600, the
directories the bridge creates 0700 (``bridge.files.private_dirs``); the project directory
and the file are never opened through a link. A file that exists (``--resume``,
``--continue``: Claude appends to the session's file) is appended to when it is a regular
file of ours, its chain going on from its last record.

An observer, like the recorder: the first failure (a full disk, a permission, a link, a
file of someone else's) stops the store with one warning, and the session goes on whole.
What it holds is the conversation, as Claude's own store holds it: no redaction (a
resumed conversation must be the one that happened), and the file is the user's alone.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import os
import stat
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from bridge.files import DIR_MODE, FILE_MODE, private_dirs
from bridge.transcripts import StoreSpec, project_slug
from compat.claude_store import CHAINED, Record, StoreBuilder, StoreMeta, is_uuid
from compat.frames import UNKNOWN, dumps, loads, prefix_kind

#: the end of an existing file read for its last record (a resumed session's chain)
TAIL = 1024 * 1024
#: a line longer than this (still without its newline) is dropped, not buffered
MAX_LINE = 128 * 1024 * 1024
#: the frames the store is built from (any other is not parsed)
_TYPES = frozenset({"assistant", "user", "result"})
_SYSTEM = frozenset({"init", "compact_boundary"})
_STREAM_EVENT = b'{"type":"stream_event"'
#: the client's lines that are never prompts
_CLIENT_SKIP = (b'{"type":"control_', b'{"type":"keep_alive"', b'{"type":"update_environment')
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_CREATE = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
_APPEND = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK


def iso_now(clock: Callable[[], float] = time.time) -> str:
    """Claude's ``timestamp``: ISO 8601 UTC, milliseconds, ``Z``."""
    t = datetime.datetime.fromtimestamp(clock(), datetime.UTC)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def git_branch(cwd: str) -> str:
    """What Claude records as ``gitBranch``: the branch checked out in ``cwd``'s repository;
    ``HEAD`` when detached, or when there is no repository."""
    d = os.path.abspath(cwd)
    while True:
        head = _head_file(os.path.join(d, ".git"))
        if head is not None:
            return _branch_of(head)
        parent = os.path.dirname(d)
        if parent == d:
            return "HEAD"
        d = parent


def _head_file(git: str) -> str | None:
    """``.git/HEAD``, or a worktree's (``.git`` a file saying ``gitdir: ...``)."""
    if os.path.isdir(git):
        return os.path.join(git, "HEAD")
    text = _read_small(git)
    if text is None or not text.startswith("gitdir:"):
        return None
    return os.path.join(os.path.dirname(git), text[7:].strip(), "HEAD")


def _branch_of(head: str) -> str:
    text = (_read_small(head) or "").strip()
    return text[16:] if text.startswith("ref: refs/heads/") else "HEAD"


def _read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("utf-8", "replace")
    except OSError:
        return None


def _warn_on_stderr(spec: StoreSpec) -> Callable[[str], None]:
    """The store's one warning, where the bridge logs (``CCBRIDGE_LOG``, else stderr)."""

    def warn(message: str) -> None:
        from bridge.config import ConfigError
        from bridge.log import Logger

        try:
            Logger.open(spec.log_path, spec.log_level).warning(message, "session-store")
        except ConfigError:
            Logger.open(None, spec.log_level).warning(message, "session-store")

    return warn


class SessionStore:
    """One session's store. ``clock`` and ``new_uuid`` are injected for tests."""

    def __init__(
        self,
        spec: StoreSpec,
        *,
        warn: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        new_uuid: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.spec = spec
        meta = StoreMeta(spec.cwd, spec.version, spec.entrypoint, git_branch(spec.cwd))
        self.builder = StoreBuilder(meta, new_uuid)
        self._warn = warn or _warn_on_stderr(spec)
        self._clock = clock
        self._fd: int | None = None
        self._in = bytearray()
        self._out = bytearray()
        #: the file written (None: none yet)
        self.path: str | None = None
        #: why the store stopped (None: it did not)
        self.failed: str | None = None

    # -- the taps ----------------------------------------------------------------------
    def client_data(self, data: bytes) -> None:
        """Bytes the client wrote (any chunking)."""
        try:
            self._client(data)
        except Exception as e:  # an observer: never the session's end
            self._fail(f"stopped on an unexpected {type(e).__name__}")

    def frame_data(self, data: bytes) -> None:
        """Bytes the client received (Claude's stream-json, any chunking)."""
        try:
            self._frames(data)
        except Exception as e:  # an observer: never the session's end
            self._fail(f"stopped on an unexpected {type(e).__name__}")

    def _client(self, data: bytes) -> None:
        for raw in _lines(self._in, data):
            if self.failed is None and raw.strip() and not raw.startswith(_CLIENT_SKIP):
                obj = _parse(raw)
                if obj is not None:
                    self._write(self.builder.client(obj, self._now()))

    def _frames(self, data: bytes) -> None:
        for raw in _lines(self._out, data):
            if self.failed is None and _wanted(raw):
                obj = _parse(raw)
                if obj is not None:
                    self._frame(obj)

    def close(self) -> None:
        """The session ended: what is still held is written, the file closed."""
        if self.failed is None:
            self._write(self.builder.close(self._now()))
        self._close_fd()

    # -- records -----------------------------------------------------------------------
    def _frame(self, obj: dict[str, Any]) -> None:
        now = self._now()
        sid = self.builder.starts(obj)
        if sid is None:
            self._write(self.builder.frame(obj, now))
            return
        leaf = self._open(sid)
        if self.failed is None:
            self._write(self.builder.start(obj, sid, leaf, now))

    def _write(self, records: Iterable[Record]) -> None:
        for record in records:
            if self._fd is None or self.failed is not None:
                return
            try:
                _write_all(self._fd, dumps(record) + b"\n")
            except (OSError, ValueError, TypeError) as e:
                self._fail(f"writing {self.path} failed ({_why(e)})")

    def _now(self) -> str:
        return iso_now(self._clock)

    # -- the file ----------------------------------------------------------------------
    def _open(self, session_id: str) -> str | None:
        """The session's file opened (created, or an existing one of ours appended to);
        its last chained record's uuid (None: a new file)."""
        self._close_fd()
        if not is_uuid(session_id):
            self._fail("the session id the backend gave is not a UUID; nothing written")
            return None
        directory = os.path.join(self.spec.projects, project_slug(self.spec.cwd))
        self.path = os.path.join(directory, f"{session_id}.jsonl")
        try:
            dfd = _open_dir(directory)
            try:
                return self._open_file(dfd, f"{session_id}.jsonl")
            finally:
                os.close(dfd)
        except OSError as e:
            self._fail(f"cannot write {self.path} ({_why(e)})")
            return None

    def _open_file(self, dfd: int, name: str) -> str | None:
        try:
            self._fd = os.open(name, _CREATE | os.O_CLOEXEC, FILE_MODE, dir_fd=dfd)
            return None
        except FileExistsError:
            pass
        try:
            fd = os.open(name, _APPEND | os.O_CLOEXEC, dir_fd=dfd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise OSError(e.errno, "a symbolic link; not written through") from None
            raise
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            os.close(fd)
            raise PermissionError(0, "not a regular file of this user's")
        self._fd = fd
        return _leaf(fd, info.st_size)

    def _fail(self, message: str) -> None:
        """The store stops here (said once); the session is not concerned."""
        self.failed = message
        self._close_fd()
        with contextlib.suppress(Exception):
            self._warn(f"{message}; the session goes on without Claude's session store")

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _open_dir(directory: str) -> int:
    """The project directory (made 0700 with its missing parents), never through a link."""
    private_dirs(os.path.dirname(directory))
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, DIR_MODE)
    try:
        return os.open(directory, _OPEN_DIR)
    except OSError as e:
        if os.path.islink(directory):
            raise OSError(e.errno, "a symbolic link; not written through") from None
        raise


def _leaf(fd: int, size: int) -> str | None:
    """The uuid of the last record of the main chain in the file's last ``TAIL`` bytes."""
    start = max(0, size - TAIL)
    data = os.pread(fd, size - start, start)
    for raw in reversed(data.split(b"\n")):
        obj = _parse(raw) if raw.strip() else None
        if obj is not None and _is_link(obj):
            return str(obj["uuid"])
    return None


def _is_link(obj: dict[str, Any]) -> bool:
    return obj.get("type") in CHAINED and is_uuid(obj.get("uuid")) and not obj.get("isSidechain")


def _lines(buf: bytearray, data: bytes) -> list[bytes]:
    """The whole lines ``data`` completes in ``buf`` (the rest stays there); an empty
    one may be among them."""
    if not buf and data.endswith(b"\n"):
        return data.split(b"\n")  # (the commonest chunk: whole lines)
    buf += data
    end = buf.rfind(b"\n") if b"\n" in data else -1
    if end < 0:
        if len(buf) > MAX_LINE:
            buf.clear()  # (its end, when it comes, is not JSON: skipped)
        return []
    lines = bytes(buf[:end]).split(b"\n")
    del buf[: end + 1]
    return lines


def _wanted(raw: bytes) -> bool:
    """Whether a frame can make a record, read from its prefix when it tells."""
    if raw.startswith(_STREAM_EVENT):
        return False  # (the commonest line by far, and never a record)
    kind = prefix_kind(raw)
    if kind is UNKNOWN:
        return bool(raw.strip())
    t, sub = kind
    return t in _TYPES or (t == "system" and sub in _SYSTEM)


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = loads(raw)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(28, "no space left on device")
        view = view[n:]


def _why(e: BaseException) -> str:
    return e.strerror if isinstance(e, OSError) and e.strerror else str(e)
