"""``frame-fields``: the fields Claude Code 2.1.220 writes on every ``assistant`` and
``user`` frame and cbc does not (twins ``captures/twins/*.claude.jsonl`` against
``*.cbc-raw.jsonl``).

- ``timestamp``: Claude stamps both with an ISO 8601 time (``2026-11-29T12:56:47.374Z``).
  cbc writes the same stamp as its private ``__timestamp``, which ``private-fields`` cuts
  off (it runs first); the wire line the frame descends from (``Frame.lineage``) still has
  it, so it is read from those bytes (its last ``,"__timestamp":"…"``), not parsed. A frame
  without one (a rule invented it) gets the engine's wall clock.
- ``message.context_management``: Claude's assistant messages end with it, ``null`` in
  every twin; cbc has no such feature, and ``null`` is what Claude writes without one.
- ``is_error: false``: cbc writes it on every successful ``tool_result``; Claude 2.1.220
  writes it on shell (Bash) and Workflow results only and leaves it out on an Agent's, a
  Read's, a StructuredOutput's and an MCP tool's (twins bg-agent, eof-with-bg-work,
  user-line-after-bg-agent, parallel-tools, headless-json-schema; raw runs of the
  mcp-tool), so it is dropped on the result of any other call (``SessionState.tool_uses``,
  kept by ``session``; a result whose call is unknown keeps it).
- ``subagent_type`` and ``task_description``: Claude writes both on every ``assistant`` and
  ``user`` frame of a sub-agent (``parent_tool_use_id`` = its ``Agent`` call), from that
  call's ``subagent_type`` and ``description``, a background agent's
  (``claude-2.1.220/mockapi_background-agent_local-agent-frames``) and a foreground one's
  (``third-party/rust-code-agent-sdks/general_purpose_compute``, ``explore_count_files``:
  its assistant and user frames). cbc writes a sub-agent's frames with the same
  ``parent_tool_use_id`` and neither key (``cbc-2.163.0/mockoai_fg-agent``; a background
  agent's when it ends while a turn runs, ``tests/bridge/data/cbc-variants/
  bg-agent-ends-in-a-turn``), so they are added from the call ``session`` remembered
  (``DeferExecuteTool`` unwrapped); a frame whose call is unknown or not an agent's, or
  whose call named no such field, is left without it. A sub-agent's tool result has no
  ``tool_use_result`` on Claude (twins subagent-foreground, bg-agent-frames: the record is
  the main thread's), so the one a rule above wrote for it is dropped.

- One frame per content block: Claude writes each content block of a model message as an
  ``assistant`` frame of its own as the block ends (twins ``*.claude.jsonl``; several
  blocks of one message: ``third-party/rust-code-agent-sdks/*``, ``untether/*``): the same
  ``message`` (``id``, ``model``, the same ``usage`` copied on each) with one block,
  ``stop_reason`` and ``stop_sequence`` null (the message has not ended when the frame is
  written), its own ``uuid``. cbc writes the whole message once, with its ``stop_reason``
  (``tool_use``). So a message of N blocks becomes N frames (the first keeps cbc's
  ``uuid``; the others are counted as synthesized) and ``stop_reason`` is null on each,
  except on Claude's ``<synthetic>`` messages (``stop_sequence``), which are left alone.
  ``result-shape`` reads the message's real ``stop_reason`` from the wire frame
  (``Frame.lineage``). Option ``split`` (default true): ``false`` keeps cbc's one frame
  per message, its ``stop_reason`` nulled all the same.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.stages.turns import iso_ms
from compat.taskkit import AGENT_TOOLS, SHELL_TOOLS, starting_call

#: the tools whose successful tool_result Claude writes with ``is_error: false``
_WRITES_IS_ERROR_FALSE = frozenset({*SHELL_TOOLS, "Workflow"})

_STAMP_KEY = b',"__timestamp":"'
#: the model Claude names on the messages it makes up itself (errors, "Not logged in"),
#: whose stop_reason (``stop_sequence``) it writes
SYNTHETIC_MODEL = "<synthetic>"
#: an MCP tool's name (``mcp__<server>__<tool>``): Claude writes no ``is_error: false`` on
#: its result either (raw run mcp-tool, 2026-12-01)
MCP_PREFIX = "mcp__"


def wire_timestamp(frame: Frame) -> str | None:
    """cbc's ``__timestamp`` of the wire line ``frame`` descends from (bytes, no parse)."""
    raw = frame.lineage.raw
    at = raw.rfind(_STAMP_KEY)
    if at < 0:
        return None
    start = at + len(_STAMP_KEY)
    end = raw.find(b'"', start)
    if end < 0 or raw[end + 1 : end + 2] not in (b"}", b","):
        return None
    try:
        return raw[start:end].decode("ascii")
    except UnicodeDecodeError:
        return None


