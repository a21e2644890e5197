"""Claude Code's session store, built from a bridged session (pure: no I/O, no clock).

Claude Code 2.1.220 keeps every session at ``$CLAUDE_CONFIG_DIR/projects/<slug>/<session>.jsonl``
and the programs that drive it (Zed's adapter, session pickers, the SDKs' ``list_sessions`` /
``get_session_messages``) read that file themselves. cbc keeps its own elsewhere, so the
drop-in writes Claude's for it (``bridge.session_store``). This module says *what* to write:
the records Claude would have written, built from what the client sent (its ``user``
lines, ``client``) and what it received (the bridged, Claude-shaped frames, ``frame``).

The records, as Claude 2.1.220 writes them (``tests/bridge/data/claude-store``):

- ``queue-operation`` ``enqueue`` when a user line arrives, ``dequeue`` when its turn starts
  (a line sent during a turn waits for that turn's result, as Claude's queue does);
- ``user``: the client's message (its ``uuid`` when it gave a fresh one), a ``promptId``
  shared by every record of the turn, ``permissionMode``, ``promptSource``;
- ``assistant``: one per assistant frame (Claude writes one per content block, and so does
  its stream), with the frame's ``uuid``, ``timestamp`` and ``request_id`` as ``requestId``;
- ``user`` tool results: ``toolUseResult`` (the frame's ``tool_use_result``) and
  ``sourceToolAssistantUUID``, the assistant record that made the call, which is also
  its ``parentUuid`` (parallel calls fan out, as Claude's do);
- ``system`` ``compact_boundary``: a new root (``parentUuid`` null, ``logicalParentUuid``);
- ``last-prompt`` at each turn's result: what ``list_sessions`` shows as the summary.

Every chained record carries ``parentUuid`` (the previous record of its chain), ``uuid``,
``timestamp``, ``isSidechain`` (true for a sub-agent's frames, ``parent_tool_use_id`` set,
each sub-agent its own chain), ``userType``, ``entrypoint``, ``cwd``, ``sessionId``,
``version`` and ``gitBranch``. Left out: Claude's ``attachment`` records (its own agent and
skill listings, which cbc does not have), ``mode`` and ``effort``.

The session is named by the ``system/init`` frame the client received (``starts``): lines
sent before it are held, and written once the caller has opened the file and given the last
record already there (``start``'s ``leaf``: a resumed session's chain goes on from it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

#: a JSON object as Claude writes it in the store
Record = dict[str, Any]

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: record types that are links of a ``parentUuid`` chain (the SDKs' ``get_session_messages``)
CHAINED = frozenset({"user", "assistant", "system", "attachment", "progress"})
#: tool calls remembered for their results (the oldest forgotten past this)
MAX_CALLS = 4096


class StoreMeta(NamedTuple):
    """What every record says of the session's process, decided by the caller."""

    cwd: str
    version: str
    entrypoint: str = "sdk-cli"
    git_branch: str = "HEAD"


def is_uuid(value: object) -> bool:
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


