"""The bytes of the stand-in model's replies, per dialect (pure: a decision in, bytes out).

Shapes follow the public API references (and what the CLIs accepted in the reference
captures): Anthropic Messages streaming events and OpenAI ``chat.completion.chunk``s.
Text and tool arguments are split into small deltas so clients exercise their
reassembly. Ids are sequential (``msg_mock_0001``, ``toolu_mock_0001``, ``call_mock_0001``)
so two runs of a scenario produce the same ids where the order of requests is the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from bridge.testing.brain import Decision

CHUNK = 16  # characters per text / argument delta
INPUT_TOKENS = 12
OUTPUT_TOKENS = 3
CREATED = 1_700_000_000  # a fixed `created` for OpenAI chunks


class Ids:
    def __init__(self) -> None:
        self.n = 0

    def next(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_mock_{self.n:04d}"


def _pieces(s: str) -> list[str]:
    return [s[i : i + CHUNK] for i in range(0, len(s), CHUNK)] or [""]


def _event(name: str, data: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def _data(obj: Any) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else orjson.dumps(obj)) + b"\n\n"


def ping(dialect: str) -> bytes:
    if dialect == "anthropic":
        return _event("ping", {"type": "ping"})
    return b": ping\n\n"  # an SSE comment: every SSE client skips it


def _anthropic_usage(output: int) -> dict[str, int]:
    return {"input_tokens": INPUT_TOKENS, "output_tokens": output,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def stream_reply(dialect: str, model: str, d: Decision, ids: Ids) -> Iterator[bytes]:
    if dialect == "anthropic":
        return _anthropic_stream(model, d, ids)
    return _openai_stream(model, d, ids)


def _anthropic_stream(model: str, d: Decision, ids: Ids) -> Iterator[bytes]:
    msg: dict[str, Any] = {
        "id": ids.next("msg"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": _anthropic_usage(1)}
    yield _event("message_start", {"type": "message_start", "message": msg})
    index = 0
    if d.text is not None:
        yield _event("content_block_start", {"type": "content_block_start", "index": index,
                                             "content_block": {"type": "text", "text": ""}})
        for piece in _pieces(d.text):
            yield _event("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}})
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    if d.tool is not None:
        block = {"type": "tool_use", "id": ids.next("toolu"), "name": d.tool, "input": {}}
        yield _event("content_block_start", {"type": "content_block_start", "index": index,
                                             "content_block": block})
        for piece in _pieces(orjson.dumps(d.input).decode()):
            yield _event("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}})
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    stop = "tool_use" if d.tool is not None else "end_turn"
    yield _event("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": OUTPUT_TOKENS}})
    yield _event("message_stop", {"type": "message_stop"})


def _openai_stream(model: str, d: Decision, ids: Ids) -> Iterator[bytes]:
    cid = ids.next("chatcmpl")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _data({"id": cid, "object": "chat.completion.chunk", "created": CREATED,
                      "model": model, "choices": [{"index": 0, "delta": delta,
                                                   "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    if d.text is not None:
        for piece in _pieces(d.text):
            yield chunk({"content": piece})
    if d.tool is not None:
        call = {"index": 0, "id": ids.next("call"), "type": "function",
                "function": {"name": d.tool, "arguments": ""}}
        yield chunk({"tool_calls": [call]})
        for piece in _pieces(orjson.dumps(d.input).decode()):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if d.tool is not None else "stop")
    yield _data({"id": cid, "object": "chat.completion.chunk", "created": CREATED,
                 "model": model, "choices": [],
                 "usage": {"prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS,
                           "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}})
    yield _data(b"[DONE]")


def whole_reply(dialect: str, model: str, d: Decision, ids: Ids) -> dict[str, Any]:
    """The non-streaming form (``stream`` absent or false)."""
    if dialect == "anthropic":
        content: list[dict[str, Any]] = []
        if d.text is not None:
            content.append({"type": "text", "text": d.text})
        if d.tool is not None:
            content.append({"type": "tool_use", "id": ids.next("toolu"), "name": d.tool,
                            "input": d.input})
        return {"id": ids.next("msg"), "type": "message", "role": "assistant",
                "model": model, "content": content,
                "stop_reason": "tool_use" if d.tool is not None else "end_turn",
                "stop_sequence": None, "usage": _anthropic_usage(OUTPUT_TOKENS)}
    message: dict[str, Any] = {"role": "assistant", "content": d.text}
    if d.tool is not None:
        message["tool_calls"] = [{"id": ids.next("call"), "type": "function",
                                  "function": {"name": d.tool,
                                               "arguments": orjson.dumps(d.input).decode()}}]
    return {"id": ids.next("chatcmpl"), "object": "chat.completion", "created": CREATED,
            "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if d.tool is not None else "stop"}],
            "usage": {"prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS,
                      "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}}


def error_body(message: str, kind: str = "not_found_error") -> dict[str, Any]:
    # the Anthropic shape; OpenAI clients read `error.message` from it as well
    return {"type": "error", "error": {"type": kind, "message": message}}


def models_list(dialect: str) -> dict[str, Any]:
    if dialect == "anthropic":
        m = {"type": "model", "id": "claude-mock", "display_name": "Mock",
             "created_at": "2025-01-01T00:00:00Z"}
        return {"data": [m], "has_more": False, "first_id": m["id"], "last_id": m["id"]}
    return {"object": "list",
            "data": [{"id": "default-model", "object": "model", "created": CREATED,
                      "owned_by": "mock"}]}
