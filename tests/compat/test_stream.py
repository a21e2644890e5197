"""``stream-events``: partial messages as Claude Code 2.1.220 streams them (issue 12).

The frames are shaped like cbc 2.163.0's with ``--include-partial-messages`` (raw runs of
``scenarios/partial-tool-only``, ``thinking-partial``, ``partial-messages``): a phantom empty
text block in ``message_start``, the first block at index 1 when the reply is a tool call
alone, an empty ``input_json_delta`` first in each tool block, a second parallel call at the
index of the first, ``stop_reason: end_turn`` on a tool call, and the assistant frames
after ``message_stop``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.engine import Engine, Write
from compat.profiles import build, parse_rule_settings
from tests.compat.tasks_support import (
    SID,
    cbc_message,
    det_env,
    full_engine,
    lines,
    out,
    result,
    stream_event,
)

ev = stream_event


def start_msg(mid: str) -> dict[str, Any]:
    return ev({"type": "message_start", "message": cbc_message(mid)})


def block_start(i: int, block: dict[str, Any]) -> dict[str, Any]:
    return ev({"type": "content_block_start", "index": i, "content_block": block})


def delta(i: int, d: dict[str, Any]) -> dict[str, Any]:
    return ev({"type": "content_block_delta", "index": i, "delta": d})


def block_stop(i: int) -> dict[str, Any]:
    return ev({"type": "content_block_stop", "index": i})


def msg_end(reason: str = "end_turn") -> list[dict[str, Any]]:
    return [
        ev(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": {"output_tokens": 3},
            }
        ),
        ev({"type": "message_stop"}),
    ]


def tool_block(use_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": "Bash", "input": {}}


def tool_deltas(i: int, command: str) -> list[dict[str, Any]]:
    text = json.dumps({"command": command})
    return [
        delta(i, {"type": "input_json_delta", "partial_json": ""}),
        delta(i, {"type": "input_json_delta", "partial_json": text[:9]}),
        delta(i, {"type": "input_json_delta", "partial_json": text[9:]}),
    ]


def assistant(mid: str, block: dict[str, Any], stop: str | None = None) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": f"a-{mid}-{block.get('id') or block['type']}",
        "session_id": SID,
        "message": {
            "id": mid,
            "content": [block],
            "model": "default-model",
            "role": "assistant",
            "stop_reason": stop,
            "stop_sequence": None,
            "type": "message",
            "usage": {"input_tokens": 12, "output_tokens": 3},
        },
        "parent_tool_use_id": None,
    }


def bash(use_id: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": "Bash", "input": {"command": command}}


def label(f: dict[str, Any]) -> str:
    t = f["type"]
    if t == "stream_event":
        e = f["event"]
        idx = f" {e['index']}" if "index" in e else ""
        d = e.get("delta") or e.get("content_block") or {}
        extra = f" {d['type']}" if "type" in d else ""
        if e["type"] == "message_delta":
            extra = f" {d['stop_reason']}"
        return f"{e['type']}{idx}{extra}"
    if t == "assistant":
        b = f["message"]["content"][0]
        return f"assistant {b.get('id') or b['type']}"
    if t == "system":
        return f"{f['subtype']} {f.get('status') or ''}".strip()
    return str(t)


def stream_only(frames: list[dict[str, Any]]) -> list[str]:
    return [label(f) for f in frames if f["type"] in ("stream_event", "assistant", "system")]


def test_a_tool_only_reply_streams_from_index_0_and_ends_tool_use() -> None:
    eng = full_engine()
    frames = [
        start_msg("m1"),
        block_start(1, tool_block("call_1")),
        *tool_deltas(1, "echo hi"),
        block_stop(1),
        *msg_end(),
        assistant("m1", bash("call_1", "echo hi"), stop="tool_use"),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert stream_only(got) == [
        "status requesting",
        "message_start",
        "content_block_start 0 tool_use",
        "content_block_delta 0 input_json_delta",
        "content_block_delta 0 input_json_delta",
        "assistant call_1",
        "content_block_stop 0",
        "message_delta tool_use",
        "message_stop",
    ]
    assert got[1]["event"]["message"]["content"] == []
    assert all(f["event"]["delta"]["partial_json"] for f in got[3:5])
    # the input the client rebuilds from the deltas is the call's input
    rebuilt = "".join(f["event"]["delta"]["partial_json"] for f in got[3:5])
    assert json.loads(rebuilt) == {"command": "echo hi"}
    stats = eng.statistics()["rules"]["stream-events"]
    assert stats["dropped"] == 1  # the empty input_json_delta
    assert stats["held"] == stats["released"] == 3  # the stop, message_delta, message_stop


def test_parallel_calls_at_one_index_become_two_blocks_each_closed_before_the_next() -> None:
    eng = full_engine()
    thinking = {"type": "thinking", "thinking": "", "signature": ""}
    frames = [
        start_msg("m1"),
        block_start(0, thinking),
        delta(0, {"type": "thinking_delta", "thinking": "Two commands."}),
        block_stop(0),
        block_start(1, {"type": "text", "text": ""}),
        delta(1, {"type": "text_delta", "text": "Running both."}),
        block_stop(1),
        block_start(2, tool_block("call_2")),
        *tool_deltas(2, "echo one"),
        block_start(2, tool_block("call_3")),  # cbc: the same index, no stop before it
        *tool_deltas(2, "echo two"),
        block_stop(2),
        *msg_end(),
        assistant("m1", {"type": "thinking", "thinking": "Two commands.", "signature": ""}),
        assistant("m1", {"type": "text", "text": "Running both."}),
        assistant("m1", bash("call_2", "echo one"), stop="tool_use"),
        assistant("m1", bash("call_3", "echo two"), stop="tool_use"),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert stream_only(got) == [
        "status requesting",
        "message_start",
        "content_block_start 0 thinking",
        "content_block_delta 0 thinking_delta",
        "assistant thinking",
        "content_block_stop 0",
        "content_block_start 1 text",
        "content_block_delta 1 text_delta",
        "assistant text",
        "content_block_stop 1",
        "content_block_start 2 tool_use",
        "content_block_delta 2 input_json_delta",
        "content_block_delta 2 input_json_delta",
        "assistant call_2",
        "content_block_stop 2",
        "content_block_start 3 tool_use",
        "content_block_delta 3 input_json_delta",
        "content_block_delta 3 input_json_delta",
        "assistant call_3",
        "content_block_stop 3",
        "message_delta tool_use",
        "message_stop",
    ]
    # a client rebuilding blocks by index gets both calls, each with its own input
    inputs: dict[int, str] = {}
    for f in got:
        e = f.get("event") or {}
        if e.get("type") == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
            inputs[e["index"]] = inputs.get(e["index"], "") + e["delta"]["partial_json"]
    assert {i: json.loads(v)["command"] for i, v in inputs.items()} == {
        2: "echo one",
        3: "echo two",
    }
    assert eng.statistics()["rules"]["stream-events"]["synthesized"] == 2  # status, a stop


def test_a_block_cbc_writes_no_assistant_frame_for_gets_final_answers_frame_before_its_stop() -> (
    None
):
    """cbc sometimes writes no assistant frame for the text after a thinking block: the
    frame final-answer makes of the result is the streamed message's, and what waits for
    it goes out behind it, before the turn's result, Claude's order."""
    eng = full_engine()
    frames = [
        start_msg("m1"),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "Hm."}),
        block_stop(0),
        block_start(1, {"type": "text", "text": ""}),
        delta(1, {"type": "text_delta", "text": "brief answer"}),
        block_stop(1),
        *msg_end(),
        assistant("m1", {"type": "thinking", "thinking": "Hm.", "signature": ""}),
        result(result="brief answer"),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    labels = [label(f) for f in got if f["type"] != "command_lifecycle"]
    assert labels[-6:] == [
        "content_block_delta 1 text_delta",
        "assistant text",  # final-answer: the text's frame, from the result
        "content_block_stop 1",
        "message_delta end_turn",
        "message_stop",
        "result",
    ]
    assert labels.index("assistant thinking") < labels.index("content_block_stop 0")
    (text,) = [
        f for f in got if f["type"] == "assistant" and f["message"]["content"][0]["type"] == "text"
    ]
    assert text["message"]["id"] == "m1"


def test_held_events_are_released_after_hold_seconds_without_their_frame() -> None:
    eng = full_engine(["stream-events.hold=2"])
    frames = [
        start_msg("m1"),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "hi"}),
        block_stop(0),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert "content_block_stop 0" not in stream_only(got)
    deadline = eng.next_deadline()
    assert deadline == 2.0
    later = out(eng.advance(deadline))
    assert [label(f) for f in later] == ["content_block_stop 0"]


def claude_order_message() -> list[dict[str, Any]]:
    """A message streamed as Claude streams it: a requesting status first, indices from 0,
    no phantom content, the block's assistant frame before its stop, ``tool_use``."""
    start = start_msg("m1")
    start["event"]["message"]["content"] = []
    return [
        {"type": "system", "subtype": "status", "status": "requesting", "session_id": SID},
        start,
        block_start(0, tool_block("toolu_1")),
        delta(0, {"type": "input_json_delta", "partial_json": '{"command":"ls"}'}),
        assistant("m1", bash("toolu_1", "ls")),
        block_stop(0),
        *msg_end("tool_use"),
    ]


