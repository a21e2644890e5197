"""The capture format: a versioned header line, then one timestamped record per line.

    {"format": "ccbridge-capture", "version": 1, "created": "...", "source": "...", ...}
    {"t": 0.012, "kind": "client_in", "text": "{\"type\":\"user\",...}"}
    {"t": 0.013, "kind": "stdin", "text": "..."}
    {"t": 0.512, "kind": "stdout", "b64": "..."}          # a line that is not UTF-8
    {"t": 0.513, "kind": "client_out", "text": "...", "partial": true}  # no newline
    {"t": 9.000, "kind": "exit", "text": "0"}
    {"t": 9.000, "kind": "stats", "text": "{...}"}

Kinds, chosen so a capture reads like the reference transcripts (which are the same
records without a header): ``stdin``/``stdout``/``stderr`` are what the *backend* read and
wrote; ``client_in``/``client_out`` what the bridge read from and wrote to the client
(only in captures made through the bridge); ``meta``/``note``/``exit``/``stats`` describe
the run. ``text`` is the line verbatim without its newline. Readers also accept a plain
stdout dump (every line a frame: all ``stdout``).

What the commands accept as a capture (``check``, ``diff``, ``replay``, ``demo``) is
``read``/``load``: one of those three, with something in it. An empty file, binary data, a
JSON document (a HAR file) or JSON Lines without a single stream-json frame are "not a
capture", a ``CaptureError`` saying why. ``parse`` is the lenient reader underneath, for
lines known to be a stream (the tests, the engine's corpus).

Pure: parsing takes lines, writing returns bytes. Credentials are redacted in every
record written (``compat.redact``): a JSON line structurally, anything else (invalid JSON,
a partial line, a piece of an over-long one, stderr, a note) as text; the header's
``argv`` option by option (``--api-key VALUE``, the JSON of ``--mcp-config``), its ``env``
by variable name, and every other header value like a JSON line. A line with nothing to
hide is written byte for byte.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Any

import attrs
import orjson

from compat.exits import Exit
from compat.frames import dumps
from compat.redact import redact_argv, redact_env, redact_line, redact_obj

FORMAT = "ccbridge-capture"
VERSION = 1
LINE_KINDS = frozenset({"stdin", "stdout", "stderr", "client_in", "client_out"})


class CaptureError(ValueError):
    """The input is not a capture this ccbridge reads; the message says why, in words."""


@attrs.frozen
class Record:
    t: float
    kind: str
    data: bytes  # the line without its newline (meta/note/exit/stats: UTF-8 text)
    partial: bool = False
    lineno: int = 0  # line number in the capture file (1-based)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


@attrs.frozen
class Capture:
    header: dict[str, Any]
    records: tuple[Record, ...]
    #: "ccbridge" (this format), "transcript" (reference transcripts), "stdout" (a dump)
    flavor: str
    #: the recording was cut (its writer stopped on a full disk, a size limit, an I/O
    #: error, or was killed): its last line is incomplete and not among the records
    cut: bool = False

    def lines(self, kind: str) -> list[Record]:
        return [r for r in self.records if r.kind == kind]

    @property
    def exit_status(self) -> int | None:
        for r in reversed(self.records):
            if r.kind == "exit":
                return parse_exit(r.text)
        return None

    @property
    def backend(self) -> str | None:
        """Whose session this is, ``claude`` or ``cbc``, as far as the capture says: its
        header (``ccbridge scenario run``), a reference transcript's ``meta``
        (``claude_version``/``cbc_version``), else its ``system/init`` frame (Claude's has
        ``claude_code_version``, cbc's none); None when nothing says."""
        named = self.header.get("backend")
        if named in ("claude", "cbc"):
            return str(named)
        meta = self.header.get("meta")
        for name in ("claude", "cbc"):
            if isinstance(meta, dict) and f"{name}_version" in meta:
                return name
        return _backend_of_init(self.lines("stdout"))

    def client_view(self) -> list[Record]:
        """What a client saw: ``client_out`` when the capture went through the bridge,
        else the backend's ``stdout``."""
        out = self.lines("client_out")
        return out if out else self.lines("stdout")


def _backend_of_init(out: list[Record]) -> str | None:
    for r in out:
        if b'"init"' not in r.data:
            continue
        obj = _json(r.data)
        if isinstance(obj, dict) and obj.get("type") == "system" and obj.get("subtype") == "init":
            return "claude" if "claude_code_version" in obj else "cbc"
    return None


def _json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def parse_exit(text: str) -> int | None:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    if text.startswith("killed:"):
        try:
            return 128 - int(text.split(":", 1)[1]) if "-" in text else None
        except ValueError:
            return None
    if text.startswith("sigterm"):
        return Exit.TERMINATED
    return None


def header(source: str, **meta: Any) -> dict[str, Any]:
    h: dict[str, Any] = {"format": FORMAT, "version": VERSION, "source": source}
    if isinstance(meta.get("env"), dict):
        meta["env"] = redact_env(meta["env"])
    if isinstance(meta.get("argv"), (list, tuple)):
        meta["argv"] = redact_argv(meta["argv"])
    h.update(meta)
    red, _ = redact_obj(h)
    return red if isinstance(red, dict) else h


def encode_header(h: dict[str, Any]) -> bytes:
    return dumps(h) + b"\n"  # (robust: argv may hold surrogate-escaped bytes)


def encode_record(t: float, kind: str, data: bytes, partial: bool = False) -> bytes:
    """One capture line (with its newline). Credentials in ``data`` are redacted."""
    data = redact_line(data)
    rec: dict[str, Any] = {"t": round(t, 6), "kind": kind}
    try:
        rec["text"] = data.decode("utf-8")
    except UnicodeDecodeError:
        rec["b64"] = base64.b64encode(data).decode("ascii")
    if partial:
        rec["partial"] = True
    return dumps(rec) + b"\n"


def load(path: str) -> Capture:
    """The capture in file ``path`` (``read``); a file that cannot be read is a
    ``CaptureError`` too, saying why in words."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CaptureError(f"cannot be read ({e.strerror or e})") from None
    return read(data)


def read(data: bytes) -> Capture:
    """The one definition of a capture the commands accept: a ccbridge capture, a reference
    transcript, or a stdout dump holding at least one stream-json frame (a JSON object with
    a string ``type``). Anything else is a ``CaptureError`` "not a capture (why)": an empty
    file, binary data, a JSON document such as a HAR file, JSON Lines of something else."""
    why = _not_text(data)
    if why is None:
        cap = parse(data.split(b"\n"))
        if cap.flavor != "stdout" or any(_is_frame(r.data) for r in cap.records):
            return cap
        why = _no_frame(cap, data)
    raise CaptureError(f"not a capture ({why})")


def _not_text(data: bytes) -> str | None:
    """Why ``data`` cannot be JSON Lines at all, if it cannot."""
    if not data.strip():
        return "an empty file: a session has at least one line"
    if data.startswith(b"\x1f\x8b"):
        return "gzip-compressed data: decompress it first"
    lineno, first = next((i, ln) for i, ln in enumerate(data.split(b"\n"), 1) if ln.strip())
    try:
        first.decode("utf-8")
    except UnicodeDecodeError:
        return f"binary data: line {lineno} is not UTF-8 text"
    if b"\x00" in first:
        return f"binary data: line {lineno} holds NUL bytes"
    return None


def _is_frame(line: bytes) -> bool:
    obj = _json(line)
    return isinstance(obj, dict) and isinstance(obj.get("type"), str)


def _no_frame(cap: Capture, data: bytes) -> str:
    """Why a file read as a stdout dump holds no frame: what it is instead."""
    doc = _json(data)
    if isinstance(doc, dict) and isinstance(doc.get("log"), dict):
        return 'a HAR file: JSON with a "log" object, an HTTP archive, not a stream-json session'
    first = cap.records[0]
    if doc is not None and len(cap.records) > 1:
        return "one JSON document over several lines, not one stream-json frame per line"
    return f"no stream-json frame in it: line {first.lineno} is {_what(first.data)}"


#: how a JSON value that is not a frame is named
_KINDS = {list: "a JSON array", str: "a JSON string", bool: "a JSON boolean"}


def _what(line: bytes) -> str:
    if line.strip() == b"null":
        return "JSON null"
    obj = _json(line)
    if obj is None:
        return "not JSON"
    if isinstance(obj, dict):
        return 'a JSON object without a "type"'
    return _KINDS.get(type(obj), "a JSON number")


def parse(lines: Iterable[bytes]) -> Capture:
    """Parse a capture, a reference transcript or a plain stdout dump. A capture whose last
    line is incomplete (no newline, not a record) was cut: what precedes it is returned,
    ``cut`` set."""
    it: Iterator[tuple[int, bytes]] = enumerate(lines, 1)
    first = next((numbered for numbered in it if numbered[1].strip()), None)
    if first is None:
        return Capture({}, (), "stdout")
    try:
        head = orjson.loads(first[1])
    except orjson.JSONDecodeError:
        head = None
    if isinstance(head, dict) and head.get("format") == FORMAT:
        return _capture(head, it)
    if _is_record(head):
        return _transcript(first, it)
    if isinstance(head, dict) and head.keys() == {"meta"}:
        return _stream_transcript(head["meta"], it)
    return _dump(first, it)


def _is_record(obj: Any) -> bool:
    return isinstance(obj, dict) and {"t", "kind"} <= obj.keys() and ("text" in obj or "b64" in obj)


def _dump(first: tuple[int, bytes], it: Iterator[tuple[int, bytes]]) -> Capture:
    """A plain dump: every non-empty line is something the backend wrote."""
    recs = [Record(0.0, "stdout", first[1].rstrip(b"\r\n"), lineno=first[0])]
    recs.extend(Record(0.0, "stdout", ln.rstrip(b"\r\n"), lineno=i) for i, ln in it if ln.strip())
    return Capture({"source": "stdout dump"}, tuple(recs), "stdout")


def _capture(head: dict[str, Any], it: Iterator[tuple[int, bytes]]) -> Capture:
    """This format: ``head`` its header, ``it`` the lines after it."""
    if head.get("version") != VERSION:
        raise CaptureError(
            f"capture format version {head.get('version')!r} is not supported "
            f"(this ccbridge reads version {VERSION})"
        )
    cut: list[bool] = []
    return Capture(head, tuple(_records(it, cut)), "ccbridge", bool(cut))


def _transcript(first: tuple[int, bytes], it: Iterator[tuple[int, bytes]]) -> Capture:
    """A reference transcript (records without a header): its ``meta`` record is the
    header's ``meta``."""
    recs = list(_records(iter([first])))
    recs.extend(_records(it))
    meta: dict[str, Any] = {}
    for r in recs:
        if r.kind == "meta":
            try:
                meta = orjson.loads(r.data)
            except orjson.JSONDecodeError:
                meta = {"meta": r.text}
            break
    return Capture({"source": "reference transcript", "meta": meta}, tuple(recs), "transcript")


def _stream_transcript(meta: Any, it: Iterator[tuple[int, bytes]]) -> Capture:
    """A reference transcript of the older shape: a ``{"meta": ...}`` line, then one
    ``{"t", "stream", "line"}`` record a line (``stream``: stdin, stdout or stderr)."""
    recs: list[Record] = []
    for lineno, raw in it:
        if not raw.strip():
            continue
        try:
            rec = orjson.loads(raw)
            line = str(rec["line"]).encode()
            recs.append(Record(float(rec["t"]), str(rec["stream"]), line, False, lineno))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
            raise CaptureError(f"line {lineno}: not a transcript record ({e})") from e
    header = {"source": "reference transcript", "meta": meta if isinstance(meta, dict) else {}}
    return Capture(header, tuple(recs), "transcript")


def _records(it: Iterable[tuple[int, bytes]], cut: list[bool] | None = None) -> Iterator[Record]:
    """The records of ``it``'s lines; an incomplete last line (no newline) that is not a
    record is the cut end of a recording: noted in ``cut``, not an error."""
    for lineno, raw in it:
        line = raw.rstrip(b"\r\n")
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
            t = float(rec.get("t", 0.0))
            kind = str(rec["kind"])
            if "b64" in rec:
                data = base64.b64decode(rec["b64"])
            else:
                text = rec["text"]
                data = text.encode("utf-8") if isinstance(text, str) else orjson.dumps(text)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
            if cut is not None and not raw.endswith(b"\n"):
                cut.append(True)
                return
            raise CaptureError(f"line {lineno}: not a capture record ({e})") from e
        yield Record(t, kind, data, bool(rec.get("partial", False)), lineno)
