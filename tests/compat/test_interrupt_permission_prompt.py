"""An interrupt while a can_use_tool prompt is open ends the turn as Claude Code 2.1.220
ends it (frames from the raw runs of scenario interrupt-permission-prompt, 2026-12-01)."""

from __future__ import annotations

from typing import Any

from compat.stages.turns import REJECTED
from tests.compat.control_support import cbc_init, engine, replay

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
        (1.0, "backend", cbc_init(SID)),
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


def test_one_reply_when_cbc_answers_the_interrupt_itself() -> None:
    """(cbc got the interrupt after all: its receipt is the one reply.)"""
    eng = engine(stdio=True)
    events = cbc_session()
    events.insert(6, (7.4, "client", {"type": "keep_alive"}))  # the held interrupt goes out
    events = [(t + 6.0 if i > 6 else t, side, f) for i, (t, side, f) in enumerate(events)]
    frames = replay(eng, extra=events).frames()
    replies = [
        f
        for f in frames
        if f.get("type") == "control_response" and f["response"]["request_id"] == "stop-1"
    ]
    assert len(replies) == 1


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


def test_cbc_is_told_deny_and_interrupt_instead_of_the_interrupt() -> None:
    """Given deny + interrupt for the open prompt (and no interrupt), cbc ends the turn at
    once with no model request and no tool_result (a real cbc 2.163.0 run, 2026-12-01:
    ``error_during_execution``, ``errors: ["Permission denied for tool(s): Bash"]``).
    The client sees Claude's order and shapes: the receipt, the marked rejection, the
    marker, the aborted result."""
    events = cbc_session()[:6]  # up to the client's interrupt
    cbc_result = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "uuid": "r",
        "session_id": SID,
        "num_turns": 2,
        "usage": {"input_tokens": 12, "output_tokens": 3},
        "permission_denials": [{"tool_name": "Bash", "tool_use_id": USE, "tool_input": INPUT}],
        "errors": ["Permission denied for tool(s): Bash"],
    }
    events.append((2.5, "backend", cbc_result))
    eng = engine(stdio=True)
    run = replay(eng, extra=[*events, (9.0, "client", {"type": "keep_alive"})])
    up = [
        f for f in run.frames("backend") if f.get("type") in ("control_request", "control_response")
    ]
    assert up[-1]["response"]["request_id"] == PERM  # and no interrupt after it
    assert up[-1]["response"]["response"] == {
        "allowed": False,
        "interrupt": True,
        "reason": "The user doesn't want to proceed with this tool use.",
        "tool_use_id": USE,
    }
    frames = [f for f in run.frames() if f.get("type") != "command_lifecycle"]
    tail = [f.get("type") for f in frames[-5:]]
    assert tail == ["control_cancel_request", "control_response", "user", "user", "result"]
    assert frames[-4]["response"] == {
        "subtype": "success",
        "request_id": "stop-1",
        "response": {"still_queued": []},
    }
    rejection = frames[-3]
    assert rejection["tool_result_meta"] == [{"id": USE, "non_execution_kind": "user-rejected"}]
    assert rejection["tool_use_result"] == "User rejected tool use"
    result = frames[-1]
    assert result["terminal_reason"] == "aborted_tools"
    assert result["errors"][0].startswith("[ede_diagnostic]")  # not cbc's words for its deny
    assert result["permission_denials"] == [
        {"tool_name": "Bash", "tool_use_id": USE, "tool_input": INPUT}
    ]
    lifecycle = [f["state"] for f in run.frames() if f.get("type") == "command_lifecycle"]
    assert lifecycle[-1] == "cancelled"
    assert not eng.state.control.denied_uses  # forgotten at the result


def test_the_interrupt_goes_to_cbc_when_no_result_follows_the_deny() -> None:
    eng = engine(stdio=True)
    run = replay(eng, extra=[*cbc_session()[:6], (9.0, "client", {"type": "keep_alive"})])
    sent = [
        (t, f["request"]["subtype"]) for t, f in run.backend if f.get("type") == "control_request"
    ]
    assert sent == [(2.3 + 5.0, "interrupt")]
