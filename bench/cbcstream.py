"""A long, realistic cbc 2.163.0 stdout stream for the benchmarks, generated from the
reference captures (deterministic for a seed).

- Templated turns (most of the stream): the turn's ``system/init``, ``system/status``, then
  model steps, each streamed (``stream_event`` frames: ``message_start``, text or
  ``input_json`` deltas, ``content_block_stop``, ``message_delta``, ``message_stop``), its
  ``assistant`` frame, and for a tool call (Read/Grep/Glob/Bash/Edit/Write, inputs of a few
  bytes to a few KiB) the ``user`` tool result; then the ``result`` and cbc's second init.
  Frames are the capture's (``mockoai_partial-messages`` and a tool result), with cbc's
  private fields (``_requestId``, ``_messageId``, ``_meta``, ``__timestamp``), fresh ids,
  text and stamps.
- Captured sessions (one turn in ``EPISODE_EVERY``): whole captures with background shells,
  agents and workflows (``task_started/progress/updated/notification``, their tool calls,
  sub-agent inits, the init pairs and results), replayed with every id renamed; the main
  session's id becomes the stream's, so the replays are turns of one session.
"""

from __future__ import annotations

import datetime
import os
import random
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


def _default_captures() -> Path:
    """The reference captures as the tests find them: the copy vendored in the repository
    (``captures/reference``), or ``$CCBRIDGE_SHARED/reference/captures`` when set."""
    env = os.environ.get("CCBRIDGE_SHARED")
    repo = Path(__file__).resolve().parent.parent
    base = Path(env) / "reference" / "captures" if env else repo / "captures" / "reference"
    return base / "cbc-2.163.0"


DEFAULT_CAPTURES = _default_captures()

#: captured sessions replayed whole (every task they start also ends), with their weight
EPISODES = {
    "mockoai_bg-bash.jsonl": 3,
    "mockoai_bg-agent-then-user-turn.jsonl": 3,
    "mockoai_workflow-inline.jsonl": 3,
    "mockoai_taskstop-bg-bash.jsonl": 1,
    "mockoai_interrupt-idle-with-bg-workflow-and-bash.jsonl": 1,
    "mockoai_interrupt-midturn-workflow-2-running-agents.jsonl": 1,
    "mockoai_fg-agent.jsonl": 1,
}
#: one captured session among this many turns (the rest are templated turns)
EPISODE_EVERY = 6
TURN_TEMPLATE = "mockoai_partial-messages.jsonl"
TOOL_TEMPLATE = "mockoai_interrupt-midturn-workflow-2-running-agents.jsonl"

#: ids in cbc frames: uuids, 32-hex request/message ids, tool call ids, workflow names,
#: agent ids; bash task ids (``LRBVDP``) are added per capture from its task_id values
_ID = (
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    rb"|(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"
    rb"|call_mock_[0-9a-f]{12}|inline-[0-9a-f]{6}|v2:[0-9a-f]{64}"
)
_SHORT_TASK_ID = re.compile(rb'"task_id":"([A-Za-z0-9]{6})"')

WORDS = (
    "the function returns a list of frames and the bridge forwards every line it does not "
    "change byte for byte while the stages rewrite only what Claude Code would not send "
    "so a client sees one init per turn and every background task ends exactly once with "
    "its notification after the terminal update file path test module error value result"
).split()
TOOLS = ("Read", "Read", "Grep", "Glob", "Bash", "Edit", "Write")


def _read_frames(path: Path) -> list[bytes]:
    """The backend's stdout lines of a capture, without the control handshake."""
    lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    return [ln for ln in lines if not ln.startswith(b'{"type":"control_')]


