"""``stream-events``: partial messages (``--include-partial-messages``) as Claude Code 2.1.220
streams them (issue 12).

Strategy: a client that rebuilds a message from its ``stream_event`` frames (the Anthropic
SDKs' accumulators, UIs that render as the deltas arrive) indexes the blocks by
``event.index`` and reads the message's end from ``message_delta``; the rule keeps, per
message and thread (``_Message``), what it needs to renumber, close, reorder and complete
the events of any message, so each one reads as Claude's stream would.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import attrs
import msgspec

from compat import wire
from compat.frames import Frame, dict_at, has_u_escape
from compat.stage import Context, Output, Stage, register

_RULE = "stream-events"
#: how a delta's line starts (``_plain_delta``)
_DELTA_HEAD = b'{"type":"content_block_delta","index":'
#: streamed messages kept at once (a thread per sub-agent): a message that never ends (a
#: cut stream, an interrupted sub-agent) is otherwise kept for the session, and every
#: frame's plain check and every turn's flush walk all of them (quadratic over a session)
MAX_STREAMS = 256


class _Delta(msgspec.Struct):
    """What the rule reads of an event's ``delta`` (absent keys: None, like ``dict.get``)."""

    type: Any = None
    partial_json: Any = None
    stop_reason: Any = None


class _Event(msgspec.Struct):
    """What the rule reads of a ``stream_event``'s ``event``."""

    type: Any = None
    index: Any = None
    content_block: Any = None
    #: None: absent, null or (from a parse) not an object
    delta: _Delta | None = None


class _Line(msgspec.Struct):
    """What the rule reads of a ``stream_event`` line: its event (None: absent, null or,
    from a parse, not an object) and its ``parent_tool_use_id`` as written."""

    event: _Event | None = None
    parent_tool_use_id: Any = None


#: a line's facts read without parsing the rest (msgspec validates the whole text in C and
#: builds only these fields, each as ``loads`` would, the last of duplicate keys winning);
#: it raises for what it does not read as the parse does (a value of another shape where a
#: ``_Delta`` or an ``_Event`` is, a lone surrogate escape…): the caller then parses
_DECODE_LINE = msgspec.json.Decoder(_Line).decode
_LINE_ERRORS = (msgspec.DecodeError, RecursionError)


def _read_line(raw: bytes) -> _Line | None:
    """The facts of a line proved to be a JSON object (``Frame.proven``), or None when the
    decoder does not read them (then only a parse, ``_line_of``, tells)."""
    try:
        return _DECODE_LINE(raw)
    except _LINE_ERRORS:
        return None


def _line_of(obj: dict[str, Any]) -> _Line:
    """The same facts from a parsed frame."""
    event = dict_at(obj, "event")
    if event is None:
        return _Line(None, obj.get("parent_tool_use_id"))
    d = dict_at(event, "delta")
    delta = (
        None if d is None else _Delta(d.get("type"), d.get("partial_json"), d.get("stop_reason"))
    )
    return _Line(
        _Event(event.get("type"), event.get("index"), event.get("content_block"), delta),
        obj.get("parent_tool_use_id"),
    )


def _key(parent: Any) -> str | None:
    """The thread of a ``parent_tool_use_id`` as written (None: the main one)."""
    return parent if isinstance(parent, str) else None


