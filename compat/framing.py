"""Bytes -> lines, with a bounded buffer (the h11 way: bytes in, events out, no I/O).

Invariants:
- Every byte fed comes out again exactly once, in order: as a complete ``Line`` (without
  its ``\\n``), as ``Oversize`` chunks of a line longer than ``max_line`` (streamed through
  untouched, so memory stays bounded by ``max_line`` however long the line is), or as a
  ``Partial`` tail when the stream ends without a final newline.
- Nothing here decodes or parses: invalid UTF-8 and invalid JSON are the next layer's
  concern, and they pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from compat import DEFAULT_MAX_LINE


@attrs.frozen
class Line:
    data: bytes  # without the trailing newline


@attrs.frozen
class Oversize:
    """A piece of a line longer than the limit; ``end`` is True on the piece holding its
    newline (the newline is included in ``data``, which is written verbatim)."""

    data: bytes
    end: bool


@attrs.frozen
class Partial:
    """Bytes after the last newline when the stream ended."""

    data: bytes


Event = Line | Oversize | Partial


class LineSplitter:
    """Linear in the bytes fed, whatever the line lengths: a line that spans chunks grows in
    one buffer (appended to, never re-copied: amortised O(1) per byte) and is copied out
    once, when its newline arrives; only the new chunk is ever searched for a newline.
    Memory for a line in flight: the buffer, then the line (the buffer is freed)."""

    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.max_line = max_line
        #: the unfinished line
        self._buf = bytearray()
        self._oversize = False  # inside a line already known to be too long
        self.peak_buffer = 0

    def _take(self, head: bytes) -> bytes:
        """The unfinished line completed by ``head`` (one copy out of the buffer)."""
        buf = self._buf
        if not buf:
            return head
        buf += head
        line = bytes(buf)
        self._buf = bytearray()  # (frees the old buffer now)
        return line

    def _keep(self, tail: bytes) -> None:
        self._buf += tail
        if len(self._buf) > self.peak_buffer:
            self.peak_buffer = len(self._buf)

    @property
    def _held(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> Iterator[Event]:
        if self._oversize:
            nl = data.find(b"\n")
            if nl < 0:
                yield Oversize(bytes(data), end=False)
                return
            self._oversize = False
            yield Oversize(bytes(data[: nl + 1]), end=True)
            data = data[nl + 1 :]
        start = 0
        find = data.find
        if self._buf:
            nl = find(b"\n")
            if nl < 0:
                if self._held + len(data) > self.max_line:
                    self._oversize = True
                    yield Oversize(self._take(data), end=False)
                elif data:
                    self._keep(data)
                return
            line = self._take(data[:nl])
            yield Oversize(line + b"\n", end=True) if len(line) > self.max_line else Line(line)
            start = nl + 1
        while True:
            nl = find(b"\n", start)
            if nl < 0:
                break
            if nl - start > self.max_line:
                yield Oversize(data[start : nl + 1], end=True)
            else:
                yield Line(data[start:nl])
            start = nl + 1
        rest = len(data) - start
        if rest > self.max_line:
            self._oversize = True
            yield Oversize(data[start:], end=False)
        elif rest:
            self._keep(data[start:] if start else data)

    def split(self, data: bytes) -> list[bytes] | None:
        """``feed`` for the hot path: the complete lines (without their newlines) in one
        ``bytes.split``; None, having consumed nothing, when a line could be over the
        limit (then ``feed`` must take ``data``)."""
        if self._oversize or self._held + len(data) > self.max_line:
            return None
        if self._buf:
            nl = data.find(b"\n")
            if nl < 0:
                if data:
                    self._keep(data)
                return []
            first = self._take(data[:nl])
            lines = data[nl + 1 :].split(b"\n")
            lines.insert(0, first)
        else:
            lines = data.split(b"\n")
        rest = lines.pop()
        if rest:
            self._keep(rest)
        return lines

    def block(self, data: bytes) -> tuple[bytes, int] | None:
        """``split`` for a direction no stage reads: the complete lines as one block of
        bytes, newlines included, and how many there are (one count, one copy); the
        unfinished tail is kept as ``feed`` keeps it. None, having consumed nothing, when a
        line could be over the limit (then ``feed`` must take ``data``)."""
        if self._oversize or self._held + len(data) > self.max_line:
            return None
        last = data.rfind(b"\n")
        if last < 0:
            if data:
                self._keep(data)
            return b"", 0
        n = data.count(b"\n")
        end = last + 1
        head = data if end == len(data) else data[:end]
        if self._buf:
            head = self._take(head)
        if end < len(data):
            self._keep(data[end:])
        return head, n

    def eof(self) -> Iterator[Event]:
        """The stream ended: whatever is buffered is a partial last line."""
        if self._oversize:
            self._oversize = False
            return
        if self._buf:
            yield Partial(self._take(b""))
