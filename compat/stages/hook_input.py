"""``hook-input``: a ``hook_callback`` request carries what Claude Code 2.1.220 tells a
client's hook.

An SDK hands the request's ``input`` to the client's hook function and its ``tool_use_id``
as the function's second argument. Claude's (twins sdk-hooks) differ from cbc 2.163.0's
in what the bridge can give from the session's wire:

- ``prompt_id``: one id per prompt, the same on every hook the prompt's turn asks (cbc:
  none);
- a request about no tool call (UserPromptSubmit, Stop, …) has a ``tool_use_id`` of its
  own, a fresh id (cbc: none);
- Stop's ``last_assistant_message`` (the turn's last answer text), ``session_crons`` (cbc
  has no cron tools: ``[]``) and ``background_tasks`` (``[]`` when no background task runs;
  left out otherwise: the bridge does not know Claude's shape of a running one).

- ``transcript_path``: Claude's transcript of the session, when the drop-in writes Claude's
  session store (option ``transcripts``, the store's project directory, which
  ``claude-on-cbc`` sets: ``<dir>/<session_id>.jsonl``); cbc's own transcript otherwise.

Left as cbc writes them: PostToolUse's ``tool_response`` (cbc's exit record: the output
comes after the hook), and Claude's ``effort`` and ``duration_ms`` (cbc has neither).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import controlkit as ck
from compat import wire
from compat.claude_store import is_uuid
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register


def _answer_text(obj: wire.Assistant) -> str | None:
    """The text of a main-thread answer (None: a sub-agent's, or no text)."""
    if obj.get("parent_tool_use_id") is not None:
        return None
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    texts = [
        b["text"]
        for b in (content if isinstance(content, list) else [])
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "\n".join(texts) if texts else None


@register
@attrs.define
class HookInput(Stage):
    """A hook request carries Claude's prompt id, its own tool_use_id when about no tool
    call, and a Stop's last answer, crons and background tasks."""

    rule: ClassVar[str] = "hook-input"
    reads: ClassVar[frozenset[str]] = frozenset({"tasks"})
    #: the background tasks open before the Stop request (task-correlation comes later)
    reads_earlier: ClassVar[frozenset[str]] = frozenset({"tasks"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request", "assistant", "result"})

    #: the session store's project directory (``$CLAUDE_CONFIG_DIR/projects/<slug>``) the
    #: drop-in writes Claude's transcripts to; empty: a hook is given cbc's transcript
    transcripts: str = ""

    _prompt: str | None = attrs.field(default=None, init=False)  # the turn's prompt id
    _last: str | None = attrs.field(default=None, init=False)  # the turn's last answer

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        kind = frame.key()
        if kind == "assistant":
            text = _answer_text(frame.view(wire.Assistant))
            self._last = text if text is not None else self._last
            return None
        if kind == "result":
            self._prompt = self._last = None
            return None
        _, request = ck.request_of(frame.obj)
        data = request.get("input")
        if request.get("subtype") != "hook_callback" or not isinstance(data, dict):
            return None
        new = self._claudes(dict(request), dict(data), ctx)
        return (frame.replace({**frame.obj, "request": new}),)

    def _claudes(self, request: dict[str, Any], data: dict[str, Any], ctx: Context) -> Any:
        if data.get("hook_event_name") == "UserPromptSubmit" or self._prompt is None:
            self._prompt = ctx.env.new_uuid()
        data.setdefault("prompt_id", self._prompt)
        if data.get("hook_event_name") == "Stop":
            self._stop(data, ctx)
        if self.transcripts and is_uuid(data.get("session_id")):
            data["transcript_path"] = f"{self.transcripts}/{data['session_id']}.jsonl"
        if not isinstance(request.get("tool_use_id"), str):
            request["tool_use_id"] = ctx.env.new_uuid()
        return {**request, "input": data}

    def _stop(self, data: dict[str, Any], ctx: Context) -> None:
        if self._last is not None:
            data.setdefault("last_assistant_message", self._last)
        if not ctx.state.has_open_task():
            data.setdefault("background_tasks", [])
        data.setdefault("session_crons", [])
