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
The prefix is only a guess: JavaScript's ``JSON.parse`` (both CLIs) keeps the *last* of
duplicate keys, so ``{"type":"stream_event",…,"type":"result"}`` is a result. The pipeline
confirms every prefix kind with the line's one parse (``Pipeline.run_lines``: the parse that
also proves the line is valid JSON before a stage edits its bytes) and keeps that parse
(``proof``) for the stages that look inside; a frame whose kind was not given is parsed.

Robust JSON (``loads``/``dumps``): the wire is JSON as ``JSON.parse``/``JSON.stringify``
read and write it, which is wider than what a fast parser takes. ``loads`` is msgspec's
(it keeps every digit of an integer past 64 bits, where orjson reads a float, so no scan
for long digit runs is needed) and falls back to the standard library for what msgspec
rejects: a lone surrogate escape (``"\\ud83d"``, half an emoji), a number out of a double's
range (``1e400``, Infinity like ``JSON.parse``), an integer past Python's 4,300-digit limit
(kept as written, ``JSONNumber``), nesting past its depth limit.
``dumps`` is orjson's; what orjson cannot write (nesting past 255 levels, those surrogates and
integers) is written by ``_dumps_slow``: the same bytes orjson would write for every value it
can write, a lone surrogate as its lowercase ``\\udXXX`` escape (what ``JSON.stringify``
writes; never invalid UTF-8), any depth.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import attrs
import msgspec
import orjson

from compat.wire import covers

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


@attrs.frozen
class JSONNumber:
    """An integer literal too long for Python's ``int`` (over 4,300 digits), kept as
    written; ``dumps`` writes it back verbatim (orjson refuses the type: the slow writer)."""

    text: str


_INT_DIGITS = 4300


