"""``interrupted-turn`` and ``final-answer``: a turn ends the way it does in Claude Code
2.1.220 (PROTOCOL.md §2 "Session, turns and results").

Strategy: the frames that end a turn (its last messages, the rejections and marker of an
interrupt, the result) are made to say what Claude's would, whatever order and shape cbc
gave them; a turn is judged by what the client saw of it (main-thread frames since the
last user frame, the interrupt receipts in ``ControlState.interrupts``).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple, cast

import attrs

from compat import wire
from compat.frames import Frame, dict_at, str_at
from compat.stage import Context, Output, Stage, register
from compat.taskkit import remember

REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if "
    "it was a file edit, the new_string was NOT written to the file). STOP what you are "
    "doing and wait for the user to tell you how to proceed."
)
MARK = "[Request interrupted by user]"
MARK_TOOL = "[Request interrupted by user for tool use]"
#: what a model turn writes (control-state's turn, command-lifecycle's, and what
#: interrupt-terminal drops of cbc's own turn after an interrupt)
TURN_CONTENT = frozenset(
    {"system/init", "assistant", "user", "stream_event", "result", "tool_progress"}
)
#: what shows a turn is running (the contract checker's list, plus an init that
#: ``init-once`` released: it only lets one through when the turn starts)
TURN_KINDS = frozenset(
    {
        "system/init",
        "assistant",
        "user",
        "stream_event",
        "tool_progress",
        "system/status",
        "system/api_retry",
        "system/thinking_tokens",
        "system/compact_boundary",
    }
)


def iso_ms(ms: int) -> str:
    """Claude's ``timestamp``: ISO 8601, milliseconds, ``Z``."""
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def is_interrupt_receipt(obj: Mapping[str, Any], ctx: Context) -> bool:
    """A successful reply to an interrupt (a ``control_response``): its request id is one
    ``interrupt-request`` recorded, or (that rule off) it has the shape of cbc's or Claude's
    receipt."""
    resp = cast("wire.ControlResponse", obj).get("response")
    if not isinstance(resp, dict) or resp.get("subtype") != "success":
        return False
    if str_at(resp, "request_id") in ctx.state.control.interrupts:
        return True
    body = resp.get("response")
    return isinstance(body, dict) and ("interrupted" in body or "still_queued" in body)


def user_frame(ctx: Context, content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": None,
        "session_id": ctx.state.session_id or "",
        "uuid": ctx.env.new_uuid(),
        "timestamp": iso_ms(ctx.wall_ms()),
        **extra,
    }


def _tool_use_ids(obj: wire.Assistant) -> list[str]:
    return [b["id"] for b in wire.blocks_of(obj, "tool_use") if isinstance(b.get("id"), str)]


def _tool_result_ids(obj: wire.User) -> list[str | None]:
    return [str_at(b, "tool_use_id") for b in wire.blocks_of(obj, "tool_result")]


def _has_marker(obj: wire.User) -> bool:
    """The backend wrote Claude's interrupt marker itself (either form)."""
    return any(
        isinstance(b, dict) and str(b.get("text", "")).startswith(MARK[:-1])
        for b in wire.blocks(obj)
    )


# -- the interrupted turn's result ------------------------------------------------------


class _Ending(NamedTuple):
    """What ``interrupted-turn`` knew of a turn when its result came."""

    interrupted: bool
    tool_turn: bool  # a tool ran at the receipt, or is still running
    running: list[str]  # main-thread calls with no tool_result
    stop_reason: str | None  # the last main-thread message's
    marked: bool  # the marker came already
    denied: bool  # ended by a call the client denied with ``interrupt: true``


def _aborted(reason: Any) -> bool:
    return isinstance(reason, str) and reason.startswith("aborted")


def _in_claude_form(obj: wire.Result) -> bool:
    return (
        obj.get("subtype") == "error_during_execution"
        and obj.get("is_error") is True
        and isinstance(obj.get("errors"), list)
    )


def _rejection(ctx: Context, use: str) -> dict[str, Any]:
    """Claude's rejected ``tool_result`` for a call still running at the interrupt."""
    block = {"type": "tool_result", "content": REJECTED, "is_error": True, "tool_use_id": use}
    meta = [{"id": use, "non_execution_kind": "user-rejected"}]
    return user_frame(ctx, [block], tool_use_result="User rejected tool use", tool_result_meta=meta)


def _marker(ctx: Context, tooly: bool) -> dict[str, Any]:
    return user_frame(ctx, [{"type": "text", "text": MARK_TOOL if tooly else MARK}])


