"""An interrupt while a can_use_tool prompt is open ends the turn as Claude Code 2.1.220
ends it (frames from the raw runs of scenario interrupt-permission-prompt, 2026-12-01)."""

from __future__ import annotations

from typing import Any

from compat.stages.turns import REJECTED
from tests.compat.control_support import engine, replay

SID = "01a23169-7c99-7d00-96d5-b0c48733ceeb"
USE = "call_mock_0002"
INPUT = {"command": "touch perm-probe.txt", "description": "Create a file"}
PERM = "perm_1796125327226_1"


def cbc_session() -> list[tuple[float, str, Any]]:
    status = {"type": "system", "subtype": "status", "status": None, "uuid": "s", "session_id": SID}
    return [
        (
            0.0,
            "client",
            {
                "type": "user",
                "message": {"role": "user", "content": "TRIGGER_PERM_BASH"},
                "parent_tool_use_id": None,
                "session_id": "",
                "uuid": "6a4863c4-150a-5318-a37f-b8b639f13425",
            },
        ),
        (
            1.0,
            "backend",
            {
                "type": "system",
                "subtype": "init",
                "uuid": SID,
                "session_id": SID,
                "cwd": "/w",
                "tools": ["Bash"],
                "mcp_servers": [],
                "model": "default-model",
            },
        ),
        (1.0, "backend", status),
        (
            1.3,
            "backend",
            {
                "type": "control_request",
                "request_id": PERM,
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": "Bash",
                    "input": INPUT,
                    "tool_use_id": USE,
                },
            },
        ),
        (
            1.3,
            "backend",
            {
                "type": "assistant",
                "uuid": "01a23169-7f33-7a5f-9b93-ce2352be3062",
                "session_id": SID,
                "message": {
                    "id": "m1",
                    "content": [{"type": "tool_use", "id": USE, "name": "Bash", "input": INPUT}],
                    "model": "default-model",
                    "role": "assistant",
                    "stop_reason": "tool_use",
                    "type": "message",
                },
                "parent_tool_use_id": None,
            },
        ),
        (
            2.3,
            "client",
            {
                "type": "control_request",
                "request_id": "stop-1",
                "request": {"subtype": "interrupt"},
            },
        ),
        (2.3, "backend", status),
        (
            2.3,
            "backend",
            {
                "type": "control_response",
                "response": {
                    "subtype": "success",
                    "request_id": "stop-1",
                    "response": {"session_id": SID, "interrupted": True, "reason": "SDK request"},
                },
            },
        ),
        (
            2.4,
            "backend",
            {
                "type": "user",
                "uuid": "01a23169-836c-7028-a338-3f3cc0e7fe2c",
                "session_id": SID,
                "message": {
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": USE,
                            "content": [{"type": "text", "text": REJECTED + " "}],
                            "is_error": True,
                        }
                    ],
                    "role": "user",
                },
                "parent_tool_use_id": None,
            },
        ),
        (
            2.5,
            "backend",
            {
                "type": "assistant",
                "uuid": "a2",
                "session_id": SID,
                "message": {
                    "id": "m2",
                    "content": [{"type": "text", "text": "done."}],
                    "model": "default-model",
                    "role": "assistant",
                    "stop_reason": None,
                    "type": "message",
                },
                "parent_tool_use_id": None,
            },
        ),
        (
            2.6,
            "backend",
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "result": "done.",
                "uuid": "r",
                "session_id": SID,
                "num_turns": 4,
                "usage": {"input_tokens": 24, "output_tokens": 6},
                "permission_denials": [],
            },
        ),
    ]


def test_the_withdrawn_prompt_is_a_denial_and_its_rejection_is_marked() -> None:
    eng = engine(stdio=True)
    frames = replay(eng, extra=cbc_session()).frames()
    kinds = [f.get("type") for f in frames if f.get("type") != "command_lifecycle"]
    cancel = kinds.index("control_cancel_request")
    assert frames[[f.get("type") for f in frames].index("control_cancel_request")] == {
        "type": "control_cancel_request",
        "request_id": PERM,
    }
    assert kinds[cancel + 1] == "control_response"  # withdrawn before the receipt
    rejection = next(f for f in frames if f.get("type") == "user" and "tool_result_meta" in f)
    assert rejection["tool_result_meta"] == [{"id": USE, "non_execution_kind": "user-rejected"}]
    assert rejection["tool_use_result"] == "User rejected tool use"
    assert rejection["message"]["content"][0]["content"] == REJECTED
    assert not [
        f
        for f in frames
        if f.get("type") == "assistant" and "done." in str(f["message"]["content"])
    ]  # cbc's extra model answer after the receipt
    result = next(f for f in frames if f.get("type") == "result")
    assert result["subtype"] == "error_during_execution"
    assert result["is_error"] is True
    assert result["terminal_reason"] == "aborted_tools"
    assert result["permission_denials"] == [
        {"tool_name": "Bash", "tool_use_id": USE, "tool_input": INPUT}
    ]


def test_an_answered_prompt_is_not_a_denial_at_a_later_interrupt() -> None:
    eng = engine(stdio=True)
    events = cbc_session()
    allow = {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": PERM,
            "response": {"behavior": "allow", "updatedInput": INPUT},
        },
    }
    events.insert(5, (1.5, "client", allow))
    frames = replay(eng, extra=events).frames()
    assert not [f for f in frames if f.get("type") == "control_cancel_request"]
    result = next(f for f in frames if f.get("type") == "result")
    assert result["permission_denials"] == []
