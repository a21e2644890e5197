"""The recorder: every line in each direction, verbatim and timestamped, in the capture
format of ``compat.capture`` (credentials redacted there, on every record: frames, stderr,
notes, meta, stats, the header's argv and env). The capture file is opened before the
session starts (``open_capture``: a name the bridge picks is created exclusively, a name
the user gives is never written through a link; 0600, directories 0700, ``bridge.files``),
so a target that cannot be written is refused before anything runs.

A recording is an observer: the first write that fails (a full disk, a file-size limit,
an I/O error) stops it, with one line on stderr (``on_error``), and the session goes on
whole. What was written stays readable: the capture reader takes a cut last line as the
end of a cut recording (``compat.capture``).

Streams are split into lines per kind (a chunk may hold many lines or part of one); a
line longer than the framing limit is recorded in pieces, and a partial last line is
flushed, marked ``partial``, when the recording ends. Writes go to a buffered file: a
capture line is small and the OS absorbs it, so the event loop is not held up.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import time
from collections.abc import Callable
from typing import IO, Any

from bridge.files import create_exclusive, open_named
from compat import DEFAULT_MAX_LINE, capture, frames
from compat.framing import Line, LineSplitter, Oversize, Partial
from compat.redact import redact_obj, redact_text

#: the most bytes of an over-long line's piece carried into the next piece
CARRY = 64 * 1024


def open_capture(target: str) -> tuple[int, str]:
    """The capture file for ``target`` (``--record FILE``: that file, never through a link;
    ``CCBRIDGE_RECORD``, a directory: ``session-<UTC second>-<pid>.jsonl`` in it, created
    exclusively, the next free name on a collision). Raises ``OSError`` (``LinkRefused``
    for a link): the caller refuses the session before it starts."""
    if os.path.isdir(target) or target.endswith(os.sep):
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
        return create_exclusive(os.path.join(target, f"session-{stamp}-{os.getpid()}.jsonl"))
    return open_named(target), target


class Recorder:
    def __init__(
        self,
        capture_file: tuple[int, str] | str,
        source: str,
        start: float | None = None,
        *,
        max_line: int | None = None,
        on_error: Callable[[str], None] | None = None,
        **meta: Any,
    ) -> None:
        fd, self.path = (
            open_capture(capture_file) if isinstance(capture_file, str) else capture_file
        )
        self._max_line = max_line or DEFAULT_MAX_LINE
        self._f: IO[bytes] = os.fdopen(fd, "wb")
        self._on_error = on_error
        self._start = time.monotonic() if start is None else start
        self._splitters: dict[str, LineSplitter] = {}
        self._carry: dict[str, bytes] = {}
        self._closed = False
        #: why the recording stopped early (None: it did not)
        self.failed: str | None = None
        created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self._put(capture.encode_header(capture.header(source, created=created, **meta)))

    def _t(self) -> float:
        return time.monotonic() - self._start

    def _write(self, kind: str, data: bytes, partial: bool = False) -> None:
        if not self._closed:
            self._put(capture.encode_record(self._t(), kind, data, partial))

    def _put(self, record: bytes) -> None:
        try:
            self._f.write(record)
        except (OSError, ValueError) as e:
            self._fail(e)

    def _fail(self, e: BaseException) -> None:
        """The recording stops here (said once); the session is not concerned."""
        self._closed = True
        self.failed = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        with contextlib.suppress(OSError, ValueError):
            self._f.close()  # (its unwritten buffer fails again: dropped)
        if self._on_error is not None:
            self._on_error(
                f"recording to {self.path} stopped: {self.failed}; the session goes on "
                "(the capture holds what was written before)"
            )

    def data(self, kind: str, chunk: bytes) -> None:
        sp = self._splitters.get(kind)
        if sp is None:
            sp = self._splitters[kind] = LineSplitter(self._max_line)
        for ev in sp.feed(chunk):
            if type(ev) is Line:
                self._write(kind, ev.data)
            elif type(ev) is Oversize:
                self._piece(kind, ev.data, ev.end)

    def _piece(self, kind: str, data: bytes, end: bool) -> None:
        """A piece of an over-long line. Each piece is redacted on its own, so a piece is
        cut after its last ``,`` or blank (the rest is carried into the next one, up to
        ``CARRY``): a ``"key":"value"`` member or a ``key=value`` word is never split
        across two records, and a credential in it is seen whole."""
        carry = self._carry.pop(kind, b"")
        if carry:
            data = carry + data
        if not end:
            cut = max(data.rfind(b","), data.rfind(b" "), data.rfind(b"\t"))
            if cut >= 0 and len(data) - cut - 1 <= CARRY:
                data, self._carry[kind] = data[: cut + 1], data[cut + 1 :]
        if data:
            self._write(kind, data.rstrip(b"\n"), partial=not end)

    def note(self, text: str) -> None:
        self._write("note", text.encode())

    def meta(self, obj: dict[str, Any]) -> None:
        self._write("meta", _json(obj))

    def exit(self, status: int, stats: dict[str, Any] | None = None) -> None:
        for kind, sp in self._splitters.items():
            rest = self._carry.pop(kind, b"")
            for ev in sp.eof():
                if type(ev) is Partial:
                    rest += ev.data
            if rest:
                self._write(kind, rest, partial=True)
        self._write("exit", str(status).encode())
        if stats is not None:
            self._write("stats", _json(stats))
        self.close()

    def close(self) -> None:
        if not self._closed:
            try:
                self._f.close()
            except (OSError, ValueError) as e:
                self._fail(e)
            self._closed = True


def _json(obj: Any) -> bytes:
    """``obj`` redacted, as a JSON line; its redacted text when it cannot be serialised."""
    red, _ = redact_obj(obj)
    try:
        return frames.dumps(red)
    except Exception:
        return redact_text(repr(obj)).encode("utf-8", "replace")
