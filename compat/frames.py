"""Frames: one JSON Lines record as the rules see it.

Strategy (ARCHITECTURE.md "Hot path"): a frame keeps the exact bytes it arrived with and
parses them only when a stage asks for ``obj``. A frame that no stage replaces is written
from ``raw``, byte for byte. A stage that changes a frame never mutates ``obj`` in place:
it builds a new dict and calls ``replace`` (or ``synth`` for a frame it invents), and only
such frames are re-serialized (compact, like the CLIs' own ``JSON.stringify``).

``Frame`` is treated as immutable; the one mutable slot is the parse cache, which is why it
is a slotted attrs class rather than a frozen one.
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

_UNPARSED: Any = object()


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


@attrs.define(slots=True, eq=False)
class Frame:
    raw: bytes
    _obj: Any = attrs.field(default=_UNPARSED, alias="obj")
    #: the wire frame this one descends from (``None``: it is its own root)
    root: Frame | None = None
    #: set on frames a rule invented; names the rule
    synthesized_by: str | None = None

    @property
    def obj(self) -> Any:
        """The decoded JSON value, or ``None`` when the line is not valid JSON/UTF-8."""
        o = self._obj
        if o is _UNPARSED:
            try:
                o = orjson.loads(self.raw)
            except orjson.JSONDecodeError:
                o = None
            self._obj = o
        return o

    @property
    def parsed(self) -> bool:
        return self._obj is not _UNPARSED

    @property
    def changed(self) -> bool:
        """True for a frame a rule rewrote or invented."""
        return self.root is not None or self.synthesized_by is not None

    @property
    def lineage(self) -> Frame:
        return self.root if self.root is not None else self

    @property
    def type(self) -> str | None:
        o = self.obj
        return o.get("type") if isinstance(o, dict) else None

    @property
    def subtype(self) -> str | None:
        o = self.obj
        return o.get("subtype") if isinstance(o, dict) else None

    def replace(self, obj: dict[str, Any]) -> Frame:
        """A rewritten version of this frame (same lineage)."""
        return Frame(b"", obj=obj, root=self.lineage, synthesized_by=self.synthesized_by)

    @classmethod
    def synth(cls, obj: dict[str, Any], rule: str) -> Frame:
        """A frame a rule invents."""
        return cls(b"", obj=obj, synthesized_by=rule)

    @classmethod
    def from_obj(cls, obj: Any) -> Frame:
        return cls(dumps(obj), obj=obj)

    def encode(self) -> bytes:
        """The bytes to write, without the newline."""
        if self.raw or not self.changed:
            return self.raw
        self.raw = dumps(self._obj)
        return self.raw
