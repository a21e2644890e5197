"""Mid-session control requests answered in Claude Code 2.1.220's shapes (raw runs of
scenario midsession-controls, 2026-12-01: cbc 2.163.0 answers set_model with
``{session_id, model}``, set_permission_mode with ``{session_id, mode, previous_mode}``
and the other two with ``Unknown control request subtype``)."""

from __future__ import annotations

from typing import Any

from compat.stages.control import grid_rows
from tests.compat.control_support import cbc_init, engine, replay

SID = "01a2316f-a0e8-7879-a99e-44c2bc27c70a"


def cr(rid: str, **body: Any) -> dict[str, Any]:
    return {"type": "control_request", "request_id": rid, "request": body}


def cbc_reply(rid: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": rid, "response": body},
    }


def first_turn() -> list[tuple[float, str, Any]]:
    init = cbc_init(SID, permissionMode="default")
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "ok",
        "session_id": SID,
        "uuid": "01a2316f-a578-7ac7-8b88-031c8e842df3",
        "num_turns": 2,
        "usage": {
            "input_tokens": 12,
            "output_tokens": 3,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
        "permission_denials": [],
        "modelUsage": {"default-model": {"inputTokens": 12, "contextWindow": 176000}},
    }
    user = {
        "type": "user",
        "message": {"role": "user", "content": "hello"},
        "parent_tool_use_id": None,
        "session_id": "",
        "uuid": "aaa2ea99-37c8-5792-86ae-6d0fb906f304",
    }
    status = {"type": "system", "subtype": "status", "status": None, "uuid": "s", "session_id": SID}
    assistant = {
        "type": "assistant",
        "session_id": SID,
        "uuid": "a",
        "message": {"content": [{"type": "text", "text": "ok"}], "model": "default-model"},
    }
    return [
        (0.0, "client", user),
        (1.0, "backend", init),
        (1.0, "backend", status),
        (1.1, "backend", assistant),
        (1.2, "backend", result),
    ]


def after_first_turn(*extra: tuple[float, str, Any]) -> list[Any]:
    eng = engine()
    run = replay(eng, extra=[*first_turn(), *extra])
    frames = run.frames()
    start = next(i for i, f in enumerate(frames) if f.get("type") == "result") + 1
    return [f for f in frames[start:] if f.get("type") != "command_lifecycle"] + [
        ("backend", run.frames("backend"))
    ]


def test_set_model_replays_claudes_local_command_then_an_empty_success() -> None:
    *out, (_, _backend) = after_first_turn(
        (2.0, "client", cr("ctl-model", subtype="set_model", model="claude-haiku-4-5")),
        (2.1, "backend", cbc_reply("ctl-model", {"session_id": SID, "model": "claude-haiku-4-5"})),
    )
    replay_frame, reply = out
    assert replay_frame["type"] == "user"
    assert replay_frame["isReplay"] is True
    assert replay_frame["session_id"] == SID
    assert replay_frame["message"] == {
        "role": "user",
        "content": "<local-command-stdout>Set model to claude-haiku-4-5</local-command-stdout>",
    }
    assert reply == {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": "ctl-model"},
    }


def test_set_permission_mode_answers_mode_then_a_status_with_it() -> None:
    *out, _ = after_first_turn(
        (2.0, "client", cr("ctl-mode", subtype="set_permission_mode", mode="acceptEdits")),
        (
            2.1,
            "backend",
            cbc_reply("ctl-mode", {"session_id": SID, "mode": "acceptEdits", "previous_mode": "x"}),
        ),
    )
    reply, status = out
    assert reply["response"] == {
        "subtype": "success",
        "request_id": "ctl-mode",
        "response": {"mode": "acceptEdits"},
    }
    assert {
        k: status[k] for k in ("type", "subtype", "status", "permissionMode", "session_id")
    } == {
        "type": "system",
        "subtype": "status",
        "status": None,
        "permissionMode": "acceptEdits",
        "session_id": SID,
    }


def test_set_max_thinking_tokens_answered_without_body_and_passed_as_cbc_takes_it() -> None:
    *out, (_, backend) = after_first_turn(
        (2.0, "client", cr("t0", subtype="set_max_thinking_tokens", max_thinking_tokens=0)),
        (2.1, "client", cr("tn", subtype="set_max_thinking_tokens", max_thinking_tokens=None)),
    )
    assert out == [
        {"type": "control_response", "response": {"subtype": "success", "request_id": rid}}
        for rid in ("t0", "tn")
    ]
    sent = [f["request"] for f in backend if f.get("type") == "control_request"]
    assert sent == [{"subtype": "set_config", "config": {"alwaysThinkingEnabled": False}}]
    # cbc's reply to the bridge's own request never reaches the client
    eng = engine()
    run = replay(
        eng,
        extra=[
            *first_turn(),
            (2.0, "client", cr("t1", subtype="set_max_thinking_tokens", max_thinking_tokens=2048)),
        ],
    )
    own = next(f for f in run.frames("backend") if f.get("type") == "control_request")
    run2 = replay(eng, extra=[(3.0, "backend", cbc_reply(own["request_id"], {}))])
    assert run2.frames() == []


