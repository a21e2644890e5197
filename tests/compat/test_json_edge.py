"""JSON at the edge (issue 8, "No input crashes it"): what ``JSON.parse``/``JSON.stringify``
(both CLIs) take is what the bridge takes; a frame a rule rewrites is written whatever it
holds, or fails open.

- ``compat.frames.loads``: lone surrogate escapes, integers past 64 bits (every digit kept),
  numbers past a double (``1e400``), duplicate keys (the last one wins), nothing that is not
  JSON (``NaN``, invalid UTF-8);
- ``compat.frames.dumps``: any depth (orjson stops at 255), a lone surrogate written back as
  its ``\\udXXX`` escape, everything else byte for byte as orjson writes it;
- the engine: such frames reach the other side and are read for what they are; a rule's
  frame that cannot be encoded fails open (the original line passes, counted, logged);
  a line that is not JSON comes out byte-identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.engine import CloseBackendInput, Engine, Log
from compat.frames import Frame, JSONNumber, dumps, loads, prefix_kind
from compat.profiles import build, parse_rule_settings
from compat.stage import Context, Output, Stage

from .helpers import det_env, engine_for, written
from .session_support import drive, transcript_events

SURROGATE = '"\\ud83d"'  # what JSON.stringify writes for half an emoji


def nested(depth: int, leaf: Any = "x") -> Any:
    v = leaf
    for i in range(depth):
        v = [v] if i % 2 else {"k": v}
    return v


# -- loads / dumps ------------------------------------------------------------------------


def test_a_lone_surrogate_is_json_and_is_written_back_as_its_escape() -> None:
    obj = loads(b'{"t":"a\\ud83db","k\\udc00":1,"ok":"\\ud83d\\ude00"}')
    assert obj == {"t": "a\ud83db", "k\udc00": 1, "ok": "\U0001f600"}
    out = dumps(obj)
    out.decode("utf-8")  # never invalid UTF-8
    assert out == b'{"t":"a\\ud83db","k\\udc00":1,"ok":"\xf0\x9f\x98\x80"}'
    assert loads(out) == obj


def test_integers_past_64_bits_keep_every_digit() -> None:
    big = 123456789012345678901234567890
    raw = b'{"a":%d,"b":-9223372036854775809,"c":18446744073709551615,"d":1.5}' % big
    obj = loads(raw)
    assert obj == {"a": big, "b": -9223372036854775809, "c": 18446744073709551615, "d": 1.5}
    assert type(obj["a"]) is int
    assert dumps(obj) == raw
    huge = b"[" + b"7" * 5000 + b"]"  # past Python's int-string limit: kept as written
    got = loads(huge)
    assert got == [JSONNumber("7" * 5000)]
    assert dumps(got) == huge


def test_digits_in_strings_do_not_change_the_reading() -> None:
    raw = b'{"s":"12345678901234567890123","n":1}'
    assert loads(raw) == orjson.loads(raw)


def test_numbers_past_a_double_read_like_json_parse() -> None:
    assert loads(b"[1e400,-1e400]") == [float("inf"), float("-inf")]
    assert dumps(loads(b"[1e400]")) == b"[null]"  # JSON.stringify(Infinity) is null


def test_duplicate_keys_last_one_wins_like_json_parse() -> None:
    assert loads(b'{"type":"a","x":1,"type":"b"}') == {"type": "b", "x": 1}
    assert loads(b'{"type":"a","x":"\\ud83d","type":"b"}') == {"type": "b", "x": "\ud83d"}


@pytest.mark.parametrize(
    "raw",
    [
        b"[NaN]",
        b"[Infinity]",
        b'["\xff"]',
        b'["\xed\xa0\x80"]',
        b"\xef\xbb\xbf[1]",
        b"[1,]",
        b'{"a":1',
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_what_is_not_json_is_not_read(raw: bytes) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (the module's one error type)
        loads(raw)


def nested_text(depth: int, leaf: bytes) -> bytes:
    out = leaf
    for i in range(depth):
        out = b"[" + out + b"]" if i % 2 else b'{"k":' + out + b"}"
    return out


@pytest.mark.parametrize("depth", [254, 256, 300, 1023, 3000])
def test_any_depth_is_written_as_compact_json(depth: int) -> None:
    assert dumps(nested(depth, 1)) == nested_text(depth, b"1")
    assert dumps(nested(depth, "\ud83d")) == nested_text(depth, b'"\\ud83d"')


def test_the_slow_writer_is_orjson_for_what_orjson_writes() -> None:
    from compat.frames import _dumps_slow

    doc: dict[str, Any] = {
        "a": [1, -2.5, 1e-7, 1e20, True, None, 'é\u2028\x00\x7f"\\/', {}, []],
        "": {"x": 0},
    }
    assert _dumps_slow(doc) == orjson.dumps(doc)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**60), 10**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_dumps_then_loads_is_the_value_and_orjson_bytes_where_orjson_writes(v: Any) -> None:
    out = dumps(v)
    out.decode("utf-8")
    assert loads(out) == v
    try:
        expected = orjson.dumps(v)
    except orjson.JSONEncodeError:
        return
    from compat.frames import _dumps_slow

    assert _dumps_slow(v) == expected


def test_prefix_kind_is_only_a_guess_the_frame_reads_the_last_type() -> None:
    raw = b'{"type":"stream_event","x":1,"type":"assistant"}'
    assert prefix_kind(raw) == ("stream_event", None)  # the cheap read...
    assert Frame(raw).kind() == ("assistant", None)  # ...a frame without a kind is parsed


# -- through the engine -------------------------------------------------------------------


def simple_session(reference: Path) -> list[tuple[float, str, bytes]]:
    name = "mockoai_simple-success-eof.transcript.jsonl"
    return transcript_events(reference / "cbc-2.163.0" / name)


def full_engine(strict: bool = True) -> Engine:
    up, down = build("cbc-to-claude", parse_rule_settings(()))
    return Engine(up, down, det_env(), strict=strict)


def test_a_client_line_with_a_lone_surrogate_reaches_the_backend(reference: Path) -> None:
    events = simple_session(reference)
    user = next(i for i, e in enumerate(events) if e[1] == "client" and b'"type":"user"' in e[2])
    t, side, data = events[user]
    data = data.replace(b'"content":"hello"', b'"content":"hello \\ud83d"')
    assert b"\\ud83d" in data
    events[user] = (t, side, data)
    eng = full_engine()
    cmds: list[Any] = []
    for t, side, data in events[: user + 1]:
        cmds += eng.feed(side, data, t)  # type: ignore[arg-type]
    assert data in written(cmds, "backend")  # verbatim: the turn starts
    assert eng.statistics()["rules"].get("stdin-vocabulary", {}) == {}


def test_a_result_with_a_lone_surrogate_is_seen_as_the_result(reference: Path) -> None:
    events = simple_session(reference)
    i = next(i for i, e in enumerate(events) if e[2].startswith(b'{"type":"result"'))
    t, side, data = events[i]
    assert b'"result":"ok"' in data
    events[i] = (t, side, data.replace(b'"result":"ok"', b'"result":"ok \\ud83d"'))
    eof = next(t for t, k, _ in events if k == "eof")
    run = drive(full_engine(), events, until=700.0)
    results = [f for f in run.frames() if f.get("type") == "result"]
    assert len(results) == 1  # not a second one synthesized at the end
    assert results[0]["result"] == "ok \ud83d"  # rewritten (result-shape), escape written back
    raw = next(r for _, r in run.raw if r.startswith(b'{"type":"result"'))
    raw.decode("utf-8")
    assert b'"result":"ok \\ud83d"' in raw
    closes = [t for t, c in run.commands if isinstance(c, CloseBackendInput)]
    assert closes
    assert closes[0] - eof < 5


def test_deep_nesting_and_big_integers_in_a_rewritten_frame(reference: Path) -> None:
    events = simple_session(reference)
    i = next(i for i, e in enumerate(events) if e[2].startswith(b'{"type":"result"'))
    t, side, data = events[i]
    deep = dumps(nested(300))
    big = b"123456789012345678901234567890"
    data = data.replace(b'"result":"ok"', b'"result":"ok","deep":' + deep + b',"big":' + big)
    events[i] = (t, side, data)
    eng = full_engine()
    run = drive(eng, events[: i + 1])
    raw = next(r for _, r in run.raw if r.startswith(b'{"type":"result"'))
    assert eng.statistics()["rules"]["result-shape"]["rewritten"] == 1  # rewritten, written
    assert b'"deep":' + deep in raw
    assert b'"big":' + big in raw
    assert loads(raw)["big"] == int(big)


@attrs.define
class Breaks(Stage):
    """A rule that builds a frame that is not JSON (a set inside), and invents one."""

    rule: ClassVar[str] = "breaks"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        bad = frame.replace({**frame.obj, "bad": {1, 2}})
        return (bad, Frame.synth({"type": "system", "subtype": "x", "bad": {3}}, self.rule))


def test_a_frame_that_cannot_be_encoded_fails_open() -> None:
    line = b'{"type":"assistant","message":{"content":[]}}\n'
    ok = b'{"type":"user","message":{}}\n'
    eng = Engine([], [Breaks()], det_env(), strict=False)
    cmds = eng.feed("backend", line + ok, 0.0)
    assert written(cmds) == line + ok  # the original line passes; the invented one is dropped
    stats = eng.statistics()
    assert stats["rules"]["breaks"]["errors"] == 2
    assert stats["rules"]["breaks"]["dropped"] == 1
    assert stats["frames"]["down"] == {"in": 2, "out": 2}
    logs = [c for c in cmds if isinstance(c, Log) and c.rule == "breaks"]
    assert logs
    assert all(c.level == "error" for c in logs)


def test_an_encode_failure_escapes_a_strict_engine() -> None:
    eng = Engine([], [Breaks()], det_env(), strict=True)
    with pytest.raises(Exception, match="breaks"):
        eng.feed("backend", b'{"type":"assistant","message":{"content":[]}}\n', 0.0)


def test_duplicate_type_keys_are_read_as_the_client_reads_them() -> None:
    eng = engine_for()
    line = (
        b'{"type":"stream_event","session_id":"s","type":"assistant","message":{"id":"m",'
        b'"role":"assistant","content":[{"type":"text","text":"hi"}]},'
        b'"parent_tool_use_id":null,"uuid":"u1",'
        b'"__timestamp":"2026-01-01T00:00:00.000Z"}\n'
    )
    out = json.loads(written(eng.feed("backend", line, 0.0)))
    assert out["type"] == "assistant"
    assert out["timestamp"] == "2026-01-01T00:00:00.000Z"  # frame-fields saw an assistant
    assert out["message"]["context_management"] is None


def test_a_duplicate_subtype_is_read_as_the_client_reads_it() -> None:
    eng = engine_for()
    line = (
        b'{"type":"system","subtype":"status","status":"requesting","uuid":"u",'
        b'"session_id":"s","subtype":"bogus_subtype"}\n'
    )
    cmds = eng.feed("backend", line, 0.0)
    assert written(cmds) == b""  # a system/bogus_subtype: not in the vocabulary, dropped
    assert eng.statistics()["rules"]["vocabulary"]["dropped:system/bogus_subtype"] == 1


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type":"assistant","message":{"content":[,"_requestId":"r","__timestamp":"t"}',
        b'{"type":"stream_event","event":{"x":[1,2}],"__timestamp":"2026-01-01T00:00:00Z"}',
        b'{"type":"stream_event","event":{"x":"\xff"},"__timestamp":"2026-01-01T00:00:00Z"}',
        b'{"type":"stream_event","event":{},"x":NaN,"__timestamp":"2026-01-01T00:00:00Z"}',
        b'{"type":"user","message":{},"_meta":{},"__timestamp":"t"} trailing',
    ],
)
def test_a_line_that_is_not_json_comes_out_byte_identical(raw: bytes) -> None:
    eng = engine_for()
    cmds = eng.feed("backend", raw + b"\n", 0.0)
    assert written(cmds) == raw + b"\n"
    assert eng.statistics()["rules"]["framing"]["invalid-down"] == 1


def test_private_fields_still_cut_a_line_with_a_lone_surrogate() -> None:
    eng = engine_for()
    line = b'{"type":"stream_event","event":{"t":"\\ud83d"},"__timestamp":"2026-01-01T00:00:00Z"}'
    out = written(eng.feed("backend", line + b"\n", 0.0))
    assert out == b'{"type":"stream_event","event":{"t":"\\ud83d"}}\n'


@given(JSON_VALUES)
@settings(max_examples=300, deadline=None)
def test_loads_reads_what_the_standard_library_reads(value: Any) -> None:
    """Integers of any size, floats (shortest and long reprs), strings, nesting: the fast
    parser's reading is the standard library's (JSON.parse's numbers: a double, an integer
    kept whole)."""
    for text in (json.dumps(value), json.dumps(value, indent=1, ensure_ascii=False)):
        raw = text.encode()
        assert loads(raw) == json.loads(raw)
        assert repr(loads(raw)) == repr(json.loads(raw))  # (-0.0, int vs float)
