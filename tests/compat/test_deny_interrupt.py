"""A call the client denies with ``interrupt: true`` ends the turn as Claude ends it: the
call's rejected ``tool_result``, the marker for tool use, an ``error_during_execution``
result with ``terminal_reason: aborted_tools`` and Claude's diagnostic ``errors``
(``interrupted-turn``, fed by ``permission-reply``'s ``ControlState.denying_interrupts``),
the line's ``command_lifecycle`` ended ``cancelled`` and the result naming no line
(``command-lifecycle``; twins permission-deny-interrupt).

The evidence is Zed's ACP adapter rejecting an edit (``tests/bridge/data/acp/write-rejected``):
the real Claude 2.1.220 writes those frames; the real cbc 2.163.0 writes no tool_result and
a bare error result, so the adapter's call stayed "pending" forever."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compat.capture import parse
from compat.stages.turns import MARK_TOOL, REJECTED

from .session_support import drive, full

ACP = Path(__file__).resolve().parents[1] / "bridge" / "data" / "acp" / "write-rejected"


def _events(path: Path) -> list[tuple[float, str, bytes]]:
    """The bridge's recording as engine events: what the client wrote, what cbc wrote."""
    cap = parse(path.read_bytes().splitlines())
    kinds = {"client_in": "client", "stdout": "backend"}
    return [(r.t, kinds[r.kind], r.data + b"\n") for r in cap.records if r.kind in kinds]


def _client_out(path: Path) -> list[dict[str, Any]]:
    cap = parse(path.read_bytes().splitlines())
    return [json.loads(r.data) for r in cap.records if r.kind == "client_out"]


def _after_the_call(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first turn's frames after the model's call, up to its result."""
    start = next(
        i
        for i, f in enumerate(frames)
        if f.get("type") == "assistant"
        and any(b.get("type") == "tool_use" for b in f["message"]["content"])
    )
    end = next(i for i, f in enumerate(frames) if i > start and f.get("type") == "result")
    return [f for f in frames[start + 1 : end + 1] if f.get("type") in ("user", "result")]


def test_a_denied_and_interrupting_call_ends_the_turn_as_claudes() -> None:
    eng = full()
    eng.state.stdio_permissions = True  # (the adapter passes --permission-prompt-tool stdio)
    run = drive(eng, _events(ACP / "bridge.ndjson"))
    bridged = _after_the_call(run.frames())
    claude = _after_the_call(_client_out(ACP / "claude.ndjson"))
    assert [f["type"] for f in bridged] == [f["type"] for f in claude] == ["user", "user", "result"]
    rejected, marker, result = bridged
    [block] = rejected["message"]["content"]
    assert block["type"] == "tool_result"
    assert block["is_error"] is True
    assert block["content"] == REJECTED == claude[0]["message"]["content"][0]["content"]
    assert block["tool_use_id"] == result["permission_denials"][0]["tool_use_id"]
    assert rejected["tool_use_result"] == claude[0]["tool_use_result"]
    assert marker["message"]["content"] == [{"type": "text", "text": MARK_TOOL}]
    for key in ("subtype", "is_error", "stop_reason", "terminal_reason"):
        assert result[key] == claude[-1][key], key
    assert result["terminal_reason"] == "aborted_tools"


def test_a_deny_without_interrupt_leaves_the_turn_to_the_backend() -> None:
    """The twin permission-deny: cbc writes the denial's tool_result and goes on."""
    from .test_fields import bridged

    frames, _ = bridged("permission-deny")
    [result] = [f for f in frames if f.get("type") == "result"]
    assert result["subtype"] == "success"
    assert "terminal_reason" not in result or result["terminal_reason"] != "aborted_tools"


# -- the twins: the line's end, and the result's errors ------------------------------------
TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"


def _twin_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def _twin_events(path: Path) -> list[tuple[float, str, bytes]]:
    """The bridged twin's two sides: what cbc wrote and what the client wrote, a client's
    answer after the prompt it answers (the recorder stamps cbc's line after the bridge
    passed it on)."""
    recs = _twin_records(path)
    asked = {
        json.loads(r["text"]).get("request_id"): r["t"]
        for r in recs
        if r.get("kind") == "stdout" and '"control_request"' in r["text"]
    }
    out = []
    for r in recs:
        if r.get("kind") == "stdout":
            out.append((r["t"], "backend", (r["text"] + "\n").encode()))
        elif r.get("kind") == "client_in":
            rid = json.loads(r["text"]).get("response", {}).get("request_id")
            t = max(r["t"], asked.get(rid, 0.0) + 0.001)
            out.append((t, "client", (r["text"] + "\n").encode()))
    return sorted(out, key=lambda e: e[0])


def _ends(frames: list[dict[str, Any]]) -> list[Any]:
    return [
        (f["subtype"], f.get("errors"), "user_message_uuid" in f)
        if f["type"] == "result"
        else f["state"]
        for f in frames
        if f.get("type") == "result"
        or (f.get("type") == "command_lifecycle" and f["state"] != "queued")
    ]


def test_the_denied_turn_ends_cancelled_with_claudes_errors_and_the_next_goes_on() -> None:
    eng = full()
    eng.state.stdio_permissions = True  # (the client passed --permission-prompt-tool stdio)
    got = drive(eng, _twin_events(TWINS / "permission-deny-interrupt.cbc-bridged.jsonl")).frames()
    claude = [
        json.loads(r["text"])
        for r in _twin_records(TWINS / "permission-deny-interrupt.claude.jsonl")
        if r.get("kind") == "stdout"
    ]
    assert _ends(got) == _ends(claude)
    assert _ends(got)[:3] == [
        "started",
        (
            "error_during_execution",
            ["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"],
            False,
        ),
        "cancelled",
    ]
