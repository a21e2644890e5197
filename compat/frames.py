"""Frames: one JSON Lines record as the rules see it.

Strategy (ARCHITECTURE.md "Hot path"): a frame keeps the exact bytes it arrived with and
parses them only when a stage asks for ``obj``. A frame that no stage replaces is written
from ``raw``, byte for byte. A stage that changes a frame never mutates ``obj`` in place:
it builds a new dict and calls ``replace`` (or ``synth`` for a frame it invents), and only
such frames are re-serialized (compact, like the CLIs' own ``JSON.stringify``).

``Frame`` is treated as immutable; the mutable slots are caches (the parse, the kind), which
is why it is a slotted attrs class rather than a frozen one.

``kind()`` is ``(type, subtype)`` read from the line's prefix with one regex when the line
starts with them (cbc always does; Claude mostly does), otherwise from a parse; it is what
the pipeline dispatches on, and what a stage can branch on without parsing the frame.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import orjson

_UNPARSED: Any = object()
_NO_KIND: Any = object()
#: (type, subtype) of a frame; None for a line that is not a JSON object
Kind = tuple[str | None, str | None]
_NAME = re.compile(rb"[A-Za-z0-9_\-]+")
#: type and subtype names read from line prefixes so far (bounded: names are a vocabulary)
_NAMES: dict[bytes, str] = {}


def _name(b: bytes) -> str | None:
    """A type/subtype name as written in a line's prefix, when it is a plain one."""
    name = _NAMES.get(b)
    if name is None and _NAME.fullmatch(b) is not None:
        name = b.decode()
        if len(_NAMES) < 1024:
            _NAMES[b] = name
    return name


#: ``prefix_kind``: the prefix does not tell (the line must be parsed)
UNKNOWN: Any = object()
_TYPE_AT = len(b'{"type":"')
_SUBTYPE = b',"subtype":"'


def prefix_kind(raw: bytes) -> Kind | Any:
    """``(type, subtype)`` read from a line that starts ``{"type":"…"`` (then, for a
    ``system`` frame, ``,"subtype":"…"``) without parsing it; ``UNKNOWN`` when the prefix
    cannot tell: another shape, or a frame that may carry its subtype further on."""
    if not raw.startswith(b'{"type":"'):
        return UNKNOWN
    end = raw.find(b'"', _TYPE_AT)
    t = _name(raw[_TYPE_AT:end]) if end > 0 else None
    if t is None:
        return UNKNOWN
    if raw.startswith(_SUBTYPE, end + 1):
        at = end + 1 + len(_SUBTYPE)
        st_end = raw.find(b'"', at)
        st = _name(raw[at:st_end]) if st_end > 0 else None
        return UNKNOWN if st is None else (t, st)
    if t != "system" and b'"subtype"' not in raw:
        # a non-system frame may still carry a subtype (result, control frames)
        return t, None
    return UNKNOWN


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
    _kind: Any = attrs.field(default=_NO_KIND, init=False, repr=False)

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

    def kind(self) -> Kind | None:
        """``(type, subtype)``, or None when the line is not a JSON object (cached)."""
        k = self._kind
        if k is _NO_KIND:
            k = self._kind = self._read_kind()
        return k  # type: ignore[no-any-return]

    def lacks(self, kind: Kind, needle: bytes) -> bool:
        """True for an unparsed wire line of ``kind`` that cannot contain ``needle`` (a key
        or word a lazy stage looks for): it is not in the bytes, and no ``\\u`` escape
        could spell it otherwise. Such a line can pass that stage unparsed."""
        raw = self.raw
        return bool(raw) and self.kind() == kind and needle not in raw and b"\\u" not in raw

    def _read_kind(self) -> Kind | None:
        if self._obj is _UNPARSED:
            k = prefix_kind(self.raw)
            if k is not UNKNOWN:
                return k
        obj = self.obj
        if not isinstance(obj, dict):
            return None
        t, st = obj.get("type"), obj.get("subtype")
        return (t if isinstance(t, str) else None, st if isinstance(st, str) else None)

    @property
    def invalid(self) -> bool:
        """A wire line that was parsed and is not valid JSON (it passes unchanged); a line
        no rule parsed is not looked at here either."""
        return self._obj is None and bool(self.raw) and self.synthesized_by is None

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

    def replace_raw(self, raw: bytes, obj: Any = _UNPARSED) -> Frame:
        """A rewritten version of this frame given as its bytes (same lineage), for a stage
        that edits the line itself and keeps its ``type`` and ``subtype`` (the kind is
        carried over); ``obj``, when given, must be what ``raw`` parses to (otherwise
        ``raw`` is parsed only if a later stage asks)."""
        f = Frame(raw, obj=obj, root=self.lineage, synthesized_by=self.synthesized_by)
        f._kind = self._kind
        return f

    @classmethod
    def synth(cls, obj: dict[str, Any], rule: str) -> Frame:
        """A frame a rule invents."""
        return cls(b"", obj=obj, synthesized_by=rule)

    @classmethod
    def wire(cls, raw: bytes, kind: Kind | None) -> Frame:
        """A wire line whose kind was already read from its prefix (``prefix_kind``)."""
        f = cls(raw)
        f._kind = kind
        return f

    @classmethod
    def from_obj(cls, obj: Any) -> Frame:
        return cls(dumps(obj), obj=obj)

    def encode(self) -> bytes:
        """The bytes to write, without the newline."""
        if self.raw or not self.changed:
            return self.raw
        self.raw = dumps(self._obj)
        return self.raw
