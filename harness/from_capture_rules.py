"""The stand-in's rules of a recorded session's model side (``ccbridge scenario
from-capture``): ``rules`` turns ``harness.from_capture_model``'s items into
``[[model.rules]]`` tables in the order the stand-in must try them; ``cbc_item`` reads
cbc's ``-p --output-format json`` log as the frames the walk knows. Pure."""

from __future__ import annotations

from typing import Any

import orjson

from compat.frames import dict_at, list_at, str_at
from harness.from_capture_model import Item


def rule(item: Item) -> dict[str, Any]:
    """The ``[[model.rules]]`` table of an item."""
    r: dict[str, Any] = {}
    if item.when:
        r["when"] = item.when
    if item.thread is not None:
        r["agent"] = "sub"
    if item.kind == "error":
        r["status"] = item.status
        if item.retry_after is not None:
            r["retry_after"] = item.retry_after
        if item.message:
            r["message"] = item.message
        r["times"] = item.times
        return r
    r.update(_reply(item))
    if item.delay:
        r["delay"] = item.delay
    r["times"] = 1
    return r


def _reply(item: Item) -> dict[str, Any]:
    """What a reply (or a cut one) holds: thinking, text, calls, a stop reason."""
    r: dict[str, Any] = {}
    if item.thinking:
        r["thinking"] = "\n\n".join(item.thinking)
    if item.texts:
        r["text"] = "\n\n".join(item.texts)
    if len(item.calls) == 1:
        r["tool"] = item.calls[0].tool
        r["input"] = item.calls[0].input
    elif item.calls:
        r["calls"] = [{"tool": c.tool, "input": c.input} for c in item.calls]
    if item.stop is not None and item.stop != ("tool_use" if item.calls else "end_turn"):
        r["stop"] = item.stop
    if item.kind == "cut":
        r["cut"] = True
    return r


def rules(items: list[Item]) -> list[dict[str, Any]]:
    """The rules in the order the stand-in must try them: the main thread's in order, then
    each sub-agent's first reply (matched by its prompt), then the sub-agents' others."""
    main = [i for i in items if i.thread is None]
    sub = [i for i in items if i.thread is not None]
    firsts = [i for i in sub if i.when]
    return [rule(i) for i in (*main, *firsts, *(i for i in sub if not i.when))]


def cbc_item(item: Any) -> dict[str, Any] | None:
    """An item of cbc's ``-p --output-format json`` array (its own session log: ``message``,
    ``function_call``, ``function_call_result``, ``result``...) as the stream-json frame
    that says the same, for ``ModelWalk.backend``; None for the others."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    mid = str_at(dict_at(item, "providerData"), "messageId") or str_at(item, "id") or ""
    if kind == "result":
        return item
    if kind == "message" and item.get("role") == "assistant":
        texts = [
            {"type": "text", "text": b["text"]}
            for b in list_at(item, "content")
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        return {"type": "assistant", "message": {"id": mid, "content": texts}}
    if kind == "function_call" and isinstance(item.get("name"), str):
        try:
            args = orjson.loads(str(item.get("arguments") or "{}"))
        except orjson.JSONDecodeError:
            args = {}
        block = {"type": "tool_use", "id": item.get("callId"), "name": item["name"], "input": args}
        return {"type": "assistant", "message": {"id": mid, "content": [block]}}
    if kind == "function_call_result":
        block = {"type": "tool_result", "tool_use_id": item.get("callId")}
        return {"type": "user", "message": {"content": [block]}}
    return None