def _int(text: str) -> int | JSONNumber:
    return int(text) if len(text) <= _INT_DIGITS else JSONNumber(text)


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads_std(data: bytes | str) -> Any:
    """The standard library's reading of a JSON text (``JSON.parse``'s, for what msgspec does
    not take); ``ValueError`` when it is not JSON."""
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray | memoryview) else data
    try:
        return json.loads(text, parse_int=_int, parse_constant=_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


_DECODE = msgspec.json.Decoder().decode
#: what msgspec raises for a text it does not read (``loads`` then asks the standard library)
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def loads(data: bytes | str) -> Any:
    """``JSON.parse``: msgspec, or the standard library for what msgspec rejects (see the
    module docstring). ``ValueError`` when ``data`` is not JSON, or not UTF-8."""
    try:
        return _DECODE(data)
    except _DECODE_ERRORS:
        return _loads_std(data)


class _KindOnly(msgspec.Struct):
    type: str
    #: UNSET: the object has no ``subtype`` key (None: one that is null)
    subtype: str | None | msgspec.UnsetType = msgspec.UNSET


_KIND_DECODER = msgspec.json.Decoder(_KindOnly)


def prove(raw: bytes) -> Kind | None:
    """``(type, subtype)`` of a line proved to be a JSON object whose ``type`` is a string
    (and ``subtype`` a string or absent), read as ``JSON.parse`` reads them (the last of
    duplicate keys); None when it is not proved: not JSON, not UTF-8, another shape, or what
    only ``loads`` reads (a lone surrogate escape, nesting msgspec will not go into).

    The pipeline's proof of every wire line (``compat.pipeline`` "The proof"): msgspec
    validates the whole text in C and builds only those two fields, about 3x faster than a
    full parse, and the line is still parsed only when a stage asks (``Frame.obj``)."""
    try:
        k = _KIND_DECODER.decode(raw)
        if not raw.isascii():
            raw.decode()  # (msgspec does not check UTF-8 in the strings it skips)
    except PROOF_ERRORS:
        return None
    return k.type, k.subtype if k.subtype is not msgspec.UNSET else None


#: what ``prove``'s steps raise for a line they do not prove (for a caller that inlines it)
PROOF_ERRORS = (msgspec.DecodeError, RecursionError, UnicodeDecodeError)
prove_kind = _KIND_DECODER.decode
#: per proved kind: the prefix ``prefix_kind`` reads it from (b"": a name it does not read)
_PREFIXES: dict[Kind, bytes] = {}


def _prefix_of(kind: Kind) -> bytes:
    t, st = kind
    if t is None or _NAME.fullmatch(t.encode()) is None:
        return b""
    if st is None:
        return b'{"type":"%s"' % t.encode() if t != "system" else b""
    if _NAME.fullmatch(st.encode()) is None:
        return b""
    return b'{"type":"%s","subtype":"%s"' % (t.encode(), st.encode())


def wire_kind(raw: bytes) -> Kind | Any:
    """The kind of a wire line when ``prefix_kind`` reads it and ``prove`` confirms it (what
    the pipeline needs to leave a line unparsed), else ``UNKNOWN``: the proof first (C), then
    one ``startswith`` of the prefix that kind is written with, so the prefix is never
    scanned in Python. Same answer as comparing the two (a test checks it), but for a line
    the proof finds no top-level ``subtype`` in: it has none, even where the word occurs
    deeper (``prefix_kind``, which reads no further than the prefix, cannot tell)."""
    try:
        k = prove_kind(raw)
        if not raw.isascii():
            raw.decode()  # (msgspec does not check UTF-8 in the strings it skips)
    except PROOF_ERRORS:
        return UNKNOWN
    st = k.subtype
    if st is None:
        return UNKNOWN  # ``"subtype":null``: a prefix names no such kind
    kind = (k.type, None if st is msgspec.UNSET else st)
    prefix = _PREFIXES.get(kind)
    if prefix is None:
        prefix = _prefix_of(kind)
        if len(_PREFIXES) < 1024:
            _PREFIXES[kind] = prefix
    if not prefix or not raw.startswith(prefix):
        return UNKNOWN
    return kind


#: ``\u`` (``has_u_escape``)
_U_ESCAPE = re.compile(rb"\\u")


def has_u_escape(raw: bytes, start: int = 0, end: int | None = None) -> bool:
    """``b"\\u"`` occurs in ``raw[start:end]`` (an escape that could spell any character).
    Faster than ``raw.find(b"\\u")``: that search tests for its last byte, ``u``, common in
    JSON text, at nearly every position, where ``find`` of the backslash alone is a
    ``memchr`` and a line without one (most) is done; the regex then looks on from there
    (0.26 against 0.79 us on a delta line, 0.22 against 1.25 us on an assistant line)."""
    n = len(raw) if end is None else end
    bs = raw.find(b"\\", start, n)
    return bs >= 0 and _U_ESCAPE.search(raw, bs, n) is not None


#: U+2028 and U+2029 as UTF-8, and the escapes Claude Code writes for them (a client that
#: splits lines with ``str.splitlines()`` breaks on the raw characters)
LINE_SEPARATORS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


def escape_line_separators(raw: bytes) -> bytes:
    """``raw`` with U+2028/U+2029 written as escapes (the same JSON: in a JSON line they can
    only stand inside strings); ``raw`` itself when it has none."""
    at = raw.find(b"\xe2")  # (both start so; a memchr: ``compat.pipeline``, "Hot path")
    if at < 0:
        return raw
    for char, escape in LINE_SEPARATORS:
        if raw.find(char, at) >= 0:
            raw = raw.replace(char, escape)
    return raw


def dumps(obj: Any) -> bytes:
    """Compact JSON like ``JSON.stringify``, U+2028/U+2029 escaped as Claude writes them;
    ``TypeError``/``ValueError`` for a value that is not JSON (a stage bug: the pipeline
    fails open on it)."""
    try:
        out = orjson.dumps(obj)
    except orjson.JSONEncodeError:
        out = _dumps_slow(obj)
    return escape_line_separators(out)


_SURROGATE = re.compile("[\ud800-\udfff]")
_SCALARS: dict[Any, bytes] = {None: b"null", True: b"true", False: b"false"}


def _str(s: str) -> bytes:
    try:
        return orjson.dumps(s)
    except orjson.JSONEncodeError:  # lone surrogates: JSON.stringify's escapes, the rest as orjson
        parts = [b'"']
        at = 0
        for m in _SURROGATE.finditer(s):
            parts.append(orjson.dumps(s[at : m.start()])[1:-1])
            parts.append(b"\\u%04x" % ord(m.group()))
            at = m.end()
        parts.append(orjson.dumps(s[at:])[1:-1])
        parts.append(b'"')
        return b"".join(parts)


def _leaf(v: Any) -> bytes:
    if type(v) is JSONNumber:
        return v.text.encode()
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, bool) or v is None:
        return _SCALARS[v]
    if isinstance(v, int):
        try:
            return orjson.dumps(v)
        except orjson.JSONEncodeError:
            return str(int(v)).encode()
    return orjson.dumps(v)  # a float, or not JSON: orjson says so