class Ids:
    """Fresh ids of cbc's shapes from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def hex(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def like(self, old: bytes) -> bytes:
        """A fresh id shaped like ``old``."""
        if old.startswith(b"call_mock_"):
            return b"call_mock_" + self.hex(12).encode()
        if old.startswith(b"inline-"):
            return b"inline-" + self.hex(6).encode()
        if old.startswith(b"v2:"):
            return b"v2:" + self.hex(64).encode()
        if len(old) == 36:
            return self.uuid().encode()
        if len(old) == 32:
            return self.hex(32).encode()
        alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "".join(self.rng.choice(alnum) for _ in old).encode()


class Episode:
    """A captured session as literal pieces and id slots; each replay renames every id
    (the main session's id becomes the stream's, so sub-agent inits stay foreign)."""

    def __init__(self, name: str, frames: list[bytes]) -> None:
        self.name = name
        short = {m.group(1) for f in frames for m in _SHORT_TASK_ID.finditer(f)}
        alts = [re.escape(s) for s in sorted(short)]
        pattern = re.compile(b"|".join([_ID, *alts]))
        first_init = next(f for f in frames if f.startswith(b'{"type":"system","subtype":"init"'))
        self.session = orjson.loads(first_init)["session_id"].encode()
        self.lines: list[list[bytes | tuple[bytes]]] = []
        for f in frames:
            parts: list[bytes | tuple[bytes]] = []
            pos = 0
            for m in pattern.finditer(f):
                parts.append(f[pos : m.start()])
                parts.append((m.group(0),))
                pos = m.end()
            parts.append(f[pos:] + b"\n")
            self.lines.append(parts)
        self.kinds = [_kind(f) for f in frames]

    def replay(self, ids: Ids, session: bytes) -> Iterator[bytes]:
        fresh: dict[bytes, bytes] = {self.session: session}
        for parts in self.lines:
            out = []
            for p in parts:
                if type(p) is tuple:
                    old = p[0]
                    new = fresh.get(old)
                    if new is None:
                        new = fresh[old] = ids.like(old)
                    out.append(new)
                else:
                    out.append(p)  # type: ignore[arg-type]
            yield b"".join(out)


def _kind(frame: bytes) -> str:
    o = orjson.loads(frame)
    return f"{o['type']}/{o['subtype']}" if o.get("type") == "system" else str(o.get("type"))


class Turns:
    """Templated turns: init, status, then model steps (streamed text, an assistant frame,
    often a tool call and its result), a closing answer, the result and cbc's second init."""

    def __init__(self, captures: Path, ids: Ids, session: str) -> None:
        frames = [orjson.loads(f) for f in _read_frames(captures / TURN_TEMPLATE)]
        by: dict[str, dict[str, Any]] = {}
        for o in frames:
            key = o["type"] if o["type"] != "stream_event" else o["event"]["type"]
            if o["type"] == "system":
                key = f"system/{o['subtype']}"
            by.setdefault(key, o)
        tool = [orjson.loads(f) for f in _read_frames(captures / TOOL_TEMPLATE)]
        self.user = next(o for o in tool if o["type"] == "user")
        self.t = by
        self.ids = ids
        self.rng = ids.rng
        self.session = session
        self.clock = datetime.datetime(2026, 11, 29, 10, 0, 0, tzinfo=datetime.UTC)
        self.init = {**by["system/init"], "uuid": session, "session_id": session}

    # small helpers -------------------------------------------------------------------
    def _stamp(self) -> str:
        self.clock += datetime.timedelta(milliseconds=self.rng.randint(1, 40))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def _text(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(lo, hi)))

    def _meta(self, request: str, message: str) -> dict[str, str]:
        trace = f"00-{self.ids.hex(32)}-{self.ids.hex(16)}-01"
        return {
            "codebuddy.ai/conversationRequestId": request,
            "codebuddy.ai/modelRequestId": message,
            "codebuddy.ai/llmMessageId": message,
            "traceparent": trace,
            "baggage": f"codebuddy.session_id={self.session},"
            f"codebuddy.conversation_request_id={request}",
        }

    def _private(self, request: str, message: str, meta: dict[str, str]) -> dict[str, Any]:
        return {
            "_requestId": request,
            "_messageId": message,
            "_meta": meta,
            "__timestamp": self._stamp(),
        }

    def _event(self, event: dict[str, Any], request: str, message: str, meta: Any) -> bytes:
        return (
            orjson.dumps(
                {
                    "type": "stream_event",
                    "event": event,
                    "session_id": self.session,
                    "parent_tool_use_id": None,
                    "uuid": self.ids.uuid(),
                    **self._private(request, message, meta),
                }
            )
            + b"\n"
        )

    def _message(self, content: list[Any], request: str, message: str, meta: Any) -> bytes:
        tmpl = self.t["assistant"]
        msg = {
            **tmpl["message"],
            "id": message,
            "content": content,
            "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else None,
        }
        return (
            orjson.dumps(
                {
                    "type": "assistant",
                    "uuid": self.ids.uuid(),
                    "session_id": self.session,
                    "message": msg,
                    "parent_tool_use_id": None,
                    **self._private(request, message, meta),
                }
            )
            + b"\n"
        )

    def _tool_input(self, name: str) -> dict[str, Any]:
        path = f"/work/src/{self.rng.choice(WORDS)}_{self.rng.choice(WORDS)}.py"
        if name == "Bash":
            return {
                "command": f"pytest -q tests/test_{self.rng.choice(WORDS)}.py",
                "description": self._text(2, 6),
            }
        if name in ("Grep", "Glob"):
            return {"pattern": self._text(1, 3), "path": "/work/src"}
        if name == "Edit":
            return {
                "file_path": path,
                "old_string": self._text(5, 40),
                "new_string": self._text(5, 40),
            }
        if name == "Write":  # a whole file: a few hundred bytes to a few KiB
            body = "\n".join(self._text(3, 12) for _ in range(self.rng.randint(5, 60)))
            return {"file_path": path, "content": body}
        return {"file_path": path}

    def _step(self, request: str, tool: bool) -> Iterator[bytes]:
        message = self.ids.hex(32)
        meta = self._meta(request, message)
        start = self.t["message_start"]["event"]
        yield self._event(
            {**start, "message": {**start["message"], "id": message}}, request, message, meta
        )
        if tool:
            name = self.rng.choice(TOOLS)
            use_id = "call_" + self.ids.hex(24)
            inp = self._tool_input(name)
            block = {"type": "tool_use", "id": use_id, "name": name, "input": {}}
            yield self._event(
                {"type": "content_block_start", "index": 0, "content_block": block},
                request,
                message,
                meta,
            )
            partial = orjson.dumps(inp).decode()
            for i in range(0, len(partial), 64):
                delta = {"type": "input_json_delta", "partial_json": partial[i : i + 64]}
                yield self._event(
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                    request,
                    message,
                    meta,
                )
            content: list[Any] = [{**block, "input": inp}]
        else:
            yield self._event(self.t["content_block_start"]["event"], request, message, meta)
            words = []
            for _ in range(self.rng.randint(1, 14)):
                piece = self._text(1, 6) + " "
                words.append(piece)
                delta = {"type": "text_delta", "text": piece}
                yield self._event(
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                    request,
                    message,
                    meta,
                )
            content = [{"type": "text", "text": "".join(words)}]
        for key in ("content_block_stop", "message_delta", "message_stop"):
            yield self._event(self.t[key]["event"], request, message, meta)
        yield self._message(content, request, message, meta)
        if tool:
            # a tool result: a few lines to a few KiB of output
            body = "\n".join(self._text(4, 14) for _ in range(self.rng.choice((1, 3, 8, 40))))
            result = {
                "type": "tool_result",
                "tool_use_id": use_id,
                "content": [{"type": "text", "text": body}],
                "is_error": False,
            }
            u = self.user
            yield (
                orjson.dumps(
                    {
                        "type": "user",
                        "uuid": self.ids.uuid(),
                        "session_id": self.session,
                        "message": {**u["message"], "content": [result]},
                        "parent_tool_use_id": None,
                        **self._private(request, message, meta),
                    }
                )
                + b"\n"
            )

    def turn(self) -> Iterator[bytes]:
        request = self.ids.hex(32)
        yield orjson.dumps(self.init) + b"\n"
        status = self.t["system/status"]
        yield (
            orjson.dumps(
                {
                    **status,
                    "uuid": self.ids.uuid(),
                    "session_id": self.session,
                    "_meta": self._meta(request, self.ids.hex(32)),
                    "__timestamp": self._stamp(),
                    "_requestId": request,
                }
            )
            + b"\n"
        )
        for _ in range(self.rng.randint(0, 4)):
            yield from self._step(request, tool=True)
        yield from self._step(request, tool=False)
        res = self.t["result"]
        yield (
            orjson.dumps(
                {
                    **res,
                    "uuid": self.ids.uuid(),
                    "session_id": self.session,
                    "result": self._text(2, 8),
                    "_requestId": request,
                    "_meta": self._meta(request, self.ids.hex(32)),
                    "__timestamp": self._stamp(),
                }
            )
            + b"\n"
        )
        yield orjson.dumps(self.init) + b"\n"  # cbc's second copy, after the result


