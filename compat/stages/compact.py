"""``compact-line`` and ``compact-command``: a ``/compact`` user line ends the way Claude Code
2.1.220 ends it (PROTOCOL.md §2 "Session, turns and results").

Claude (twins ``slash-commands``; ``claude_compaction_2.1.285`` in
captures/reference/third-party/untether): ``/compact`` (with or without instructions after
it) as a stream-json user line is a local command that asks the model for a summary. Its
turn writes ``system/status`` ``compacting``, ``system/status`` ``{status: null,
compact_result: "success"}``, a ``system/init``, ``system/compact_boundary``
(``compact_metadata: {trigger: "manual", pre_tokens, post_tokens,
cumulative_dropped_tokens, duration_ms, preserved_segment?, preserved_messages?}``,
``logical_parent_uuid``), a synthetic user frame ("This session is being continued from a
previous conversation … Summary:\\n<the summary> …", ``isReplay: false``,
``isSynthetic: true``), replays of the local-command answers it keeps, the user frame
``<local-command-stdout>Compacted </local-command-stdout>`` (``isReplay: true``) and a
``result`` with ``result: ""``, ``num_turns: 0``, ``stop_reason: null``, zero usage and
no ``terminal_reason``, ``api_error_status`` or ``user_message_uuid``.

cbc 2.163.0 compacts too (a summary request whose answer the next request starts from:
twins ``slash-commands.cbc-raw``, the request after it has 3 messages) but writes its turn
as an ordinary answer: an init (its compaction agent's, ``tools: ["Read"]``), the model's
answer (``<analysis>…</analysis><summary>…</summary>``) as assistant text and as the
result.

``compact-line`` (upstream, last: it sees the lines as cbc gets them) numbers the user
lines given to cbc and notes those that are ``/compact`` (``ControlState.compact_lines``).
``compact-command`` (downstream, after ``turn-usage``: it writes the result as the client
sees it) knows a turn is that line's when ``control-state`` started it as the client's
turn of that number (``ControlState.client_turns``). It holds what cbc writes in that turn
(init, assistant and user frames, stream events, statuses); at its result, when the turn
succeeded and the answer has a ``<summary>`` block, it drops cbc's answer and writes
Claude's frames: the summary as Claude formats it (``<analysis>`` removed, ``<summary>``
as ``Summary:\\n…``), the init with the session's tools and MCP servers (those of the last
init the client saw, not the compaction agent's), the result (cbc's, with Claude's values:
its ``modelUsage`` and cost count the summary request, as Claude's do).
``compact_metadata``: ``pre_tokens`` is the context of the last model message before the
compaction (its input, cache and output tokens, as Claude counts it: 51305 after a message
of 51304 in the 2.1.285 reference; 0 when no model message came yet), ``post_tokens`` the
summary message's output tokens (what the context restarts from, as the model counted it;
Claude estimates its own from the summary message), ``cumulative_dropped_tokens`` their
difference (0 when the summary is longer), ``duration_ms`` the turn's time through the
bridge, ``logical_parent_uuid`` the last message the client saw before it. Not written:
``preserved_segment``/``preserved_messages`` (cbc keeps no message verbatim through its
compaction, and the SDK leaves them out when everything is summarized), the replays (the
bridge's local answers were never in cbc's conversation), and the sentence naming Claude's
transcript file (cbc's wire names none).

Anything else is left as cbc wrote it: a failed or interrupted compaction (an error
result, an answer without ``<summary>``: an empty session's), or a backend that exits
first, releases the held frames in order.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.slash_text import line_text
from compat.stages.turns import iso_ms
from compat.stages.usage import COUNTS

#: a ``/compact`` line: the command alone or with instructions after it
_COMMAND = re.compile(r"/compact(?:\s.*)?", re.S)
_ANALYSIS = re.compile(r"<analysis>[\s\S]*?</analysis>")
_SUMMARY = re.compile(r"<summary>([\s\S]*?)</summary>")
_BLANK_LINES = re.compile(r"\n\n+")
#: Claude's synthetic user frame around the summary (twins slash-commands); the sentence
#: naming Claude's own transcript file is left out (cbc's wire names none)
PREAMBLE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
CONTINUE = (
    "\nContinue the conversation from where it left off without asking the user any further "
    "questions. Resume directly \u2014 do not acknowledge the summary, do not recap what was "
    'happening, do not preface with "I\'ll continue" or similar. Pick up the last task as if '
    "the break never happened."
)
COMPACTED = "<local-command-stdout>Compacted </local-command-stdout>"
#: the result keys Claude's compaction result does not have
_NOT_IN_RESULT = ("terminal_reason", "api_error_status", "user_message_uuid")
#: what cbc writes in a turn that the rule holds while it compacts
_TURN_KINDS = frozenset(
    {"system/init", "system/status", "assistant", "user", "stream_event", "tool_progress"}
)


def is_compact_line(obj: wire.User) -> bool:
    """A user line that is the ``/compact`` command (its input as Claude reads a line:
    ``slash_text.line_text``)."""
    text = line_text(obj)
    return text is not None and _COMMAND.fullmatch(text.strip()) is not None


def format_summary(answer: str) -> str | None:
    """The model's answer as Claude shows the summary (``<analysis>`` removed, the
    ``<summary>`` block as ``Summary:\\n…``); None without a ``<summary>`` block."""
    text = _ANALYSIS.sub("", answer)
    match = _SUMMARY.search(text)
    if match is None:
        return None
    text = text.replace(match.group(0), "Summary:\n" + match.group(1).strip(), 1)
    return _BLANK_LINES.sub("\n\n", text).strip()


def _tokens(usage: Any, keys: tuple[str, ...]) -> int:
    given = usage if isinstance(usage, dict) else {}
    return sum(v for k in keys for v in [given.get(k)] if type(v) is int and v > 0)


@register
@attrs.define
class CompactLine(Stage):
    """Note the user lines given to cbc that are `/compact` (by their number), for
    `compact-command`."""

    rule: ClassVar[str] = "compact-line"
    direction: ClassVar[Direction] = "up"
    writes: ClassVar[frozenset[str]] = frozenset({"control.compact_lines"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})

    #: user lines given to cbc so far
    _sent: int = attrs.field(default=0, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self._sent += 1
        if is_compact_line(frame.view(wire.User)):
            ctx.state.control.compact_lines.append(self._sent)
            ctx.count(self.rule, "compact")
        return None


@register
@attrs.define
class CompactCommand(Stage):
    """A `/compact` line's turn as Claude's: compacting statuses, `compact_boundary`, the
    summary in a synthetic user frame, `Compacted`, an empty result (cbc writes the summary
    as an ordinary answer)."""

    rule: ClassVar[str] = "compact-command"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.client_turns",
            "control.compact_lines",
            "control.last_init",
            "control.turn_from_client",
            "control.turns",
            "session_id",
        }
    )
    kinds: ClassVar[frozenset[str] | None] = _TURN_KINDS | {"result"}

    #: the turn (``ControlState.turns``) the last frame belonged to
    _turn: int = attrs.field(default=0, init=False)
    #: the running turn is a ``/compact`` line's: its frames held, since ``_since``
    _compacting: bool = attrs.field(default=False, init=False)
    _since: float = attrs.field(default=0.0, init=False)
    _held: list[Frame] = attrs.field(factory=list, init=False)
    #: what the client saw last: the context of a model message, a message uuid
    _context: int = attrs.field(default=0, init=False)
    _last_uuid: str | None = attrs.field(default=None, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self._turn_start(ctx)
        if not self._compacting:
            self._observe(frame)
            return None
        if frame.key() == "result":
            return self._end(frame, ctx)
        self._held.append(frame)
        ctx.hold()
        return ()

    def _turn_start(self, ctx: Context) -> None:
        """A new turn (``control-state`` counted it) is a compaction when its client line
        was a ``/compact``."""
        control = ctx.state.control
        if control.turns == self._turn:
            return
        self._turn = control.turns
        self._compacting = (
            control.turn_from_client and control.client_turns in control.compact_lines
        )
        self._since = ctx.now

    def _observe(self, frame: Frame) -> None:
        """Outside a compaction: the last init, model message context and message uuid."""
        key = frame.key()
        if key == "assistant":
            self._answer(frame.view(wire.Assistant))
        elif key == "user":
            self._seen(frame.view(wire.User))

    def _seen(self, obj: wire.Assistant | wire.User) -> bool:
        """A main-thread message: its uuid is the last the client saw."""
        if obj.get("parent_tool_use_id") is not None:
            return False
        uuid = obj.get("uuid")
        if isinstance(uuid, str):
            self._last_uuid = uuid
        return True

    def _answer(self, obj: wire.Assistant) -> None:
        """A model's main-thread message: its context (not a local answer's, <synthetic>)."""
        message = obj.get("message")
        if self._seen(obj) and isinstance(message, dict) and message.get("model") != "<synthetic>":
            self._context = _tokens(message.get("usage"), COUNTS)

    def _end(self, frame: Frame, ctx: Context) -> Output:
        """The compaction's result: Claude's frames when cbc compacted, else cbc's."""
        self._compacting = False
        held, self._held = self._held, []
        result = frame.view(wire.TurnResult)
        summary = _summary_of(result)
        if summary is None:
            ctx.count(self.rule, "left-as-cbc-wrote-it")
            return (*held, frame)
        inits = [f for f in held if f.key() == "system/init"]
        ctx.drop_held(self.rule, len(held) - len(inits[:1]))
        ctx.count(self.rule, "compacted")
        return self._claude(frame, result, summary, held, inits[:1], ctx)

    def _claude(
        self,
        frame: Frame,
        result: wire.TurnResult,
        summary: str,
        held: list[Frame],
        init: list[Frame],
        ctx: Context,
    ) -> Output:
        """Claude's frames for a compaction that succeeded, in its order."""
        sid = ctx.state.session_id or result.get("session_id") or ""
        return (
            Frame.synth(_status(sid, "compacting", ctx), self.rule),
            Frame.synth({**_status(sid, None, ctx), "compact_result": "success"}, self.rule),
            *(_session_init(f, ctx.state.control.last_init) for f in init),
            Frame.synth(self._boundary(sid, _summary_tokens(held), ctx), self.rule),
            Frame.synth(_summary_frame(sid, summary, ctx), self.rule),
            Frame.synth(_compacted_frame(sid, ctx), self.rule),
            frame.replace(_result(result)),
        )

    def _boundary(self, sid: str, post: int, ctx: Context) -> dict[str, Any]:
        pre = self._context
        boundary: wire.CompactBoundary = {
            "type": "system",
            "subtype": "compact_boundary",
            "session_id": sid,
            "uuid": ctx.env.new_uuid(),
            "compact_metadata": {
                "trigger": "manual",
                "pre_tokens": pre,
                "post_tokens": post,
                "cumulative_dropped_tokens": max(0, pre - post),
                "duration_ms": max(0, round((ctx.now - self._since) * 1000)),
            },
        }
        if self._last_uuid is not None:
            boundary["logical_parent_uuid"] = self._last_uuid
        return wire.as_dict(boundary)

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        held, self._held = self._held, []
        self._compacting = False
        return held or None


