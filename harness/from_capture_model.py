"""The model's side of a recorded session (``ccbridge scenario from-capture``): what the
model produced at each of its requests, read from the backend's frames, as the stand-in's
rules (``harness.brain``) in the recorded order. Pure: frames in, rules out.

A reply is one model message: the ``assistant`` frames of one ``message.id`` on one thread
(``parent_tool_use_id``: the main thread, or the sub-agent of that ``Agent``/``Task``
call), its thinking, text and tool calls with their inputs. Its stop reason is the default
(``tool_use`` with calls, else ``end_turn``) unless the recording shows another:
a ``message_delta`` stream event, a refusal notice (Claude's synthetic ``refusal``
message, cbc's ``CBC_REFUSAL``), or a text-only reply the same turn followed with another
request without any new input (the CLIs' ``max_tokens`` recovery). Failed requests are
read from Claude's ``system/api_retry`` frames and its synthetic ``API Error: <status>``
message, and from cbc's own failed-request message (``compat.stages.errors``; cbc tries a
529 twice, ``CBC_TRIES``); a stream that broke off (Claude's ``api_retry`` without a
status, cbc's ``aborted``) is a ``cut`` reply. A request the client interrupted before
its reply came is a rule with a long ``delay`` (``PENDING_DELAY``), so that the interrupt
lands while the stand-in waits again.

Each reply fires once (``times = 1``). Who asks is told apart by the rules' ``agent`` and
``when``: the first reply after a user line waits for that line's words (its first line,
``snippet``), a sub-agent's first reply for its prompt's; the other replies of a thread
follow in order. So a request the recording does not show (a title request, cbc's hidden
turn after a background agent) gets the stand-in's default, not the next recorded reply.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from compat.frames import dict_at, list_at, str_at
from compat.stages.errors import CBC_REFUSAL, parse_api_error
from harness.brain import STOPS

#: how many requests cbc 2.163.0 makes before it reports a failed one (a 529 is retried
#: once, silently; 429 and 500 are not: captures/twins/api-*.cbc-raw.jsonl)
CBC_TRIES = {529: 2}
#: the stand-in's wait on a request the client interrupted before its reply came
PENDING_DELAY = 60.0
#: a model reply that came this late after its thread's previous event keeps its delay
MIN_DELAY = 1.0
#: the characters of a user line or prompt a rule's ``when`` keeps
SNIPPET = 80
SYNTHETIC = "<synthetic>"
_CLAUDE_API_ERROR = re.compile(r"API Error: (\d{3})\b[ :]*([^\n]*?)(?:\. |\n|$)")


def snippet(text: str | None) -> str | None:
    """The first non-blank line of ``text``, stripped, at most ``SNIPPET`` characters."""
    for line in (text or "").splitlines():
        s = line.strip()
        if s:
            return s[:SNIPPET]
    return None


def user_text(content: Any) -> str:
    """The words of a user message's content (a string, or its text blocks)."""
    if isinstance(content, str):
        return content
    return (
        "\n".join(t for b in content if isinstance(b, dict) and isinstance(t := b.get("text"), str))
        if isinstance(content, list)
        else ""
    )


def _only_text(msg: dict[str, Any]) -> str | None:
    content = list_at(msg, "content")
    if len(content) == 1 and isinstance(content[0], dict) and content[0].get("type") == "text":
        return str_at(content[0], "text")
    return None


#: the tools that run a sub-agent
AGENT_TOOLS = frozenset({"Agent", "Task"})


def agent_answer(record: Any, content: Any) -> str | None:
    """A completed agent's answer: its record's ``content`` text (Claude's), else the
    result's first text; None for a launch (``async_launched``) or no text."""
    if isinstance(record, dict):
        if record.get("status") != "completed":
            return None
        content = record.get("content", content)
    first = content[0] if isinstance(content, list) and content else content
    text = first.get("text") if isinstance(first, dict) else first
    return text if isinstance(text, str) and text else None


@attrs.define
class Call:
    id: str
    tool: str
    input: dict[str, Any]


@attrs.define
class Line:
    """A user line the client wrote: its ``uuid``, its words (``snippet``); ``tracked``:
    Claude's ``command_lifecycle`` frames name it; ``started``: they say it runs now."""

    uuid: str | None
    words: str | None
    tracked: bool = False
    started: bool = False


