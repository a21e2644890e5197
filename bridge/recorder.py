"""The recorder: every line in each direction, verbatim and timestamped, in the capture
format of ``compat.capture`` (credentials redacted there, on every record: frames, stderr,
notes, meta, stats, the header's argv and env). The capture file is created 0600 and its
missing directories 0700 (``bridge.files.open_private``).

Streams are split into lines per kind (a chunk may hold many lines or part of one); a
line longer than the framing limit is recorded in pieces, and a partial last line is
flushed, marked ``partial``, when the recording ends. Writes go to a buffered file: a
capture line is small and the OS absorbs it, so the event loop is not held up.
"""

from __future__ import annotations

import datetime
import os
import time
from typing import IO, Any

from bridge.files import open_private
from compat import DEFAULT_MAX_LINE, capture, frames
from compat.framing import Line, LineSplitter, Oversize, Partial
from compat.redact import redact_obj, redact_text

#: the most bytes of an over-long line's piece carried into the next piece
CARRY = 64 * 1024


class Recorder:
    def __init__(
        self,
        path: str,
        source: str,
        start: float | None = None,
        *,
        max_line: int | None = None,
        **meta: Any,
    ) -> None:
        self.path = path
        self._max_line = max_line or DEFAULT_MAX_LINE
        self._f: IO[bytes] = os.fdopen(open_private(path), "wb")
        self._start = time.monotonic() if start is None else start
        self._splitters: dict[str, LineSplitter] = {}
        self._carry: dict[str, bytes] = {}
        created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self._f.write(capture.encode_header(capture.header(source, created=created, **meta)))
        self._closed = False

    def _t(self) -> float:
        return time.monotonic() - self._start

    def _write(self, kind: str, data: bytes, partial: bool = False) -> None:
        if not self._closed:
            self._f.write(capture.encode_record(self._t(), kind, data, partial))

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
            self._closed = True
            self._f.close()


def _json(obj: Any) -> bytes:
    """``obj`` redacted, as a JSON line; its redacted text when it cannot be serialised."""
    red, _ = redact_obj(obj)
    try:
        return frames.dumps(red)
    except Exception:
        return redact_text(repr(obj)).encode("utf-8", "replace")