@register
@attrs.define
class FrameFields(Stage):
    """Claude's `timestamp` on assistant/user frames, `message.context_management: null`,
    one assistant frame per content block with `stop_reason` null, `is_error: false` only on
    shell and Workflow results, a sub-agent's frames with its `subagent_type` and
    `task_description`."""

    rule: ClassVar[str] = "frame-fields"
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "user"})

    #: one assistant frame per content block, as Claude writes them
    split: bool = True

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj: wire.Assistant | wire.User = (
            frame.view(wire.Assistant) if frame.type == "assistant" else frame.view(wire.User)
        )
        changed = {**_timestamp(frame, ctx), **_agent_fields(obj, ctx)}
        message = obj.get("message")
        if not isinstance(message, dict):
            return _with(frame, changed)
        if obj.get("type") == "assistant":
            return self._assistant(frame, message, changed, ctx)
        return self._user(frame, message, changed, ctx)

    def _assistant(
        self, frame: Frame, message: wire.Message, changed: dict[str, Any], ctx: Context
    ) -> Output:
        """Claude's message fields; one frame per content block (option ``split``)."""
        new_message = _claude_message(message)
        content = message.get("content")
        if self.split and isinstance(content, list) and len(content) >= 2:
            return self._split(frame, {**frame.obj, **changed}, new_message, content, ctx)
        if new_message != message:
            changed["message"] = new_message
        return _with(frame, changed)

    def _split(
        self,
        frame: Frame,
        base: dict[str, Any],
        message: dict[str, Any],
        content: list[Any],
        ctx: Context,
    ) -> Output:
        """The frame (``base``: its fields added) as one frame per content block of its
        ``message``: the first block's is ``frame`` rewritten, each other's a frame of its
        own with its own uuid."""
        out = [frame.replace({**base, "message": {**message, "content": [content[0]]}})]
        for block in content[1:]:
            part = {**base, "message": {**message, "content": [block]}}
            if "uuid" in base:
                part["uuid"] = ctx.env.new_uuid()
            out.append(Frame.synth(part, self.rule))
        ctx.count(self.rule, "messages-split")
        return out

    def _user(
        self, frame: Frame, message: wire.Message, changed: dict[str, Any], ctx: Context
    ) -> Output:
        """``is_error: false`` dropped from the tool_results Claude writes without it; a
        sub-agent's tool result without ``tool_use_result``."""
        content = message.get("content")
        drop = _record_of_a_sub_agent(frame.view(wire.User))
        if not isinstance(content, list):
            return _with(frame, changed, drop)
        blocks = [_block(b, ctx) for b in content]
        if any(b is not o for b, o in zip(blocks, content, strict=True)):
            ctx.count(self.rule, "agent-is-error-dropped")
            changed["message"] = {**message, "content": blocks}
        return _with(frame, changed, drop)


def _record_of_a_sub_agent(obj: wire.User) -> tuple[str, ...]:
    """``("tool_use_result",)`` on a sub-agent's tool result that has one (the rules that
    write Claude's records write them on every result)."""
    sub = obj.get("parent_tool_use_id") is not None
    return ("tool_use_result",) if sub and "tool_use_result" in obj else ()


def _with(frame: Frame, changed: dict[str, Any], drop: tuple[str, ...] = ()) -> Output:
    """``frame`` with the fields ``changed`` and without those in ``drop``, or None when
    nothing changed."""
    if not changed and not drop:
        return None
    obj = {k: v for k, v in frame.obj.items() if k not in drop}
    return (frame.replace({**obj, **changed}),)


def _timestamp(frame: Frame, ctx: Context) -> dict[str, Any]:
    """Claude's ``timestamp`` of a frame without one: cbc's stamp of the wire line, else
    the engine's wall clock."""
    if isinstance(frame.view(wire.Envelope).get("timestamp"), str):
        return {}
    return {"timestamp": wire_timestamp(frame) or iso_ms(ctx.wall_ms())}


#: a sub-agent's frame's keys, and the keys of its call's input they come from
_AGENT_FIELDS = (("subagent_type", "subagent_type"), ("task_description", "description"))


def _agent_fields(obj: wire.Assistant | wire.User, ctx: Context) -> dict[str, Any]:
    """A sub-agent's frame: its call's ``subagent_type`` and ``description`` as Claude's
    ``subagent_type`` and ``task_description`` (the keys it lacks)."""
    inp = _agent_input(obj, ctx)
    found = {key: inp.get(source) for key, source in _AGENT_FIELDS if key not in obj}
    return {key: value for key, value in found.items() if isinstance(value, str) and value}


def _agent_input(obj: wire.Assistant | wire.User, ctx: Context) -> dict[str, Any]:
    """The input of the agent call whose frame ``obj`` is (``{}``: no agent's)."""
    parent = obj.get("parent_tool_use_id")
    call = starting_call(ctx.state, parent) if parent is not None else None
    return call[1] if call is not None and call[0] in AGENT_TOOLS else {}


def _claude_message(message: wire.Message) -> dict[str, Any]:
    """An assistant message with Claude's ``context_management`` and, but on Claude's own
    ``<synthetic>`` messages, its ``stop_reason`` and ``stop_sequence`` null (the block's
    frame is written before the message ends)."""
    new = dict(message)
    new.setdefault("context_management", None)
    if message.get("model") != SYNTHETIC_MODEL:
        new["stop_reason"] = None
        new["stop_sequence"] = None
    return new


def _block(block: Any, ctx: Context) -> Any:
    """A content block as Claude writes it: a successful tool_result without
    ``is_error: false`` unless Claude writes it on that call's results."""
    if not _successful_result(block) or _writes_is_error_false(block, ctx):
        return block
    return {k: v for k, v in block.items() if k != "is_error"}


def _writes_is_error_false(result: dict[str, Any], ctx: Context) -> bool:
    """Whether Claude writes ``is_error: false`` on the result: a shell or Workflow call's
    (the result of a call the session does not know keeps it)."""
    use_id = result.get("tool_use_id")
    use = ctx.state.tool_uses.get(use_id) if isinstance(use_id, str) else None
    return use is None or use.name in _WRITES_IS_ERROR_FALSE


def _successful_result(block: Any) -> bool:
    """A ``tool_result`` block that says ``is_error: false``."""
    return (
        isinstance(block, dict)
        and block.get("type") == "tool_result"
        and block.get("is_error") is False
    )
