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
