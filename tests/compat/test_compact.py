"""``compact-line`` and ``compact-command``: a ``/compact`` line's turn as Claude Code 2.1.220
writes it (twins slash-commands), cbc's own turn where its compaction did not succeed."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

from hypothesis import given

from compat.playbook import Count, Hold, Out, Playbook, outs
from compat.stages.compact import COMPACTED, CONTINUE, PREAMBLE, format_summary

from .helpers import json_values
from .session_support import drive, full, line_turn

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"
SID = "s1"
ANSWER = "<analysis>two greetings</analysis>\n<summary>1. Primary Request: hello.</summary>"


def _line(content: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}, "session_id": ""}


def _init(tools: list[str]) -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "session_id": SID, "tools": tools}


def _assistant(text: str, usage: dict[str, int], uuid: str = "a1") -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parent_tool_use_id": None,
        "message": {"id": "m-" + uuid, "content": [{"type": "text", "text": text}], "usage": usage},
    }


def _result(text: str, **more: Any) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": text,
        "session_id": SID,
        "num_turns": 1,
        "stop_reason": "end_turn",
        "terminal_reason": "completed",
        "api_error_status": None,
        "user_message_uuid": "line-5",
        "duration_api_ms": 40,
        "usage": {"input_tokens": 12, "output_tokens": 3, "service_tier": "standard"},
        **more,
    }


def _compacting(turn: int = 2) -> Playbook:
    """compact-command in a session whose client turn ``turn`` is a /compact line's."""
    return Playbook(
        "compact-command",
        facts={
            "session_id": SID,
            "control.turns": turn,
            "control.client_turns": turn,
            "control.turn_from_client": True,
            "control.compact_lines": deque([turn]),
        },
    )


def test_the_summary_is_formatted_as_claude_formats_it() -> None:
    assert format_summary(ANSWER) == "Summary:\n1. Primary Request: hello."
    assert format_summary("intro\n<summary>\n x \n</summary>\n\n\n\nafter") == (
        "intro\nSummary:\nx\n\nafter"
    )
    assert format_summary("<analysis>a</analysis> no summary here") is None


def test_compact_line_notes_compact_lines_by_their_number() -> None:
    pb = Playbook("compact-line")
    for content in (
        "hello",
        "/compact",
        " /compact focus on tests ",
        "/compacted",
        [{"type": "text", "text": "/compact"}],
        [{"type": "image"}],
        None,
        # text blocks: the last is the input, as Claude (and local-slash-commands) read it
        [{"type": "text", "text": "context"}, {"type": "text", "text": "/compact"}],
        [{"type": "text", "text": "/compact"}, {"type": "image"}],
    ):
        pb.frame(_line(content))
    assert list(pb.state.control.compact_lines) == [2, 3, 5, 8]
    assert pb.counts == {"compact": 4}


def test_a_compaction_turn_is_claudes() -> None:
    pb = _compacting()
    pb.set_facts({"control.turns": 1, "control.client_turns": 1})  # the turn before
    pb.frame(_init(["Read", "Write"]))
    pb.set_facts({"control.last_init": _init(["Read", "Write"])})  # (control-state's)
    pb.frame(_assistant("more", {"input_tokens": 200, "output_tokens": 4}, uuid="prev"))
    pb.set_facts({"control.turns": 2, "control.client_turns": 2})
    assert pb.frame(_init(["Read"]), at=1.0) == [Hold()]
    assert pb.frame(_assistant(ANSWER, {"input_tokens": 9, "output_tokens": 30}), at=1.2) == [
        Hold()
    ]
    got = outs(pb.frame(_result(ANSWER), at=1.5))
    kinds = [(f["type"], f.get("subtype")) for f in got]
    assert kinds == [
        ("system", "status"),
        ("system", "status"),
        ("system", "init"),
        ("system", "compact_boundary"),
        ("user", None),
        ("user", None),
        ("result", "success"),
    ]
    assert got[0]["status"] == "compacting"
    assert got[1]["status"] is None
    assert got[1]["compact_result"] == "success"
    assert got[2]["tools"] == ["Read", "Write"]  # the session's, not the compaction agent's
    meta = got[3]["compact_metadata"]
    assert meta == {
        "trigger": "manual",
        "pre_tokens": 204,
        "post_tokens": 30,
        "cumulative_dropped_tokens": 174,
        "duration_ms": 500,
    }
    assert got[3]["logical_parent_uuid"] == "prev"
    summary = PREAMBLE + "Summary:\n1. Primary Request: hello." + CONTINUE
    assert got[4]["message"] == {"role": "user", "content": summary}
    assert (got[4]["isReplay"], got[4]["isSynthetic"]) == (False, True)
    assert got[5]["message"]["content"] == COMPACTED
    assert got[5]["isReplay"] is True
    result = got[6]
    assert (result["result"], result["num_turns"], result["stop_reason"]) == ("", 0, None)
    assert result["duration_api_ms"] == 0
    assert result["usage"] == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    }
    assert not {"terminal_reason", "api_error_status", "user_message_uuid"} & result.keys()
    assert pb.counts["compacted"] == 1


