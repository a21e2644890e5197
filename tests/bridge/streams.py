"""``contextlib.aclosing`` over an SDK's message stream."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TypeVar, cast

T = TypeVar("T")


def closing(stream: AsyncIterator[T]) -> aclosing[AsyncGenerator[T, None]]:
    """The SDKs type ``receive_messages()`` as an ``AsyncIterator``; it is an async
    generator, and closing it ends the SDK's read when a test stops early."""
    return aclosing(cast("AsyncGenerator[T, None]", stream))