def _summary_of(result: wire.TurnResult) -> str | None:
    """The summary of a compaction that succeeded (a success whose answer has a
    ``<summary>`` block), else None."""
    if result.get("subtype") != "success" or result.get("is_error") is True:
        return None
    answer = result.get("result")
    return format_summary(answer) if isinstance(answer, str) else None


def _summary_tokens(held: list[Frame]) -> int:
    """The output tokens of the turn's last main-thread message (the summary)."""
    tokens = 0
    for f in held:
        if f.key() == "assistant":
            obj = f.view(wire.Assistant)
            message = obj.get("message")
            if obj.get("parent_tool_use_id") is None and isinstance(message, dict):
                tokens = _tokens(message.get("usage"), ("output_tokens",))
    return tokens


def _status(sid: str, status: str | None, ctx: Context) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "status",
        "status": status,
        "session_id": sid,
        "uuid": ctx.env.new_uuid(),
    }


def _user(sid: str, content: str, ctx: Context, **flags: bool) -> dict[str, Any]:
    """A user frame as Claude writes its compaction's (keys in its order)."""
    return {
        "type": "user",
        "message": {"role": "user", "content": content},
        "session_id": sid,
        "parent_tool_use_id": None,
        "uuid": ctx.env.new_uuid(),
        "timestamp": iso_ms(ctx.wall_ms()),
        **flags,
    }