@attrs.define
class Item:
    """One scripted answer: a reply, a failed request, a cut stream, or a pending one."""

    kind: str  # "reply" | "error" | "cut" | "pending"
    thread: str | None  # parent_tool_use_id; None: the main thread
    mid: str = ""
    thinking: list[str] = attrs.field(factory=list)
    texts: list[str] = attrs.field(factory=list)
    calls: list[Call] = attrs.field(factory=list)
    stop: str | None = None
    when: str | None = None
    delay: float = 0.0
    status: int | None = None
    times: int = 1
    retry_after: float | None = None
    message: str | None = None


class ModelWalk:
    """Feed it the session in order (``backend`` frames, ``client`` lines); ``finish``
    returns the items."""

    def __init__(self, max_delay: float = 30.0) -> None:
        self.max_delay = max_delay
        self.items: list[Item] = []
        self.open: dict[str | None, Item] = {}  # thread -> the reply being read
        self.calls: dict[str, Call] = {}  # tool_use id -> the call
        self.calls_by_name: set[str] = set()
        self.results: dict[str, bool] = {}  # tool_use id -> is_error
        self.pending: list[Line] = []  # the user lines no reply answered yet
        self.started: set[str] = set()  # sub-agent threads with a reply
        self.busy = False  # a main turn runs
        self.turn_replies = 0
        self.last_main: Item | None = None  # the main thread's last reply in this turn
        self.fed = True  # new input (a tool result, a line) since the last main reply
        self.awaiting = False  # the main thread waits for a model reply
        self.session: str | None = None  # the session of the main thread's last reply
        self.last_t: dict[str | None, float] = {}  # thread -> its last event's time
        self.stops: dict[str, str] = {}  # message id -> stop reason from stream events
        self.stream_mid: dict[str | None, str] = {}
        self.skipped_blocks: set[str] = set()
        self.notes: list[str] = []
        self.printed: list[str] = []  # a -p run's text output
        self.final: str | None = None  # the last result's answer
        self.structured: dict[str, Any] | None = None  # and its structured_output

    # -- the backend's frames -----------------------------------------------------------
    def backend(self, t: float, frame: dict[str, Any]) -> None:
        self._dispatch(t, frame)
        wait = frame.get("retry_delay_ms") if frame.get("subtype") == "api_retry" else None
        wait = wait / 1000 if isinstance(wait, int | float) else 0.0  # (the CLI's own wait)
        self.last_t[str_at(frame, "parent_tool_use_id")] = t + wait

    def _dispatch(self, t: float, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "assistant":
            self._assistant(t, frame)
        elif kind == "user":
            self._tool_results(t, frame)
        elif kind == "system" and frame.get("subtype") == "api_retry":
            status = frame.get("error_status")
            if isinstance(status, int) and not isinstance(status, bool):
                delay = frame.get("retry_delay_ms")
                after = delay / 1000 if status == 429 and isinstance(delay, int | float) else None
                self._error(None, status, 1, after)
            else:
                self._cut(None)
        elif kind == "stream_event":
            self._stream(frame)
        elif kind == "result":
            self._result(frame)
        elif kind == "system" and frame.get("subtype") == "task_notification":
            self.fed = True  # (the input of a notification turn)
        elif kind == "command_lifecycle":
            self._lifecycle(frame)

    def _assistant(self, t: float, frame: dict[str, Any]) -> None:
        msg = dict_at(frame, "message") or {}
        thread = str_at(frame, "parent_tool_use_id")
        if msg.get("model") == SYNTHETIC:
            self._claude_notice(msg)
            return
        if frame.get("uuid") is not None and frame.get("uuid") == msg.get("id"):
            self._cbc_notice(frame, msg)  # cbc's mark of a message it wrote itself
            return
        text = _only_text(msg)
        if thread is None and text is not None and text.startswith(CBC_REFUSAL[:40]):
            self._mark_stop("refusal")
            return
        mid = str_at(msg, "id") or ""
        cur = self.open.get(thread)
        if cur is None or not mid or cur.mid != mid:
            cur = self._new_reply(t, thread, mid, str_at(frame, "session_id"))
        self._blocks(t, cur, list_at(msg, "content"))

    def _new_reply(self, t: float, thread: str | None, mid: str, session: str | None) -> Item:
        item = Item("reply", thread, mid)
        if thread is None:
            last = self.last_main
            if (
                last is not None
                and not self.fed
                and not last.calls
                and "StructuredOutput" not in self.calls_by_name
            ):
                last.stop = last.stop or "max_tokens"  # (cbc nudges a --json-schema run so too)
            # (cbc answers a line written mid-turn at once, in a second session)
            other = session is not None and self.session not in (None, session)
            item.when = self._take(pop=True, other_session=other)
            self.session = session
            self.awaiting = False
            self.busy = True
            self.turn_replies += 1
            self.fed = False
            self.last_main = item
        elif thread not in self.started:
            self.started.add(thread)
            call = self.calls.get(thread)
            prompt = call.input.get("prompt") if call is not None else None
            item.when = snippet(prompt if isinstance(prompt, str) else None)
        since = self.last_t.get(thread, self.last_t.get(f"call:{thread}"))
        if since is not None and t - since >= MIN_DELAY and self.max_delay > 0:
            item.delay = round(min(t - since, self.max_delay), 1)
        self.items.append(item)
        self.open[thread] = item
        return item

    def _blocks(self, t: float, item: Item, content: list[Any]) -> None:
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "thinking" and isinstance(block.get("thinking"), str):
                item.thinking.append(block["thinking"])
            elif kind == "text" and isinstance(block.get("text"), str):
                item.texts.append(block["text"])
            elif kind == "tool_use" and isinstance(block.get("name"), str):
                inp = block.get("input")
                call = Call(
                    str(block.get("id") or ""), block["name"], inp if isinstance(inp, dict) else {}
                )
                item.calls.append(call)
                self.calls[call.id] = call
                self.calls_by_name.add(call.tool)
                self.last_t[f"call:{call.id}"] = t  # (a sub-agent's thread starts here)
            elif isinstance(kind, str):
                self.skipped_blocks.add(kind)

    def _tool_results(self, t: float, frame: dict[str, Any]) -> None:
        found = False
        for block in list_at(dict_at(frame, "message"), "content"):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self.results[str(block.get("tool_use_id"))] = bool(block.get("is_error"))
                found = True
                self._agent_answer(t, frame, block)
        if found and frame.get("parent_tool_use_id") is None:
            self.fed = True
            self.awaiting = True

    def _agent_answer(self, t: float, frame: dict[str, Any], block: dict[str, Any]) -> None:
        """A foreground agent's last reply, which Claude writes only in the Agent call's
        result (no frame of its own): when the agent's last reply seen made calls, its
        answer is the result's (``tool_use_result.content``, else its first text)."""
        use = str(block.get("tool_use_id"))
        call = self.calls.get(use)
        if call is None or call.tool not in AGENT_TOOLS:
            return
        last = next((i for i in reversed(self.items) if i.thread == use), None)
        if last is None or not last.calls:
            return  # (no reply of the agent seen, or its last one was its answer)
        text = agent_answer(frame.get("tool_use_result"), block.get("content"))
        if text is None:
            return
        item = Item("reply", use, texts=[text])
        since = self.last_t.get(use)
        if since is not None and t - since >= MIN_DELAY and self.max_delay > 0:
            item.delay = round(min(t - since, self.max_delay), 1)
        self.items.append(item)

    def _claude_notice(self, msg: dict[str, Any]) -> None:
        """Claude's own message: a refusal, a failed request (``API Error: 500 …``)."""
        text = _only_text(msg) or ""
        if msg.get("stop_reason") == "refusal":
            self._mark_stop("refusal")
            return
        m = _CLAUDE_API_ERROR.match(text)
        if m is not None:
            self._error(None, int(m.group(1)), 1, None, m.group(2) or None)
        elif text.startswith("API Error"):
            self.notes.append(f"Claude's {text[:60]!r}: no HTTP status, scripted as a cut stream")
            self._cut(None)

    def _cbc_notice(self, frame: dict[str, Any], msg: dict[str, Any]) -> None:
        """cbc's own message: a failed request, a cut stream (others are not the model's)."""
        text = _only_text(msg) or ""
        parsed = parse_api_error(text, frame.get("session_id"))
        if parsed is not None:
            self._error(None, parsed[0], CBC_TRIES.get(parsed[0], 1), None, parsed[1])
        elif text == "aborted":
            self._cut(None)

    def _error(
        self,
        thread: str | None,
        status: int,
        times: int,
        retry_after: float | None,
        message: str | None = None,
    ) -> None:
        if not 400 <= status <= 599:
            self._cut(thread)
            return
        last = self.items[-1] if self.items else None
        if (
            last is not None
            and last.kind == "error"
            and (last.thread, last.status)
            == (
                thread,
                status,
            )
        ):
            last.times += times
            last.message = last.message or message  # (a retry's frame gives no message)
            return
        self.items.append(
            Item(
                "error",
                thread,
                status=status,
                times=times,
                retry_after=retry_after,
                message=message,
                when=self._take(pop=False),
            )
        )

    def _cut(self, thread: str | None) -> None:
        self.items.append(Item("cut", thread, when=self._take(pop=False)))

    def _mark_stop(self, stop: str) -> None:
        if self.last_main is not None:
            self.last_main.stop = stop

    def _stream(self, frame: dict[str, Any]) -> None:
        event = dict_at(frame, "event") or {}
        thread = str_at(frame, "parent_tool_use_id")
        if event.get("type") == "message_start":
            mid = str_at(dict_at(event, "message"), "id")
            if mid:
                self.stream_mid[thread] = mid
        elif event.get("type") == "message_delta":
            stop = str_at(dict_at(event, "delta"), "stop_reason")
            mid = self.stream_mid.get(thread)
            if stop and mid:
                self.stops[mid] = stop

    def _result(self, frame: dict[str, Any]) -> None:
        last = self.last_main
        answer = frame.get("result")
        if isinstance(answer, str):
            self.final = answer
        if isinstance(frame.get("structured_output"), dict):
            self.structured = frame["structured_output"]
        if (
            last is not None
            and not last.texts
            and not last.calls
            and not frame.get("is_error")
            and isinstance(answer, str)
            and answer
        ):
            last.texts.append(answer)  # (cbc may write no frame for the answer's text)
        if self.turn_replies == 0:
            self._take(pop=True)  # the line that opened this turn got no reply
        self.busy = False
        self.awaiting = False
        self.turn_replies = 0
        self.last_main = None
        self.fed = True

    # -- the client's lines -------------------------------------------------------------
    def client(self, t: float, frame: dict[str, Any] | None) -> None:
        kind = frame.get("type") if frame is not None else None
        request = dict_at(frame, "request") if frame is not None else None
        if frame is not None and kind == "user":
            content = (dict_at(frame, "message") or {}).get("content")
            self.pending.append(Line(str_at(frame, "uuid"), snippet(user_text(content))))
            self.fed = True
            if not self.busy:
                self.busy = True
                self.turn_replies = 0
                self.awaiting = True
        elif request is not None and request.get("subtype") == "interrupt" and self.awaiting:
            # the request in flight is abandoned: its reply never came
            delay = max(PENDING_DELAY, 2 * self.max_delay)
            self.items.append(Item("pending", None, when=self._take(pop=True), delay=delay))
            self.turn_replies += 1
            self.awaiting = False
        self.last_t[None] = t

    def _take(self, pop: bool, other_session: bool = False) -> str | None:
        """The words of the user line the next main request answers: the first line Claude
        says it started (``command_lifecycle``); without such frames (cbc), the oldest line
        the backend read, for the first request of a turn or of another session."""
        i = next((n for n, p in enumerate(self.pending) if p.started), None)
        first = self.turn_replies == 0 or other_session
        if i is None and first and self.pending and not self.pending[0].tracked:
            i = 0
        if i is None:
            return None
        return self.pending.pop(i).words if pop else self.pending[i].words

    def _lifecycle(self, frame: dict[str, Any]) -> None:
        uuid = frame.get("command_uuid")
        state = frame.get("state")
        for p in self.pending:
            if p.uuid is not None and p.uuid == uuid:
                p.tracked = True
                p.started = p.started or state == "started"
        if state in ("cancelled", "completed"):
            self.pending = [p for p in self.pending if p.uuid is None or p.uuid != uuid]

    # -- the end --------------------------------------------------------------------------
    def finish(self) -> list[Item]:
        """The items, with the stop reasons the stream events showed and each cut reply
        given the content of the reply that followed it on its thread."""
        for item in self.items:
            explicit = self.stops.get(item.mid) if item.mid else None
            if explicit in STOPS and item.kind == "reply":
                item.stop = explicit if explicit not in ("end_turn", "tool_use") else None
        for i, item in enumerate(self.items):
            if item.kind == "cut":
                nxt = next(
                    (
                        x
                        for x in self.items[i + 1 :]
                        if x.kind == "reply" and x.thread == item.thread
                    ),
                    None,
                )
                item.texts = list(nxt.texts) if nxt is not None else []
                item.calls = list(nxt.calls) if nxt is not None else []
        return self.items
