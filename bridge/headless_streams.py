"""The client's streams of a headless session as the engine sees them (``HeadlessIO.wrap``,
``bridge/headless.py``; ``PrereadStream``: any session's stdin after a read before the
launch), and the taps that give the session store a copy of what passes:
apart, because they need trio, which a ``-p`` run imports only once the backend is
spawned."""

from __future__ import annotations

from collections.abc import Callable

import trio

from compat.headless import Renderer

#: what sees a copy of the bytes (``SessionStore.client_data`` / ``frame_data``)
Tap = Callable[[bytes], None]


class PromptStream(trio.abc.ReceiveStream):
    """The client's stdin as the engine sees it: ``data`` (the user line), then EOF."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        n = len(self._data) if max_bytes is None else max_bytes
        out, self._data = self._data[:n], self._data[n:]
        return out

    async def aclose(self) -> None:
        self._data = b""
        await trio.lowlevel.checkpoint()


class PrereadStream(PromptStream):
    """The client's stdin when its first bytes were read before the backend started
    (``bridge.launch.Plan.preread``): those bytes, then ``inner``'s."""

    def __init__(self, data: bytes, inner: trio.abc.ReceiveStream) -> None:
        super().__init__(data)
        self.inner = inner

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._data:
            return await super().receive_some(max_bytes)
        return bytes(await self.inner.receive_some(max_bytes))

    async def aclose(self) -> None:
        self._data = b""
        await self.inner.aclose()


class _Forwarding(trio.abc.SendStream):
    """A send stream whose bytes end in ``inner``: its flow control and close are
    ``inner``'s."""

    inner: trio.abc.SendStream

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.inner.aclose()


class RenderingStream(_Forwarding):
    """The client's stdout as the engine writes it: through the renderer to ``inner``
    (and, first, to ``tap``: the session store)."""

    def __init__(
        self, renderer: Renderer, inner: trio.abc.SendStream, tap: Tap | None = None
    ) -> None:
        self.renderer = renderer
        self.inner = inner
        self.tap = tap

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        chunk = bytes(data)
        if self.tap is not None:
            self.tap(chunk)
        await self._write(self.renderer.feed(chunk))

    async def settle(self) -> None:
        """The session settled: what Claude prints, written now (``Renderer.settle``)."""
        await self._write(self.renderer.settle())

    async def _write(self, out: bytes) -> None:
        if out:
            await self.inner.send_all(out)
        else:
            await trio.lowlevel.checkpoint()


class TapReceive(trio.abc.ReceiveStream):
    """The client's stdin, each chunk read also given to ``tap``."""

    def __init__(self, inner: trio.abc.ReceiveStream, tap: Tap) -> None:
        self.inner = inner
        self.tap = tap

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        data = bytes(await self.inner.receive_some(max_bytes))
        if data:
            self.tap(data)
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()


class TapSend(_Forwarding):
    """The client's stdout: each chunk written to ``inner``, then given to ``tap``."""

    def __init__(self, inner: trio.abc.SendStream, tap: Tap) -> None:
        self.inner = inner
        self.tap = tap

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.inner.send_all(data)
        self.tap(bytes(data))
