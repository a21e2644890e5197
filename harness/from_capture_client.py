"""The client's side of a recorded session (``ccbridge scenario from-capture``): each line
the client wrote, as a scenario step (``harness.scenario.Step``) that waits for the frame
the client had read last before it. Pure: the session in, steps out.

The wait (``after``) is the last frame of the client's view before the line, skipping the
frames whose number depends on timing or on the CLI (``NOISE``: stream events, status
and lifecycle frames), as a ``Condition`` on its type (and subtype) counted from the
start of the run (``nth``, counted with ``Condition.matches`` itself, as the runner
counts). The time the client took after it is kept as the step's ``delay`` (from 0.2 s,
at most ``max_delay``). A first ``initialize`` of the SDKs' plain shape is the runner's
own (``initialize = true``); another is written as a raw ``line``. A user line with text
content is a ``user`` step (its ``uuid`` kept), any other shape a raw ``line``; a control
request a ``control`` step (its ``request_id`` kept, a cbc ``session_id`` left to the
runner's client), an id in it that a frame gave (``task_id`` of a ``task_started``) a
``${field}`` of that frame; an answer to ``can_use_tool`` a ``permission`` step in the
shape the client sent it (the scenario's ``client`` keeps that client's dialect); the
client's EOF ``close_stdin``. ``$`` in the texts is doubled (the
runner's client substitutes ``${field}``).
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from compat.frames import dict_at, str_at
from compat.taskkit import remember
from harness.answers import MISSING, at
from harness.scenario import Condition

NOISE = frozenset(
    {"stream_event", "keep_alive", "command_lifecycle", "rate_limit_event", "file-history-snapshot"}
)
NOISE_SYSTEM = frozenset({"status", "thinking_tokens"})
MIN_DELAY = 0.2
#: the initialize fields a plain SDK ``initialize`` may carry (with empty values)
_PLAIN_INIT = frozenset({"subtype", "hasPrompt", "capabilities"})
_USER_KEYS = frozenset({"type", "message", "parent_tool_use_id", "session_id", "uuid"})


def dollars(value: Any) -> Any:
    """``value`` with each ``$`` in its strings doubled (``string.Template`` escaping)."""
    if isinstance(value, str):
        return value.replace("$", "$$")
    if isinstance(value, dict):
        return {k: dollars(v) for k, v in value.items()}
    if isinstance(value, list):
        return [dollars(v) for v in value]
    return value


def is_noise(frame: dict[str, Any]) -> bool:
    kind = frame.get("type")
    if not isinstance(kind, str):
        return True
    return kind in NOISE or (kind == "system" and frame.get("subtype") in NOISE_SYSTEM)


def plain_initialize(request: dict[str, Any]) -> bool:
    """An ``initialize`` as the runner's client sends it (nothing the session depends on)."""
    return all(k in _PLAIN_INIT or v in (None, {}, [], "", False) for k, v in request.items())


def _named(request: dict[str, Any]) -> bool:
    """A control request with a ``subtype`` (a step's ``control`` needs one)."""
    return isinstance(request.get("subtype"), str)