def _dumps_slow(obj: Any) -> bytes:
    """``dumps`` for what orjson refuses, without recursion (any depth): containers written
    here, every other value as orjson writes it (see ``_leaf``)."""
    out: list[bytes] = []
    #: iterators of the open containers, and whether each is a dict
    stack: list[tuple[Any, bool]] = []
    value: Any = obj
    while True:
        if isinstance(value, dict):
            out.append(b"{")
            stack.append((iter(value.items()), True))
        elif isinstance(value, list | tuple):
            out.append(b"[")
            stack.append((iter(value), False))
        else:
            out.append(_leaf(value))
        while stack:
            it, is_dict = stack[-1]
            first = out[-1] in (b"{", b"[")
            item = next(it, _END)
            if item is _END:
                stack.pop()
                out.append(b"}" if is_dict else b"]")
                continue
            if not first:
                out.append(b",")
            if is_dict:
                key, value = item
                if not isinstance(key, str):
                    raise TypeError(f"dict key must be str, not {type(key).__name__}")
                out.append(_str(key))
                out.append(b":")
            else:
                value = item
            break
        else:
            return b"".join(out)


_END: Any = object()


# -- reading shapes defensively (a frame's values can be any JSON) ------------------------


def dict_at(obj: Any, key: str) -> dict[str, Any] | None:
    """``obj[key]`` when ``obj`` is a dict and that value is one too, else None."""
    v = obj.get(key) if type(obj) is dict else None
    return v if type(v) is dict else None


def str_at(obj: Any, key: str) -> str | None:
    """``obj[key]`` when ``obj`` is a dict and that value is a string, else None (safe as a
    set member or dict key, unlike an arbitrary JSON value)."""
    v = obj.get(key) if type(obj) is dict else None
    return v if isinstance(v, str) else None


def list_at(obj: Any, key: str) -> list[Any]:
    """``obj[key]`` when ``obj`` is a dict and that value is a list, else ``[]``."""
    v = obj.get(key) if type(obj) is dict else None
    return v if type(v) is list else []


def kind_of(obj: Any) -> Kind | None:
    """``(type, subtype)`` of a decoded frame (the last of duplicate keys, like
    ``JSON.parse``), None when it is not a JSON object."""
    if type(obj) is not dict:
        return None
    t, st = obj.get("type"), obj.get("subtype")
    return (t if isinstance(t, str) else None, st if isinstance(st, str) else None)


_T = TypeVar("_T")
#: (family, kind) pairs ``Frame.view`` found covered (checked once each; a hostile stream
#: can name any number of kinds: past ``MAX_VIEWED`` they are checked every time)
_VIEWED: set[tuple[Any, Any]] = set()
MAX_VIEWED = 4096


#: ``Frame.key`` of each kind seen (bounded as ``_VIEWED``)
_KEYS: dict[Any, str] = {}


def _key_of(kind: Any) -> str:
    if kind is None:
        return ""
    t, st = kind
    name = f"system/{st}" if t == "system" else str(t)
    if len(_KEYS) < MAX_VIEWED:
        _KEYS[kind] = name
    return name


def _check_view(family: Any, kind: Any) -> None:
    """``Frame.view``'s check of a (family, kind) pair, remembered once it passed."""
    if not covers(family, kind):
        raise TypeError(f"a {kind} frame read as {family.__name__}")
    if len(_VIEWED) < MAX_VIEWED:
        _VIEWED.add((family, kind))


