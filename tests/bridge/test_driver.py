"""Process lifecycle through ``bridge.driver.Session`` (identity profile: no rules)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import trio
import trio.testing

from bridge.driver import (
    KILL_GRACE,
    WRITE_QUEUE,
    BackendFactory,
    Session,
    SessionConfig,
)
from bridge.log import Logger
from bridge.recorder import Recorder
from compat.capture import parse

from ..compat.helpers import engine_for
from .fakes import CRASH, ECHO, argv
from .memory_backend import MemoryBackend


class Collect:
    def __init__(self) -> None:
        self.data = b""
        self.stderr = b""


def session(
    backend_argv: list[str],
    client_in: trio.abc.ReceiveStream,
    client_out: trio.abc.SendStream,
    sink: Collect,
    eof_grace: float | None = 30.0,
    recorder: Recorder | None = None,
    backend: BackendFactory | None = None,
) -> Session:
    import io

    log = Logger(io.StringIO())
    return Session(
        SessionConfig(backend_argv, eof_grace=eof_grace),
        engine_for("identity"),
        client_in,
        client_out,
        log,
        recorder,
        stderr=lambda b: setattr(sink, "stderr", sink.stderr + b),
        backend=backend,
    )


async def drain(stream: trio.abc.ReceiveStream, sink: Collect) -> None:
    while True:
        data = await stream.receive_some(65536)
        if not data:
            return
        sink.data += data


async def test_relays_both_ways_and_exits_with_the_backend_status(tmp_path: Path) -> None:
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    sink = Collect()
    rec = Recorder(str(tmp_path / "c.jsonl"), "test")
    s = session(argv(ECHO, "3"), in_recv, out_send, sink, recorder=rec)
    async with trio.open_nursery() as n:
        n.start_soon(drain, out_recv, sink)
        await in_send.send_all(b'{"type":"user","n":1}\n{"type":"user","n":2}\n')
        await in_send.aclose()
        with trio.fail_after(20):
            status = await s.run()
        await out_send.aclose()
    assert status == 3
    lines = sink.data.splitlines()
    assert lines == [
        b'{"type": "assistant", "echo": {"type": "user", "n": 1}}',
        b'{"type": "assistant", "echo": {"type": "user", "n": 2}}',
    ]
    with (tmp_path / "c.jsonl").open("rb") as f:
        cap = parse(f)
    assert [
        r.kind for r in cap.records if r.kind in ("client_in", "stdin", "stdout", "client_out")
    ].count("client_out") == 2
    assert cap.exit_status == 3
    assert any(r.kind == "note" and r.text == "stdin closed" for r in cap.records)


async def test_a_crashing_backend_loses_nothing() -> None:
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    sink = Collect()
    s = session(argv(CRASH), in_recv, out_send, sink)
    async with trio.open_nursery() as n:
        n.start_soon(drain, out_recv, sink)
        with trio.fail_after(20):
            status = await s.run()
        await out_send.aclose()
    assert status == 2
    assert sink.data == b'{"type":"assistant"}\n{"type":"resu'  # partial line kept
    assert sink.stderr == b"boom\n"


async def hang(b: MemoryBackend) -> int:
    """HANG in memory: its init, then it reads to EOF and never exits by itself."""
    await b.write(b'{"type":"system","subtype":"init"}\n')
    await b.read_to_eof()
    await b.forever()
    return 0


async def test_a_backend_that_hangs_after_eof_is_terminated(autojump_clock: object) -> None:
    """The grace counts from the close of its stdin (t=0, the client's EOF): SIGTERM at
    exactly 0.5 s, and no SIGKILL (it obeyed)."""
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    sink = Collect()
    async with trio.open_nursery() as n:
        b = MemoryBackend(n, hang)
        s = session([], in_recv, out_send, sink, eof_grace=0.5, backend=b)
        n.start_soon(drain, out_recv, sink)
        await in_send.aclose()
        status = await s.run()
        await out_send.aclose()
    assert status == 143  # SIGTERM
    assert b.signals == [(0.5, signal.SIGTERM)]
    assert b'"init"' in sink.data


async def test_a_backend_that_ignores_sigterm_is_killed(autojump_clock: object) -> None:
    """SIGTERM at the grace (1 s), SIGKILL KILL_GRACE later, from the session's own timer."""
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    sink = Collect()
    async with trio.open_nursery() as n:
        b = MemoryBackend(n, hang, on_signal={signal.SIGTERM: None})
        s = session([], in_recv, out_send, sink, eof_grace=1.0, backend=b)
        n.start_soon(drain, out_recv, sink)
        await in_send.aclose()
        status = await s.run()
        await out_send.aclose()
    assert status == 137  # SIGKILL
    assert b.signals == [(1.0, signal.SIGTERM), (1.0 + KILL_GRACE, signal.SIGKILL)]
    assert b.exited_at == 1.0 + KILL_GRACE


async def test_the_kill_timer_ends_with_the_session(autojump_clock: object) -> None:
    """A backend that ignores SIGTERM but exits by itself 2 s later is not killed, and the
    session ends then: the kill timer is a task of the session's nursery, not a system task
    that outlives it."""

    async def slow(b: MemoryBackend) -> int:
        await b.write(b'{"type":"system","subtype":"init"}\n')
        await b.read_to_eof()
        while not b.signals:  # noqa: ASYNC110 - polling the fake's own record
            await trio.sleep(0.01)
        await trio.sleep(2)
        return 0

    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    sink = Collect()
    async with trio.open_nursery() as n:
        b = MemoryBackend(n, slow, on_signal={signal.SIGTERM: None})
        s = session([], in_recv, out_send, sink, eof_grace=1.0, backend=b)
        n.start_soon(drain, out_recv, sink)
        await in_send.aclose()
        status = await s.run()
        ended = trio.current_time()
        await out_send.aclose()
        await trio.sleep(KILL_GRACE * 2)
    assert status == 0
    assert [sig for _, sig in b.signals] == [signal.SIGTERM]  # never SIGKILL
    assert b.exited_at == pytest.approx(3.0)  # the SIGTERM at 1 s, then its own 2 s
    assert ended == pytest.approx(3.0)  # its stdout closed as it exited: no linger


async def test_output_still_in_the_pipe_when_the_backend_exits_is_read(
    autojump_clock: object,
) -> None:
    """A backend that was silent for 2 s, then wrote and exited: the waiter may see the exit
    before the reader has read the pipe. What the pipe holds still reaches the client (the
    linger counts from the exit, not from the last output read)."""

    async def silent_then_exit(b: MemoryBackend) -> int:
        await trio.sleep(2)
        return 0

    line = b'{"type":"result","subtype":"success"}\n'
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    sink = Collect()
    async with trio.open_nursery() as n:
        b = MemoryBackend(n, silent_then_exit, in_pipe_at_exit=(0.1, line))
        s = session([], in_recv, out_send, sink, backend=b)
        n.start_soon(drain, out_recv, sink)
        await in_send.aclose()
        status = await s.run()
        await out_send.aclose()
    assert status == 0
    assert sink.data == line


async def test_a_client_that_vanishes_ends_the_session(autojump_clock: object) -> None:
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    await out_recv.aclose()  # nobody will ever read
    sink = Collect()
    async with trio.open_nursery() as n:
        b = MemoryBackend(n, hang)
        s = session([], in_recv, out_send, sink, backend=b)
        status = await s.run()
    assert status == 141
    assert b.signals == [(0.0, signal.SIGTERM)]  # at its first line, not after a grace
    assert b.returncode == -signal.SIGTERM


async def test_a_client_that_stops_reading_stalls_the_backend(autojump_clock: object) -> None:
    """Backpressure: a client that reads nothing for 100 s holds the backend at what the
    writer's queue and the two tasks in between hold (WRITE_QUEUE + 2 reads), not 2 MB;
    once it reads, every line arrives."""
    line = b'{"type":"stream_event","event":{"pad":"' + b"x" * 1000 + b'"}}\n'
    total = 2_000  # ~2 MB, 100 times what the queue may hold
    written = 0

    async def flood(b: MemoryBackend) -> int:
        nonlocal written
        for _ in range(total):
            await b.write(line)
            written += 1
        return 0

    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.lockstep_stream_one_way_pair()
    sink = Collect()

    async def run(s: Session) -> None:
        assert await s.run() == 0
        await out_send.aclose()

    async with trio.open_nursery() as n:
        b = MemoryBackend(n, flood, lockstep_stdout=True)
        s = session([], in_recv, out_send, sink, backend=b)
        n.start_soon(run, s)
        await trio.sleep(100)  # the client reads nothing meanwhile
        # the queue full, one chunk in the writer's send, one in the reader's dispatch
        assert written == WRITE_QUEUE + 2
        got = bytearray()

        async def read_all() -> None:
            while data := await out_recv.receive_some(1 << 20):
                got.extend(data)

        n.start_soon(read_all)
        await in_send.aclose()
    assert got == line * total


async def test_missing_backend_is_127() -> None:
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, _ = trio.testing.memory_stream_one_way_pair()
    s = session(["/nonexistent/backend-binary"], in_recv, out_send, Collect())
    assert await s.run() == 127


DAEMONIZING = r"""
import os, subprocess, sys, time
# a grandchild that leaves the backend's process group and session (setsid), like a
# daemonising tool; its pid goes to the file named in argv[1]
p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                     start_new_session=True)
with open(sys.argv[1], "w") as f:
    f.write(str(p.pid))
sys.stdout.write('{"type":"system","subtype":"init"}\n'); sys.stdout.flush()
if sys.argv[2] == "exit-first":
    sys.exit(0)  # the grandchild is orphaned: re-parented to the bridge (subreaper)
sys.stdin.read()
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["exit-first", "wait-for-eof"])
def test_nothing_the_backend_started_outlives_the_bridge(tmp_path: Path, how: str) -> None:
    """A grandchild that called setsid() escapes a process-group kill; the bridge (child
    subreaper on Linux, plus the backend's tree read from /proc) ends it too."""
    import os
    import shlex
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip(
            "PR_SET_CHILD_SUBREAPER and /proc are Linux's; elsewhere only the "
            "process group is killed (docs/robustness.md)"
        )
    pidfile = tmp_path / "pid"
    backend = shlex.join(argv(DAEMONIZING, str(pidfile), how))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bridge",
            "run",
            "--profile",
            "identity",
            "--eof-grace",
            "1",
            "--backend",
            backend,
        ],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    pid = int(pidfile.read_text())
    try:
        assert not _alive(pid), proc.stderr.decode()
    finally:
        if _alive(pid):
            os.kill(pid, 9)
    assert proc.returncode in (0, 143), proc.stderr.decode()


CLOSES_STDIN = r"""
import os, sys, time
os.close(0)
sys.stdout.write('{"type":"system","subtype":"init"}\n'); sys.stdout.flush()
time.sleep(1.0)
"""


async def test_client_lines_the_backend_never_got_are_counted_and_fail_the_exit() -> None:
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    sink = Collect()
    s = session(argv(CLOSES_STDIN), in_recv, out_send, sink)
    async with trio.open_nursery() as n:

        async def client() -> None:
            while b"init" not in sink.data:  # it closed its stdin before writing this
                sink.data += await out_recv.receive_some(65536)
            n.start_soon(drain, out_recv, sink)
            await in_send.send_all(b'{"type":"user","n":1}\n{"type":"user","n":2}\n')
            await in_send.aclose()

        n.start_soon(client)
        with trio.fail_after(20):
            status = await s.run()
        await out_send.aclose()
    assert status == 1  # the backend's own 0, but the client's input was lost
    assert s.engine.statistics()["rules"]["framing"]["undelivered-up"] == 2