def test_claude_order_passes_byte_identical() -> None:
    """A backend that already writes each block's assistant frame before its stop, with
    indices from 0, no phantom content and the right stop_reason: nothing changes."""
    up, down = build("cbc-to-claude", parse_rule_settings([]))
    stage = next(s for s in down if s.rule == "stream-events")
    eng = Engine([], [stage], det_env(), strict=True)
    data = lines(*claude_order_message())
    cmds = eng.feed("backend", data, 0.0)
    assert b"".join(c.data for c in cmds if isinstance(c, Write) and c.side == "client") == data


def test_claude_order_streams_as_fast_lines_and_as_the_frame_way_would() -> None:
    """In Claude's order only the status, the message's start and the assistant frame take
    the frame way: a block's start, its deltas and stop and the message's end pass on
    their bytes (stream-events keeps their state from the line), with the output and
    counts of the frame way."""
    from compat.pipeline import Pipeline

    frames = [
        *claude_order_message(),
        start_msg("m2"),  # (a next message: the first one's state was kept right)
        block_start(1, {"type": "text", "text": ""}),
        delta(1, {"type": "text_delta", "text": "ok"}),
        block_stop(1),
        assistant("m2", {"type": "text", "text": "ok"}),
        *msg_end(),
    ]
    data = lines(*frames)
    taken: list[str] = []
    one = Pipeline._one

    def spy(self: Pipeline, frame, at, ctx, out_):  # type: ignore[no-untyped-def]
        if at == 0 or frame.raw:
            taken.append(label(frame.obj))
        one(self, frame, at, ctx, out_)

    results = []
    for fast in (True, False):
        up, down = build("cbc-to-claude", parse_rule_settings([]))
        stage = next(s for s in down if s.rule == "stream-events")
        eng = Engine([], [stage], det_env(), strict=True)
        eng.pipelines["down"].use_fast = fast
        taken.clear()
        with pytest.MonkeyPatch.context() as m:
            m.setattr(Pipeline, "_one", spy)
            cmds = eng.feed("backend", data, 0.0)
        results.append((out(cmds), eng.statistics(), list(taken)))
    (fast_out, fast_stats, fast_taken), (frame_out, frame_stats, _) = results
    assert fast_out == frame_out
    assert fast_stats == frame_stats
    assert fast_taken[:3] == ["status requesting", "message_start", "assistant toolu_1"]
    assert "content_block_stop 0" not in fast_taken  # its assistant frame had passed
    assert "message_stop" not in fast_taken[:4]
    assert stream_only(fast_out)[-6:] == [
        "content_block_start 0 text",  # renumbered from cbc's 1 (the frame way's work)
        "content_block_delta 0 text_delta",
        "assistant text",
        "content_block_stop 0",
        "message_delta end_turn",
        "message_stop",
    ]


