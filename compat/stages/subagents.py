"""A foreground sub-agent's frames as Claude Code 2.1.220 writes them (twins
subagent-foreground: an ``Agent`` call with ``run_in_background: false`` whose agent runs
a Bash call and reports back).

Both CLIs stream a foreground agent's own frames with ``parent_tool_use_id`` = the Agent
call, and put its answer in the call's ``tool_result``. They differ at the two ends:

- ``subagent-prompt``: Claude writes the agent's prompt as a user frame of its own right
  after the call (``{type: user, message: {role: user, content: [{type: text, text:
  <prompt>}]}, parent_tool_use_id: <the call>}``), before the agent's first request; a
  client shows it as the sub-agent's task. cbc writes none; the rule writes it from the
  call's input before the agent's first frame (or the call's result, when the agent wrote
  none), unless that frame is the prompt already (``frame-fields`` then stamps it and
  names the agent, as on every frame of it).
- ``subagent-answer``: cbc writes the agent's last reply as an assistant frame of its own
  just before the Agent call's result, which holds the same text (``<answer>\\n\\n[Agent
  ID: agent-…]``); Claude writes no frame for it, the answer is the result's. A client
  rendering both shows the answer twice. The rule holds a sub-agent's text-only frame
  until its next frame: dropped when that is the call's result beginning with the same
  text, released before it otherwise (or after ``wait`` seconds, or when cbc exits). Only
  a frame of a foreground agent is held (its parent an ``Agent`` call the session saw,
  not run in the background).

A background agent (``run_in_background: true``) is left alone: cbc writes none of its
frames, and Claude writes its last reply as a frame.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.stages.hygiene import one_text
from compat.taskkit import AGENT_TOOLS, foreground_calls, remember, starting_call


def _foreground_prompts(obj: wire.Assistant) -> list[tuple[str, str]]:
    """(call id, prompt) of the foreground agent calls in a main-thread frame."""
    return [
        (cid, p)
        for cid, inp in foreground_calls(obj)
        for p in [inp.get("prompt")]
        if isinstance(p, str)
    ]


@register
@attrs.define
class SubagentPrompt(Stage):
    """A foreground sub-agent's prompt is a user frame of its own before the agent's
    first frame, as Claude writes it."""

    rule: ClassVar[str] = "subagent-prompt"
    reads: ClassVar[frozenset[str]] = frozenset({"session_id"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "user"})

    #: foreground agent calls whose agent has written no frame yet: call id -> prompt
    _pending: dict[str, str] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.Assistant) if frame.key() == "assistant" else frame.view(wire.User)
        parent = obj.get("parent_tool_use_id")
        call = parent if isinstance(parent, str) else _result_call(obj, self._pending)
        prompt = self._pending.pop(call, None) if call is not None else None
        if frame.key() == "assistant":
            for cid, text in _foreground_prompts(frame.view(wire.Assistant)):
                remember(self._pending, cid, text, cap=_MAX)
        if call is None or prompt is None or (parent is not None and _is_text_user(obj)):
            return None  # (a prompt frame of the CLI's own)
        ctx.count(self.rule, "prompt-frame")
        return (self._prompt(call, prompt, ctx), frame)

    def _prompt(self, call: str, text: str, ctx: Context) -> Frame:
        obj = {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
            "parent_tool_use_id": call,
            "session_id": ctx.state.session_id or "",
            "uuid": ctx.env.new_uuid(),
        }
        return Frame.synth(obj, self.rule)


#: foreground agent calls remembered at once (the oldest forgotten past this)
_MAX = 256


def _result_call(obj: wire.Assistant | wire.User, pending: dict[str, str]) -> str | None:
    """The pending agent call a main-thread frame holds the result of (an agent that wrote
    no frame of its own)."""
    if obj.get("type") != "user":
        return None
    for b in wire.blocks_of(obj, "tool_result"):
        use = b.get("tool_use_id")
        if isinstance(use, str) and use in pending:
            return use
    return None


def _is_text_user(obj: wire.Assistant | wire.User) -> bool:
    blocks = wire.blocks(obj)
    return (
        obj.get("type") == "user"
        and bool(blocks)
        and all(isinstance(b, dict) and b.get("type") == "text" for b in blocks)
    )


def _answer_text(obj: wire.Assistant) -> str | None:
    """The text of a sub-agent's frame that holds text only (None otherwise)."""
    blocks = wire.blocks(obj)
    if obj.get("parent_tool_use_id") is None or not blocks:
        return None
    if not all(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
        return None
    texts = [b.get("text") for b in blocks]
    return "\n".join(texts) if all(isinstance(t, str) for t in texts) else None


def _result_of(obj: wire.User, call: str) -> str | None:
    """The text of the main-thread ``tool_result`` of ``call`` in ``obj``, if it is one."""
    if obj.get("parent_tool_use_id") is not None:
        return None
    for b in wire.blocks_of(obj, "tool_result"):
        if b.get("tool_use_id") == call:
            content = b.get("content")
            first = content[:1] if isinstance(content, list) else content
            return one_text(first)
    return None


@register
@attrs.define
class SubagentAnswer(Stage):
    """A foreground sub-agent's last reply is only in the Agent call's result, as Claude
    writes it: cbc's frame of it is dropped."""

    rule: ClassVar[str] = "subagent-answer"
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})
    #: the frames that may follow a sub-agent's reply (each lets a held one go first)
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"assistant", "user", "result", "system", "control_request"}
    )

    #: seconds a sub-agent's text frame waits for the frame after it
    wait: float = 1.0

    _held: Frame | None = attrs.field(default=None, init=False)
    _text: str = attrs.field(default="", init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        held = self._take(ctx)
        if held is not None and frame.key() == "user":
            answer = _result_of(frame.view(wire.User), _parent(held))
            if answer is not None and answer.startswith(self._text):
                ctx.drop_held(self.rule)
                ctx.count(self.rule, "answer-frame-dropped")
                return (frame,)
        out = (held,) if held is not None else ()
        if frame.key() == "assistant":
            obj = frame.view(wire.Assistant)
            text = _answer_text(obj) if _in_foreground(obj, ctx) else None
            if text is not None and text.strip():
                self._held, self._text = frame, text.strip()
                ctx.hold()
                ctx.set_timer(self, "release", self.wait)
                return out
        return (*out, frame) if out else None

    def _take(self, ctx: Context) -> Frame | None:
        held, self._held = self._held, None
        if held is not None:
            ctx.cancel_timer(self, "release")
        return held

    def on_timer(self, key: str, ctx: Context) -> Output:
        held, self._held = self._held, None
        return (held,) if held is not None else None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        return self.on_timer("release", ctx)


def _in_foreground(obj: wire.Assistant, ctx: Context) -> bool:
    """Is ``obj`` a frame of a foreground agent (its parent an Agent call not run in the
    background)?"""
    call = starting_call(ctx.state, obj.get("parent_tool_use_id"))
    return (
        call is not None and call[0] in AGENT_TOOLS and call[1].get("run_in_background") is not True
    )


def _parent(frame: Frame) -> str:
    return str(frame.view(wire.Assistant).get("parent_tool_use_id"))


__all__ = ["SubagentAnswer", "SubagentPrompt"]
