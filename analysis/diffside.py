"""One side of a diff (``analysis.diff``): a capture's client view, parsed, masked, and split
into turns and task lifecycles. Pure.

Masking, in two passes over the side's frames (``masked_frames``):
  1. collect every string under an id key (``ID_KEYS``; ``id`` of a tool_use block or a
     message) and number it by first appearance: ``<session#1>``, ``<task#2>``,
     ``<tool_use#1>``, ``<agent#3>`` (Claude's hex and cbc's ``v2:<sha>`` alike). Numbered,
     not flattened, so a broken correlation (a task naming the wrong tool call, a foreign
     session, an init whose uuid is the session id) still shows. A frame's own ``uuid`` is
     flat ``<uuid>`` unless its value is a known id.
  2. rewrite numbers: ints in the epoch-ms range -> ``<epoch_ms>``, other ``*At``/``*_time``
     numbers -> ``<time>``; ``*_ms``/``*Ms``/``duration*`` -> ``<ms>``; ``*cost*`` ->
     ``<cost>``; token counts and every number inside ``usage``/``modelUsage`` -> ``<n>``;
     ``pid`` -> ``<pid>``. Model names (``model``, ``canonicalModel``, ``modelUsage`` keys)
     -> ``<model>`` unless kept. In strings: the side's cwd (its first ``system/init``) ->
     ``{CWD}``, its slug forms (``-home-u-wd``) -> ``{CWD_SLUG}``, HOME (the header's env,
     and the prefix of Claude's ``memory_paths.auto``) -> ``{HOME}``, ``/tmp/<dir>`` ->
     ``{TMP}``; known ids anywhere (``Task ID: <task#1>``); then any uuid, ISO timestamp,
     ``msg_``/``toolu_``/``req_``/``call_``/``wf_`` id or long hex run, and the numbers of
     an agent's usage Claude writes in a text (``duration_ms: <n>``, ``subagent_tokens:
     <n>`` in an Agent call's result). A streamed tool
     input (``input_json_delta`` pieces) is compared as the JSON text its pieces build.

Splitting (``load_side``): a turn is the frames up to and including a ``result``; task
frames (``task_*`` with a ``task_id``) leave the turns for one lifecycle per task, and so
does a ``background_tasks_changed`` snapshot (attached to the task frame that follows it;
one that no task frame follows stays in its turn).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import attrs
import orjson

from compat.capture import Capture

Obj = dict[str, Any]  # a parsed frame
ID_KEYS = {
    "session_id": "session",
    "new_conversation_id": "session",
    "task_id": "task",
    "tool_use_id": "tool_use",
    "parent_tool_use_id": "tool_use",
    "agentId": "agent",
    "run_id": "run",  # Claude 2.1.332's per-task run id (origin.runId names the same)
    "runId": "run",
    "request_id": "request",
    "command_uuid": "command",
    "user_message_uuid": "command",
    "_requestId": "request",
    "_messageId": "message",
}
TASK_SUBTYPES = ("task_started", "task_progress", "task_updated", "task_notification")
SNAPSHOT = "system/background_tasks_changed"
MODEL_KEYS = frozenset({"model", "canonicalModel"})
_TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_EPOCH_KEY = re.compile(r"(At|_at|_time|Time|^timestamp)$")
_MS_KEY = re.compile(r"(^|_)ms$|Ms$|^duration")
_TOKEN_KEY = re.compile(r"(?i)tokens?$")
_TMP = re.compile(r"(?<![\w./-])/(?:private/)?tmp/[^/\s\"'`]+")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b")
#: the numbers of Claude's agent usage in an Agent call's result text (``<usage>…</usage>``)
_USAGE_TEXT = re.compile(r"\b(duration_ms|subagent_tokens): \d+")
_ISO = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?")
_RUN_ID = re.compile(
    r"\b(?:msg|toolu|req|call|srvtoolu)_(?:mock_)?[A-Za-z0-9]{12,}\b"
    r"|\bwf_[0-9a-f]{8}-[0-9a-f]{3,}\b|\b(?:v2:)?[0-9a-f]{16,}\b"
)


# -- masking -----------------------------------------------------------------------------


def _id_key(d: dict[str, Any], key: str) -> str | None:
    if key in ID_KEYS:
        return ID_KEYS[key]
    if key == "id":
        if d.get("type") in _TOOL_BLOCKS:
            return "tool_use"
        if "role" in d or d.get("type") == "message":
            return "message"
    return None


class _Masker:
    def __init__(self, objs: Sequence[Obj], head: dict[str, Any], keep_model: bool) -> None:
        self.keep_model = keep_model
        self.ids: dict[str, str] = {}
        self.counts: Counter[str] = Counter()
        for o in objs:
            self._collect(o)
        cwd, homes = _locations(objs, head)
        paths: dict[str, str] = {}
        if cwd and len(cwd) > 1:
            paths[cwd] = "{CWD}"
            for slug in (
                re.sub(r"[^A-Za-z0-9]", "-", cwd),
                cwd.replace("/", "-"),
                cwd.strip("/").replace("/", "-"),
            ):
                paths.setdefault(slug, "{CWD_SLUG}")
        for home in homes:
            if len(home) > 1:
                paths.setdefault(home, "{HOME}")
        self.paths = sorted(paths.items(), key=lambda kv: -len(kv[0]))
        long_ids = sorted((v for v in self.ids if len(v) >= 6), key=len, reverse=True)
        self.id_re = re.compile("|".join(map(re.escape, long_ids))) if long_ids else None

    def _collect(self, v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                cat = _id_key(v, k) if isinstance(x, str) and x else None
                if cat and x not in self.ids:
                    self.counts[cat] += 1
                    self.ids[x] = f"<{cat}#{self.counts[cat]}>"
                self._collect(x)
        elif isinstance(v, list):
            for x in v:
                self._collect(x)

    def mask(self, v: Any, key: str = "", usage: bool = False) -> Any:
        if isinstance(v, dict):
            return self._mask_dict(v, key, usage)
        if isinstance(v, list):
            return [self.mask(x, key, usage) for x in v]
        if isinstance(v, str):
            return self._mask_str(v, key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return v
        return _mask_number(v, key, usage)

    def _mask_dict(self, v: dict[str, Any], key: str, usage: bool) -> dict[str, Any]:
        inner = usage or key in ("usage", "modelUsage")
        out: dict[str, Any] = {}
        for k, x in v.items():
            mk = k
            if key == "modelUsage" and not self.keep_model:
                mk = "<model>" if "<model>" not in out else f"<model#{len(out) + 1}>"
            out[mk] = self.mask(x, k, inner)
        return out

    def _mask_str(self, v: str, key: str) -> str:
        if key in ID_KEYS or key in ("uuid", "id"):
            if v in self.ids:
                return self.ids[v]
            if key == "uuid":
                return "<uuid>"
        if key in MODEL_KEYS and not self.keep_model:
            return "<model>"
        return self.text(v)

    def text(self, s: str) -> str:
        for path, placeholder in self.paths:
            if path in s:
                s = s.replace(path, placeholder)
        s = _TMP.sub("{TMP}", s)
        if self.id_re is not None:
            s = self.id_re.sub(lambda m: self.ids[m.group()], s)
        s = _UUID.sub("<uuid>", s)
        s = _ISO.sub("<timestamp>", s)
        s = _USAGE_TEXT.sub(r"\1: <n>", s)
        return _RUN_ID.sub("<id>", s)


def _mask_number(v: int | float, key: str, usage: bool) -> Any:
    """A number's placeholder (by its range, its key, or its place in a usage), or itself."""
    if isinstance(v, int) and 10**12 <= v < 10**13:
        return "<epoch_ms>"
    if _EPOCH_KEY.search(key):
        return "<time>"
    if _MS_KEY.search(key):
        return "<ms>"
    if "cost" in key.lower():
        return "<cost>"
    if usage or _TOKEN_KEY.search(key):
        return "<n>"
    return "<pid>" if key == "pid" else v


