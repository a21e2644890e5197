"""The one nursery: a backend process, the client's stdio, the engine, the clock.

Tasks (all in one nursery, ARCHITECTURE.md):
- ``client reader``: client bytes -> ``engine.feed("client")``; EOF -> ``engine.eof``.
- ``backend reader``: backend stdout -> ``engine.feed("backend")``.
- ``stderr relay``: backend stderr -> our stderr (and the capture), verbatim.
- ``writer`` per side: drains a channel of size ``WRITE_QUEUE``. A client that stops
  reading blocks its writer, which fills the channel, which blocks the backend reader,
  which stops reading the backend's stdout, so the backend stalls: memory stays bounded.
- ``timers``: sleeps until ``engine.next_deadline()`` and calls ``engine.advance``.
- ``waiter``: the backend's exit; then the engine's last words (``backend_exited``), and
  the session ends with the backend's status.

Failure handling: a client that vanishes (EPIPE on its stdout) ends the session: the
backend is terminated (SIGTERM, then SIGKILL after ``KILL_GRACE``) and we exit 141. A
signal (SIGINT/SIGTERM/SIGHUP) is forwarded to the backend, which gets ``KILL_GRACE`` to
exit. The client's EOF reaches the backend when the engine says so (``CloseBackendInput``:
at once, or after a stage's wind-down, ``eof-wind-down``); the close happens in the
backend's writer after every line queued before it, and only then does the engine hear of
it (``Engine.input_closed``), so its grace timers start from the real close. A backend that
is still writing is never terminated for the EOF: it is once it has shown no sign of life
(no output, no input taken) for ``eof_grace`` seconds; a stage may ask for it sooner
(``TerminateBackend``: an idle cbc after its last result). A wind-down has a backstop: past
the engine's ``eof_budget`` after the client's EOF the same silence rule applies, whatever
the stages said. The exit status is the engine's when a stage decided it
(``Engine.exit_status``: Claude's 0/1 after a wind-down), else the backend's. The backend
runs in its own process group, which is killed on the way out, and its descendants that
left the group are found and ended too (``bridge.reaper``), so no orphan survives us.

The backend is injected (``Session(..., backend=factory)``): a ``Backend`` is three streams,
a status, ``wait`` and ``send_signal``. ``ProcessBackend`` is the real process (spawned by
the session, or adopted: ``bridge.launch`` starts it before trio is even imported); tests
give memory or lockstep stream pairs and run under ``autojump_clock``. Every task the
session starts, the kill timers included, runs in the session's nursery.
"""

from __future__ import annotations

import enum
import math
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import attrs
import trio

from bridge import reaper
from bridge.log import Logger
from bridge.recorder import Recorder
from compat.engine import CloseBackendInput, Command, Engine, Log, Side, TerminateBackend, Write
from compat.exits import Exit, of_returncode

#: chunks queued per writer before the producer blocks (backpressure)
WRITE_QUEUE = 16
READ_SIZE = 64 * 1024
#: seconds a backend gets between SIGTERM and SIGKILL
KILL_GRACE = 5.0
#: seconds of silence on the backend's stdout, after it exited, before it counts as done
STDOUT_LINGER = 0.5
#: seconds the backend's leftover descendants get between SIGTERM and SIGKILL
TREE_GRACE = 1.0
EXIT_CLIENT_GONE = Exit.CLIENT_GONE

_CLOSE = None  # sentinel on a writer channel: close that side


class _Mark(enum.Enum):
    """A sentinel on the client's writer channel, after the bytes written before it."""

    SETTLED = "settled"  # the session settled (``CloseBackendInput.settled``)


_Chunk = bytes | _Mark | None


#: the capture note written when the bridge closes the backend's stdin (``ccbridge replay``
#: waits for the client's EOF there; "stdin closed" is the client's own EOF)
BACKEND_STDIN_CLOSED = "backend stdin closed"


@attrs.define
class SessionConfig:
    backend_argv: Sequence[str]
    env: dict[str, str] | None = None
    cwd: str | None = None
    #: seconds the backend may take to exit after the client's EOF; None: wait forever
    eof_grace: float | None = 60.0
    print_stats: bool = False
    #: this process is the session's alone (the CLI): become the child subreaper of the
    #: backend's tree and end every child left at the close (``bridge.reaper``)
    own_process: bool = False


class ClientGone(Exception):
    pass