def text_of(content: object) -> str:
    """A message's text: a string as it is, else its text blocks joined by newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str))


class _Held(NamedTuple):
    message: dict[str, Any]
    uuid: str | None
    arrived: str
    enqueued: bool  # its ``enqueue`` written already (it arrived during a turn)


class StoreBuilder:
    """One bridged session's records, in the order Claude writes them. ``new_uuid`` makes
    the ids no frame gave; ``now`` (an ISO 8601 UTC timestamp) is the caller's clock."""

    def __init__(self, meta: StoreMeta, new_uuid: Callable[[], str]) -> None:
        self.meta = meta
        self._new_uuid = new_uuid
        self.session_id: str | None = None
        self._last: str | None = None
        self._side: dict[str, str | None] = {}
        self._calls: dict[str, str] = {}
        self._used: set[str] = set()
        self._held: list[_Held] = []
        self._busy = False
        self._prompt_id: str | None = None
        self._prompt = ""
        self._mode = "default"

    # -- the session -------------------------------------------------------------------
    def starts(self, frame: Mapping[str, Any]) -> str | None:
        """The session a ``system/init`` frame names, when it is not the current one."""
        sid = frame.get("session_id")
        if frame.get("type") != "system" or frame.get("subtype") != "init":
            return None
        return sid if isinstance(sid, str) and sid and sid != self.session_id else None

    def start(
        self, frame: Mapping[str, Any], session_id: str, leaf: str | None, now: str
    ) -> list[Record]:
        """The session ``session_id`` begins (or goes on, from ``leaf``, the last chained
        record its file already holds): the lines held until now, as records."""
        self.session_id = session_id
        self._last = leaf if is_uuid(leaf) else None
        self._side.clear()
        self._calls.clear()
        self._busy = False
        self._init(frame)
        return self._take_held(now)

    def _init(self, frame: Mapping[str, Any]) -> None:
        mode = frame.get("permissionMode")
        if isinstance(mode, str) and mode:
            self._mode = mode

    def close(self, now: str) -> list[Record]:
        """The session ends: the lines still held (a turn that never finished)."""
        self._busy = False
        return self._take_held(now)

    # -- what the client sent ----------------------------------------------------------
    def client(self, line: Mapping[str, Any], now: str) -> list[Record]:
        """A line the client wrote: a ``user`` message is a prompt (held while no session
        is known or a turn runs); anything else is not recorded."""
        message = line.get("message")
        if line.get("type") != "user" or not isinstance(message, dict):
            return []
        uuid = line.get("uuid")
        held = _Held(message, uuid if isinstance(uuid, str) else None, now, False)
        if self.session_id is None:
            self._held.append(held)
            return []
        if self._busy:
            self._held.append(held._replace(enqueued=True))
            return [self._queue("enqueue", now, message)]
        return self._prompt_records(held, now)

    def _take_held(self, now: str) -> list[Record]:
        out: list[Record] = []
        while self._held and not self._busy and self.session_id is not None:
            out += self._prompt_records(self._held.pop(0), now)
        return out

    def _prompt_records(self, held: _Held, now: str) -> list[Record]:
        """A prompt's turn starts: (its ``enqueue`` when not written yet,) its ``dequeue``
        and its ``user`` record."""
        out = [] if held.enqueued else [self._queue("enqueue", held.arrived, held.message)]
        out.append(self._queue("dequeue", now))
        self._busy = True
        self._prompt_id = self._new_uuid()
        self._prompt = text_of(held.message.get("content"))
        record: Record = {
            "parentUuid": self._last,
            "isSidechain": False,
            "promptId": self._prompt_id,
            "type": "user",
            "message": held.message,
            "uuid": self._fresh(held.uuid),
            "timestamp": now,
            "permissionMode": self._mode,
            "promptSource": "sdk",
        }
        out.append(self._chained(record))
        return out

    def _queue(self, operation: str, now: str, message: Mapping[str, Any] | None = None) -> Record:
        record: Record = {
            "type": "queue-operation",
            "operation": operation,
            "timestamp": now,
            "sessionId": self.session_id,
        }
        content = message.get("content") if message is not None else None
        if isinstance(content, str):
            record["content"] = content
        return record

    # -- what the client received ------------------------------------------------------
    def frame(self, frame: Mapping[str, Any], now: str) -> list[Record]:
        """A frame the client received (after ``start``): its records, if it has any."""
        if self.session_id is None:
            return []
        kind = frame.get("type")
        if kind == "assistant":
            return self._assistant(frame, now)
        if kind == "user":
            return self._user(frame, now)
        if kind == "result":
            return self._result(now)
        if kind == "system":
            return self._system(frame, now)
        return []

    def _assistant(self, frame: Mapping[str, Any], now: str) -> list[Record]:
        message = frame.get("message")
        if not isinstance(message, dict):
            return []
        record: Record = {"parentUuid": None, "isSidechain": False, "message": message}
        request_id = frame.get("request_id")
        if isinstance(request_id, str):
            record["requestId"] = request_id
        record |= {"type": "assistant", "uuid": self._fresh(frame.get("uuid"))}
        record["timestamp"] = _stamp(frame, now)
        self._link(record, frame)
        if not record["isSidechain"]:
            self._remember_calls(message.get("content"), record["uuid"])
        return [self._chained(record)]

    def _remember_calls(self, content: object, uuid: str) -> None:
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                call = block.get("id")
                if isinstance(call, str):
                    self._calls[call] = uuid
        while len(self._calls) > MAX_CALLS:
            del self._calls[next(iter(self._calls))]

    def _user(self, frame: Mapping[str, Any], now: str) -> list[Record]:
        """A user frame the backend wrote: a tool's result (an echo of the client's own
        line, ``isReplay``, is already recorded)."""
        message = frame.get("message")
        if not isinstance(message, dict) or frame.get("isReplay") is True:
            return []
        record: Record = {"parentUuid": None, "isSidechain": False}
        if self._prompt_id is not None:
            record["promptId"] = self._prompt_id
        record |= {"type": "user", "message": message, "uuid": self._fresh(frame.get("uuid"))}
        record["timestamp"] = _stamp(frame, now)
        if "tool_use_result" in frame:
            record["toolUseResult"] = frame["tool_use_result"]
        self._link(record, frame)
        source = self._source(message.get("content"))
        if source is not None and not record["isSidechain"]:
            record["sourceToolAssistantUUID"] = record["parentUuid"] = source
        return [self._chained(record)]

    def _source(self, content: object) -> str | None:
        """The assistant record that made the call a tool result answers."""
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return self._calls.get(str(block.get("tool_use_id")))
        return None

    def _result(self, now: str) -> list[Record]:
        out: list[Record] = []
        if self._prompt_id is not None and self._last is not None:
            out.append(
                {
                    "type": "last-prompt",
                    "lastPrompt": self._prompt,
                    "leafUuid": self._last,
                    "sessionId": self.session_id,
                }
            )
        self._busy = False
        return out + self._take_held(now)

    def _system(self, frame: Mapping[str, Any], now: str) -> list[Record]:
        if frame.get("subtype") == "init":
            self._init(frame)
            return []
        if frame.get("subtype") != "compact_boundary":
            return []
        record: Record = {
            "parentUuid": None,
            "logicalParentUuid": self._last,
            "isSidechain": False,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "timestamp": _stamp(frame, now),
            "uuid": self._fresh(frame.get("uuid")),
            "level": "info",
        }
        metadata = frame.get("compact_metadata")
        if isinstance(metadata, dict):
            record["compactMetadata"] = {_camel(k): v for k, v in metadata.items()}
        return [self._chained(record)]

    # -- the chain ---------------------------------------------------------------------
    def _link(self, record: Record, frame: Mapping[str, Any]) -> None:
        """``parentUuid`` and ``isSidechain``: a sub-agent's frame (``parent_tool_use_id``)
        goes on that sub-agent's own chain, any other on the main one."""
        agent = frame.get("parent_tool_use_id")
        if isinstance(agent, str) and agent:
            record["isSidechain"] = True
            record["parentUuid"] = self._side.get(agent)
            self._side[agent] = record["uuid"]
            if len(self._side) > MAX_CALLS:
                del self._side[next(iter(self._side))]
        else:
            record["parentUuid"] = self._last

    def _chained(self, record: Record) -> Record:
        """The fields every chained record ends with; the main chain moves on to it."""
        record |= {
            "userType": "external",
            "entrypoint": self.meta.entrypoint,
            "cwd": self.meta.cwd,
            "sessionId": self.session_id,
            "version": self.meta.version,
            "gitBranch": self.meta.git_branch,
        }
        if not record["isSidechain"]:
            self._last = record["uuid"]
        return record

    def _fresh(self, given: object) -> str:
        """``given`` when it is a UUID no record of this session used yet, else a new one
        (a repeated id would loop the chain)."""
        uuid = given if isinstance(given, str) and is_uuid(given) else self._new_uuid()
        while uuid in self._used:
            uuid = self._new_uuid()
        self._used.add(uuid)
        return uuid


def _stamp(frame: Mapping[str, Any], now: str) -> str:
    """The frame's own ``timestamp`` (Claude's frames carry the record's), else ``now``."""
    stamp = frame.get("timestamp")
    return stamp if isinstance(stamp, str) and 0 < len(stamp) <= 40 else now


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)
