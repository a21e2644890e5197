"""Rule ``local-slash-commands`` (compat/stages/slash.py): a slash command as a user line,
answered as Claude Code 2.1.220 answers it, without cbc."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compat.playbook import Emit, Playbook, outs
from compat.stages.control_usage import context_usage
from compat.stages.slash_text import (
    command_name,
    compact_number,
    context_output,
    duration_text,
    unknown_text,
    usage_output,
)

from .session_support import drive, full, line_turn

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"
SID = "s-1"
INIT = {"type": "system", "subtype": "init", "session_id": SID, "uuid": "i-0", "model": "m"}
LAST = {
    "usage": {"input_tokens": 36},
    "modelUsage": {
        "claude-opus-5[1m]": {
            "inputTokens": 24,
            "outputTokens": 6,
            "cacheReadInputTokens": 0,
            "cacheCreationInputTokens": 0,
            "costUSD": 0.00027,
            "contextWindow": 1000000,
        }
    },
    "total_cost_usd": 0.00027,
    "duration_api_ms": 41,
}


def user(content: Any, uuid: str | None = "u-1") -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": None,
        "session_id": "",
    }
    if uuid is not None:
        line["uuid"] = uuid
    return line


def playbook(**facts: Any) -> Playbook:
    base: dict[str, Any] = {
        "session_id": SID,
        "control.last_init": INIT,
        "control.last_result": LAST,
        "control.pending_user": ["u-1"],
        "control.client_turns": 0,
    }
    return Playbook("local-slash-commands", facts={**base, **facts})


def emitted(records: list[Any]) -> list[dict[str, Any]]:
    return [r.frame for r in records if isinstance(r, Emit)]


# -- what is a command ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("/cost", "cost"),
        ("  /nosuch  some args ", "nosuch"),
        ("/help\nmore", "help"),
        ("/usr/bin is slow", None),  # a path: not a command name
        ("/tmp", None),  # exists on disk: a prompt
        ("hello /cost", None),
        ("/", None),
        ("/ cost", None),
        ("/mcp__srv__p (MCP) x", None),  # an MCP prompt
        ("/weird!name", None),
    ],
)
def test_what_claude_takes_for_a_command(text: str, name: str | None) -> None:
    assert command_name(text, lambda path: path == "/tmp") == name


def test_the_texts() -> None:
    assert unknown_text("nosuch") == "Unknown command: /nosuch"
    assert unknown_text("contxt") == "Unknown command: /contxt. Did you mean /context?"
    assert [compact_number(n) for n in (219, 2600, 980_900, 1_000_000, 176_000)] == [
        "219",
        "2.6k",
        "980.9k",
        "1m",
        "176k",
    ]
    assert [duration_text(ms) for ms in (0, 2400, 65_000, 3_723_000)] == [
        "0s",
        "2s",
        "1m 5s",
        "1h 2m 3s",
    ]


def test_cost_is_claudes_text_from_the_sessions_usage() -> None:
    """Claude's own /cost in twins slash-commands, from the same numbers."""
    assert usage_output(LAST, 2.5) == (
        "Total cost:            $0.0003\n"
        "Total duration (API):  0s\n"
        "Total duration (wall): 2s\n"
        "Total code changes:    0 lines added, 0 lines removed\n"
        "Usage by model:\n"
        "       claude-opus-5:  24 input, 6 output, 0 cache read, 0 cache write ($0.0003)"
    )


def test_context_is_the_get_context_usage_answer_as_markdown() -> None:
    text = context_output(context_usage(LAST, "claude-opus-5[1m]"))
    assert text.startswith(
        "## Context Usage\n\n**Model:** claude-opus-5[1m]  \n**Tokens:** 36 / 1m (0%)\n\n"
        "### Estimated usage by category\n\n| Category | Tokens | Percentage |\n"
        "|----------|--------|------------|\n| Messages | 36 | 0.0% |\n"
        "| Free space | 1m | 100.0% |\n"
    )
    assert text.endswith("\n\n")


# -- the rule alone ----------------------------------------------------------------------------


