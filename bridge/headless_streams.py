"""The client's streams of a headless session as the engine sees them (``HeadlessIO.wrap``,
``bridge/headless.py``): apart, because they need trio, which a ``-p`` run imports only once
the backend is spawned."""

from __future__ import annotations

import trio

from compat.headless import Renderer


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


class RenderingStream(trio.abc.SendStream):
    """The client's stdout as the engine writes it: through the renderer to ``inner``."""

    def __init__(self, renderer: Renderer, inner: trio.abc.SendStream) -> None:
        self.renderer = renderer
        self.inner = inner

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        out = self.renderer.feed(bytes(data))
        if out:
            await self.inner.send_all(out)
        else:
            await trio.lowlevel.checkpoint()

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.inner.aclose()