def test_a_compaction_that_did_not_succeed_is_left_as_cbc_wrote_it() -> None:
    for result in (
        _result("Nothing to compact yet."),  # no <summary>: an empty session's answer, say
        _result(ANSWER, subtype="error_during_execution", is_error=True),  # interrupted
    ):
        pb = _compacting()
        init, answer = _init(["Read"]), _assistant(result["result"], {"output_tokens": 3})
        pb.frame(init)
        pb.frame(answer)
        assert outs(pb.frame(result)) == [init, answer, result]
        assert pb.counts["left-as-cbc-wrote-it"] == 1


def test_other_turns_pass_and_the_backend_exit_releases_what_was_held() -> None:
    pb = _compacting()
    pb.set_facts({"control.compact_lines": deque([1])})  # another turn's line
    assert pb.frame(_result("hi")) == [Out(_result("hi"))]
    pb = _compacting()
    pb.set_facts({"control.turn_from_client": False})  # a turn cbc started by itself
    assert pb.frame(_init([])) == [Out(_init([]))]
    pb = _compacting()
    pb.frame(_init(["Read"]))
    assert outs(pb.backend_exit(1)) == [_init(["Read"])]


def test_stream_events_of_the_summary_never_reach_the_client() -> None:
    pb = _compacting()
    events = [
        {"type": "stream_event", "event": {"type": "message_start"}, "session_id": SID},
        {"type": "system", "subtype": "status", "status": "requesting", "session_id": SID},
        {"type": "stream_event", "event": {"type": "content_block_delta"}, "session_id": SID},
    ]
    for e in events:
        assert pb.frame(e) == [Hold()]
    got = pb.frame(_result(ANSWER))
    assert Count("compacted") in got
    assert not [f for f in outs(got) if f["type"] == "stream_event"]
    assert [f.get("status") for f in outs(got) if f.get("subtype") == "status"] == [
        "compacting",
        None,
    ]


def _twin_events(name: str) -> list[tuple[float, str, bytes]]:
    recs = [
        json.loads(line)
        for line in (TWINS / f"{name}.cbc-bridged.jsonl").read_text().splitlines()[1:]
    ]
    kinds = {"client_in": "client", "stdout": "backend"}
    return [
        (r["t"], kinds[r["kind"]], (r["text"] + "\n").encode()) for r in recs if r["kind"] in kinds
    ]


def test_the_twins_compaction_through_the_profile_is_claudes() -> None:
    # (the twin's cbc never got /cost, /context, /help, /nosuch: local-slash-commands
    # answered them, and answers them so again here)
    got = drive(full(), _twin_events("slash-commands")).frames()
    lines = {
        line["message"]["content"]: line["uuid"]
        for r in map(json.loads, (TWINS / "slash-commands.claude.jsonl").read_text().splitlines())
        if r.get("kind") == "stdin"
        for line in [json.loads(r["text"])]
        if line.get("type") == "user"
    }
    claude = [
        json.loads(r["text"])
        for r in map(json.loads, (TWINS / "slash-commands.claude.jsonl").read_text().splitlines())
        if r.get("kind") == "stdout"
    ]

    compact = lines["/compact"]
    mine, theirs = line_turn(got, compact), line_turn(claude, compact)
    replayed = [f for f in theirs if f["type"] == "assistant"]  # the kept local answers
    assert [_kind(f) for f in mine] == [_kind(f) for f in theirs if f not in replayed]
    users = [f["message"]["content"] for f in mine if f["type"] == "user"]
    summary = "Summary:\n1. Primary Request: the user said hello and asked for more."
    assert users == [PREAMBLE + summary + CONTINUE, COMPACTED]
    synthetic = next(f for f in theirs if f.get("isSynthetic"))
    assert summary in synthetic["message"]["content"]  # (Claude's names its transcript file)
    ours, claudes = mine[-2], theirs[-2]
    keys = ("result", "num_turns", "stop_reason", "is_error", "subtype", "duration_api_ms")
    assert [ours[k] for k in keys] == [claudes[k] for k in keys]
    for absent in ("terminal_reason", "user_message_uuid", "api_error_status"):
        assert absent not in ours
        assert absent not in claudes
    # a command answered after it copies the session's init, not the compaction agent's
    inits = [f["tools"] for f in got if f.get("subtype") == "init"]
    assert ["Read"] not in inits
    assert [f["tools"] for f in line_turn(got, lines["/help"]) if f.get("subtype") == "init"] == [
        inits[0]
    ]
    # the next line's turn is an ordinary one
    after = line_turn(got, lines["after the commands"])
    assert [f["message"]["content"][0]["text"] for f in after if f["type"] == "assistant"] == ["ok"]


def _kind(f: dict[str, Any]) -> tuple[Any, ...]:
    return (f.get("type"), f.get("subtype"), f.get("state"), f.get("status"))


@given(json_values(text=12))
def test_any_content_is_taken_without_error(content: Any) -> None:
    pb = _compacting()
    for frame in (
        {"type": "system", "subtype": "init", "tools": content, "mcp_servers": content},
        {"type": "assistant", "parent_tool_use_id": None, "message": content},
        {"type": "assistant", "parent_tool_use_id": None, "message": {"usage": content}},
        {"type": "user", "parent_tool_use_id": content, "message": {"content": content}},
        {"type": "result", "subtype": "success", "result": content, "usage": content},
        {"type": "result", "subtype": "success", "result": ANSWER, "usage": content},
    ):
        pb.frame(frame)
    pb.backend_exit(0)
    line = Playbook("compact-line")
    line.frame({"type": "user", "message": content})
    line.frame({"type": "user", "message": {"content": content}})
