"""``tool-input``: a tool call's input as Claude Code 2.1.220 shows it, its schema's
defaults filled in.

Claude parses the model's tool input with the tool's schema before it writes the
assistant frame, so a field the schema gives a default appears with it even when the
model left it out: an ``Edit`` the model sent as ``{file_path, old_string, new_string}``
reaches the client as ``{…, replace_all: false}`` (twins file-tools, file-tool-errors:
every Edit). cbc writes the input as the model sent it. A client that renders or replays
the call (an editor's diff view, a transcript) reads the field. ``DEFAULTS`` holds the
defaults seen in Claude's frames; the model's own value always wins.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register

#: tool name -> the fields Claude's schema fills in when the model leaves them out
DEFAULTS: dict[str, dict[str, Any]] = {"Edit": {"replace_all": False}}


def _filled(block: Any) -> Any:
    """A ``tool_use`` block with its tool's defaults in its input (the block itself when
    nothing is missing)."""
    if not isinstance(block, dict) or block.get("type") != "tool_use":
        return block
    defaults = DEFAULTS.get(str(block.get("name")))
    given = block.get("input")
    if defaults is None or not isinstance(given, dict):
        return block
    missing = {k: v for k, v in defaults.items() if k not in given}
    return {**block, "input": {**given, **missing}} if missing else block


@register
@attrs.define
class ToolInput(Stage):
    """A tool call's input carries its schema's defaults, as Claude writes it."""

    rule: ClassVar[str] = "tool-input"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.Assistant)
        message = obj.get("message")
        if not isinstance(message, dict):
            return None
        content = message.get("content")
        if not isinstance(content, list):
            return None
        blocks = [_filled(b) for b in content]
        if all(n is b for n, b in zip(blocks, content, strict=True)):
            return None
        ctx.count(self.rule, "defaults-filled")
        return (frame.replace({**obj, "message": {**message, "content": blocks}}),)