def test_an_unknown_command_is_answered_claudes_way_and_never_sent() -> None:
    pb = playbook()
    records = pb.frame(user("/nosuch"), at=3.0)
    assert outs(records) == []  # cbc never gets it
    started, init, assistant, result, completed = emitted(records)
    assert (started["state"], completed["state"]) == ("started", "completed")
    assert started["command_uuid"] == completed["command_uuid"] == "u-1"
    assert init["subtype"] == "init"
    assert init["uuid"] != "i-0"
    message = assistant["message"]
    assert list(message) == [
        "id",
        "container",
        "model",
        "role",
        "stop_details",
        "stop_reason",
        "stop_sequence",
        "type",
        "usage",
        "content",
        "context_management",
    ]
    assert message["model"] == "<synthetic>"
    assert message["stop_reason"] == "stop_sequence"
    assert message["content"] == [{"type": "text", "text": "Unknown command: /nosuch"}]
    assert result["result"] == "Unknown command: /nosuch"
    assert (result["num_turns"], result["stop_reason"], result["session_id"]) == (0, None, SID)
    assert not {"terminal_reason", "user_message_uuid", "api_error_status"} & set(result)
    assert result["modelUsage"] == LAST["modelUsage"]
    assert list(pb.state.control.pending_user) == []  # its turn is over
    assert pb.counts["answered:other"] == 1
    assert pb.counts["dropped"] == 1


def test_costs_wall_time_counts_from_the_sessions_first_frame() -> None:
    """The engine's clock has an arbitrary zero (trio's): the wall time is the time since
    the client's first frame, not the clock's reading."""
    pb = playbook()
    pb.frame({"type": "control_request", "request_id": "i", "request": {}}, at=86_000.0)
    records = pb.frame(user("/cost"), at=86_065.0)
    [text] = [f["result"] for f in emitted(records) if f.get("type") == "result"]
    assert "Total duration (wall): 1m 5s\n" in text


def test_help_is_not_available_and_a_block_list_line_counts() -> None:
    pb = playbook()
    records = pb.frame(user([{"type": "text", "text": "/help"}]))
    [text] = [f["result"] for f in emitted(records) if f["type"] == "result"]
    assert text == "/help isn't available in this environment."


def test_a_line_without_uuid_has_no_lifecycle() -> None:
    pb = playbook(**{"control.pending_user": [None]})
    kinds = [f["type"] for f in emitted(pb.frame(user("/cost", uuid=None)))]
    assert kinds == ["system", "assistant", "result"]


@pytest.mark.parametrize(
    "text",
    ["/compact", "/init", "/review 12", "/usr/bin is slow", "hello", "/plug:cmd", "/custom"],
)
def test_what_is_not_answered_goes_to_cbc(text: str) -> None:
    """/compact (compact-command's), a prompt command, a path, a namespaced command, a
    command cbc's init lists (a custom command or skill)."""
    pb = playbook(**{"control.last_init": {**INIT, "slash_commands": ["custom"]}})
    assert outs(pb.frame(user(text))) == [user(text)]


def test_before_cbc_tells_its_session_the_line_goes_to_cbc() -> None:
    pb = playbook(session_id=None)
    assert outs(pb.frame(user("/cost"))) == [user("/cost")]


def test_a_command_behind_a_line_waits_for_that_lines_turn() -> None:
    """Released together (user-line's batch after a fresh result, its EOF): the command is
    answered once the line before it had its turn; the frame behind it waits too."""
    pb = playbook(**{"control.pending_user": ["u-0", "u-1", "u-2"]})
    assert outs(pb.frame(user("first", "u-0"), at=1.0)) == [user("first", "u-0")]
    assert emitted(pb.frame(user("/nosuch"), at=1.0)) == []
    assert outs(pb.frame(user("after", "u-2"), at=1.0)) == []
    # the first line's turn runs
    pb.set_facts({"control.turn_active": True, "control.pending_user": ["u-1", "u-2"]})
    pb.set_facts({"control.client_turns": 1})
    assert emitted(pb.advance(1.5)) == []
    pb.set_facts({"control.turn_active": False})  # ... and ends
    records = pb.advance(2.0)
    assert [f["type"] for f in emitted(records)][:2] == ["command_lifecycle", "system"]
    assert outs(records) == [user("after", "u-2")]  # then the line behind it goes
    assert list(pb.state.control.pending_user) == ["u-2"]
    # (the command leaves the hold dropped: held 2 = released 2, 1 of them dropped)
    assert (pb.counts["held"], pb.counts["released"], pb.counts["dropped"]) == (2, 2, 1)


_JSON = st.recursive(
    st.none() | st.booleans() | st.text(max_size=6),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=8,
)


@given(_JSON)
def test_any_line_content_is_taken_without_error(content: Any) -> None:
    pb = playbook(**{"control.last_result": {"modelUsage": content, "usage": content}})
    pb.frame(user(content))
    pb.frame(user([content, {"type": "text", "text": "/nosuch"}]))
    pb.frame({"type": "user", "message": content, "uuid": content})
    pb.frame(user("/cost"))
    pb.frame(user("/context"))


# -- through the profile, on the twins' frames ---------------------------------------------------


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()[1:]]