def _old_release(held: list[tuple[Any, Any]], match: Any, frame: Any) -> list[Any]:
    """stream-events' release at an assistant frame before: a ``pop(0)`` per frame."""
    out: list[Any] = []
    while held:
        held_frame, stops = held[0]
        if stops == match:
            break
        held.pop(0)
        out.append(held_frame)
    out.append(frame)
    out.append(held.pop(0)[0])
    while held and held[0][1] is None:
        out.append(held.pop(0)[0])
    return out


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.none() | st.integers(0, 3), max_size=12), st.integers(0, 3))
def test_the_frames_released_at_an_assistant_frame_are_the_old_ones(
    stops: list[int | None], match: int
) -> None:
    from compat.stages.stream import _release_to

    if match not in stops:
        stops = [*stops, match]
    held = [(f"f{i}", c) for i, c in enumerate(stops)]
    old_held = list(held)
    new = _release_to(held, match, "assistant")  # type: ignore[arg-type]
    assert (new, held) == (_old_release(old_held, match, "assistant"), old_held)


def test_many_frames_held_behind_a_stop_are_released_at_once() -> None:
    """A block's stop held for its assistant frame, then a million frames of the message
    behind it: they were released one ``pop(0)`` each (2.8 s for 160,000 through the
    engine, quadratic); this returns."""
    from compat.frames import Frame
    from compat.stages.stream import _release_to

    f = Frame(raw=b"{}")
    held: list[tuple[Frame, Any]] = [(f, 0), *((f, None) for _ in range(1_000_000)), (f, 1)]
    assert len(_release_to(held, 0, f)) == 1_000_002
    assert held == [(f, 1)]


