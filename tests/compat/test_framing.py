"""Framing: every byte comes out exactly once, whole or byte by byte (the h11 habit)."""

from __future__ import annotations

import pytest

from compat.framing import Line, LineSplitter, Oversize, Partial


def collect(chunks: list[bytes], max_line: int = 1 << 20) -> list[object]:
    sp = LineSplitter(max_line)
    out: list[object] = []
    for c in chunks:
        out.extend(sp.feed(c))
    out.extend(sp.eof())
    return out


def joined(events: list[object]) -> bytes:
    parts = []
    for e in events:
        if isinstance(e, Line):
            parts.append(e.data + b"\n")
        else:
            parts.append(e.data)  # type: ignore[attr-defined]
    return b"".join(parts)


STREAM = b'{"type":"a"}\n\n{"type":"b","x":"\xff\xfe"}\nnot json\n{"partial":'


@pytest.mark.parametrize("size", [len(STREAM), 1, 2, 3, 7])
def test_same_events_whatever_the_chunking(size: int) -> None:
    chunks = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    events = collect(chunks)
    assert events == [
        Line(b'{"type":"a"}'),
        Line(b""),
        Line(b'{"type":"b","x":"\xff\xfe"}'),
        Line(b"not json"),
        Partial(b'{"partial":'),
    ]
    assert joined(events) == STREAM


@pytest.mark.parametrize("size", [1, 5, 64, 10_000])
def test_oversize_line_streams_through_with_bounded_buffer(size: int) -> None:
    big = b"x" * 5000
    data = b"short\n" + big + b"\nafter\n"
    sp = LineSplitter(max_line=100)
    events: list[object] = []
    for i in range(0, len(data), size):
        events.extend(sp.feed(data[i : i + size]))
    events.extend(sp.eof())
    assert events[0] == Line(b"short")
    assert events[-1] == Line(b"after")
    middle = events[1:-1]
    assert all(isinstance(e, Oversize) for e in middle)
    assert middle[-1].end is True  # type: ignore[attr-defined]
    assert joined(events) == data
    assert sp.peak_buffer <= 100 + size


def test_line_exactly_at_limit_is_a_line() -> None:
    assert collect([b"x" * 10 + b"\n"], max_line=10) == [Line(b"x" * 10)]


def test_eof_inside_oversize_line_loses_nothing() -> None:
    events = collect([b"y" * 50], max_line=10)
    assert joined(events) == b"y" * 50


def collect_split(chunks: list[bytes], max_line: int) -> list[object]:
    """The engine's way: ``split`` when no line can be over the limit, ``feed`` otherwise."""
    sp = LineSplitter(max_line)
    out: list[object] = []
    for c in chunks:
        lines = sp.split(c)
        out.extend(sp.feed(c) if lines is None else [Line(x) for x in lines])
    out.extend(sp.eof())
    return out


@pytest.mark.parametrize("size", [1, 3, 7, 64, 10_000])
@pytest.mark.parametrize("max_line", [16, 100, 1 << 20])
def test_split_gives_what_feed_gives(size: int, max_line: int) -> None:
    data = STREAM.replace(b'{"partial":', b"") + b"y" * 300 + b"\nz\n" + b"w" * 40 + b"\n" + STREAM
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    assert collect_split(chunks, max_line) == collect(chunks, max_line)


@pytest.mark.parametrize("method", ["feed", "split"])
def test_a_long_line_in_small_chunks_costs_linear_time(method: str) -> None:
    """An 8 MiB line in 1 KiB chunks: each chunk is searched and kept once, the line joined
    once (before: the pending buffer was copied on every chunk, ~32 GB of copying here,
    tens of seconds; now milliseconds, so the generous bound cannot flake)."""
    import time

    sp = LineSplitter()
    chunk = b"x" * 1024
    started = time.process_time()
    for _ in range(8 * 1024):
        out = list(sp.feed(chunk)) if method == "feed" else sp.split(chunk)
        assert out == []
    last = list(sp.feed(b"\n")) if method == "feed" else sp.split(b"\n")
    took = time.process_time() - started
    assert last is not None
    sizes = [
        len(x.data if isinstance(x, Line) else x)
        for x in last
        if not isinstance(x, Oversize | Partial)
    ]
    assert sizes == [8 << 20]  # one Line (feed) or one bytes (split) of 8 MiB
    assert sp.peak_buffer == 8 << 20
    assert took < 5.0, took


def collect_block(chunks: list[bytes], max_line: int) -> tuple[bytes, int, list[object]]:
    """What a direction no stage reads writes (``block``, else ``feed``): the bytes, the
    complete lines counted, and the events that are not plain lines."""
    sp = LineSplitter(max_line)
    out: list[bytes] = []
    n = 0
    other: list[object] = []
    for c in chunks:
        got = sp.block(c)
        if got is not None:
            out.append(got[0])
            n += got[1]
            continue
        for ev in sp.feed(c):
            if isinstance(ev, Line):
                out.append(ev.data + b"\n")
                n += 1
            else:
                out.append(ev.data)
                other.append(ev)
    for ev in sp.eof():
        out.append(ev.data)
        other.append(ev)
    return b"".join(out), n, other


@pytest.mark.parametrize("size", [1, 3, 7, 64, 10_000])
@pytest.mark.parametrize("max_line", [16, 100, 1 << 20])
def test_block_writes_what_feed_gives_and_counts_its_lines(size: int, max_line: int) -> None:
    data = STREAM + b"y" * 300 + b"\nz\n" + b"w" * 40 + b"\n" + STREAM
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    events = collect(chunks, max_line)
    got, n, other = collect_block(chunks, max_line)
    assert got == data
    assert n == sum(1 for e in events if isinstance(e, Line))
    assert other == [e for e in events if not isinstance(e, Line)]