def _final_stop_reason(obj: wire.Result, tooly: bool, last: str | None) -> str | None:
    """``tool_use`` for a tool turn, else the result's own, else the last message's."""
    if tooly:
        return "tool_use"
    given = obj.get("stop_reason")
    return last if given is None else given


def _errors(obj: wire.Result, stop_reason: str | None, denied: bool) -> list[Any]:
    """The result's errors (not a ``success``'s, nor cbc's ``Permission denied for
    tool(s): …`` of a turn a denial with ``interrupt: true`` ended: twins
    permission-deny-interrupt), else Claude's diagnostic line."""
    errors = obj.get("errors") if obj.get("subtype") != "success" and not denied else None
    if isinstance(errors, list) and errors:
        return errors
    sr = "null" if stop_reason is None else str(stop_reason)
    return [f"[ede_diagnostic] result_type=user last_content_type=n/a stop_reason={sr}"]


def _error_result(obj: wire.Result, tooly: bool, aborted: bool, turn: _Ending) -> dict[str, Any]:
    """The result rewritten as Claude's ``error_during_execution``."""
    new: dict[str, Any] = {k: v for k, v in obj.items() if k != "result"}
    new["subtype"] = "error_during_execution"
    new["is_error"] = True
    if not aborted:
        new["terminal_reason"] = "aborted_tools" if tooly else "aborted_streaming"
    new["stop_reason"] = _final_stop_reason(obj, tooly, turn.stop_reason)
    new["errors"] = _errors(obj, new["stop_reason"], turn.denied)
    return new