def test_messages_that_never_end_are_followed_at_most_max_streams_at_once() -> None:
    """A thread's message with no ``message_stop`` (a cut stream, an interrupted
    sub-agent) was kept for the session, and every frame's plain check walked them all:
    past ``MAX_STREAMS`` the first started is forgotten, what it held released first."""
    from compat.stages.stream import MAX_STREAMS, StreamEvents

    eng = full_engine()
    (stage,) = [s for s in eng.pipelines["down"].stages if isinstance(s, StreamEvents)]
    held = [
        ev({"type": "message_start", "message": cbc_message("m-first")}, "first"),
        ev(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "first",
        ),
        ev({"type": "content_block_stop", "index": 0}, "first"),  # held: no assistant frame
        ev({"type": "message_stop"}, "first"),
    ]
    got = out(eng.feed("backend", lines(*held), 0.0))
    assert [f["event"]["type"] for f in got] == ["message_start", "content_block_start"]
    threads = [
        ev({"type": "message_start", "message": cbc_message(f"m{i}")}, f"agent-{i}")
        for i in range(MAX_STREAMS + 50)
    ]
    got = out(eng.feed("backend", lines(*threads), 0.1))
    assert len(stage._streams) == MAX_STREAMS
    assert "first" not in stage._streams
    # the first thread's held stop and message_stop came out, before the message_start
    # that made room for them
    kinds = [(f["parent_tool_use_id"], f["event"]["type"]) for f in got]
    at = kinds.index(("first", "content_block_stop"))
    assert kinds[at : at + 3] == [
        ("first", "content_block_stop"),
        ("first", "message_stop"),
        (f"agent-{MAX_STREAMS - 1}", "message_start"),
    ]
    assert eng.statistics()["rules"]["stream-events"]["streams-forgotten"] == 51


