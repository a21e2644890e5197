"""``final-answer``: the turn's answer cbc wrote only into its ``result`` (issue 12).

Shapes from the raw cbc 2.163.0 runs of ``scenarios/thinking`` (a thinking frame, then the
``result`` with ``brief answer`` and no text frame) and ``scenarios/parallel-tools`` (two
calls, their results, then ``result: "done."`` with no text frame).
"""

from __future__ import annotations

import json
from typing import Any

from tests.compat.tasks_support import (
    SID,
    cbc_message,
    full_engine,
    init,
    lines,
    out,
    result,
    stream_event,
    tool_result,
    tool_use,
)


def _assistant(mid: str, block: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": f"a-{mid}-{block['type']}",
        "session_id": SID,
        "message": {
            "id": mid,
            "content": [block],
            "model": "default-model",
            "role": "assistant",
            "stop_reason": None,
            "type": "message",
            "usage": {"input_tokens": 12, "output_tokens": 3},
        },
        "parent_tool_use_id": None,
    }


def _kinds(frames: list[dict[str, Any]]) -> list[str]:
    return [
        f["type"] if f["type"] != "assistant" else f"assistant:{f['message']['content'][0]['type']}"
        for f in frames
        if f["type"] in ("assistant", "user", "result")
    ]


def test_text_after_thinking_that_cbc_did_not_write_joins_the_thinking_message() -> None:
    eng = full_engine()
    thinking = {"type": "thinking", "thinking": "The user wants a short answer.", "signature": ""}
    got = out(
        eng.feed(
            "backend",
            lines(init(), _assistant("m1", thinking), result(result="brief answer")),
            0.0,
        )
    )
    assert _kinds(got) == ["assistant:thinking", "assistant:text", "result"]
    text = [f for f in got if f["type"] == "assistant"][1]
    assert text["message"]["content"] == [{"type": "text", "text": "brief answer"}]
    assert text["message"]["id"] == "m1"
    assert text["message"]["stop_reason"] is None
    assert text["uuid"] != "a-m1-thinking"
    assert got[-1]["stop_reason"] == "end_turn"
    assert eng.statistics()["rules"]["final-answer"]["synthesized"] == 1


