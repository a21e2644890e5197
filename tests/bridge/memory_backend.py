"""A backend in memory for driver tests (``Session(..., backend=MemoryBackend(...))``):
the script, an async function of the backend, is the process; its streams are trio's
memory (or lockstep) stream pairs, and it runs under the test's clock (``autojump_clock``:
exact times, no waiting)."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Awaitable, Callable

import trio
import trio.testing

Script = Callable[["MemoryBackend"], Awaitable[int | None]]


class MemoryBackend:
    pid: int | None = None

    def __init__(
        self,
        nursery: trio.Nursery,
        script: Script,
        *,
        lockstep_stdout: bool = False,
        on_signal: dict[int, int | None] | None = None,
        in_pipe_at_exit: tuple[float, bytes] | None = None,
    ) -> None:
        self._nursery = nursery
        #: (seconds, bytes): output still in the pipe when the process ends, that reaches
        #: the reader only that long after its exit (the waiter may see the exit first)
        self._in_pipe = in_pipe_at_exit
        self._script = script
        #: status per signal (default: killed by it, -signum); None: ignored (not SIGKILL)
        self._on_signal = on_signal or {}
        self.stdin, self.input = trio.testing.memory_stream_one_way_pair()
        self.output: trio.abc.SendStream
        self.stdout: trio.abc.ReceiveStream
        if lockstep_stdout:
            self.output, self.stdout = trio.testing.lockstep_stream_one_way_pair()
        else:
            self.output, self.stdout = trio.testing.memory_stream_one_way_pair()
        self.errors, self.stderr = trio.testing.memory_stream_one_way_pair()
        self._rc: int | None = None
        self._exited = trio.Event()
        self._scope = trio.CancelScope()
        #: (trio time, signal) of every signal the session sent
        self.signals: list[tuple[float, int]] = []
        self.started_at: float | None = None
        self.exited_at: float | None = None
        self._buf = b""

    # -- the factory: the session "spawns" the script -------------------------------
    def __call__(self) -> MemoryBackend:
        self.started_at = trio.current_time()
        self._nursery.start_soon(self._run)
        return self

    async def _run(self) -> None:
        with self._scope:
            rc = await self._script(self)
            self.exit(rc or 0)

    def exit(self, rc: int) -> None:
        """The process ends: its output closes, its input breaks."""
        if self._rc is not None:
            return
        self._rc = rc
        self.exited_at = trio.current_time()
        self._scope.cancel()
        if self._in_pipe is None:
            _close(self.output)
        else:
            self._nursery.start_soon(self._drain_pipe, *self._in_pipe)
        self.errors.close()
        self.input.close()
        self._exited.set()

    async def _drain_pipe(self, delay: float, data: bytes) -> None:
        await trio.sleep(delay)
        await self.output.send_all(data)
        _close(self.output)

    # -- the Backend protocol -------------------------------------------------------
    @property
    def returncode(self) -> int | None:
        return self._rc

    async def wait(self) -> int:
        await self._exited.wait()
        assert self._rc is not None
        return self._rc

    def send_signal(self, signum: int) -> None:
        self.signals.append((trio.current_time(), signum))
        rc = self._on_signal.get(signum, -signum) if signum != signal.SIGKILL else -signum
        if rc is not None:
            self.exit(rc)

    async def aclose(self) -> None:
        self.stdin.close()
        _close(self.stdout)
        self.stderr.close()
        await trio.lowlevel.checkpoint()

    # -- for scripts ----------------------------------------------------------------
    async def write(self, data: bytes) -> None:
        await self.output.send_all(data)

    async def lines(self) -> AsyncIterator[bytes]:
        """The lines the session wrote to the backend's stdin, until its EOF."""
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                yield line
            data = await self.input.receive_some(65536)
            if not data:
                return
            self._buf += data

    async def read_to_eof(self) -> bytes:
        async for _ in self.lines():
            pass
        rest, self._buf = self._buf, b""
        return rest

    async def forever(self) -> None:
        await trio.sleep_forever()


def _close(stream: trio.abc.AsyncResource) -> None:
    """Memory and lockstep streams close synchronously (a process's pipes close with it)."""
    close: Callable[[], None] = stream.close  # type: ignore[attr-defined]
    close()