def test_get_context_usage_in_claudes_shape_from_what_the_session_knows() -> None:
    *out, _ = after_first_turn(
        (2.0, "client", cr("ctl-model", subtype="set_model", model="claude-haiku-4-5")),
        (2.1, "backend", cbc_reply("ctl-model", {"session_id": SID, "model": "claude-haiku-4-5"})),
        (2.2, "client", cr("ctl-usage", subtype="get_context_usage")),
    )
    usage = out[-1]["response"]["response"]
    claude_keys = {  # Claude 2.1.220's reply, every key (raw run midsession-controls)
        "categories",
        "totalTokens",
        "maxTokens",
        "rawMaxTokens",
        "autocompactSource",
        "percentage",
        "gridRows",
        "model",
        "memoryFiles",
        "mcpTools",
        "agents",
        "slashCommands",
        "skills",
        "autoCompactThreshold",
        "isAutoCompactEnabled",
        "messageBreakdown",
        "apiUsage",
    }
    assert set(usage) == claude_keys
    assert usage["model"] == "claude-haiku-4-5"  # set_model's, before the next init
    assert usage["totalTokens"] == 12
    assert usage["maxTokens"] == 200_000  # cbc knows no window for it: Claude's default
    assert usage["autoCompactThreshold"] == 167_000
    assert usage["apiUsage"] == {
        "input_tokens": 12,
        "output_tokens": 3,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    assert [c["name"] for c in usage["categories"]] == ["Messages", "Free space"]
    assert sum(c["tokens"] for c in usage["categories"]) == 200_000
    assert [len(r) for r in usage["gridRows"]] == [10] * 10


def test_grid_rows_as_claude_draws_them() -> None:
    """Claude's own grid for these categories (raw run midsession-controls): 4 + 10 + 1 + 1
    squares, then 84 of free space; the last square of a category holds its remainder."""
    cats = [
        {"name": "System prompt", "tokens": 8027, "color": "promptBorder"},
        {"name": "System tools", "tokens": 19676, "color": "inactive"},
        {"name": "Skills", "tokens": 1123, "color": "warning"},
        {"name": "Messages", "tokens": 118, "color": "purple_FOR_SUBAGENTS_ONLY"},
        {"name": "Free space", "tokens": 171056, "color": "promptBorder"},
    ]
    squares = [s for row in grid_rows(cats, 200_000) for s in row]
    names = [s["categoryName"] for s in squares]
    assert [names.count(c["name"]) for c in cats] == [4, 10, 1, 1, 84]
    tools = [s for s in squares if s["categoryName"] == "System tools"]
    assert [round(s["squareFullness"], 3) for s in tools] == [1] * 9 + [0.838]
    assert squares[-1]["percentage"] == 86
    assert next(s for s in squares if s["categoryName"] == "Messages")["percentage"] == 0


def test_the_turn_after_set_model_is_paired_with_its_line() -> None:
    """The replayed user frame is not a turn's start (twin midsession-controls before this
    fix: the next line got no ``started``/``completed`` and its result no
    ``user_message_uuid``)."""
    second = "37d25595-5a0f-5661-abc3-75e9e57ac4ac"
    turn = first_turn()
    line = {**turn[0][2], "message": {"role": "user", "content": "second turn"}, "uuid": second}
    result = {**turn[4][2], "uuid": "r2"}
    eng = engine()
    run = replay(
        eng,
        extra=[
            *turn,
            (2.0, "client", cr("ctl-model", subtype="set_model", model="claude-haiku-4-5")),
            (2.1, "backend", cbc_reply("ctl-model", {"session_id": SID, "model": "x"})),
            (2.2, "client", line),
            (3.0, "backend", turn[1][2]),
            (3.0, "backend", turn[2][2]),
            (3.1, "backend", {**turn[3][2], "uuid": "a2"}),
            (3.2, "backend", result),
        ],
        until=10.0,
    )
    states = [
        f["state"]
        for f in run.frames()
        if f.get("type") == "command_lifecycle" and f["command_uuid"] == second
    ]
    assert states == ["queued", "started", "completed"]
    results = [f for f in run.frames() if f.get("type") == "result"]
    assert results[-1]["user_message_uuid"] == second