def test_answer_after_tool_calls_gets_a_message_of_its_own() -> None:
    eng = full_engine()
    frames = [
        init(),
        tool_use("call_2", "Read", {"file_path": "notes.txt"}),
        tool_use("call_3", "Bash", {"command": "echo parallel-bash"}),
        tool_result("call_2", "a note"),
        tool_result("call_3", "parallel-bash"),
        result(result="done."),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert _kinds(got)[-2:] == ["assistant:text", "result"]
    answer = [f for f in got if f["type"] == "assistant"][-1]
    assert answer["message"]["id"] != "m"
    assert answer["message"]["content"][0]["text"] == "done."
    assert got[-1]["stop_reason"] == "end_turn"


def test_a_written_answer_and_a_turn_without_model_output_are_left_alone() -> None:
    eng = full_engine()
    frames = [
        init(),
        _assistant("m1", {"type": "text", "text": "ok"}),
        result(result="ok"),
        init(),
        result(result="local command output"),  # no model output in the turn
        init(),
        _assistant("m2", {"type": "thinking", "thinking": "hm", "signature": ""}),
        result(result="x", is_error=True),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert _kinds(got) == ["assistant:text", "result", "result", "assistant:thinking", "result"]
    assert "final-answer" not in eng.statistics()["rules"]


# -- a streamed answer cbc wrote no frame for (--include-partial-messages) ------------------
#
# Shapes of cbc 2.163.0's stdout in tests/bridge/data/cbc-variants/streamed-answer-without-
# frame (a run of scenarios/thinking-partial): the first message (thinking, text, a call)
# streamed and then written as assistant frames after its message_stop; the call's result;
# the answer "done." streamed (message_start … message_stop) and then only the result.

START_USAGE = {
    "input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 0,
    "service_tier": "standard",
}


_ev = stream_event


def _streamed(
    mid: str, blocks: list[dict[str, Any]], parent: str | None = None, reason: str = "end_turn"
) -> list[dict[str, Any]]:
    """One message's stream events as cbc writes them (a phantom text block announced)."""
    out = [_ev({"type": "message_start", "message": cbc_message(mid, START_USAGE)}, parent)]
    for i, block in enumerate(blocks):
        kind = block["type"]
        if kind == "tool_use":
            start = {**block, "input": {}}
            d = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            d = {"type": "thinking_delta", "thinking": block["thinking"]}
        else:
            start = {"type": "text", "text": ""}
            d = {"type": "text_delta", "text": block["text"]}
        out += [
            _ev({"type": "content_block_start", "index": i, "content_block": start}, parent),
            _ev({"type": "content_block_delta", "index": i, "delta": d}, parent),
            _ev({"type": "content_block_stop", "index": i}, parent),
        ]
    out += [
        _ev(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": {"input_tokens": 12, "output_tokens": 3},
            },
            parent,
        ),
        _ev({"type": "message_stop"}, parent),
    ]
    return out


def _frame(mid: str, block: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    frame = _assistant(mid, block)
    frame["uuid"] = f"a-{mid}-{parent}-{block.get('id') or block['type']}"
    frame["parent_tool_use_id"] = parent
    return frame


THINKING = {"type": "thinking", "thinking": "Two commands are needed.", "signature": ""}
RUNNING = {"type": "text", "text": "Running both."}
CALL = {"type": "tool_use", "id": "call_2", "name": "Bash", "input": {"command": "echo one"}}
DONE = {"type": "text", "text": "done."}


def _first_message() -> list[dict[str, Any]]:
    return [
        *_streamed("m1", [THINKING, RUNNING, CALL]),
        _frame("m1", THINKING),
        _frame("m1", RUNNING),
        _frame("m1", CALL),
        tool_result("call_2", "one"),
    ]


def _label(f: dict[str, Any]) -> str:
    who = "" if f.get("parent_tool_use_id") is None else f"{f['parent_tool_use_id']}: "
    if f["type"] == "stream_event":
        e = f["event"]
        return who + " ".join([e["type"], *([str(e["index"])] if "index" in e else [])])
    if f["type"] == "assistant":
        b = f["message"]["content"][0]
        return f"{who}assistant {f['message']['id']} {b.get('text') or b.get('id') or b['type']}"
    return f"{who}{f['type']}"


def _labels(frames: list[dict[str, Any]]) -> list[str]:
    return [_label(f) for f in frames if f["type"] in ("stream_event", "assistant", "result")]


def _ends_after_its_frames(frames: list[dict[str, Any]]) -> None:
    """What a client that ties stream events to the finished message by ``message.id``
    relies on (the SDK accumulators, UIs): every streamed message's blocks have their
    assistant frame, under the message_start's id, before that message's message_stop."""
    open_ids: dict[Any, str] = {}
    framed: dict[str, int] = {}
    for f in frames:
        thread = f.get("parent_tool_use_id")
        if f["type"] == "stream_event" and f["event"]["type"] == "message_start":
            open_ids[thread] = f["event"]["message"]["id"]
        elif f["type"] == "assistant":
            framed[f["message"]["id"]] = framed.get(f["message"]["id"], 0) + 1
        elif f["type"] == "stream_event" and f["event"]["type"] == "message_stop":
            assert framed.get(open_ids[thread]), (thread, open_ids[thread])


def test_a_streamed_answer_without_frame_gets_the_streamed_messages_frame_before_its_stop() -> None:
    eng = full_engine()
    frames = [init(), *_first_message(), *_streamed("m2", [DONE]), result(result="done.")]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert _labels(got)[-7:] == [
        "content_block_start 0",
        "content_block_delta 0",
        "assistant m2 done.",  # after the block's last delta, before its stop: Claude's order
        "content_block_stop 0",
        "message_delta",
        "message_stop",
        "result",
    ]
    (answer,) = [f for f in got if f["type"] == "assistant" and f["message"]["id"] == "m2"]
    message = answer["message"]
    # what Claude's frame of a streamed message carries: its message_start's id, model, usage
    assert message["id"] == "m2"
    assert message["model"] == "default-model"
    assert message["usage"] == START_USAGE
    assert message["content"] == [DONE]
    assert message["stop_reason"] is None
    assert message["context_management"] is None
    assert answer["parent_tool_use_id"] is None
    assert answer["session_id"] == SID
    _ends_after_its_frames(got)
    rules = eng.statistics()["rules"]
    assert rules["final-answer"] == {"synthesized": 1}
    assert rules["stream-events"]["held"] == rules["stream-events"]["released"]
    assert got[-1]["stop_reason"] == "end_turn"


def test_a_streamed_message_of_several_blocks_gets_the_frame_of_its_text_block() -> None:
    """Thinking before the text in one message, cbc writing the thinking block's frame only:
    the text's frame joins the message, right before the text block's stop."""
    eng = full_engine()
    frames = [
        init(),
        *_streamed("m1", [THINKING, DONE]),
        _frame("m1", THINKING),
        result(result="done."),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert _labels(got) == [
        "message_start",
        "content_block_start 0",
        "content_block_delta 0",
        "assistant m1 thinking",
        "content_block_stop 0",
        "content_block_start 1",
        "content_block_delta 1",
        "assistant m1 done.",
        "content_block_stop 1",
        "message_delta",
        "message_stop",
        "result",
    ]
    _ends_after_its_frames(got)
    assert eng.statistics()["rules"]["final-answer"] == {"synthesized": 1}


def test_a_sub_agents_stream_is_not_the_answers_message() -> None:
    """A background agent's message streams (its thread: the Agent call) after the main
    thread's tool result and before the main thread's answer: the answer's frame is the
    main-thread message's, placed in its stream; the agent's message keeps its own frame."""
    eng = full_engine()
    sub_text = {"type": "text", "text": "working"}
    frames = [
        init(),
        *_first_message(),
        *_streamed("s1", [sub_text], parent="call_bg"),
        *_streamed("m2", [DONE]),
        _frame("s1", sub_text, parent="call_bg"),
        result(result="done."),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    labels = _labels(got)
    main = [x for x in labels if not x.startswith("call_bg: ")]
    sub = [x for x in labels if x.startswith("call_bg: ")]
    assert main[-7:] == [
        "content_block_start 0",
        "content_block_delta 0",
        "assistant m2 done.",
        "content_block_stop 0",
        "message_delta",
        "message_stop",
        "result",
    ]
    assert sub == [
        "call_bg: message_start",
        "call_bg: content_block_start 0",
        "call_bg: content_block_delta 0",
        "call_bg: assistant s1 working",
        "call_bg: content_block_stop 0",
        "call_bg: message_delta",
        "call_bg: message_stop",
    ]
    _ends_after_its_frames(got)
    assert eng.statistics()["rules"]["final-answer"] == {"synthesized": 1}


def test_a_sub_agents_text_without_frame_is_not_given_the_results_text() -> None:
    """The result is the main thread's: a sub-agent's streamed text cbc wrote no frame for
    is released before it as it streamed, and nothing is synthesized when the main thread
    wrote its answer."""
    eng = full_engine()
    frames = [
        init(),
        *_first_message(),
        *_streamed("s1", [{"type": "text", "text": "working"}], parent="call_bg"),
        *_streamed("m2", [DONE]),
        _frame("m2", DONE),
        result(result="done."),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert [x for x in _labels(got) if x.startswith("call_bg: ")] == [
        "call_bg: message_start",
        "call_bg: content_block_start 0",
        "call_bg: content_block_delta 0",
        "call_bg: content_block_stop 0",
        "call_bg: message_delta",
        "call_bg: message_stop",
    ]
    assert len([f for f in got if f["type"] == "assistant"]) == 4  # m1's three, m2's one
    assert "final-answer" not in eng.statistics()["rules"]


def test_a_streamed_answer_cbc_wrote_the_frame_for_is_left_alone() -> None:
    """Most runs: cbc writes the answer's frame after message_stop; stream-events puts it
    before the stop, and final-answer has nothing to do (the output is the one without it)."""
    frames = [
        init(),
        *_first_message(),
        *_streamed("m2", [DONE]),
        _frame("m2", DONE),
        result(result="done."),
    ]
    on, off = full_engine(), full_engine(["final-answer=off"])
    got = out(on.feed("backend", lines(*frames), 0.0))
    assert got == out(off.feed("backend", lines(*frames), 0.0))
    assert _labels(got)[-5:] == [
        "assistant m2 done.",
        "content_block_stop 0",
        "message_delta",
        "message_stop",
        "result",
    ]
    assert "final-answer" not in on.statistics()["rules"]


def test_without_partial_messages_the_answer_frame_is_as_before() -> None:
    """No stream events (twins thinking, parallel-tools): the frame comes after the turn's
    last frame, before the result, the thinking message's or one of its own; stream-events
    has nothing to place, so the output is the same without it."""
    frames = [
        init(),
        _frame("m1", THINKING),
        _frame("m1", RUNNING),
        _frame("m1", CALL),
        tool_result("call_2", "one"),
        result(result="done."),
    ]
    on, off = full_engine(), full_engine(["stream-events=off"])
    got = out(on.feed("backend", lines(*frames), 0.0))
    assert got == out(off.feed("backend", lines(*frames), 0.0))
    assert _kinds(got)[-3:] == ["user", "assistant:text", "result"]
    answer = [f for f in got if f["type"] == "assistant"][-1]
    assert answer["message"]["id"] not in ("m1", "m2")  # a message of its own
    assert answer["message"]["content"] == [DONE]
    assert on.statistics()["rules"]["final-answer"] == {"synthesized": 1}


def test_with_stream_events_off_the_frame_still_names_the_streamed_message() -> None:
    """final-answer's frame is the streamed message's whoever places it: with stream-events
    off nothing is held, and it comes after message_stop, before the result."""
    eng = full_engine(["stream-events=off"])
    frames = [init(), *_first_message(), *_streamed("m2", [DONE]), result(result="done.")]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert _labels(got)[-3:] == ["message_stop", "assistant m2 done.", "result"]