@register
@attrs.define
class InterruptedTurn(Stage):
    """An interrupted turn ends Claude's way: rejections, the marker, an error result.

    Claude (``claude-2.1.220/mockapi_interrupt-during-foreground-bash_aborted-tools``): a
    rejected ``tool_result`` for each tool call still running ("The user doesn't want to
    proceed with this tool use…", ``is_error: true``), a user frame ``[Request interrupted by
    user for tool use]`` (``[Request interrupted by user]`` when no tool was running; each
    rejection marked ``tool_result_meta: [{id, non_execution_kind: "user-rejected"}]``: twins
    interrupt-midturn-workflow.claude.jsonl), then a ``result`` ``error_during_execution``,
    ``is_error: true``, ``errors: ["[ede_diagnostic] …"]``, ``terminal_reason:
    aborted_tools|aborted_streaming``. Nothing of the model comes after the receipt.

    cbc 2.163.0 is less regular: an assistant "Interrupted by user" notice and a ``success``
    result with ``result: ""``, ``terminal_reason: aborted_tools``, no tool_result
    (``mockoai_interrupt-during-slow-fg-bash-with-session-id``); or a ``success`` result that
    repeats the previous turn's text with no ``terminal_reason``
    (``mockoai_interrupt-midturn-workflow-2-running-agents``); or its own rejected tool_result
    followed by more model output ("done.") in the same turn
    (``mockoai_can-use-tool-then-interrupt``).

    A permission answer that denies with ``interrupt: true`` ends Claude's turn the same
    way (the call rejected with that text, the marker for tool use, ``aborted_tools``:
    ``tests/bridge/data/acp/write-rejected``, Zed's ACP adapter rejecting an edit); cbc
    ends it with a bare ``error_during_execution`` result and no tool_result, which a
    client waiting for the call's result never sees end.

    So a turn counts as interrupted when the receipt of an interrupt the bridge forwarded
    arrives while it runs, when a call the client denied with ``interrupt: true`` has no
    tool_result at its end (``ControlState.denying_interrupts``), or when its result says
    ``aborted_*``. (The receipt: a ``control_response`` to a request in
    ``ControlState.interrupts``, or of the receipt's shape — the contract checker's own
    criterion.) After the receipt, main-thread model output is dropped (mode ``on``;
    ``keep-output`` forwards it), except cbc's own rejected tool_result for a call that was
    running. At the result: the missing rejections, the marker, the rewritten result. A
    tool_result cbc sends later for a call already rejected is dropped.

    Whether the receipt came while the turn ran is judged here, on the turn as this rule
    sees it, not read from ``ControlState.turn_interrupted`` (``control-state``'s, which
    ``command-lifecycle`` reads): a turn opens here at any frame of it (``TURN_KINDS``: a
    ``system/status``, an ``api_retry``, which control-state does not count as a turn
    start: the receipt may come before the turn's init, cbc-2.117.0
    ``nomodel_controls-after-session``), and cbc's late tool_result for a call already
    rejected opens none here (it is dropped) where control-state, before the rules that
    drop it, starts a turn on it: an idle interrupt after that would end the next line's
    turn.
    """

    rule: ClassVar[str] = "interrupted-turn"
    reads: ClassVar[frozenset[str]] = frozenset({"control.interrupts", "session_id"})
    writes: ClassVar[frozenset[str]] = frozenset({"control.denying_interrupts"})
    modes: ClassVar[tuple[str, ...]] = ("on", "keep-output")
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response", "result", *TURN_KINDS})

    _active: bool = attrs.field(default=False, init=False)
    _interrupted: bool = attrs.field(default=False, init=False)
    _tool_turn: bool = attrs.field(default=False, init=False)  # a tool ran at the receipt
    _running: dict[str, None] = attrs.field(factory=dict, init=False)  # main-thread calls
    _stop_reason: str | None = attrs.field(default=None, init=False)
    _marked: bool = attrs.field(default=False, init=False)  # the marker came already
    _rejected: dict[str, None] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t = frame.key()
        if t == "stream_event" and not self._interrupted:
            self._active = True  # (what follows for one: nothing to drop)
            return None
        obj = frame.view(wire.Envelope)
        if t == "control_response":
            self._receipt(obj, ctx)
            return None
        if t == "result":
            return self._result(frame, frame.view(wire.Result), ctx)
        main = obj.get("parent_tool_use_id") is None
        if t == "user" and main:
            return self._user(frame.view(wire.User), ctx)
        self._active = True
        if not main:
            return None
        if t == "assistant":
            return self._assistant(frame.view(wire.Assistant), ctx)
        if t == "stream_event" and self._drops(ctx):
            return ()
        return None

    def _drops(self, ctx: Context) -> bool:
        """Main-thread model output after the receipt is dropped (mode ``on``)."""
        if not (self._interrupted and self.mode == "on"):
            return False
        ctx.count(self.rule, "dropped-after-interrupt")
        return True

    def _receipt(self, obj: wire.Envelope, ctx: Context) -> None:
        if self._active and not self._interrupted and is_interrupt_receipt(obj, ctx):
            self._interrupted = True
            self._tool_turn = bool(self._running)
            ctx.log(self.rule, "interrupt receipt during a turn: it ends as interrupted", "debug")

    def _assistant(self, obj: wire.Assistant, ctx: Context) -> Output:
        if self._drops(ctx):
            return ()
        message = obj.get("message")
        if isinstance(message, dict):
            self._stop_reason = message.get("stop_reason")
        for use in _tool_use_ids(obj):
            remember(self._running, use, None, cap=256)
        return None

    def _user(self, obj: wire.User, ctx: Context) -> Output:
        results = _tool_result_ids(obj)
        if not results:
            self._active = True
            if _has_marker(obj):
                self._marked = True  # the backend writes Claude's marker itself
            return None
        if all(r in self._rejected for r in results):
            ctx.count(self.rule, "late-tool-result")
            return ()  # cbc's late result for a call the client saw rejected
        self._active = True
        if not self._answered(results) and self._drops(ctx):
            return ()
        return None

    def _answered(self, results: list[str | None]) -> list[str]:
        """The running calls ``results`` answer, no longer running."""
        # (a frame may name a call twice: each is answered once)
        answered = [r for r in dict.fromkeys(results) if r in self._running]
        for r in answered:
            del self._running[r]
        return answered

    def _end_turn(self, ctx: Context) -> _Ending:
        """What the turn left, and a fresh turn. A call the client denied with ``interrupt:
        true`` that cbc wrote no tool_result for interrupted the turn (Claude rejects it and
        stops: ``tests/bridge/data/acp/write-rejected``)."""
        denying = ctx.state.control.denying_interrupts
        denied = [u for u in self._running if u in denying]
        denying.clear()  # (the turn's own: a later turn's calls are new ones)
        ending = _Ending(
            self._interrupted or bool(denied),
            self._tool_turn or bool(self._running),
            list(self._running),
            self._stop_reason,
            self._marked,
            bool(denied),
        )
        self._active = self._interrupted = self._tool_turn = self._marked = False
        self._running.clear()
        self._stop_reason = None
        return ending

    def _result(self, frame: Frame, obj: wire.Result, ctx: Context) -> Output:
        reason = obj.get("terminal_reason")
        aborted = _aborted(reason)
        turn = self._end_turn(ctx)
        if not (turn.interrupted or aborted):
            return None
        if turn.marked and _in_claude_form(obj):
            return None  # Claude's own form (a Claude backend, or a rule upstream)
        tooly = turn.tool_turn or reason == "aborted_tools"
        out = [self._reject(ctx, use) for use in turn.running]
        if not turn.marked:
            out.append(Frame.synth(_marker(ctx, tooly), self.rule))
        new = _error_result(obj, tooly, aborted, turn)
        ctx.log(
            self.rule,
            f"interrupted turn rewritten ({new['terminal_reason']}, "
            f"{len(turn.running)} running tool call(s) rejected)",
            "debug",
        )
        return (*out, frame.replace(new))

    def _reject(self, ctx: Context, use: str) -> Frame:
        remember(self._rejected, use, None, cap=1024)
        return Frame.synth(_rejection(ctx, use), self.rule)


