"""The recorder: every line in each direction, verbatim and timestamped, in the capture
format of ``compat.capture`` (credentials redacted there, on every record).

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

import orjson

from compat import capture
from compat.framing import Line, LineSplitter, Oversize, Partial


class Recorder:
    def __init__(self, path: str, source: str, start: float | None = None, **meta: Any) -> None:
        self.path = path
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        self._f: IO[bytes] = open(path, "wb")  # noqa: SIM115
        self._start = time.monotonic() if start is None else start
        self._splitters: dict[str, LineSplitter] = {}
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
            sp = self._splitters[kind] = LineSplitter()
        for ev in sp.feed(chunk):
            if type(ev) is Line:
                self._write(kind, ev.data)
            elif type(ev) is Oversize:
                self._write(kind, ev.data.rstrip(b"\n"), partial=not ev.end)

    def note(self, text: str) -> None:
        self._write("note", text.encode())

    def meta(self, obj: dict[str, Any]) -> None:
        self._write("meta", orjson.dumps(obj))

    def exit(self, status: int, stats: dict[str, Any] | None = None) -> None:
        for kind, sp in self._splitters.items():
            for ev in sp.eof():
                if type(ev) is Partial:
                    self._write(kind, ev.data, partial=True)
        self._write("exit", str(status).encode())
        if stats is not None:
            self._write("stats", orjson.dumps(stats))
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._f.close()