def _summary_frame(sid: str, summary: str, ctx: Context) -> dict[str, Any]:
    return _user(sid, PREAMBLE + summary + CONTINUE, ctx, isReplay=False, isSynthetic=True)


def _compacted_frame(sid: str, ctx: Context) -> dict[str, Any]:
    return _user(sid, COMPACTED, ctx, isReplay=True)


def _result(obj: wire.TurnResult) -> dict[str, Any]:
    """cbc's result as Claude's for a compaction: no answer, no model turn, zero usage."""
    new = {k: v for k, v in obj.items() if k not in _NOT_IN_RESULT}
    new.update(result="", num_turns=0, stop_reason=None, duration_api_ms=0)
    usage = obj.get("usage")
    if isinstance(usage, dict):
        new["usage"] = {**usage, **dict.fromkeys(COUNTS, 0)}
    return new


def _session_init(frame: Frame, last: Any) -> Frame:
    """The compaction's init with the session's tools and MCP servers (``control-state``'s
    last init: cbc's lists its compaction agent's)."""
    if not isinstance(last, dict):
        return frame
    obj = wire.plain(frame.view(wire.SystemInit))
    new = dict(obj)
    for key in ("tools", "mcp_servers"):
        if key in last:
            new[key] = last[key]
    return frame if new == obj else frame.replace(new)


__all__ = ["CompactCommand", "CompactLine", "format_summary", "is_compact_line"]