class Backend(Protocol):
    """A running backend as the session drives it. ``pid`` is an OS process's (its process
    group and tree are reaped at the close), None for an in-memory one."""

    @property
    def stdin(self) -> trio.abc.SendStream: ...

    @property
    def stdout(self) -> trio.abc.ReceiveStream: ...

    @property
    def stderr(self) -> trio.abc.ReceiveStream | None: ...

    @property
    def pid(self) -> int | None: ...

    @property
    def returncode(self) -> int | None:
        """None while it runs; else its status (negative: killed by that signal)."""

    async def wait(self) -> int: ...

    def send_signal(self, signum: int) -> None:
        """To the backend (an OS process: to its process group)."""

    async def aclose(self) -> None:
        """Release the streams (the backend has exited or been killed)."""


#: makes the backend; raises FileNotFoundError (exit 127) or PermissionError (126)
BackendFactory = Callable[[], Backend]


class ProcessBackend:
    """An OS process with piped stdio in its own session (``start_new_session``), spawned
    or adopted from a ``subprocess.Popen`` already running (``bridge.launch``)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        assert popen.stdin is not None
        assert popen.stdout is not None
        self.popen = popen
        self.pid: int | None = popen.pid
        self.stdin: trio.abc.SendStream = _adopt(popen.stdin)
        self.stdout: trio.abc.ReceiveStream = _adopt(popen.stdout)
        self.stderr: trio.abc.ReceiveStream | None = (
            _adopt(popen.stderr) if popen.stderr is not None else None
        )
        popen.stdin = popen.stdout = popen.stderr = None

    @classmethod
    def spawn(
        cls, argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None
    ) -> ProcessBackend:
        from bridge.launch import spawn

        return cls(spawn(argv, env, cwd))

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        if self.popen.poll() is None:
            await _wait_exit(self.popen.pid)
            while self.popen.poll() is None:  # noqa: ASYNC110 - no pidfd (or it failed)
                await trio.sleep(0.01)
        else:
            await trio.lowlevel.checkpoint()
        rc = self.popen.returncode
        assert rc is not None
        return rc

    def send_signal(self, signum: int) -> None:
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, signum)
        except (ProcessLookupError, PermissionError):
            try:
                self.popen.send_signal(signum)
            except ProcessLookupError:
                pass

    async def aclose(self) -> None:
        for s in (self.stdin, self.stdout, self.stderr):
            if s is not None:
                with trio.CancelScope(shield=True):
                    try:
                        await s.aclose()
                    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
                        pass


def adopt(started: subprocess.Popen[bytes] | OSError) -> BackendFactory:
    """The factory of a backend ``bridge.launch.start`` already spawned (or failed to: the
    session reports the error as its own spawn's, 127 / 126)."""

    def make() -> Backend:
        if isinstance(started, OSError):
            raise started
        return ProcessBackend(started)

    return make


def _adopt(f: Any) -> trio.lowlevel.FdStream:
    """A trio stream owning a duplicate of ``f``'s descriptor; ``f`` is closed."""
    fd = os.dup(f.fileno())
    f.close()
    return trio.lowlevel.FdStream(fd)


async def _wait_exit(pid: int) -> None:
    """Until ``pid`` has exited (a pidfd on Linux; elsewhere returns, the caller polls)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        trio.lowlevel.notify_closing(fd)
        os.close(fd)


class Session:
    def __init__(
        self,
        config: SessionConfig,
        engine: Engine,
        client_in: trio.abc.ReceiveStream,
        client_out: trio.abc.SendStream,
        logger: Logger,
        recorder: Recorder | None = None,
        stderr: Callable[[bytes], None] | None = None,
        backend: BackendFactory | None = None,
        on_settled: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.config = config
        #: called in the client's writer, after every byte written before it, when the
        #: session settled (``CloseBackendInput.settled``): a headless run prints then
        self._on_settled = on_settled
        self.engine = engine
        self.client_in = client_in
        self.client_out = client_out
        self.log = logger
        self.recorder = recorder
        self._stderr = stderr or _write_stderr
        self._wake = trio.Event()
        self._send: dict[Side, trio.MemorySendChannel[_Chunk]] = {}
        self._recv: dict[Side, trio.MemoryReceiveChannel[_Chunk]] = {}
        for side in ("client", "backend"):
            s, r = trio.open_memory_channel[_Chunk](WRITE_QUEUE)
            self._send[side] = s
            self._recv[side] = r
        self._make_backend: BackendFactory = backend or (
            lambda: ProcessBackend.spawn(config.backend_argv, config.env, config.cwd)
        )
        self.proc: Backend | None = None
        self._kill_timer = False
        self.exit_status: int | None = None
        self._client_gone = False
        self._stdout_done = trio.Event()
        self._client_writer_done = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._input_closed = False
        #: trio time of the backend's latest sign of life: output (stdout or stderr), a
        #: chunk of input it took, its stdin closed
        self._last_active = 0.0
        self._watching = False
        #: client lines the backend never got (its stdin was closed under them)
        self._undelivered = 0
        #: why the bridge ended the backend (a signal passed on, a termination), if it did
        self._ended_by: str | None = None

    # -- public ----------------------------------------------------------------------
    async def run(self) -> int:
        if self.config.own_process:
            reaper.become_subreaper()
        try:
            self.proc = self._make_backend()
        except FileNotFoundError:
            self.log.error(f"backend not found: {self.config.backend_argv[0]}")
            return Exit.NOT_FOUND
        except PermissionError:
            self.log.error(f"backend is not executable: {self.config.backend_argv[0]}")
            return Exit.NOT_EXECUTABLE
        self.log.debug("backend started: " + " ".join(self.config.backend_argv), "argv")
        if self.recorder and self.proc.pid is not None:
            self.recorder.note(f"spawned pid {self.proc.pid}")
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._client_reader, nursery)
                nursery.start_soon(self._backend_reader)
                nursery.start_soon(self._stderr_relay)
                nursery.start_soon(self._writer, "client")
                nursery.start_soon(self._writer, "backend")
                nursery.start_soon(self._timers)
                nursery.start_soon(self._signals)
                await self._wait_backend(nursery)
        finally:
            await self._reap()
        status = self.exit_status if self.exit_status is not None else 1
        decided = self.engine.exit_status()
        if decided is not None:
            status = decided
        if status == 0 and self._undelivered:
            status = 1  # the client's input was lost: not a success
        if self._client_gone:
            status = EXIT_CLIENT_GONE
        if self.recorder:
            self.recorder.exit(status, self.engine.statistics())
        if self.config.print_stats:
            self._print_stats()
        return status

    # -- tasks -----------------------------------------------------------------------
    async def _client_reader(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                data = bytes(await self.client_in.receive_some(READ_SIZE))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                data = b""
            now = trio.current_time()
            if not data:
                if self.recorder:
                    self.recorder.note("stdin closed")
                await self._dispatch(self.engine.eof("client", now))
                budget = self.engine.eof_budget()
                if budget is not None and not self._input_closed:
                    # the stages hold the EOF (wind-down): a backstop, whatever they do
                    nursery.start_soon(self._backstop, budget)
                return
            if self.recorder:
                self.recorder.data("client_in", data)
            await self._dispatch(self.engine.feed("client", data, now))

    async def _backend_reader(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while True:
                try:
                    data = bytes(await stdout.receive_some(READ_SIZE))
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    data = b""
                if not data:
                    return
                self._last_active = trio.current_time()
                if self.recorder:
                    self.recorder.data("stdout", data)
                await self._dispatch(self.engine.feed("backend", data, trio.current_time()))
        finally:
            self._stdout_done.set()

    async def _stderr_relay(self) -> None:
        assert self.proc is not None
        stderr = self.proc.stderr
        if stderr is None:
            return
        while True:
            try:
                data = bytes(await stderr.receive_some(READ_SIZE))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            if not data:
                return
            self._last_active = trio.current_time()
            if self.recorder:
                self.recorder.data("stderr", data)
            self._stderr(data)

    async def _writer(self, side: Side) -> None:
        recv = self._recv[side]
        async for chunk in recv:
            if side == "backend":
                await self._to_backend(chunk)
            elif chunk is None:
                break
            elif not self._client_gone:
                await self._to_client(chunk)
        if side == "client":
            self._client_writer_done.set()

    async def _to_client(self, chunk: bytes | _Mark) -> None:
        try:
            if chunk is _Mark.SETTLED:  # (sent only with an ``on_settled`` to call)
                assert self._on_settled is not None
                await self._on_settled()
                return
            await self.client_out.send_all(chunk)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self._client_gone = True
            self.log.error(
                "the client stopped reading (its stdout pipe closed); terminating the backend"
            )
            self._terminate("the client stopped reading")
            return
        if self.recorder:
            self.recorder.data("client_out", chunk)

    async def _to_backend(self, chunk: _Chunk) -> None:
        assert self.proc is not None
        assert chunk is not _Mark.SETTLED  # (only the client side gets one)
        if chunk is None:
            await self._close_backend_stdin()
            # now, not when the close was queued, the backend's time to exit starts
            self._last_active = trio.current_time()
            await self._dispatch(self.engine.input_closed(self._last_active))
            return
        try:
            await self.proc.stdin.send_all(chunk)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            lost = chunk.count(b"\n") or 1
            self._undelivered += lost
            self.engine.stats.count("framing", "undelivered-up", lost)
            self.log.warning(
                f"the backend's stdin is closed; {lost} line(s) "
                "from the client could not be delivered"
            )
            return
        self._last_active = trio.current_time()
        if self.recorder:
            self.recorder.data("stdin", chunk)

    async def _timers(self) -> None:
        while True:
            deadline = self.engine.next_deadline()
            wake = self._wake
            with trio.move_on_at(deadline if deadline is not None else math.inf):
                await wake.wait()
            if self._wake is wake:
                self._wake = trio.Event()
            now = trio.current_time()
            deadline = self.engine.next_deadline()
            if deadline is not None and deadline <= now:
                await self._dispatch(self.engine.advance(now))

    async def _signals(self) -> None:
        sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        with trio.open_signal_receiver(*sigs) as receiver:
            async for signum in receiver:
                name = signal.Signals(signum).name
                self.log.info(f"received {name}; passing it to the backend")
                if self.recorder:
                    self.recorder.note(f"signal {name}")
                self._ended_by = self._ended_by or f"it passed on the {name} it received"
                self._send_signal(signum)
                self._start_kill_timer()

    async def _wait_backend(self, nursery: trio.Nursery) -> None:
        assert self.proc is not None
        rc = await self.proc.wait()
        exited = trio.current_time()
        self.exit_status = of_returncode(rc)
        # the rest of its output (what the pipe holds may not be read yet: the reader runs
        # after this wait returned); a descendant that inherited the pipe may hold it open:
        # waited for until it has been silent STDOUT_LINGER since the exit or its last
        # output, up to KILL_GRACE (it is ended at the reap)
        with trio.move_on_after(KILL_GRACE):
            while not self._stdout_done.is_set():
                with trio.move_on_at(max(self._last_active, exited) + STDOUT_LINGER):
                    await self._stdout_done.wait()
                if trio.current_time() >= max(self._last_active, exited) + STDOUT_LINGER:
                    break
        await self._dispatch(
            self.engine.backend_exited(self.exit_status, trio.current_time(), self._cause(rc))
        )
        await self._send["client"].send(_CLOSE)
        with trio.move_on_after(KILL_GRACE if not self._client_gone else 0):
            await self._client_writer_done.wait()
        if rc < 0:
            self.log.warning(f"the backend was killed by {_signal_name(-rc)}")
        nursery.cancel_scope.cancel()

    def _cause(self, rc: int) -> str:
        """What ended the backend, in words (``Engine.backend_exited``): decided by what
        happened, never by which task ran first."""
        how = f"was killed by {_signal_name(-rc)}" if rc < 0 else f"exited with status {rc}"
        if self._ended_by is not None:
            return f"the bridge ended the backend ({self._ended_by}; it {how})"
        return f"the backend {how}"

    async def _backstop(self, budget: float) -> None:
        """The stages promised to release the client's EOF within ``budget`` seconds: past
        that, the backend is watched for silence as if its stdin were closed."""
        await trio.sleep(budget)
        self._watch(trio.current_time())

    def _watch(self, since: float) -> None:
        if self.config.eof_grace is not None and self._nursery is not None and not self._watching:
            self._watching = True
            self._nursery.start_soon(self._silence_watchdog, since, self.config.eof_grace)

    async def _silence_watchdog(self, since: float, grace: float) -> None:
        """A backend still writing is never terminated: it is, once it has shown no sign of
        life (no output, no input taken; the close of its stdin counts as one, so the grace
        starts when the close is done, not when it was queued) for ``grace`` seconds."""
        while self.proc is not None and self.proc.returncode is None:
            deadline = max(since, self._last_active) + grace
            if trio.current_time() >= deadline:
                self.log.warning(
                    f"the backend wrote nothing for {grace:g}s after the client's EOF "
                    "reached it and has not exited; terminating it"
                )
                if self.recorder:
                    self.recorder.note(f"terminate: silent {grace:g}s after the EOF")
                self._terminate(f"silent {grace:g}s after the client's EOF reached it")
                return
            await trio.sleep_until(deadline)

    # -- helpers ---------------------------------------------------------------------
    async def _dispatch(self, commands: list[Command]) -> None:
        settled = False
        for cmd in commands:
            if type(cmd) is Write:
                await self._send[cmd.side].send(cmd.data)
            elif type(cmd) is Log:
                self.log.log(cmd.level, cmd.rule, cmd.message)
            elif type(cmd) is CloseBackendInput:
                self._input_closed = True
                settled = cmd.settled
                await self._send["backend"].send(_CLOSE)
                self._watch(trio.current_time())
            elif type(cmd) is TerminateBackend:
                if self.proc is not None and self.proc.returncode is None:
                    self.log.info(f"terminating the backend: {cmd.reason}")
                    if self.recorder:
                        self.recorder.note(f"terminate: {cmd.reason}")
                    self._terminate(cmd.reason)
        if settled and self._on_settled is not None:  # (after this event's writes)
            await self._send["client"].send(_Mark.SETTLED)
        self._wake.set()

    async def _close_backend_stdin(self) -> None:
        assert self.proc is not None
        if self.recorder:  # (the client's own EOF is "stdin closed"; ccbridge replay waits here)
            self.recorder.note(BACKEND_STDIN_CLOSED)
        try:
            await self.proc.stdin.aclose()
        except (trio.BrokenResourceError, OSError):
            pass

    def _send_signal(self, signum: int) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.send_signal(signum)

    def _terminate(self, why: str) -> None:
        self._ended_by = self._ended_by or f"it terminated the backend: {why}"
        self._send_signal(signal.SIGTERM)
        self._start_kill_timer()

    def _start_kill_timer(self) -> None:
        """SIGKILL after ``KILL_GRACE`` unless it exits: one timer for the session, in its
        nursery (cancelled with it: once the backend exited, the reap takes over)."""
        if not self._kill_timer and self._nursery is not None:
            self._kill_timer = True
            self._nursery.start_soon(self._kill_after, KILL_GRACE)

    async def _kill_after(self, grace: float) -> None:
        await trio.sleep(grace)
        if self.proc is not None and self.proc.returncode is None:
            self.log.warning(f"the backend ignored SIGTERM for {grace:g}s; killing it")
            self._send_signal(signal.SIGKILL)

    async def _reap(self) -> None:
        """Nothing of the backend's outlives us: its process tree as ``/proc`` shows it
        before the end, its process group, and (``own_process``: we are the subreaper) any
        child of ours left over, each SIGTERMed, then SIGKILLed, and waited for."""
        proc = self.proc
        if proc is None:
            return
        with trio.CancelScope(shield=True):
            try:
                await self._end_backend(proc)
            finally:
                await proc.aclose()
            if self.exit_status is None and proc.returncode is not None:
                rc = proc.returncode
                self.exit_status = of_returncode(rc)

    async def _end_backend(self, proc: Backend) -> None:
        pid = proc.pid
        tree = reaper.descendants([pid]) if pid is not None and proc.returncode is None else []
        if proc.returncode is None:
            self._send_signal(signal.SIGTERM)
            with trio.move_on_after(KILL_GRACE):
                await proc.wait()
        if proc.returncode is None:
            self._send_signal(signal.SIGKILL)
            await proc.wait()
        if pid is None:  # in memory: no process group, no tree
            return
        try:
            os.killpg(pid, signal.SIGKILL)  # stragglers in its group
        except (ProcessLookupError, PermissionError):
            pass
        if self.config.own_process:
            tree += [p for p in reaper.own_children() if p not in tree]
        await self._end_tree(tree + reaper.descendants(tree))

    async def _end_tree(self, pids: list[int]) -> None:
        """SIGTERM the backend's leftover descendants, SIGKILL what is left after a short
        grace, reap those that are our children."""
        pids = list(dict.fromkeys(pids))
        if not reaper.alive(pids):
            reaper.reap(pids)
            return
        n = reaper.signal_all(reaper.alive(pids), signal.SIGTERM)
        with trio.move_on_after(TREE_GRACE):
            while True:
                reaper.reap(pids)
                if not reaper.alive(pids):
                    break
                await trio.sleep(0.02)
        left = reaper.alive(pids)
        reaper.signal_all(left, signal.SIGKILL)
        reaper.reap(pids)
        if n:
            self.log.info(
                f"ended {n} process(es) the backend left behind"
                + (f" ({len(left)} needed SIGKILL)" if left else "")
            )

    def _print_stats(self) -> None:
        """``ccbridge stats: {JSON}`` on stderr. A counter's name can be a peer's (an unknown
        frame's type, bounded by ``compat.stats``): C1, DEL, bidi and invisible characters,
        which orjson writes as they are, become ``\\uXXXX`` escapes (``compat.text``)."""
        import orjson

        from compat.redact import redact_obj  # stats never carry a credential either
        from compat.text import escape_json

        stats: dict[str, Any] = redact_obj(self.engine.statistics())[0]
        line = escape_json(orjson.dumps(stats, option=orjson.OPT_SORT_KEYS).decode())
        self._stderr(b"ccbridge stats: " + line.encode() + b"\n")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _write_stderr(data: bytes) -> None:
    try:
        os.write(2, data)
    except OSError:
        pass
