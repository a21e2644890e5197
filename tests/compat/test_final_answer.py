"""``final-answer``: the turn's answer cbc wrote only into its ``result`` (issue 12).

Shapes from the raw cbc 2.163.0 runs of ``scenarios/thinking`` (a thinking frame, then the
``result`` with ``brief answer`` and no text frame) and ``scenarios/parallel-tools`` (two
calls, their results, then ``result: "done."`` with no text frame).
"""

from __future__ import annotations

from typing import Any

from tests.compat.tasks_support import (
    SID,
    full_engine,
    init,
    lines,
    out,
    result,
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
