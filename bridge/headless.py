"""The I/O of Claude's headless modes (``compat.headless`` decides what; this does it).

``read_stdin`` reads a piped prompt the way Claude does (nothing from a terminal; up to
``STDIN_WAIT`` seconds for the first byte, then to EOF; more than ``STDIN_LIMIT`` is an
error). ``HeadlessIO.wrap`` replaces the client's streams for the session: the client side
the engine reads is the prompt as one stream-json user line, then EOF (so the rules see a
client that wrote one line and closed stdin); the client side the engine writes goes
through the ``Renderer``, which passes stream-json on and keeps the rest: printed when
the session settles (its last result written, nothing can follow: ``settled``, where Claude
prints and exits) or else by ``finish``, which gives Claude's exit status.

The drop-in's session store (``bridge.session_store``) is fed here too, in every mode: what
the client wrote (or the prompt line) and the stream-json the engine writes to it, before
any rendering; a stream-json client with a store gets a ``HeadlessIO`` that only taps
(``Mode.passthrough``: nothing rendered, its status as it is).
"""

from __future__ import annotations

import os
import re
import select
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from compat.exits import Exit
from compat.headless import (
    EXIT_ERROR,
    NO_PROMPT,
    STDIN_LIMIT,
    STDIN_SILENT,
    STDIN_TOO_BIG,
    STDIN_WAIT,
    Mode,
    Renderer,
    mode_of,
    prompt_text,
    user_line,
)
from compat.text import clip, escape

if TYPE_CHECKING:  # trio loads after the backend is spawned (bridge.headless_streams)
    import trio

    from bridge.headless_streams import RenderingStream
    from bridge.session_store import SessionStore
    from bridge.transcripts import StoreSpec

EXIT_CLIENT_GONE = Exit.CLIENT_GONE


class StdinTooBig(Exception):
    pass


def read_stdin(
    fd: int = 0, wait: float = STDIN_WAIT, limit: int = STDIN_LIMIT, warn: bool = True
) -> str | None:
    """What a piped stdin holds (None for a terminal or a closed descriptor). Waits up to
    ``wait`` s for the first byte (then goes on without stdin, with Claude's warning)."""
    try:
        if os.isatty(fd):
            return None
        ready, _, _ = select.select([fd], [], [], wait)
    except (OSError, ValueError):
        return None
    if not ready:
        if warn:
            print(STDIN_SILENT, file=sys.stderr)
        return ""
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        except OSError:
            break
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise StdinTooBig(STDIN_TOO_BIG)
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


class HeadlessIO:
    """One headless session: ``wrap`` the client's streams, ``finish`` with the status."""

    def __init__(
        self,
        mode: Mode,
        prompt_line: bytes | None,
        stdout_fd: int = 1,
        stderr_fd: int = 2,
        store: StoreSpec | None = None,
    ) -> None:
        self.mode = mode
        self.prompt_line = prompt_line
        self.renderer = Renderer(mode)
        self._fds = (stdout_fd, stderr_fd)
        #: where the session store goes (None: not written); the store, once ``wrap`` ran
        self.store_spec = store
        self.store: SessionStore | None = None
        #: who says a failed turn's reason on stderr, and what the bridge started where it
        #: looked for settings (``said_failure``): set by the drop-in once it knows
        self.program = "claude-on-cbc"
        self.launched = ""
        self._rendering: RenderingStream | None = None

    def wrap(
        self, client_in: trio.abc.ReceiveStream, client_out: trio.abc.SendStream
    ) -> tuple[trio.abc.ReceiveStream, trio.abc.SendStream]:
        from bridge.headless_streams import PromptStream, RenderingStream, TapReceive, TapSend

        store = self._open_store()
        if self.prompt_line is not None:
            client_in = PromptStream(self.prompt_line)
            if store is not None:
                store.client_data(self.prompt_line)
        elif store is not None:
            client_in = TapReceive(client_in, store.client_data)
        tap = store.frame_data if store is not None else None
        if self.mode.passthrough:
            return client_in, client_out if tap is None else TapSend(client_out, tap)
        self._rendering = RenderingStream(self.renderer, client_out, tap)
        return client_in, self._rendering

    async def settled(self) -> None:
        """The session settled (``Session(on_settled=...)``): Claude's output is printed
        now, as Claude prints it before it exits, not once cbc has exited."""
        if self._rendering is not None:
            await self._rendering.settle()

    def _open_store(self) -> SessionStore | None:
        if self.store_spec is None:
            return None
        from bridge.session_store import SessionStore

        self.store = SessionStore(self.store_spec)
        return self.store

    def finish(self, status: int) -> int:
        """Print what Claude prints at the end (what ``settled`` did not print already);
        Claude's status, unless the session ended
        for a reason of the bridge's own (no backend, a signal, a closed stdout). The
        session store is closed first (what it still held written)."""
        if self.store is not None:
            self.store.close()
        if status not in (0, 1) or self.mode.passthrough:
            return status
        done = self.renderer.finish()
        reason = self.said_failure()
        shown = done.stdout or self.renderer.printed
        if reason and shown[-1:] not in (b"", b"\n") and _tty(self._fds[0]):
            reason = "\n" + reason  # (Claude's "Execution error" has no newline)
        stderr = done.stderr + reason.encode("utf-8", "replace")
        for fd, data in zip(self._fds, (done.stdout, stderr), strict=True):
            try:
                _write_all(fd, data)
            except BrokenPipeError:
                return EXIT_CLIENT_GONE
            except OSError:
                pass
        return done.status

    def said_failure(self) -> str:
        """One line for a turn the backend could not run, in its own words and, for an
        authentication failure, with what the bridge started and where it looked for
        settings (``""``: none to say)."""
        reason = self.renderer.failure()
        if reason is None:
            return ""
        line = f"{self.program}: the backend could not run the turn: {clip(escape(reason), 400)}"
        if _AUTH.search(reason) and self.launched:
            line += f" ({self.launched})"
        return line + "\n"


#: what cbc says when it has no credentials ("Authentication required. Please use /login")
_AUTH = re.compile(r"authenticat|/login|api key|unauthori[sz]ed", re.IGNORECASE)


def _tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[n:]


def prepare(
    client_argv: Sequence[str], *, only_print: bool = False, store: StoreSpec | None = None
) -> tuple[HeadlessIO | None, int | None]:
    """Claude's headless modes for a session with this client argv: ``(None, None)`` for a
    stream-json client (nothing to wrap) without a ``store``; ``(io, None)`` for a headless
    one (its prompt read from the argv and stdin) or a stream-json one with a ``store``;
    ``(None, status)`` for a command line Claude refuses (its message already on stderr).
    ``only_print``: headless only with ``-p``/``--print`` or a prompt (``ccbridge run``,
    whose client argv may be empty)."""
    mode = mode_of(client_argv)
    if only_print and not (mode.print_mode or mode.prompt is not None):
        return None, None
    error = mode.usage_error()
    if error is not None:
        print(error, file=sys.stderr)
        return None, EXIT_ERROR
    if mode.passthrough:
        return (None if store is None else HeadlessIO(mode, None, store=store)), None
    line = None
    if mode.input == "text":
        try:
            text = prompt_text(mode.prompt, read_stdin())
        except StdinTooBig as e:
            print(e, file=sys.stderr)
            return None, EXIT_ERROR
        if text is None:
            print(NO_PROMPT, file=sys.stderr)
            return None, EXIT_ERROR
        line = user_line(text)
    return HeadlessIO(mode, line, store=store), None