def _locations(objs: Sequence[Obj], head: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The side's working directory (its first ``system/init``) and HOME candidates (the
    capture header's env, and the prefix of Claude's ``memory_paths.auto`` before
    ``/.claude/``: a CLI may run with another HOME than the recorder's)."""
    cwd, homes = None, []
    for o in objs:
        if o.get("type") == "system" and o.get("subtype") == "init":
            cwd = cwd or (o["cwd"] if isinstance(o.get("cwd"), str) else None)
            mp = o.get("memory_paths")
            auto = mp.get("auto") if isinstance(mp, dict) else None
            if isinstance(auto, str) and "/.claude/" in auto:
                homes.append(auto.split("/.claude/")[0])
    for env in (head.get("env"), (head.get("meta") or {}).get("env")):
        if isinstance(env, dict) and isinstance(env.get("HOME"), str):
            homes.append(env["HOME"])
    return cwd, homes


def _objects(capture: Capture) -> list[Obj]:
    """The client view's frames; a line that is not a JSON object becomes a pseudo-frame
    (type ``(not a JSON object)``) so that it is compared, not lost."""
    out: list[Obj] = []
    for rec in capture.client_view():
        try:
            obj = orjson.loads(rec.data)
        except orjson.JSONDecodeError:
            obj = None
        out.append(
            obj if isinstance(obj, dict) else {"type": "(not a JSON object)", "text": rec.text}
        )
    return out


def masked_frames(capture: Capture, keep_model: bool = False) -> list[Any]:
    """The client view of ``capture``, parsed and masked (the values ``diff`` compares)."""
    objs = _whole_inputs(_objects(capture))
    masker = _Masker(objs, capture.header, keep_model)
    return [masker.mask(o) for o in objs]


#: a streamed tool input's piece: ``stream_event`` ``content_block_delta`` ``input_json_delta``
_PIECE = ("content_block_delta", "input_json_delta")


def _piece_key(o: Obj) -> tuple[Any, Any] | None:
    """(thread, block index) of a streamed tool input's piece; None for any other frame."""
    event = o.get("event") if o.get("type") == "stream_event" else None
    if not isinstance(event, dict):
        return None
    delta = event.get("delta")
    if not isinstance(delta, dict) or (event.get("type"), delta.get("type")) != _PIECE:
        return None
    if not isinstance(delta.get("partial_json"), str):
        return None
    return o.get("parent_tool_use_id"), event.get("index")


def _whole_inputs(objs: list[Obj]) -> list[Obj]:
    """``objs`` with each streamed tool input compared as the JSON text its pieces build:
    the first piece of a block carries the whole, the others ``""`` (where the API cuts
    the pieces is its own; a path cut in two could not be masked)."""
    runs: list[list[int]] = []
    open_: dict[tuple[Any, Any], list[int]] = {}
    for i, o in enumerate(objs):
        key = _piece_key(o)
        if key is not None:
            open_.setdefault(key, []).append(i)
        elif o.get("type") == "stream_event" and _event_type(o) == "message_start":
            thread = o.get("parent_tool_use_id")  # (a new message: its blocks are new)
            runs += [open_.pop(k) for k in list(open_) if k[0] == thread]
    out = list(objs)
    for pieces in [*runs, *open_.values()]:
        whole = "".join(objs[i]["event"]["delta"]["partial_json"] for i in pieces)
        for n, i in enumerate(pieces):
            out[i] = _with_piece(objs[i], whole if n == 0 else "")
    return out


def _event_type(o: Obj) -> Any:
    event = o.get("event")
    return event.get("type") if isinstance(event, dict) else None


def _with_piece(o: Obj, text: str) -> Obj:
    event = o["event"]
    return {**o, "event": {**event, "delta": {**event["delta"], "partial_json": text}}}


# -- turns and task lifecycles ----------------------------------------------------------


@attrs.frozen
class Frame:
    sig: str
    turn: int
    obj: dict[str, Any]


@attrs.define
class Task:
    order: int
    id: str  # the masked task_id, e.g. "<task#1>"
    type: str = "?"
    name: str = ""
    events: list[Frame] = attrs.Factory(list)

    def start_turn(self) -> int:
        return next((e.turn for e in self.events if e.sig != SNAPSHOT), 0)

    def frames(self, subtype: str) -> list[Frame]:
        return [e for e in self.events if e.sig == f"system/{subtype}"]


@attrs.define
class Side:
    turns: list[list[Frame]]
    tasks: list[Task]
    results: int
    frames: int


def _signature(o: dict[str, Any]) -> str:
    t = o.get("type")
    sig = t if isinstance(t, str) else "?"
    if t == "system":
        sig = f"system/{o.get('subtype')}"
        if o.get("subtype") == "init" and o.get("session_id") not in ("<session#1>", None):
            sig += " (other session)"
    elif t == "control_request" and isinstance(o.get("request"), dict):
        sig = f"control_request/{o['request'].get('subtype')}"
    return sig


def load_side(capture: Capture, keep_model: bool = False) -> Side:
    raw = _whole_inputs(_objects(capture))
    masker = _Masker(raw, capture.header, keep_model)
    turns: list[list[Frame]] = [[]]
    tasks: dict[str, Task] = {}
    snaps: list[tuple[int, Frame]] = []  # (position in its turn, snapshot)
    for obj in raw:
        m = masker.mask(obj)
        frame = Frame(_signature(m), len(turns), m)
        if frame.sig in (f"system/{s}" for s in TASK_SUBTYPES) and isinstance(
            m.get("task_id"), str
        ):
            task = tasks.setdefault(m["task_id"], Task(len(tasks), m["task_id"]))
            task.events.extend(f for _, f in snaps)
            snaps.clear()
            task.events.append(frame)
            if frame.sig == "system/task_started" and task.name == "":
                task.type = str(m.get("task_type", "?"))
                task.name = str(m.get("workflow_name") or m.get("description") or "")
            elif task.type == "?" and isinstance(m.get("task_type"), str):
                task.type = m["task_type"]
        elif frame.sig == SNAPSHOT:
            snaps.append((len(turns[-1]), frame))
        else:
            turns[-1].append(frame)
            if frame.sig == "result":
                turns.append([])
    for pos, f in reversed(snaps):  # a snapshot no task frame followed stays in its turn
        turns[f.turn - 1].insert(pos, f)
    return Side(_unfold(turns), list(tasks.values()), len(turns) - 1, len(raw))


def _unfold(turns: list[list[Frame]]) -> list[list[Frame]]:
    """Overlapping turns, one turn each: a turn followed by ``k`` turns that are a lone
    ``result`` holds ``k + 1`` turns that started before the first of them ended (Claude
    Code starts a second notification turn before the first one's result: init, assistant,
    init, assistant, result, result). It is cut before each of its last ``k`` main-session
    ``system/init`` frames, and the results close the pieces in order (the first result
    the first turn started). Turns are numbered by their results either way, so a frame
    between two turns keeps its number. Without ``k + 1`` inits the turns stay as they are."""
    out: list[list[Frame]] = []
    i = 0
    while i < len(turns):
        turn = turns[i]
        k = 0
        while i + k + 1 < len(turns) and [f.sig for f in turns[i + k + 1]] == ["result"]:
            k += 1
        inits = [j for j, f in enumerate(turn) if f.sig == "system/init"]
        if not k or len(inits) < k + 1 or turn[-1].sig != "result":
            out.append(turn)
            i += 1
            continue
        cuts = [*inits[-k:], len(turn) - 1]
        results = [turn[-1], *(turns[i + j][0] for j in range(1, k + 1))]
        start = 0
        for cut, result in zip(cuts, results, strict=True):
            number = len(out) + 1
            piece = [*turn[start:cut], result]
            out.append([attrs.evolve(f, turn=number) if f.turn != number else f for f in piece])
            start = cut
        i += k + 1
    return out
