"""The bytes of the stand-in model's replies, per dialect (pure: a decision in, bytes out).

Shapes follow the public API references (and what the CLIs accepted in the reference
captures): Anthropic Messages streaming events and OpenAI ``chat.completion.chunk``s.
Text and tool arguments are split into small deltas so clients exercise their
reassembly. Ids are sequential (``msg_mock_0001``, ``toolu_mock_0001``, ``call_mock_0001``)
so two runs of a scenario produce the same ids where the order of requests is the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from harness.brain import ERROR_KINDS

if TYPE_CHECKING:
    from harness.brain import Decision

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
    return {
        "input_tokens": INPUT_TOKENS,
        "output_tokens": output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


#: yielded by ``stream_reply`` half-way through the reply's deltas: where a ``cut``
#: reply ends and a ``stall`` waits (never sent itself)
MIDDLE = b""
OPENAI_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
    "stop_sequence": "stop",
}


def _signature(text: str) -> str:
    return "mock-sig-" + hashlib.sha256(text.encode()).hexdigest()[:24]


def _with_middle(events: list[bytes], is_delta: list[bool]) -> Iterator[bytes]:
    """The events, with ``MIDDLE`` after the first half (rounded down) of the deltas: a
    one-delta reply is cut before its content, a reply with none after its first event."""
    n = sum(is_delta)
    half, seen = n // 2, 0
    placed = False
    for i, (ev, delta) in enumerate(zip(events, is_delta, strict=True)):
        if not placed and (delta and seen == half or n == 0 and i == 1):
            yield MIDDLE
            placed = True
        yield ev
        seen += delta
    if not placed:
        yield MIDDLE


def stream_reply(dialect: str, model: str, d: Decision, ids: Ids) -> Iterator[bytes]:
    if dialect == "anthropic":
        return _anthropic_stream(model, d, ids)
    return _openai_stream(model, d, ids)


def _anthropic_stream(model: str, d: Decision, ids: Ids) -> Iterator[bytes]:
    msg: dict[str, Any] = {
        "id": ids.next("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(1),
    }
    yield _event("message_start", {"type": "message_start", "message": msg})
    events: list[bytes] = []
    is_delta: list[bool] = []

    def add(name: str, data: dict[str, Any], delta: bool = False) -> None:
        events.append(_event(name, data))
        is_delta.append(delta)

    def block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        add(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        for delta in deltas:
            add(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
                True,
            )
        add("content_block_stop", {"type": "content_block_stop", "index": index})

    index = 0
    if d.thinking is not None:
        block(
            index,
            {"type": "thinking", "thinking": "", "signature": ""},
            [{"type": "thinking_delta", "thinking": p} for p in _pieces(d.thinking)]
            + [{"type": "signature_delta", "signature": _signature(d.thinking)}],
        )
        index += 1
    if d.text is not None:
        block(
            index,
            {"type": "text", "text": ""},
            [{"type": "text_delta", "text": p} for p in _pieces(d.text)],
        )
        index += 1
    for call in d.calls:
        block(
            index,
            {"type": "tool_use", "id": ids.next("toolu"), "name": call.tool, "input": {}},
            [
                {"type": "input_json_delta", "partial_json": p}
                for p in _pieces(orjson.dumps(call.input).decode())
            ],
        )
        index += 1
    add(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": d.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": OUTPUT_TOKENS},
        },
    )
    add("message_stop", {"type": "message_stop"})
    yield from _with_middle(events, is_delta)


def _openai_stream(model: str, d: Decision, ids: Ids) -> Iterator[bytes]:
    cid = ids.next("chatcmpl")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _data(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    events = [chunk({"role": "assistant", "content": ""})]
    is_delta = [False]

    def add(delta: dict[str, Any], counts: bool = True) -> None:
        events.append(chunk(delta))
        is_delta.append(counts)

    if d.thinking is not None:
        for piece in _pieces(d.thinking):
            add({"reasoning_content": piece})
    if d.text is not None:
        for piece in _pieces(d.text):
            add({"content": piece})
    for i, call in enumerate(d.calls):
        add(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": ids.next("call"),
                        "type": "function",
                        "function": {"name": call.tool, "arguments": ""},
                    }
                ]
            },
            False,
        )
        for piece in _pieces(orjson.dumps(call.input).decode()):
            add({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    events.append(chunk({}, OPENAI_FINISH[d.stop_reason]))
    events.append(
        _data(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": INPUT_TOKENS,
                    "completion_tokens": OUTPUT_TOKENS,
                    "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
                },
            }
        )
    )
    events.append(_data(b"[DONE]"))
    is_delta += [False, False, False]
    yield from _with_middle(events, is_delta)


def whole_reply(dialect: str, model: str, d: Decision, ids: Ids) -> dict[str, Any]:
    """The non-streaming form (``stream`` absent or false)."""
    if dialect == "anthropic":
        content: list[dict[str, Any]] = []
        if d.thinking is not None:
            content.append(
                {"type": "thinking", "thinking": d.thinking, "signature": _signature(d.thinking)}
            )
        if d.text is not None:
            content.append({"type": "text", "text": d.text})
        for call in d.calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": ids.next("toolu"),
                    "name": call.tool,
                    "input": call.input,
                }
            )
        return {
            "id": ids.next("msg"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": d.stop_reason,
            "stop_sequence": None,
            "usage": _anthropic_usage(OUTPUT_TOKENS),
        }
    message: dict[str, Any] = {"role": "assistant", "content": d.text}
    if d.thinking is not None:
        message["reasoning_content"] = d.thinking
    if d.calls:
        message["tool_calls"] = [
            {
                "id": ids.next("call"),
                "type": "function",
                "function": {"name": c.tool, "arguments": orjson.dumps(c.input).decode()},
            }
            for c in d.calls
        ]
    return {
        "id": ids.next("chatcmpl"),
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": OPENAI_FINISH[d.stop_reason]}
        ],
        "usage": {
            "prompt_tokens": INPUT_TOKENS,
            "completion_tokens": OUTPUT_TOKENS,
            "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
        },
    }


def http_error(dialect: str, d: Decision) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The body and extra headers of a ``status`` decision, in the dialect's shape."""
    status = d.status or 500
    kind = ERROR_KINDS.get(status, "api_error")
    message = d.message or f"mock {status} {kind}"
    headers = [("retry-after", f"{d.retry_after:g}")] if d.retry_after is not None else []
    if dialect == "anthropic":
        return error_body(message, kind), headers
    return {"error": {"message": message, "type": kind, "code": str(status)}}, headers


def error_body(message: str, kind: str = "not_found_error") -> dict[str, Any]:
    # the Anthropic shape; OpenAI clients read `error.message` from it as well
    return {"type": "error", "error": {"type": kind, "message": message}}


def models_list(dialect: str) -> dict[str, Any]:
    if dialect == "anthropic":
        m = {
            "type": "model",
            "id": "claude-mock",
            "display_name": "Mock",
            "created_at": "2025-01-01T00:00:00Z",
        }
        return {"data": [m], "has_more": False, "first_id": m["id"], "last_id": m["id"]}
    return {
        "object": "list",
        "data": [
            {"id": "default-model", "object": "model", "created": CREATED, "owned_by": "mock"}
        ],
    }