@register
@attrs.define
class FinalAnswer(Stage):
    """A turn's answer cbc put only in its `result`: the `assistant` frame Claude writes for
    it is synthesized before the result.

    cbc 2.163.0 sometimes writes no ``assistant`` frame for the text that ends a turn: the
    text after a thinking block (3 raw runs in 4 of ``scenarios/thinking``), the answer
    after parallel tool calls (twins parallel-tools, one run), a streamed answer (with
    ``--include-partial-messages``: its ``message_start`` … ``message_stop``, then the
    result; 8 runs in 33 of ``scenarios/thinking-partial``); its ``result`` still holds
    the text. Claude writes every model message as assistant frames, so a client that shows
    the assistant frames (or keeps the transcript from them) loses the answer, and
    ``result-shape`` takes the turn's ``stop_reason`` from the message before it
    (``tool_use``). When a ``success`` result (not ``is_error``) with a non-empty
    ``result`` ends a turn in which the model wrote (a main-thread assistant frame or
    stream event) but no main-thread text since the last main-thread ``user`` frame, an
    assistant frame with that text goes out first: the message of the thinking block
    before it when that was the last block (one message, as the model wrote it), else a
    message of its own. A turn with no model output (a local command's result), and a
    result that repeats the turn's last text, are left alone.

    When the main thread streamed a message since that ``user`` frame, the frame is that
    message's, as Claude writes it: its ``message_start``'s ``id``, ``model`` and ``usage``
    (each of Claude's streamed assistant frames carries exactly those: twins
    partial-messages, partial-tool-only, thinking-partial, 16 frames of 16). The rule runs
    before ``stream-events``, which holds the text block's ``content_block_stop`` and what
    follows it until that block's frame passes: the synthesized frame is matched to it
    like one cbc wrote, so it reaches the client after the block's last delta and before
    its ``content_block_stop``, ``message_delta`` and ``message_stop``, Claude's order
    (``tests/bridge/data/cbc-variants/streamed-answer-without-frame``). The
    ``message_start`` is read from the first stream event after the turn's start and after
    each main-thread ``user`` frame; a sub-agent's message streaming then (its
    ``parent_tool_use_id`` set) is not the answer's, and the rule reads on until the main
    thread's own."""

    rule: ClassVar[str] = "final-answer"
    #: (the session id only when a result carries none)
    reads: ClassVar[frozenset[str]] = frozenset({"session_id"})
    #: (a stream event says the model wrote, and a main-thread message_start which message
    #: streams)
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"assistant", "user", "result", "stream_event"}
    )

    #: the model wrote in this turn
    _model_wrote: bool = attrs.field(default=False, init=False)
    #: a main-thread text block since the last main-thread user frame
    _text_seen: bool = attrs.field(default=False, init=False)
    #: the last main-thread assistant message: (id, model, usage), and whether its last
    #: block was thinking
    _last: tuple[str | None, str | None, dict[str, Any] | None] | None = attrs.field(
        default=None, init=False
    )
    _after_thinking: bool = attrs.field(default=False, init=False)
    #: the turn's last main-thread text (a result repeating it is not a lost answer)
    _said: str | None = attrs.field(default=None, init=False)
    #: the main-thread message streamed since the last main-thread user frame: its
    #: message_start's (id, model, usage)
    _streamed: tuple[str | None, str | None, dict[str, Any] | None] | None = attrs.field(
        default=None, init=False
    )
    #: the next stream event is read (the turn started, or a main-thread user frame came)
    _listening: bool = attrs.field(default=True, init=False)
    #: a sub-agent's message streams: read on until the main thread's message_start
    _sub_streaming: bool = attrs.field(default=False, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t = frame.key()
        if t == "stream_event":
            self._model_wrote = True  # (a sub-agent's too)
            if self._listening:
                self._heard(frame.view(wire.StreamEvent))
            return None
        obj = frame.view(wire.Envelope)
        if obj.get("parent_tool_use_id") is not None:
            return None
        if t == "assistant":
            self._assistant(frame.view(wire.Assistant))
        elif t == "user":
            self._text_seen = self._after_thinking = False
            self._streamed = None
            self._listening = True
        elif t == "result":
            return self._result(frame, frame.view(wire.Result), ctx)
        return None

    def _assistant(self, obj: wire.Assistant) -> None:
        self._model_wrote = True
        message = obj.get("message")
        if isinstance(message, dict):
            self._last = (message.get("id"), message.get("model"), message.get("usage"))
        for block in wire.blocks(obj):
            if isinstance(block, dict):
                self._block(block)

    def _block(self, block: dict[str, Any]) -> None:
        kind = block.get("type")
        self._after_thinking = kind == "thinking"
        if kind == "text" and block.get("text"):
            self._text_seen = True
            self._said = block.get("text")

    def _result(self, frame: Frame, obj: wire.Result, ctx: Context) -> Output:
        out = self._answer(obj, ctx)
        self._model_wrote = self._text_seen = self._after_thinking = False
        self._last = self._said = self._streamed = None
        self._listening, self._sub_streaming = True, False
        return None if out is None else (out, frame)

    def _heard(self, obj: wire.StreamEvent) -> None:
        """The first stream event since the turn's start or the last main-thread user
        frame: a main-thread ``message_start`` names the message that streams."""
        event = dict_at(obj, "event")
        if event is None or event.get("type") != "message_start":
            if not self._sub_streaming:
                self._listening = False
            return
        if obj.get("parent_tool_use_id") is not None:
            self._sub_streaming = True  # not the answer's message: read on
            return
        message = dict_at(event, "message")
        self._streamed = (
            str_at(message, "id"),
            str_at(message, "model"),
            dict_at(message, "usage"),
        )
        self._listening = False

    def _lost(self, text: str) -> bool:
        """The model wrote in this turn, but not ``text`` as a main-thread text block."""
        return self._model_wrote and not self._text_seen and text != self._said

    def _last_model(self) -> str | None:
        return self._last[1] if self._last is not None else None

    def _message(self, ctx: Context) -> tuple[str | None, str | None, dict[str, Any]]:
        """(id, model, usage) of the answer's message: the streamed one's, else the thinking
        block's before it, else a message of its own."""
        streamed = self._streamed
        if streamed is not None and streamed[0]:
            # the streamed message's frame, as Claude writes it (stream-events places it)
            usage = dict(streamed[2]) if streamed[2] is not None else dict(_NO_USAGE)
            return streamed[0], streamed[1] or self._last_model(), usage
        last = self._last if self._after_thinking else None
        if last is None:
            return ctx.env.new_uuid().replace("-", ""), self._last_model(), dict(_NO_USAGE)
        usage = last[2] if isinstance(last[2], dict) else dict(_NO_USAGE)
        return last[0], self._last_model(), usage

    def _answer(self, result: wire.Result, ctx: Context) -> Frame | None:
        text = _answer_text(result)
        if text is None or not self._lost(text):
            return None
        message_id, model, usage = self._message(ctx)
        ctx.log(self.rule, "the turn's answer had no assistant frame: synthesized", "debug")
        return Frame.synth(_answer_frame(ctx, result, text, message_id, model, usage), self.rule)


def _answer_text(result: wire.Result) -> str | None:
    """The text of a ``success`` result (not ``is_error``) that says something."""
    text = result.get("result")
    if result.get("subtype") != "success" or result.get("is_error") is True:
        return None
    return text if isinstance(text, str) and text.strip() else None


def _answer_frame(
    ctx: Context,
    result: wire.Result,
    text: str,
    message_id: str | None,
    model: str | None,
    usage: dict[str, Any],
) -> dict[str, Any]:
    """The assistant frame Claude writes for the turn's answer."""
    return {
        "type": "assistant",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
            "context_management": None,
        },
        "parent_tool_use_id": None,
        "session_id": result.get("session_id") or ctx.state.session_id or "",
        "uuid": ctx.env.new_uuid(),
        "timestamp": iso_ms(ctx.wall_ms()),
    }


_NO_USAGE = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
