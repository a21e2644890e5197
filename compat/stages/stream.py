"""``stream-events``: partial messages (``--include-partial-messages``) as Claude Code 2.1.220
streams them.

Strategy: a client that rebuilds a message from its ``stream_event`` frames (the Anthropic
SDKs' accumulators, UIs that render as the deltas arrive) indexes the blocks by
``event.index`` and reads the message's end from ``message_delta``; the rule keeps, per
message and thread (``_Message``), what it needs to renumber, close, reorder and complete
the events of any message, so each one reads as Claude's stream would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, cast

import attrs

from compat import wire
from compat.frames import Frame, dict_at
from compat.stage import Context, Output, Stage, register

_RULE = "stream-events"
#: streamed messages kept at once (a thread per sub-agent): a message that never ends (a
#: cut stream, an interrupted sub-agent) is otherwise kept for the session, and every
#: turn's flush walks all of them (quadratic over a session)
MAX_STREAMS = 256


def _key(parent: Any) -> str | None:
    """The thread of a ``parent_tool_use_id`` as written (None: the main one)."""
    return parent if isinstance(parent, str) else None


@attrs.define
class _Message:
    """One streamed message of one thread (``parent_tool_use_id``)."""

    message_id: str | None = None
    next_index: int = 0
    #: cbc's index of an open block -> the client's index
    open: dict[int, int] = attrs.Factory(dict)
    #: client index -> (block type, tool id)
    blocks: dict[int, tuple[str, Any]] = attrs.Factory(dict)
    #: client indices whose assistant frame has passed
    delivered: set[int] = attrs.Factory(set)
    has_tool_use: bool = False
    #: its ``message_stop`` was seen
    stopped: bool = False
    #: frames held behind a stop waiting for its assistant frame: (frame, client index of
    #: the block it stops when it is such a stop, else None)
    held: list[tuple[Frame, int | None]] = attrs.Factory(list)

    def open_block(self, index: int, content_block: Any) -> int:
        """A block starts at cbc's ``index``: it gets the message's next client index."""
        client = self.next_index
        self.next_index += 1
        self.open[index] = client
        block = _block_key(content_block)
        if block is not None:
            self.blocks[client] = block
            self.has_tool_use |= block[0] == "tool_use"
        return client

    def held_stop(self, block: tuple[str, Any] | None) -> int | None:
        """The client index of a held stop whose block is like ``block``, if any."""
        blocks = self.blocks
        return next((c for _, c in self.held if c is not None and blocks.get(c) == block), None)

    def deliver(self, block: tuple[str, Any] | None) -> None:
        """The assistant frame of a block no held stop waits for (Claude's order): the first
        block like ``block`` not delivered yet is."""
        for c in sorted(self.blocks):
            if c not in self.delivered and self.blocks[c] == block:
                self.delivered.add(c)
                return


def _thread(obj: wire.StreamEvent | wire.Assistant) -> str | None:
    """The thread a frame belongs to: its ``parent_tool_use_id`` (None: the main one)."""
    return _key(obj.get("parent_tool_use_id"))


def _release_to(held: list[tuple[Frame, Any]], match: Any, frame: Frame) -> list[Frame]:
    """The held frames before the stop of block ``match``, ``frame`` (its assistant frame),
    that stop, and the frames after it up to the next held stop; they leave ``held`` (one
    deletion: a ``pop(0)`` each was quadratic in the frames held, 2.8 s for 160,000)."""
    out: list[Frame] = []
    i, n = 0, len(held)
    while i < n and held[i][1] != match:
        out.append(held[i][0])
        i += 1
    out.append(frame)
    out.append(held[i][0])  # (the stop: ``match`` is one of the held stops)
    i += 1
    while i < n and held[i][1] is None:
        out.append(held[i][0])
        i += 1
    del held[:i]
    return out


def _block_key(block: Any) -> tuple[str, Any] | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if not isinstance(kind, str):
        return None
    return kind, block.get("id") if kind in ("tool_use", "server_tool_use") else None


@register
@attrs.define
class StreamEvents(Stage):
    """Partial messages as Claude streams them: `message_start` with no content, block
    indices 0, 1, 2… in stream order, no empty `input_json_delta`, `stop_reason: tool_use`
    on a message that ends in tool calls, each block's `assistant` frame before its
    `content_block_stop`, and `system/status` `requesting` before each model request.

    Option ``hold`` (seconds, default 10): the longest stream events wait for the
    assistant frame of the block they follow. At most ``MAX_STREAMS`` (256) messages are
    followed at once: a new thread's ``message_start`` past that forgets the first one
    started (what it held is released first; counted ``streams-forgotten``), whose later
    events then pass as cbc writes them.

    What cbc 2.163.0 writes differently (raw runs of ``scenarios/partial-messages``,
    ``thinking-partial``, ``partial-tool-only`` on both CLIs), and what the rule makes of it,
    for any message:

    - ``message_start.message.content``: cbc announces a phantom empty text block
      (``[{"type":"text","text":""}]``) it may never stream; Claude writes ``[]``.
    - Block indices: Claude numbers the blocks it streams 0, 1, 2… in order. cbc may start at
      1 (a reply that is only a tool call: no block 0 is ever sent), and gives a second
      parallel tool call the index of the first while the first is still open
      (``content_block_start`` index 2 twice, one ``content_block_stop``): a client merges the
      two calls. Each ``content_block_start`` gets the next index of its message; a start at
      an index that is still open first closes the open block (a ``content_block_stop`` is
      synthesized for it); deltas and stops follow the block they belong to.
    - cbc writes an empty ``input_json_delta`` (``partial_json: ""``) first in every tool
      block; Claude does not. It is dropped (it adds nothing to the input).
    - ``message_delta.delta.stop_reason``: cbc says ``end_turn`` when the message ends in tool
      calls; the API (and Claude) says ``tool_use``. A message that streamed a ``tool_use``
      block and ends ``end_turn`` ends ``tool_use``; other reasons (``max_tokens``…) are kept.
    - Order: Claude writes each block's ``assistant`` frame right after the block's last
      delta, before its ``content_block_stop``; cbc writes every stream event of the message
      first and the assistant frames after ``message_stop``. So a ``content_block_stop`` whose
      block has had no assistant frame yet is held, with the stream events behind it, until
      that assistant frame passes (one per block: ``frame-fields`` splits cbc's message
      first); it is matched by block type (and tool id). cbc sometimes writes no assistant
      frame for a block (the text after a thinking block, 3 runs in 4; the streamed answer
      of a turn, 8 runs in 33 of ``thinking-partial``): when it is the turn's answer,
      ``final-answer``, which runs before this rule, writes that frame from the ``result``
      under the streamed message's id, and it is matched like cbc's (so it goes out before
      the block's stop); otherwise a later block's frame, the turn's next ``user`` or
      ``result`` frame, the next message, the end of the stream or ``hold`` seconds without
      one release what is held, in order. A backend that already writes the assistant
      frame first (Claude's order) has nothing held. The cost: a block streamed after the
      first one reaches the client when cbc finishes the message (its deltas are behind the
      held stop), not as cbc streams it.
    - ``system/status`` ``requesting``: Claude writes it before each model request when it
      streams; cbc writes none (its ``status: null`` is dropped by ``vocabulary``). One is
      synthesized before a main-thread ``message_start`` that no ``requesting`` status
      preceded.

    Mode ``off`` leaves the stream as cbc writes it.
    """

    rule: ClassVar[str] = _RULE
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"stream_event", "assistant", "user", "result", "system/init", "system/status"}
    )

    hold: float = 10.0
    _streams: dict[Any, _Message] = attrs.field(factory=dict, init=False)
    _requesting: bool = attrs.field(default=False, init=False)

    # -- frames -----------------------------------------------------------------------
    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
        t = obj.get("type")
        if t == "stream_event":
            event = dict_at(obj, "event")
            if event is None:
                return None
            return self._event(frame, event, _key(obj.get("parent_tool_use_id")), ctx)
        if t == "system" and obj.get("subtype") == "status":
            self._requesting = obj.get("status") == "requesting"
            return None
        if not self._streams:
            return None  # no message is streaming: nothing to do
        if t == "assistant":
            return self._assistant(frame, cast("wire.Assistant", obj), ctx)
        return self._flush_before(frame, ctx)  # user, result, a new turn's init: it is over

    def _flush_before(self, frame: Frame, ctx: Context) -> Output:
        out = self._flush_all(ctx)
        return (*out, frame) if out else None

    @staticmethod
    def _parts(frame: Frame) -> tuple[wire.StreamEvent, dict[str, Any]]:
        """A ``stream_event`` frame's object and its event (an object: ``on_frame`` saw it),
        for a rewrite."""
        obj = frame.view(wire.StreamEvent)
        return obj, obj["event"]

    def _event(self, frame: Frame, event: dict[str, Any], key: str | None, ctx: Context) -> Output:
        etype = event.get("type")
        if etype == "message_start":
            return self._message_start(frame, key, ctx)
        msg = self._streams.get(key)
        if msg is None:
            return None
        index = event.get("index")
        if isinstance(index, int) and isinstance(etype, str):
            on_block = _BLOCK_EVENTS.get(etype)
            if on_block is not None:
                return on_block(self, frame, event, msg, index, ctx)
        return self._message_event(frame, event, etype, msg, key, ctx)

    def _block_start(
        self, frame: Frame, event: dict[str, Any], msg: _Message, index: int, ctx: Context
    ) -> Output:
        """A block gets the message's next index; an open block at the same index of cbc's
        is closed first."""
        out: list[Frame] = []
        if index in msg.open:  # cbc reused an open block's index: close that block
            closed = msg.open.pop(index)
            self._stop(msg, closed, self._synth_stop(frame, closed, ctx), out, ctx)
        client = msg.open_block(index, event.get("content_block"))
        self._emit(msg, self._reindex(frame, index, client), out, ctx)
        return out

    def _block_delta(
        self, frame: Frame, event: dict[str, Any], msg: _Message, index: int, ctx: Context
    ) -> Output:
        """A delta follows its block (cbc's empty ``input_json_delta`` is dropped)."""
        delta = dict_at(event, "delta")
        if (
            delta is not None
            and delta.get("type") == "input_json_delta"
            and delta.get("partial_json") == ""
        ):
            ctx.count(self.rule, "dropped:empty-input-json-delta")
            return []
        out: list[Frame] = []
        self._emit(msg, self._reindex(frame, index, msg.open.get(index, index)), out, ctx)
        return out

    def _block_stop(
        self, frame: Frame, event: dict[str, Any], msg: _Message, index: int, ctx: Context
    ) -> Output:
        """A block's stop, held until its assistant frame has passed."""
        out: list[Frame] = []
        client = msg.open.pop(index, index)
        self._stop(msg, client, self._reindex(frame, index, client), out, ctx)
        return out

    def _message_event(
        self,
        frame: Frame,
        event: dict[str, Any],
        etype: Any,
        msg: _Message,
        key: str | None,
        ctx: Context,
    ) -> Output:
        """``message_delta``, ``message_stop`` (and any other event), in order behind what
        the message holds."""
        if etype == "message_delta":
            frame = self._tool_use_stop(frame, event, msg)
        out: list[Frame] = []
        self._emit(msg, frame, out, ctx)
        if etype == "message_stop":
            msg.stopped = True
            self._forget_done(key)
        return out

    def _tool_use_stop(self, frame: Frame, event: dict[str, Any], msg: _Message) -> Frame:
        """A message that streamed a tool call and ends ``end_turn`` ends ``tool_use``."""
        delta = dict_at(event, "delta")
        if delta is None or delta.get("stop_reason") != "end_turn" or not msg.has_tool_use:
            return frame
        obj, ev = self._parts(frame)
        new_delta = {**ev["delta"], "stop_reason": "tool_use"}
        return frame.replace({**obj, "event": {**ev, "delta": new_delta}})

    def _message_start(self, frame: Frame, key: str | None, ctx: Context) -> Output:
        obj, event = self._parts(frame)
        streams = self._streams
        out = self._flush(key, ctx)
        if key not in streams and len(streams) >= MAX_STREAMS:
            oldest = next(iter(streams))  # (the first started: insertion order)
            out.extend(self._flush(oldest, ctx))
            streams.pop(oldest, None)
            ctx.count(self.rule, "streams-forgotten")
        new = streams[key] = _Message()
        message = dict_at(event, "message")
        if message is not None:
            new.message_id = message.get("id")
            if message.get("content"):
                new_msg = {**message, "content": []}
                frame = frame.replace({**obj, "event": {**event, "message": new_msg}})
        if key is None and not self._requesting:
            status = {
                "type": "system",
                "subtype": "status",
                "status": "requesting",
                "uuid": ctx.env.new_uuid(),
                "session_id": obj.get("session_id"),
            }
            out.append(Frame.synth(status, self.rule))
        self._requesting = False
        out.append(frame)
        return out

    def _forget_done(self, key: Any) -> None:
        """A message that has ended and holds nothing needs no more matching."""
        msg = self._streams.get(key)
        if msg is not None and msg.stopped and not msg.held:
            del self._streams[key]

    def _reindex(self, frame: Frame, index: int, client: int) -> Frame:
        if index == client:
            return frame
        obj, event = self._parts(frame)
        return frame.replace({**obj, "event": {**event, "index": client}})

    def _synth_stop(self, frame: Frame, client: int, ctx: Context) -> Frame:
        """A ``content_block_stop`` for block ``client``, in ``frame``'s thread."""
        obj = self._parts(frame)[0]
        stop = {
            "type": "stream_event",
            "event": {"type": "content_block_stop", "index": client},
            "session_id": obj.get("session_id"),
            "parent_tool_use_id": obj.get("parent_tool_use_id"),
            "uuid": ctx.env.new_uuid(),
        }
        return Frame.synth(stop, self.rule)

    def _stop(
        self, msg: _Message, client: int, frame: Frame, out: list[Frame], ctx: Context
    ) -> None:
        if client in msg.delivered or client not in msg.blocks:
            self._emit(msg, frame, out, ctx)
            return
        msg.held.append((frame, client))
        self._held(frame, ctx)

    def _emit(self, msg: _Message, frame: Frame, out: list[Frame], ctx: Context) -> None:
        """``frame`` goes out now, or behind what the message holds."""
        if msg.held:
            msg.held.append((frame, None))
            self._held(frame, ctx)
        else:
            out.append(frame)

    def _held(self, frame: Frame, ctx: Context) -> None:
        if frame.synthesized_by is None:
            ctx.hold()  # the frame this call was given is kept, not dropped
        ctx.set_timer(self, "hold", self.hold)

    def _assistant(self, frame: Frame, obj: wire.Assistant, ctx: Context) -> Output:
        key = _thread(obj)
        msg = self._streams.get(key)
        if msg is None:
            return None
        message = dict_at(obj, "message")
        if message is None:
            return None
        if message.get("id") != msg.message_id:
            return self._flush_before(frame, ctx)
        block = _first_block(message)
        match = msg.held_stop(block)
        if match is None:
            msg.deliver(block)  # Claude's order (the frame before its stop), or no stop held
            return None
        msg.delivered.add(match)
        out = _release_to(msg.held, match, frame)
        self._forget_done(key)
        self._stop_timer_if_idle(ctx)
        return out

    # -- releasing --------------------------------------------------------------------
    def _stop_timer_if_idle(self, ctx: Context) -> None:
        """No message holds anything: the ``hold`` timer is not needed."""
        if not any(m.held for m in self._streams.values()):
            ctx.cancel_timer(self, "hold")

    def _flush(self, key: Any, ctx: Context) -> list[Frame]:
        msg = self._streams.get(key)
        if msg is None or not msg.held:
            return []
        out = [f for f, _ in msg.held]
        msg.held.clear()
        self._forget_done(key)
        self._stop_timer_if_idle(ctx)
        return out

    def _flush_all(self, ctx: Context) -> list[Frame]:
        out: list[Frame] = []
        for key in list(self._streams):
            out.extend(self._flush(key, ctx))
        return out

    def on_timer(self, key: str, ctx: Context) -> Output:
        out = self._flush_all(ctx)
        if out:
            ctx.count(self.rule, "released-by-timer", len(out))
        return out or None

    def on_input_eof(self, ctx: Context) -> Output:
        return self._flush_all(ctx) or None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        return self._flush_all(ctx) or None


def _first_block(message: dict[str, Any]) -> tuple[str, Any] | None:
    """The (type, tool id) of an assistant message's first block (cbc's are one block)."""
    content = message.get("content")
    return _block_key(content[0]) if isinstance(content, list) and content else None


_BlockEvent = Callable[[StreamEvents, Frame, dict[str, Any], _Message, int, Context], Output]
#: the events of one block (with an ``int`` index), by type
_BLOCK_EVENTS: dict[str, _BlockEvent] = {
    "content_block_start": StreamEvents._block_start,
    "content_block_delta": StreamEvents._block_delta,
    "content_block_stop": StreamEvents._block_stop,
}