def generate(path: Path, frames: int, seed: int, captures: Path) -> dict[str, Any]:
    """Write at least ``frames`` frames (whole turns) to ``path``; return its composition."""
    rng = random.Random(seed)
    ids = Ids(rng)
    session = ids.uuid()
    episodes = [Episode(n, _read_frames(captures / n)) for n in EPISODES]
    weights = list(EPISODES.values())
    turns = Turns(captures, ids, session)
    kinds: Counter[str] = Counter()
    replayed: Counter[str] = Counter()
    n = 0
    size = 0
    with open(path, "wb") as f:
        handshake = (captures / TURN_TEMPLATE).read_bytes().split(b"\n", 1)[0] + b"\n"
        f.write(handshake)
        kinds["control_response"] += 1
        n, size = 1, len(handshake)
        while n < frames:
            if rng.randrange(EPISODE_EVERY) == 0:
                ep = rng.choices(episodes, weights)[0]
                for line, kind in zip(ep.replay(ids, session.encode()), ep.kinds, strict=True):
                    f.write(line)
                    size += len(line)
                    kinds[kind] += 1
                    n += 1
                replayed[ep.name.removesuffix(".jsonl")] += 1
            else:
                for line in turns.turn():
                    f.write(line)
                    size += len(line)
                    kinds[_fast_kind(line)] += 1
                    n += 1
    return {
        "frames": n,
        "bytes": size,
        "kinds": dict(sorted(kinds.items())),
        "episodes": dict(sorted(replayed.items())),
    }


_KIND = re.compile(rb'\{"type":"([a-z_]+)"(?:,"subtype":"([a-z_]+)")?')


def _fast_kind(line: bytes) -> str:
    m = _KIND.match(line)
    assert m is not None
    t, st = m.group(1).decode(), m.group(2)
    return f"{t}/{st.decode()}" if t == "system" and st else t