def _cbc_events() -> list[tuple[float, str, bytes]]:
    """cbc's twin run, as the bridge now runs it: the client's lines, and cbc's frames but
    those of the turns of the lines the rule answers (cbc never gets them)."""
    events: list[tuple[float, str, bytes]] = []
    skipping = False
    for r in _records(TWINS / "slash-commands.cbc-raw.jsonl"):
        if r["kind"] == "stdin":
            text = json.loads(r["text"]).get("message", {}).get("content")
            skipping = text in ("/cost", "/context", "/help", "/nosuch")
            events.append((r["t"], "client", r["text"].encode() + b"\n"))
        elif r["kind"] == "stdout" and not skipping:
            events.append((r["t"], "backend", r["text"].encode() + b"\n"))
    last = events[-1][0]
    return [*events, (last + 1.0, "eof", b""), (last + 1.2, "exit", b"0")]


def _turn(frames: list[dict[str, Any]], line: str) -> list[tuple[str, Any]]:
    """The client frames of the command's turn: (type, state/subtype)."""
    return [(f["type"], f.get("state") or f.get("subtype")) for f in line_turn(frames, line)]


def test_the_twins_commands_are_answered_as_claude_answers_them() -> None:
    run = drive(full(), _cbc_events(), until=60.0)
    sent = [f["message"]["content"] for f in run.to_backend() if f.get("type") == "user"]
    assert sent == ["hello", "tell me more", "/compact", "after the commands"]
    got = run.frames()
    claude = [
        json.loads(r["text"])
        for r in _records(TWINS / "slash-commands.claude.jsonl")
        if r["kind"] == "stdout"
    ]
    for line, text in (
        ("80727306-8a1c-5877-993f-04e30ac297ad", "/help isn't available in this environment."),
        ("69758592-4ce5-570e-ad2f-4250e2942ad4", "Unknown command: /nosuch"),
        ("301ef8d2-3462-582d-a0dc-51b95ab9e3b0", None),
        ("5e6260a6-b2e1-56d9-b6f9-bf9df6ae57a1", None),
    ):
        assert _turn(got, line) == _turn(claude, line)
        [result] = [
            f
            for f in got[[g.get("command_uuid") for g in got].index(line) :]
            if f.get("type") == "result"
        ][:1]
        [want] = [
            f
            for f in claude[[g.get("command_uuid") for g in claude].index(line) :]
            if f.get("type") == "result"
        ][:1]
        assert list(result) == list(want)  # Claude's keys, in its order
        if text is not None:
            assert result["result"] == want["result"] == text
    cost = next(
        f
        for f in got
        if f.get("type") == "result" and str(f.get("result")).startswith("Total cost")
    )
    assert "default-model:  24 input, 6 output" in cost["result"]
    # every line has its lifecycle, once, in order; the line after the commands gets its turn
    completed = [
        f["command_uuid"]
        for f in got
        if f.get("type") == "command_lifecycle" and f["state"] == "completed"
    ]
    assert len(completed) == len(set(completed)) == 8
    assert got[-1]["type"] in ("command_lifecycle", "result")


def test_a_command_queued_behind_a_running_turn_is_answered_after_it() -> None:
    """Written while a turn runs: user-line queues it; it is answered when that turn ends,
    and the line queued behind it goes to cbc after."""
    raw = _cbc_events()
    hello_end = next(t for t, k, d in raw if k == "backend" and b'"type":"result"' in d)
    first = [
        e
        for e in raw
        if e[0] <= hello_end
        and e[1] != "client"
        or (e[1] == "client" and b"hello" in e[2])
        or (e[1] == "client" and b"initialize" in e[2])
    ]
    t0 = first[-1][0] - 0.05  # before the first turn's result
    lines = [
        (t0, "client", json.dumps(user("/nosuch", "q-1")).encode() + b"\n"),
        (t0 + 0.001, "client", json.dumps(user("tell me more", "q-2")).encode() + b"\n"),
    ]
    run = drive(full(), sorted(first + lines, key=lambda e: e[0]), until=hello_end + 5.0)
    kinds = [
        (f["type"], f.get("state") or f.get("subtype"), f.get("command_uuid"))
        for f in run.frames()
        if f.get("type") in ("command_lifecycle", "result")
    ]
    hello_result = kinds.index(("result", "success", None))
    assert kinds[hello_result + 2 : hello_result + 5] == [
        ("command_lifecycle", "started", "q-1"),
        ("result", "success", None),
        ("command_lifecycle", "completed", "q-1"),
    ]
    sent = [f["message"]["content"] for f in run.to_backend() if f.get("type") == "user"]
    assert sent == ["hello", "tell me more"]