def condition(frame: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ``Condition`` that matches ``frame``'s kind."""
    out: dict[str, Any] = {"type": str(frame.get("type"))}
    if frame.get("type") == "system" and isinstance(frame.get("subtype"), str):
        out["subtype"] = frame["subtype"]
    request = dict_at(frame, "request")
    if frame.get("type") == "control_request" and isinstance(request, dict):
        sub = request.get("subtype")
        if isinstance(sub, str):
            out["subtype"] = sub
    return out


@attrs.define
class ClientWalk:
    headless: bool = False
    max_delay: float = 30.0
    #: the client read cbc's own stdout: cbc writes copies of its ``system/init`` in a
    #: number and at places that vary from run to run, so no step waits for one
    raw_cbc: bool = False
    #: every frame the client read: (time, frame, raw line)
    view: list[tuple[float, dict[str, Any], bytes]] = attrs.field(factory=list)
    steps: list[dict[str, Any]] = attrs.field(factory=list)
    initialize: bool | None = None  # None: no line yet
    init_id: str | None = None
    last_action: float = 0.0
    closed: bool = False
    requests: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # can_use_tool by id
    #: the CLI's other control requests by id (hook callbacks, SDK MCP messages), with
    #: when they came
    asked: dict[str, tuple[float, dict[str, Any]]] = attrs.field(factory=dict)
    #: the client's answers to them, as the scenario's ``[[answers]]``
    answers: list[dict[str, Any]] = attrs.field(factory=list)
    notes: list[str] = attrs.field(factory=list)

    # -- what the client read -----------------------------------------------------------
    def frame(self, t: float, frame: dict[str, Any], raw: bytes) -> None:
        self.view.append((t, frame, raw))
        req = dict_at(frame, "request")
        rid = str_at(frame, "request_id")
        if frame.get("type") != "control_request" or not req or rid is None:
            return
        if req.get("subtype") == "can_use_tool":
            self.requests[rid] = req
        else:
            remember(self.asked, rid, (t, req), cap=4096)

    def _anchor(self) -> int | None:
        """The index in ``view`` of the last frame worth waiting for."""
        for i in range(len(self.view) - 1, -1, -1):
            frame = self.view[i][1]
            if not is_noise(frame) and not (self.raw_cbc and frame.get("subtype") == "init"):
                return i
        return None

    def _after(self, i: int) -> dict[str, Any] | None:
        """The ``after`` table waiting for ``view[i]`` (None for the reply to the runner's
        own ``initialize``, which the runner waits for itself)."""
        frame = self.view[i][1]
        resp = dict_at(frame, "response")
        if self.initialize and self.init_id is not None and frame.get("type") == "control_response":
            if resp is not None and resp.get("request_id") == self.init_id:
                return None
        fields = condition(frame)
        cond = Condition(**fields)
        nth = sum(1 for _, f, raw in self.view[: i + 1] if cond.matches(f, raw))
        return {**fields, "nth": nth} if nth > 1 else fields

    def _wait(self, t: float, anchor: int | None = None) -> dict[str, Any]:
        """A step's ``after`` and ``delay`` for a line written at ``t``."""
        step: dict[str, Any] = {}
        i = self._anchor() if anchor is None else anchor
        base = self.last_action
        if i is not None:
            after = self._after(i)
            if after is not None:
                step["after"] = after
            base = max(base, self.view[i][0])
        gap = t - base
        if gap >= MIN_DELAY and self.max_delay > 0:
            step["delay"] = round(min(gap, self.max_delay), 1)
        self.last_action = t
        return step

    # -- what the client wrote ----------------------------------------------------------
    def line(self, t: float, frame: dict[str, Any] | None, raw: bytes) -> None:
        if self.closed:
            self.notes.append("a line written after the client's EOF is left out")
            return
        if self.headless:
            self.steps.append({"line": dollars(raw.decode("utf-8", "replace"))})
            return
        request = dict_at(frame, "request") if frame is not None else None
        kind = frame.get("type") if frame is not None else None
        first = self.initialize is None
        if first:
            self.initialize = False
        if frame is None:
            self._raw(t, raw)
        elif kind == "control_request" and request is not None and _named(request):
            self._control(t, frame, request, first)
        elif kind == "user":
            self._user(t, frame)
        elif kind == "control_response":
            self._answer(t, frame)
        else:
            self._raw(t, raw)

    def _raw(self, t: float, raw: bytes) -> None:
        self.steps.append({**self._wait(t), "line": dollars(raw.decode("utf-8", "replace"))})

    def _control(
        self, t: float, frame: dict[str, Any], request: dict[str, Any], first: bool
    ) -> None:
        if request.get("subtype") == "initialize" and first and plain_initialize(request):
            self.initialize = True
            self.init_id = str_at(frame, "request_id")
            self.last_action = t
            return
        if request.get("subtype") == "initialize":
            extra = sorted(k for k, v in request.items() if k not in _PLAIN_INIT and v)
            self.notes.append(
                f"the client's initialize ({', '.join(extra) or 'not its first line'}) is sent "
                "as recorded; the control requests the CLI sends for it (hook callbacks, SDK "
                "MCP servers) get the recorded answers (`[[answers]]`)"
            )
            self._raw(t, orjson.dumps(frame))
            return
        control = dollars({k: v for k, v in request.items() if k != "session_id"})
        step = self._wait(t)
        found = self._id_frame(control)
        if found is not None:
            j, key, field = found
            control[key] = "${" + field + "}"
            after = self._after(j)
            if after is not None and after != step.get("after"):
                self.steps.append(step)  # wait for the frame that preceded the request
                step = {"after": after}
        step["control"] = control
        rid = str_at(frame, "request_id")
        if rid is not None:
            step["request_id"] = rid
        self.steps.append(step)

    def _id_frame(self, control: dict[str, Any]) -> tuple[int, str, str] | None:
        """(view index, request key, frame field) of the latest frame whose top-level
        ``field`` holds the value of an id in the request (``task_id``...)."""
        for key, v in control.items():
            if not isinstance(v, str) or not v or not key.lower().endswith("id"):
                continue
            for i in range(len(self.view) - 1, -1, -1):
                frame = self.view[i][1]
                field = next(
                    (
                        f
                        for f, x in frame.items()
                        if x == v and f != "session_id" and f.isidentifier()
                    ),
                    None,
                )
                if field is not None:
                    return i, key, field
        return None

    def _user(self, t: float, frame: dict[str, Any]) -> None:
        msg = dict_at(frame, "message") or {}
        content = msg.get("content")
        plain = (
            isinstance(content, str)
            and frame.keys() <= _USER_KEYS
            and msg.keys() <= {"role", "content"}
            and frame.get("parent_tool_use_id") is None
        )
        step = self._wait(t)
        if not plain:
            step["line"] = dollars(orjson.dumps({**frame, "session_id": ""}).decode())
        else:
            step["user"] = dollars(content)
            uuid = str_at(frame, "uuid")
            if uuid:
                step["uuid"] = uuid
        self.steps.append(step)

    def _answer(self, t: float, frame: dict[str, Any]) -> None:
        resp = dict_at(frame, "response") or {}
        rid = str_at(resp, "request_id")
        if rid is not None and rid in self.asked:
            asked_at, asked = self.asked.pop(rid)
            entry = scripted_answer(asked, resp)
            if t - asked_at >= 0.001:
                entry["delay"] = round(min(t - asked_at, self.max_delay), 3)
            self.answers.append(entry)
            return
        request = self.requests.get(rid) if rid is not None else None
        answer = dict_at(resp, "response")
        if request is None or answer is None or resp.get("subtype") != "success":
            self.notes.append(
                f"an answer to a control request the recording does not show (request_id "
                f"{rid}) is left out"
            )
            return
        self.steps.append({**self._wait(t), "permission": permission(answer, request)})

    def close(self, t: float) -> None:
        if self.closed:
            return
        self.closed = True
        if self.headless:
            self.steps.append({"close_stdin": True})
            return
        self.steps.append({**self._wait(t), "close_stdin": True})

    def wait_for_last(self) -> None:
        """A last step that only waits for the last frame the client read (a capture that
        was cut: EOF after what was recorded, not before)."""
        i = self._anchor()
        if i is not None and not self.headless:
            after = self._after(i)
            if after is not None:
                self.steps.append({"after": after})


def permission(answer: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """A ``can_use_tool`` answer as the scenario's ``permission``, in the shape the client
    sent it (Claude's ``{behavior, …}`` or cbc's ``{allowed, …}``; the scenario's
    ``client`` keeps its dialect, so the runner sends it as written): every field but
    ``tool_use_id`` and an ``updatedInput`` that is the request's input (the runner adds
    both back)."""
    out = {k: v for k, v in answer.items() if k != "tool_use_id"}
    if out.get("updatedInput") == request.get("input"):
        out.pop("updatedInput", None)
    return out


#: what tells one of the CLI's requests from another of its subtype (dotted paths)
_MATCH = {
    "hook_callback": ("callback_id",),
    "mcp_message": ("server_name", "message.method", "message.params.name"),
}


def scripted_answer(request: dict[str, Any], resp: dict[str, Any]) -> dict[str, Any]:
    """The client's answer to one of the CLI's requests as an ``[[answers]]`` entry: it
    fits requests of that subtype with the same ``_MATCH`` fields; an MCP reply's JSON-RPC
    id is the request's (``${message.id}``). Each answers once (``times``);
    ``answers_once`` lets the last of its kind answer again."""
    sub = str(request.get("subtype"))
    match = {p: v for p in _MATCH.get(sub, ()) if (v := at(request, p)) is not MISSING}
    entry: dict[str, Any] = {"subtype": sub}
    if match:
        entry["match"] = match
    if resp.get("subtype") == "error":
        entry["error"] = str(resp.get("error") or "")
    else:
        body = dict_at(resp, "response") or {}
        mcp = dict_at(body, "mcp_response")
        msg_id = at(request, "message.id")
        if mcp is not None and msg_id is not MISSING and mcp.get("id") == msg_id:
            body = {**body, "mcp_response": {**mcp, "id": "${message.id}"}}
        entry["response"] = body
    entry["times"] = 1
    return entry


def answers_once(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``answers`` with the last of each kind (subtype and match) answering any number of
    times: a replay that asks once more than the recording still gets an answer."""
    last = {_kind(a): i for i, a in enumerate(answers)}
    ends = set(last.values())
    return [
        {k: v for k, v in a.items() if k != "times" or i not in ends} for i, a in enumerate(answers)
    ]


def _kind(answer: dict[str, Any]) -> bytes:
    return orjson.dumps([answer["subtype"], answer.get("match")], option=orjson.OPT_SORT_KEYS)
