"""``subagent-prompt`` and ``subagent-answer``: a foreground sub-agent's frames as Claude
writes them (twins subagent-foreground): its prompt as a user frame after the Agent call,
its last reply only in the call's result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from compat.playbook import Count, Hold, Out, Playbook, Timer
from compat.session import ToolUse

from .helpers import json_values
from .session_support import drive, full

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"


def _agent_call(cid: str, prompt: str, background: bool | None = False) -> dict[str, Any]:
    inp: dict[str, Any] = {"description": "d", "prompt": prompt, "subagent_type": "general"}
    if background is not None:
        inp["run_in_background"] = background
    return {"type": "tool_use", "id": cid, "name": "Agent", "input": inp}


def _assistant(*blocks: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "assistant",
        "parent_tool_use_id": parent,
        "message": {"id": "m", "role": "assistant", "content": list(blocks)},
    }


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _result(call: str, text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "parent_tool_use_id": None,
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call, "content": [_text(text)]}],
        },
    }


# -- subagent-prompt ------------------------------------------------------------------------


def test_a_foreground_agents_prompt_comes_before_its_first_frame_as_a_user_frame() -> None:
    pb = Playbook("subagent-prompt")
    call = _assistant(_text("delegating"), _agent_call("c1", "find it"), _agent_call("c2", "fix"))
    assert pb.frame(call) == [Out(call)]
    first = _assistant({"type": "tool_use", "id": "t", "name": "Bash", "input": {}}, parent="c1")
    got = pb.frame(first)
    assert got[0] == Count("prompt-frame")
    prompt, then = (r.frame for r in got[1:] if isinstance(r, Out))
    assert then == first
    assert prompt["type"] == "user"
    assert prompt["uuid"]
    assert (prompt["parent_tool_use_id"], prompt["message"]) == (
        "c1",
        {"role": "user", "content": [_text("find it")]},
    )
    assert pb.frame(first) == [Out(first)]  # once
    result = _result("c2", "fixed")  # c2's agent wrote no frame of its own
    assert [r.frame["parent_tool_use_id"] for r in pb.frame(result) if isinstance(r, Out)] == [
        "c2",
        None,
    ]


def test_a_cli_that_writes_the_prompt_itself_gets_no_second_one() -> None:
    pb = Playbook("subagent-prompt")
    pb.frame(_assistant(_agent_call("c1", "find it")))
    own = {
        "type": "user",
        "parent_tool_use_id": "c1",
        "message": {"role": "user", "content": [_text("find it")]},
    }
    assert pb.frame(own) == [Out(own)]
    assert pb.counts == {}


def test_background_agents_sub_agents_calls_and_other_tools_get_none() -> None:
    pb = Playbook("subagent-prompt")
    for frame in (
        _assistant(_agent_call("c1", "p", background=True)),
        _assistant(_agent_call("c2", "p"), parent="c0"),  # a sub-agent's own agent call
        _assistant({"type": "tool_use", "id": "c3", "name": "Bash", "input": {"prompt": "p"}}),
    ):
        pb.frame(frame)
    for call in ("c1", "c2", "c3"):
        frame = _assistant(_text("x"), parent=call)
        assert pb.frame(frame) == [Out(frame)]
    pb.frame(_assistant(_agent_call("c4", "p", background=None)))  # cbc's default: foreground
    assert len(pb.frame(_assistant(_text("x"), parent="c4"))) == 3


# -- subagent-answer ------------------------------------------------------------------------


def _answering(background: bool = False) -> Playbook:
    """``subagent-answer`` in a session that saw Agent call c1 (in the background or not)."""
    use = ToolUse("c1", "Agent", {"prompt": "p", "run_in_background": background})
    return Playbook("subagent-answer", facts={"tool_uses": {"c1": use}})


def test_the_agents_last_reply_is_dropped_when_the_calls_result_says_it() -> None:
    pb = _answering()
    reply = _assistant(_text("the answer"), parent="c1")
    assert pb.frame(reply) == [Hold(), Timer("release", 1.0)]
    result = _result("c1", "the answer\n\n[Agent ID: agent-1]")
    got = pb.frame(result)
    assert got[0] == Timer("release", None)  # (cancelled)
    assert got[-2:] == [Count("answer-frame-dropped"), Out(result)]
    assert pb.counts["dropped"] == pb.counts["released"] == 1


def test_a_reply_the_agent_goes_on_from_is_released_in_order() -> None:
    pb = _answering()
    first = _assistant(_text("looking"), parent="c1")
    call = _assistant({"type": "tool_use", "id": "t", "name": "Bash", "input": {}}, parent="c1")
    pb.frame(first)
    assert [r.frame for r in pb.frame(call) if isinstance(r, Out)] == [first, call]
    other = _result("c1", "something else")
    reply = _assistant(_text("the answer"), parent="c1")
    pb.frame(reply)
    assert [r.frame for r in pb.frame(other) if isinstance(r, Out)] == [reply, other]


def test_a_held_reply_is_let_go_after_wait_and_when_cbc_exits() -> None:
    pb = _answering()
    reply = _assistant(_text("the answer"), parent="c1")
    pb.frame(reply)
    assert [r.frame for r in pb.advance(1.0) if isinstance(r, Out)] == [reply]
    pb.frame(reply)
    assert [r.frame for r in pb.backend_exit(0) if isinstance(r, Out)] == [reply]


@given(
    st.lists(
        st.sampled_from(
            [
                _assistant(_text("a"), parent="c1"),
                _assistant(_text("a")),
                _result("c1", "a"),
                _result("c1", "b"),
                _result("c2", "a"),
                {"type": "result", "subtype": "success"},
            ]
        ),
        max_size=8,
    )
)
def test_every_frame_comes_out_once_in_order_or_is_the_dropped_reply(
    frames: list[dict[str, Any]],
) -> None:
    pb = _answering()
    out: list[Any] = []
    for f in frames:
        out += [r.frame for r in pb.frame(f) if isinstance(r, Out)]
    out += [r.frame for r in pb.backend_exit(0) if isinstance(r, Out)]
    assert len(out) + pb.counts.get("answer-frame-dropped", 0) == len(frames)
    kept = iter(out)
    assert all(any(g == f for g in kept) for f in out)


def test_a_background_agents_reply_and_an_unknown_parents_pass_at_once() -> None:
    reply = _assistant(_text("the answer"), parent="c1")
    assert _answering(background=True).frame(reply) == [Out(reply)]
    assert _answering().frame(_assistant(_text("x"), parent="c9"))[0] == Out(
        _assistant(_text("x"), parent="c9")
    )


# -- the twins ------------------------------------------------------------------------------


def _frames(path: Path, kind: str) -> list[tuple[float, dict[str, Any]]]:
    recs = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [(r["t"], json.loads(r["text"])) for r in recs if r.get("kind") == kind]


def _shape(frames: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    """(type, is a sub-agent's, first block's type) of the user and assistant frames."""
    out = []
    for f in frames:
        if f.get("type") in ("user", "assistant"):
            content = f["message"]["content"]
            first = content[0]["type"] if isinstance(content, list) else "string"
            out.append((f["type"], f.get("parent_tool_use_id") is not None, first))
    return out


def test_the_twins_sub_agent_frames_are_claudes() -> None:
    raw = TWINS / "subagent-foreground.cbc-raw.jsonl"
    events = [(t, "backend", (json.dumps(f) + "\n").encode()) for t, f in _frames(raw, "stdout")]
    events += [(t, "client", (json.dumps(f) + "\n").encode()) for t, f in _frames(raw, "stdin")]
    got = drive(full(), sorted(events, key=lambda e: e[0])).frames()
    claude = [f for _, f in _frames(TWINS / "subagent-foreground.claude.jsonl", "stdout")]
    assert _shape(got) == _shape(claude)
    [prompt] = [f for f in got if f.get("type") == "user" and f.get("parent_tool_use_id")][:1]
    [want] = [f for f in claude if f.get("type") == "user" and f.get("parent_tool_use_id")][:1]
    assert list(prompt) == list(want)
    assert prompt["message"] == want["message"]
    # (a sub-agent's tool result carries no record on Claude: frame-fields drops the one
    # bash-output wrote)
    subs = [f for f in got if f.get("type") == "user" and f.get("parent_tool_use_id")]
    assert len(subs) == 2
    assert not [f for f in subs if "tool_use_result" in f]


@given(json_values(text=4))
def test_any_content_passes_the_new_rules_without_error(content: Any) -> None:
    """A frame of any content (ids of any JSON type) is taken, never raised on."""
    for rule in (
        "subagent-prompt",
        "subagent-answer",
        "turn-usage",
        "exit-plan-mode",
        "plan-exit-status",
        "rev-foreground-agent",
        "rev-denied-interrupt",
        "compact-line",
        "compact-command",
        "local-slash-commands",
        "task-output-records",
    ):
        pb = Playbook(rule)
        pb.frame(_assistant(_agent_call("c1", "p")))
        odd = {"type": "tool_result", "tool_use_id": content, "content": content}
        for frame in (
            {"type": "user", "parent_tool_use_id": None, "message": {"content": [odd]}},
            {"type": "user", "parent_tool_use_id": None, "message": {"content": content}},
            {"type": "user", "parent_tool_use_id": None, "message": {"content": [content]}},
            {"type": "assistant", "parent_tool_use_id": "c1", "message": {"content": content}},
            {"type": "assistant", "parent_tool_use_id": None, "message": {"content": [odd]}},
            {"type": "system", "subtype": "task_started", "task_id": "t", "tool_use_id": content},
            {"type": "control_request", "request_id": "r", "request": content},
            {
                "type": "result",
                "subtype": "success",
                "usage": content,
                "permission_denials": content,
            },
        ):
            pb.frame(frame)
        pb.backend_exit(0)