def _passing_delta(raw: bytes) -> bool:
    """``raw`` is, from its bytes, a delta the stage passes unchanged while it is plain (a
    line with an escape, an empty ``input_json_delta`` or that might be anything else is
    not); ``find``, not ``in``: ``compat.pipeline``, "Hot path"."""
    return (
        raw.find(_DELTA_HEAD, 0, 96) >= 0
        and raw.find(b'"partial_json":""') < 0
        and not has_u_escape(raw)
    )


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
    #: the common frame (a delta, with nothing held and no index moved; any frame of a
    #: session that does not stream) passes on its bytes, unparsed
    lazy: ClassVar[bool] = True
    #: its state is its own: no other stage reads it
    pure: ClassVar[bool] = True
    raw_pass: ClassVar[bool] = True

    hold: float = 10.0
    _streams: dict[Any, _Message] = attrs.field(factory=dict, init=False)
    _requesting: bool = attrs.field(default=False, init=False)
    #: nothing is held and no open block was renumbered (None: to be found out again).
    #: It is kept, not found out again after every frame (four walks of every stream a
    #: message): what can make it false sets it False where it happens (a frame held,
    #: ``_held``; a block opened at another index), what can make it true sets it None (a
    #: release or flush, a renumbered block closed, a message forgotten with blocks open)
    _plain: bool | None = attrs.field(default=None, init=False)
    #: the last line ``on_raw`` read the facts of, and those facts: a line it sends the
    #: frame way reaches ``on_frame`` as that same ``bytes`` object, not read again
    _seen: tuple[bytes, _Line] | None = attrs.field(default=None, init=False)

    # -- frames -----------------------------------------------------------------------
    def _is_plain(self) -> bool:
        plain = self._plain
        if plain is None:
            plain = self._plain = not self._any_held() and all(
                c == i for m in self._streams.values() for i, c in m.open.items()
            )
        return plain

    def _plain_delta(self, raw: bytes) -> bool:
        """``raw`` is a delta this stage passes unchanged as things stand."""
        return _passing_delta(raw) and bool(
            self._plain or (self._plain is None and self._is_plain())
        )

    def on_raw(self, raw: bytes) -> bytes | None:
        """A plain delta passes on its bytes; so do, as things stand plain, a block's start
        at its own next index, the stop of a block whose assistant frame passed, and a
        ``message_stop`` or ``message_delta`` that changes nothing (the facts they need are
        read from the line, ``_read_line``: no ctx is needed). Every case needs the stage
        plain, so that is asked first: while something is held (cbc's order: from a
        message's first ``content_block_stop`` to its assistant frame) a line is refused
        without being looked at."""
        plain = self._plain
        if not (plain or (plain is None and self._is_plain())):
            return None
        if _passing_delta(raw):
            return raw  # (``_plain_delta``, the stage known plain)
        # (``find(sub, 0, 64)`` is ``sub in raw[:64]`` without the copy, and without ``in``'s
        # cost on bytes: ``compat.pipeline``, "Hot path")
        if raw.find(b'"event":{"type":"', 0, 64) < 0:
            return None
        if raw.find(b'"content_block_start"', 0, 64) >= 0:
            return raw if self._start_in_place(raw) else None
        if raw.find(b'"content_block_stop"', 0, 64) >= 0:
            return raw if self._stop_in_place(raw) else None
        if raw.find(b'"message_stop"', 0, 64) >= 0 or raw.find(b'"message_delta"', 0, 64) >= 0:
            return raw if self._end_in_place(raw) else None
        return None

    def _read_event(self, raw: bytes, *types: str) -> tuple[_Message, str | None, _Event] | None:
        """The line's message (one that holds nothing), thread and event, when the event
        is of one of ``types``. The facts read are kept for ``on_frame`` (``_seen``)."""
        line = _read_line(raw)
        if line is None:
            return None
        self._seen = (raw, line)
        event = line.event
        if event is None or event.type not in types:
            return None
        key = _key(line.parent_tool_use_id)
        msg = self._streams.get(key)
        return None if msg is None or msg.held else (msg, key, event)

    def _start_in_place(self, raw: bytes) -> bool:
        """``_event``'s ``content_block_start`` when it passes the frame unchanged: the
        block opens at the message's next index, which no open block holds."""
        found = self._read_event(raw, "content_block_start")
        if found is None:
            return False
        msg, _, event = found
        index = event.index
        if type(index) is not int or index != msg.next_index or index in msg.open:
            return False
        msg.open_block(index, event.content_block)
        return True

    def _stop_in_place(self, raw: bytes) -> bool:
        """``_event``'s ``content_block_stop`` when it passes the frame unchanged: the
        block's assistant frame has passed already (Claude's order), or it has none."""
        found = self._read_event(raw, "content_block_stop")
        if found is None:
            return False
        msg, _, event = found
        index = event.index
        if (
            type(index) is not int
            or msg.open.get(index, index) != index
            or (index not in msg.delivered and index in msg.blocks)
        ):
            return False
        msg.open.pop(index, None)
        return True

    def _end_in_place(self, raw: bytes) -> bool:
        """``_event``'s ``message_delta`` and ``message_stop`` when they pass the frame
        unchanged (nothing held; no stop_reason to correct)."""
        found = self._read_event(raw, "message_delta", "message_stop")
        if found is None:
            return False
        msg, key, event = found
        if event.type == "message_delta":
            delta = event.delta
            return not (delta is not None and delta.stop_reason == "end_turn" and msg.has_tool_use)
        msg.stopped = True
        self._forget_done(key)  # (what it keeps is plain: forgetting it leaves it so)
        return True

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        kind = frame.kind()
        if kind is None:
            return None
        t = kind[0]
        if t == "stream_event":
            raw = frame.raw
            # a plain delta passes (while the stage is known not plain, as from a held
            # stop to its assistant frame, no line is looked at for that)
            if raw and self._plain is not False and self._plain_delta(raw):
                return None
            line = self._facts(frame)
            if line is None or line.event is None:
                return None
            return self._event(frame, line.event, _key(line.parent_tool_use_id), ctx)
        if t in ("assistant", "user", "result", "system") and kind[1] != "status":
            if not self._streams:
                return None  # no message is streaming: nothing to do
        obj = frame.obj
        if not isinstance(obj, dict):
            return None
        if t == "assistant":
            return self._assistant(frame, cast("wire.Assistant", obj), ctx)
        if t == "system":
            status = cast("wire.StatusFrame", obj)
            if status.get("subtype") == "status":
                self._requesting = status.get("status") == "requesting"
                return None
            return self._flush_before(frame, ctx)  # a new turn's init
        return self._flush_before(frame, ctx)  # user, result: the message is over

    def _facts(self, frame: Frame) -> _Line | None:
        """What ``_event`` reads of a ``stream_event`` frame (None: not a JSON object):
        from the bytes of an unparsed line proved to be an object (or as ``on_raw`` read
        them, for the line it sent the frame way), so that a frame the rule only holds or
        passes is never parsed; else, or when they cannot be read so, from its parse."""
        raw = frame.raw
        if raw and not frame.parsed and frame.proven:
            seen = self._seen
            if seen is not None and seen[0] is raw:
                return seen[1]
            line = _read_line(raw)
            if line is not None:
                return line
        obj = frame.obj
        return _line_of(obj) if isinstance(obj, dict) else None

    def _flush_before(self, frame: Frame, ctx: Context) -> Output:
        out = self._flush_all(ctx)
        return (*out, frame) if out else None

    @staticmethod
    def _parts(frame: Frame) -> tuple[wire.StreamEvent, dict[str, Any]]:
        """The parse of a frame whose facts say it has an event object, and that event (a
        rewrite needs them; the facts read from the bytes are the parse's)."""
        obj = cast("wire.StreamEvent", frame.obj)
        return obj, obj["event"]

    def _event(self, frame: Frame, event: _Event, key: str | None, ctx: Context) -> Output:
        etype = event.type
        if etype == "message_start":
            return self._message_start(frame, key, ctx)
        msg = self._streams.get(key)
        if msg is None:
            return None
        index = event.index
        out: list[Frame] = []
        if etype == "content_block_start" and isinstance(index, int):
            if index in msg.open:  # cbc reused an open block's index: close that block
                closed = msg.open.pop(index)
                self._plain = None  # (that block may have been renumbered)
                self._stop(msg, closed, self._synth_stop(frame, closed, ctx), out, ctx)
            client = msg.open_block(index, event.content_block)
            if client != index:
                self._plain = False  # a renumbered open block
            self._emit(msg, self._reindex(frame, index, client), out, ctx)
            return out
        if etype == "content_block_delta" and isinstance(index, int):
            delta = event.delta
            if delta is not None and delta.type == "input_json_delta" and delta.partial_json == "":
                ctx.count(self.rule, "dropped:empty-input-json-delta")
                return out
            client = msg.open.get(index, index)
            self._emit(msg, self._reindex(frame, index, client), out, ctx)
            return out
        if etype == "content_block_stop" and isinstance(index, int):
            client = msg.open.pop(index, index)
            if client != index:
                self._plain = None  # a renumbered block closed
            self._stop(msg, client, self._reindex(frame, index, client), out, ctx)
            return out
        if etype == "message_delta":
            delta = event.delta
            if delta is not None and delta.stop_reason == "end_turn" and msg.has_tool_use:
                obj, ev = self._parts(frame)
                new_delta = {**ev["delta"], "stop_reason": "tool_use"}
                frame = frame.replace({**obj, "event": {**ev, "delta": new_delta}})
        self._emit(msg, frame, out, ctx)
        if etype == "message_stop":
            msg.stopped = True
            self._forget_done(key)
        return out

    def _message_start(self, frame: Frame, key: str | None, ctx: Context) -> Output:
        obj, event = self._parts(frame)
        streams = self._streams
        out = self._flush(key, ctx)
        if key in streams:
            self._plain = None  # (the message it replaces may have renumbered blocks open)
        elif len(streams) >= MAX_STREAMS:
            oldest = next(iter(streams))  # (the first started: insertion order)
            out.extend(self._flush(oldest, ctx))
            streams.pop(oldest, None)
            self._plain = None
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
            if msg.open:
                self._plain = None  # (its renumbered blocks, if any, go with it)

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
        self._plain = False  # (something is held)
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
        content = message.get("content")
        block = _block_key(content[0]) if isinstance(content, list) and content else None
        blocks = msg.blocks
        match = next((c for _, c in msg.held if c is not None and blocks.get(c) == block), None)
        if match is None:
            # Claude's order (the frame before its stop), or a block nothing holds for
            for c in sorted(blocks):
                if c not in msg.delivered and blocks[c] == block:
                    msg.delivered.add(c)
                    break
            return None
        msg.delivered.add(match)
        out = _release_to(msg.held, match, frame)
        self._plain = None  # (less is held)
        self._forget_done(key)
        if not self._any_held():
            ctx.cancel_timer(self, "hold")
        return out

    # -- releasing --------------------------------------------------------------------
    def _any_held(self) -> bool:
        return any(m.held for m in self._streams.values())

    def _flush(self, key: Any, ctx: Context) -> list[Frame]:
        msg = self._streams.get(key)
        if msg is None or not msg.held:
            return []
        out = [f for f, _ in msg.held]
        msg.held.clear()
        self._plain = None
        self._forget_done(key)
        if not self._any_held():
            ctx.cancel_timer(self, "hold")
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