# -- the facts read from a line's bytes, and the plain state kept ----------------------

_EVENT_TYPES = (
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)


@st.composite
def _json_text(draw: st.DrawFn, value: Any) -> str:
    """``value`` as JSON text, its strings (keys too) written with or without ``\\u``
    escapes, some of its characters or all of them."""
    if isinstance(value, str):
        mode = draw(st.sampled_from(("plain", "plain", "escaped", "some")))
        chars = []
        for ch in value:
            escape = mode == "escaped" or (mode == "some" and draw(st.booleans()))
            if escape and ord(ch) < 0x10000:
                chars.append(f"\\u{ord(ch):04x}")
            else:
                chars.append(json.dumps(ch, ensure_ascii=False)[1:-1])
        return '"' + "".join(chars) + '"'
    if isinstance(value, dict):
        pairs = [(k, draw(_json_text(v))) for k, v in value.items()]
        return draw(_object(pairs))
    if isinstance(value, list):
        return "[" + ",".join(draw(_json_text(v)) for v in value) + "]"
    return json.dumps(value)


@st.composite
def _object(draw: st.DrawFn, pairs: list[tuple[str, str]]) -> str:
    """An object of ``pairs`` (key, value as JSON text), keys maybe escaped, in an order
    drawn (a key may come twice: the last one counts)."""
    pairs = draw(st.permutations(pairs))
    return "{" + ",".join(f"{draw(_json_text(k))}:{v}" for k, v in pairs) + "}"


@st.composite
def _field(draw: st.DrawFn, key: str, values: st.SearchStrategy[str]) -> list[tuple[str, str]]:
    """``key`` absent, once or twice (with another value), each value drawn."""
    return [(key, draw(values)) for _ in range(draw(st.sampled_from((0, 1, 1, 1, 2))))]


def _text_of(values: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    return values.flatmap(_json_text)


#: a lone surrogate escape (half an emoji: only the standard library's parser reads it)
_LONE = st.just('"\\ud83d"')


@st.composite
def _dict_of(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[str]]) -> str:
    pairs: list[tuple[str, str]] = []
    for key, values in fields.items():
        pairs += draw(_field(key, values))
    pairs += [(k, draw(_text_of(_VALUES))) for k in draw(st.lists(st.text(max_size=3)))]
    return draw(_object(pairs))


def _events() -> st.SearchStrategy[str]:
    anything = _text_of(_VALUES) | _LONE
    block = _dict_of(
        {
            "type": _text_of(st.sampled_from(("text", "tool_use", "server_tool_use"))) | anything,
            "id": _text_of(st.sampled_from(("t1", "t2"))) | anything,
        }
    )
    delta = _dict_of(
        {
            "type": _text_of(st.sampled_from(("input_json_delta", "text_delta"))) | anything,
            "partial_json": _text_of(st.sampled_from(("", "{}"))) | anything,
            "stop_reason": _text_of(st.sampled_from(("end_turn", "tool_use"))) | anything,
        }
    )
    event = _dict_of(
        {
            "type": _text_of(st.sampled_from(_EVENT_TYPES)) | anything,
            "index": _text_of(st.integers(0, 2)) | anything,
            "content_block": block | anything,
            "delta": delta | anything,
        }
    )
    return event | anything


@st.composite
def _stream_lines(draw: st.DrawFn) -> bytes:
    """A stream_event line, odd or not: its facts absent, twice, escaped, of any shape."""
    rest = draw(
        _dict_of(
            {
                "event": _events(),
                "parent_tool_use_id": _text_of(st.sampled_from(("agent", None)))
                | _text_of(_VALUES),
                "session_id": _text_of(st.just(SID)),
            }
        )
    )
    sep = "," if rest != "{}" else ""
    return ('{"type":"stream_event"' + sep + rest[1:]).encode()


