"""Partial messages as a Python SDK client reads them (issue 12, rule ``stream-events``).

The client view of the twins is parsed by ``claude-agent-sdk``'s own message parser, and
each model message is rebuilt from its ``StreamEvent``s the way streaming clients do it (a
block per ``event.index``: ``content_block_start`` opens it, deltas extend it). The rebuilt
blocks must be the blocks of the ``AssistantMessage``s of the same message, in order; and
``message_delta``'s ``stop_reason`` must say ``tool_use`` when the message called a tool.
Through the bridge that holds; on cbc's raw stream it does not (a phantom block, two
parallel calls merged at one index, ``end_turn`` on a call): the check can fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compat.capture import parse

from .sdk_support import AssistantMessage, StreamEvent

pytest.importorskip("claude_agent_sdk._internal.message_parser")
from claude_agent_sdk._internal.message_parser import parse_message  # noqa: E402

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"


def client_view(name: str) -> list[Any]:
    cap = parse((TWINS / name).read_bytes().splitlines())
    kind = "client_out" if ".cbc-bridged." in name else "stdout"
    out = []
    for r in cap.records:
        if r.kind != kind:
            continue
        obj = json.loads(r.data)
        if obj.get("type") in ("stream_event", "assistant"):
            out.append(parse_message(obj))
    return out


def rebuild(messages: list[Any]) -> list[tuple[list[dict[str, Any]], Any]]:
    """Per streamed message: (its blocks rebuilt by index, its stop_reason)."""
    found: list[tuple[list[dict[str, Any]], Any]] = []
    blocks: dict[int, dict[str, Any]] = {}
    stop: Any = None
    for m in messages:
        if not isinstance(m, StreamEvent):
            continue
        e = m.event
        t = e["type"]
        if t == "message_start":
            blocks, stop = {}, None
            for i, b in enumerate(e["message"].get("content") or []):
                blocks[i] = dict(b)
        elif t == "content_block_start":
            blocks[e["index"]] = dict(e["content_block"], _json="")
        elif t == "content_block_delta":
            b, d = blocks.setdefault(e["index"], {"type": "?"}), e["delta"]
            if d["type"] == "text_delta":
                b["text"] = b.get("text", "") + d["text"]
            elif d["type"] == "thinking_delta":
                b["thinking"] = b.get("thinking", "") + d["thinking"]
            elif d["type"] == "input_json_delta":
                b["_json"] = b.get("_json", "") + d["partial_json"]
        elif t == "message_delta":
            stop = e["delta"].get("stop_reason")
        elif t == "message_stop":
            found.append(([blocks[i] for i in sorted(blocks)], stop))
    return found


def summary(block: Any) -> tuple[str, Any]:
    if isinstance(block, dict):
        if block["type"] == "tool_use":
            return ("tool_use", json.loads(block.get("_json") or "{}"))
        return (block["type"], block.get("text", block.get("thinking")))
    kind = type(block).__name__
    if kind == "ToolUseBlock":
        return ("tool_use", block.input)
    if kind == "ThinkingBlock":
        return ("thinking", block.thinking)
    return ("text", block.text)


def mismatches(name: str) -> list[str]:
    bad = []
    # the last message's frames come after its message_stop on cbc's raw stream: take the
    # frames up to the next message_start
    msgs = client_view(name)
    rebuilt = rebuild(msgs)
    starts = [
        i
        for i, m in enumerate(msgs)
        if isinstance(m, StreamEvent) and m.event["type"] == "message_start"
    ]
    for n, (blocks, stop) in enumerate(rebuilt):
        end = starts[n + 1] if n + 1 < len(starts) else len(msgs)
        frames = [
            b for m in msgs[starts[n] : end] if isinstance(m, AssistantMessage) for b in m.content
        ]
        got = [summary(b) for b in blocks]
        want = [summary(b) for b in frames]
        if got != want:
            bad.append(f"message {n}: rebuilt {got} != frames {want}")
        if any(k == "tool_use" for k, _ in want) and stop != "tool_use":
            bad.append(f"message {n}: stop_reason {stop!r} on a tool call")
    return bad


@pytest.mark.parametrize("scenario", ["thinking-partial", "partial-tool-only", "partial-messages"])
def test_an_sdk_client_rebuilds_each_message_from_the_bridged_stream(scenario: str) -> None:
    assert mismatches(f"{scenario}.cbc-bridged.jsonl") == []


def test_cbcs_raw_stream_does_not_rebuild() -> None:
    """The check can fail: on cbc's own stream the two parallel calls share an index."""
    assert mismatches("thinking-partial.cbc-raw.jsonl")