@attrs.define(slots=True, eq=False)
class Frame:
    raw: bytes
    _obj: Any = attrs.field(default=_UNPARSED, alias="obj")
    #: the wire frame this one descends from (``None``: it is its own root)
    root: Frame | None = None
    #: set on frames a rule invented; names the rule
    synthesized_by: str | None = None
    #: the last rule that rewrote this frame as an object (set by the pipeline; an encode
    #: failure is that rule's)
    rewritten_by: str | None = attrs.field(default=None, init=False, repr=False)
    _kind: Any = attrs.field(default=_NO_KIND, init=False, repr=False)
    #: the pipeline proved ``raw`` to be a JSON object of its kind (``prove``)
    _proven: bool = attrs.field(default=False, init=False, repr=False)

    @property
    def obj(self) -> Any:
        """The decoded JSON value (``loads``), or ``None`` when the line is not valid
        JSON/UTF-8."""
        o = self._obj
        if o is _UNPARSED:
            try:
                o = loads(self.raw)
            except ValueError:
                o = None
            self._obj = o
        return o

    def view(self, family: type[_T]) -> _T:
        """The frame's object as the ``compat.wire`` frame family a rule declared it acts on
        (``wire.Assistant``...): the same dict, typed, once its kind is checked to be one of
        the family's (``wire.FAMILIES``; a rule reading another kind's view is a bug:
        TypeError). Parses the line if no rule did yet."""
        kind = self._kind
        if kind is _NO_KIND:
            kind = self.kind()
        if (family, kind) not in _VIEWED:
            _check_view(family, kind)
        o = self._obj
        return o if o is not _UNPARSED else self.obj  # type: ignore[no-any-return]

    def key(self) -> str:
        """The frame's kind as the rules name it: ``type``, or ``system/subtype`` for a
        system frame (``""``: not a JSON object). From the proved kind: no parse."""
        kind = self._kind
        if kind is _NO_KIND:
            kind = self.kind()
        name = _KEYS.get(kind)
        return name if name is not None else _key_of(kind)

    @property
    def parsed(self) -> bool:
        return self._obj is not _UNPARSED

    @property
    def proven(self) -> bool:
        """``raw`` is known to be a JSON object (parsed, or proved by the pipeline)."""
        return self._proven or type(self._obj) is dict

    def kind(self) -> Kind | None:
        """``(type, subtype)``, or None when the line is not a JSON object (cached)."""
        k = self._kind
        if k is _NO_KIND:
            k = self._kind = kind_of(self.obj)
        return k  # type: ignore[no-any-return]

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

    def replace_raw(self, raw: bytes, obj: Any = _UNPARSED, proven: bool = False) -> Frame:
        """A rewritten version of this frame given as its bytes (same lineage), for a stage
        that edits the line itself and keeps its ``type`` and ``subtype`` (the kind is
        carried over); ``obj``, when given, must be what ``raw`` parses to (otherwise
        ``raw`` is parsed only if a later stage asks); ``proven``: ``raw`` is known to be a
        JSON object (a stage that edits a proved line's bytes)."""
        f = Frame(raw, obj=obj, root=self.lineage, synthesized_by=self.synthesized_by)
        f._kind = self._kind
        f._proven = proven
        return f

    @classmethod
    def synth(cls, obj: dict[str, Any], rule: str) -> Frame:
        """A frame a rule invents."""
        return cls(b"", obj=obj, synthesized_by=rule)

    @classmethod
    def wire(cls, raw: bytes, kind: Kind | None, proven: bool = False) -> Frame:
        """A wire line whose kind is known (``prefix_kind``; ``proven``: confirmed by
        ``prove``, the line is a JSON object of that kind)."""
        f = cls(raw)
        f._kind = kind
        f._proven = proven
        return f

    @classmethod
    def from_obj(cls, obj: Any) -> Frame:
        return cls(dumps(obj), obj=obj)

    def encode(self) -> bytes:
        """The bytes to write, without the newline (``dumps``: raises for an object that is
        not JSON; the pipeline's ``encode`` fails open on it)."""
        if self.raw or not self.changed:
            return self.raw
        self.raw = dumps(self._obj)
        return self.raw

    @property
    def rule(self) -> str | None:
        """The rule that made this frame's object: the last to rewrite it, or the one that
        invented it."""
        return self.rewritten_by or self.synthesized_by