@settings(max_examples=3000, deadline=None)
@given(_stream_lines())
def test_the_facts_read_from_a_line_are_those_of_its_parse(raw: bytes) -> None:
    """What stream-events reads of a line without parsing it (``_read_line``: the event's
    type, index, content block and delta, the thread) is what it would read of its parse
    (``_line_of``), value and type, for any line: duplicate keys (the last counts),
    escapes, other shapes; or nothing (then the frame is parsed)."""
    from compat.frames import loads
    from compat.stages.stream import _line_of, _read_line

    obj = loads(raw)
    assert isinstance(obj, dict)
    got = _read_line(raw)
    if got is not None:
        assert repr(got) == repr(_line_of(obj))


@pytest.mark.parametrize(
    ("raw", "index", "thread"),
    [
        (b'{"type":"stream_event","event":{"type":"content_block_stop","index":0}}', 0, None),
        (
            b'{"type":"stream_event","event":{"type":"content_block_stop","index":0,"index":1}}',
            1,
            None,
        ),
        (b'{"type":"stream_event","event":{"type":"content_block_stop","ind\\u0065x":2}}', 2, None),
        (
            b'{"type":"stream_event","parent_tool_use_id":"a","event":{"index":1},'
            b'"event":{"type":"content_block_stop","index":3},"parent_tool_use_id":"b"}',
            3,
            "b",
        ),
        (b'{"type":"stream_event","event":{"type":"content_block_stop","index":1.0}}', 1.0, None),
        (b'{"type":"stream_event","event":{"type":"content_block_stop","index":true}}', True, None),
    ],
)
def test_the_facts_of_a_line_are_read_as_json_parse_reads_them(
    raw: bytes, index: Any, thread: str | None
) -> None:
    from compat.stages.stream import _key, _read_line

    line = _read_line(raw)
    assert line is not None
    assert line.event is not None
    assert (line.event.type, line.event.index, _key(line.parent_tool_use_id)) == (
        "content_block_stop",
        index,
        thread,
    )
    assert type(line.event.index) is type(index)


def test_a_line_whose_facts_have_another_shape_is_left_to_the_parse() -> None:
    from compat.stages.stream import _read_line

    base = b'{"type":"stream_event","event":%s}'
    assert _read_line(base % b'"a string"') is None
    assert _read_line(base % b'{"type":"message_delta","delta":[1]}') is None
    assert _read_line(base % b'{"type":"message_delta","index":"\\ud83d"}') is None
    assert _read_line(base % b"null") is not None  # (no event: as the parse reads it)


_Op = tuple[str, int, str | None]
_OP = st.tuples(
    st.sampled_from(
        (
            "start",
            "block",
            "delta",
            "empty-json",
            "stop",
            "end",
            "message_stop",
            "assistant",
            "result",
            "status",
        )
    ),
    st.integers(0, 2),
    st.sampled_from((None, None, "agent")),
)


@st.composite
def _message(draw: st.DrawFn) -> list[_Op]:
    """One message's events as cbc orders them (each block's assistant frame after the
    message_stop, maybe missing) or as Claude does (before the block's stop)."""
    thread = draw(st.sampled_from((None, None, "agent")))
    blocks = draw(st.lists(st.integers(0, 2), max_size=3))
    claude = draw(st.booleans())
    ops: list[_Op] = [("start", 0, thread)]
    for i in blocks:
        ops += [("block", i, thread), ("empty-json", i, thread), ("delta", i, thread)]
        ops += [("assistant", i, thread)] if claude else []
        ops += [("stop", i, thread)]
    ops += [("end", draw(st.integers(0, 2)), thread), ("message_stop", 0, thread)]
    if not claude:
        ops += [("assistant", i, thread) for i in blocks if draw(st.booleans())]
    return ops


#: messages, whole or not, and stray events between them, threads interleaved
_OPS = st.lists(_message() | _OP.map(lambda op: [op]), max_size=8).map(
    lambda parts: [op for part in parts for op in part]
)


def _stream_of(ops: list[_Op]) -> list[dict[str, Any]]:
    """cbc-like stream frames from ``ops`` (any order: blocks reused, stops without
    starts, assistant frames before, after or without their stop, threads)."""
    frames: list[dict[str, Any]] = []
    message: dict[str | None, str] = {}
    for n, (op, i, thread) in enumerate(ops):
        mid = message.get(thread, "m-none")
        block = tool_block(f"toolu_{i}") if i else {"type": "text", "text": ""}
        if op == "start":
            mid = message[thread] = f"m{n}"
            frames.append(ev({"type": "message_start", "message": cbc_message(mid)}, thread))
        elif op == "block":
            frames.append(
                ev({"type": "content_block_start", "index": i, "content_block": block}, thread)
            )
        elif op in ("delta", "empty-json"):
            d = (
                {"type": "text_delta", "text": f"x{n}"}
                if op == "delta"
                else {"type": "input_json_delta", "partial_json": ""}
            )
            frames.append(ev({"type": "content_block_delta", "index": i, "delta": d}, thread))
        elif op == "stop":
            frames.append(ev({"type": "content_block_stop", "index": i}, thread))
        elif op == "end":
            reason = ("end_turn", "end_turn", "max_tokens")[i]
            frames.append(ev({"type": "message_delta", "delta": {"stop_reason": reason}}, thread))
        elif op == "message_stop":
            frames.append(ev({"type": "message_stop"}, thread))
        elif op == "assistant":
            frame = assistant(mid, block)
            frame["parent_tool_use_id"] = thread
            frames.append(frame)
        elif op == "result":
            frames.append(result())
        else:
            frames.append({"type": "system", "subtype": "status", "status": "requesting"})
    return frames


def _fresh_plain(stage: Any) -> bool:
    return not stage._any_held() and all(
        c == i for m in stage._streams.values() for i, c in m.open.items()
    )


def _run_stream(
    frames: list[dict[str, Any]], fast: bool, reference: bool
) -> tuple[list[dict[str, Any]], Any]:
    """``frames`` through stream-events alone, a line a feed; ``reference``: the way
    before, every frame parsed and the plain state found out again at each line."""
    from compat.stages import stream

    up, down = build("cbc-to-claude", parse_rule_settings([]))
    stage = next(s for s in down if s.rule == "stream-events")
    assert isinstance(stage, stream.StreamEvents)
    eng = Engine([], [stage], det_env(), strict=True)
    eng.pipelines["down"].use_fast = fast
    cmds = []
    with pytest.MonkeyPatch.context() as m:
        if reference:
            m.setattr(stream, "_read_line", lambda raw: None)
        for f in frames:
            if reference:
                stage._plain = None
            cmds += eng.feed("backend", lines(f), 0.0)
            if stage._plain is not None:  # what is kept is what would be found out
                assert stage._plain == _fresh_plain(stage), f
        cmds += eng.eof("backend", 1.0)
    return out(cmds), eng.statistics()["rules"].get("stream-events")


@settings(max_examples=400, deadline=None)
@given(_OPS)
def test_facts_read_from_the_bytes_and_the_plain_state_kept_change_nothing(
    ops: list[_Op],
) -> None:
    """stream-events reads the facts of a line from its bytes (on its fast lines and on
    the frame way) and keeps its plain state between frames; what it writes and counts is
    what the way before (every frame parsed, the plain state found out again at each line)
    writes and counts, for any stream, fast lines on or off."""
    frames = _stream_of(ops)
    expected = _run_stream(frames, False, True)
    assert _run_stream(frames, True, False) == expected
    assert _run_stream(frames, False, False) == expected
