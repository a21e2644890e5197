"""The scripted client of a scenario run, and the recording it writes into.

``Recording`` keeps every record of the run in memory, stamped with seconds since the
spawn, and writes the capture once at the end (``encode``): the header, then the records
in time order, each scrubbed of the run's paths and redacted (``compat.capture``). It
splits the backend's streams into lines (``compat.framing``) and keeps stdout's frames.

``Client`` plays the steps of the scenario in order, in its client's dialect (``DIALECTS``):
``claude`` writes what a Claude Agent SDK writes; ``cbc`` what the CodeBuddy SDKs
(``codebuddy-agent-sdk``, ``@tencent-ai/agent-sdk``) write to cbc 2.163.0 (REVERSE.md,
"What the cbc SDKs require of the CLI"): the Python SDK's ``initialize``, user lines with
the session id the client read and no ``uuid``, ``can_use_tool`` answered
``{allowed, updatedInput | reason, interrupt, tool_use_id}``, and an ``interrupt`` as the JS
SDK's ``query()`` sends it (``session_id``, ``reason``), ``set_model`` /
``set_permission_mode`` with ``session_id`` as both SDKs send them.

Waiting is "check, else sleep until something new arrives": every stdout line and every
model request wakes the waiters (one ``trio.Event`` replaced on each arrival), and a
condition is always evaluated over everything seen since the start, so nothing that
arrived before the wait is missed.
"""

from __future__ import annotations

import string
import uuid
from typing import Any

import orjson
import trio

from compat import capture
from compat.frames import dict_at
from compat.framing import Line, LineSplitter, Oversize, Partial
from harness.answers import Answers
from harness.brain import Request
from harness.scenario import Condition, Scenario, Step

READ_SIZE = 64 * 1024
#: a Claude Agent SDK's ``initialize`` (never with ``hasPrompt``, which only codebuddy's SDKs
#: send: rule ``resume-replay``)
INITIALIZE = {"subtype": "initialize", "hooks": {}, "capabilities": {}}
#: what codebuddy-agent-sdk's ``Query.initialize`` sends with no options set
CBC_INITIALIZE = {
    "subtype": "initialize",
    "hooks": {},
    "systemPrompt": None,
    "appendSystemPrompt": None,
    "agents": None,
    "sdkMcpServers": None,
    "hasPrompt": True,
    "capabilities": {"askUserQuestion": True},
}
#: the client dialects: a Claude Agent SDK, a CodeBuddy SDK
DIALECTS = ("claude", "cbc")
#: the reason @tencent-ai/agent-sdk's ``query().interrupt()`` gives
CBC_INTERRUPT_REASON = "User interrupt"
#: control requests a cbc SDK sends with the session id (interrupt: the JS SDK)
CBC_SESSION_CONTROLS = ("interrupt", "set_model", "set_permission_mode")


class Recording:
    def __init__(self, scrub: list[tuple[bytes, bytes]], via: bool) -> None:
        self.pairs = scrub
        self.via = via
        self.out_kind = "client_out" if via else "stdout"
        self.in_kind = "client_in" if via else "stdin"
        self.header: dict[str, Any] = {}
        self.records: list[tuple[float, str, bytes, bool]] = []
        self.lines: list[tuple[dict[str, Any] | None, bytes]] = []  # stdout, in order
        self.frames: list[dict[str, Any]] = []
        self.model_latest: list[str] = []
        self.changed = trio.Event()
        self._t0: float | None = None

    # -- time and records ---------------------------------------------------------------
    def start(self) -> None:
        if self._t0 is None:  # a resumed second run keeps the first run's clock
            self._t0 = trio.current_time()

    def now(self) -> float:
        return 0.0 if self._t0 is None else trio.current_time() - self._t0

    def add(self, kind: str, data: bytes, partial: bool = False) -> None:
        self.records.append((self.now(), kind, data, partial))

    def note(self, text: str) -> None:
        self.add("note", text.encode())

    def exit(self, text: str) -> None:
        self.add("exit", text.encode())

    def scrub(self, data: bytes) -> bytes:
        for old, new in self.pairs:
            if old in data:
                data = data.replace(old, new)
        return data

    def scrub_text(self, text: str) -> str:
        return self.scrub(text.encode()).decode()

    def encode(self) -> bytes:
        head = orjson.loads(self.scrub(orjson.dumps(self.header)))
        out = [capture.encode_header(head)]
        for t, kind, data, partial in sorted(self.records, key=lambda r: r[0]):
            out.append(capture.encode_record(t, kind, self.scrub(data), partial))
        return b"".join(out)

    def _poke(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    # -- inputs -------------------------------------------------------------------------
    async def read(self, stream: trio.abc.ReceiveStream, kind: str, done: trio.Event) -> None:
        splitter = LineSplitter()
        try:
            while True:
                try:
                    data = await stream.receive_some(READ_SIZE)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                events = list(splitter.feed(bytes(data)) if data else splitter.eof())
                for ev in events:
                    if isinstance(ev, Line):
                        self._line(kind, ev.data)
                    elif isinstance(ev, Oversize):
                        self.add(kind, ev.data.rstrip(b"\n"), partial=not ev.end)
                    elif isinstance(ev, Partial) and ev.data:
                        self.add(kind, ev.data, partial=True)
                if not data:
                    return
        finally:
            done.set()

    def _line(self, kind: str, data: bytes) -> None:
        self.add(kind, data)
        if kind != self.out_kind:
            return
        try:
            frame = orjson.loads(data)
        except orjson.JSONDecodeError:
            frame = None
        if not isinstance(frame, dict):
            frame = None
        self.lines.append((frame, data))
        if frame is not None:
            self.frames.append(frame)
        self._poke()

    def model_request(self, entry: dict[str, Any], req: Request | None) -> None:
        self.note("model " + orjson.dumps(entry).decode())
        if req is not None:
            self.model_latest.append(req.latest)
            self._poke()

    def merge_bridge_capture(self, path: str, since: float = 0.0) -> None:
        """The backend side of a run through the bridge, from its ``--record`` file;
        ``since``: when (on our clock) that bridge was spawned (a resumed second run's)."""
        try:
            with open(path, "rb") as f:
                cap = capture.parse(f)
        except OSError:
            self.note("the bridge wrote no capture (--record); backend side not recorded")
            return
        except capture.CaptureError as e:
            self.note(f"the bridge's capture is unreadable: {e}")
            return
        # The bridge's clock starts after its interpreter did: shift its records so its
        # first backend stdout line is not later than the first line we got from it.
        first_in = next((r.t for r in cap.records if r.kind == "stdout"), None)
        first_out = next(
            (t for t, k, _, _ in self.records if k == self.out_kind and t >= since), None
        )
        shift = since
        if first_in is not None and first_out is not None:
            shift = max(since, first_out - first_in)
        if shift:
            self.note(f"bridge capture shifted by +{shift:.3f}s to align it with ours")
        for r in cap.records:
            if r.kind in ("stdin", "stdout", "stats"):
                self.records.append((r.t + shift, r.kind, r.data, r.partial))
            elif r.kind in ("note", "exit", "meta"):
                self.records.append(
                    (r.t + shift, "note", b"bridge " + r.kind.encode() + b": " + r.data, False)
                )


class Client:
    def __init__(
        self,
        scenario: Scenario,
        stdin: trio.abc.SendStream,
        rec: Recording,
        dialect: str = "claude",
    ) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"unknown client dialect {dialect!r} (one of {DIALECTS})")
        self.scenario = scenario
        self.stdin = stdin
        self.rec = rec
        self.dialect = dialect
        self.answered: set[str] = set()
        self.current = -1  # index of the step being played; -1: initialize
        #: (stdout lines, model requests) seen when the previous step was done
        self.mark = (len(rec.lines), len(rec.model_latest))
        #: conditions count from here (a second, resumed run starts after the first's)
        self.base = self.mark
        self.base_frames = len(rec.frames)
        self.finished = False
        self.stdin_closed = False
        self.answers = Answers(scenario.answers)
        self._writing = trio.Lock()  # (the steps and the answers write stdin)

    # -- waiting ------------------------------------------------------------------------
    def _find(self, cond: Condition) -> dict[str, Any] | None:
        seen = 0
        if cond.model_request is not None:
            start = self.mark[1] if cond.fresh else self.base[1]
            for latest in self.rec.model_latest[start:]:
                seen += cond.model_request in latest
                if seen >= cond.nth:
                    return {}
            return None
        for frame, raw in self.rec.lines[self.mark[0] if cond.fresh else self.base[0] :]:
            if cond.matches(frame or {}, raw):
                seen += 1
                if seen >= cond.nth:
                    return frame or {}
        return None

    async def wait_for(self, cond: Condition) -> dict[str, Any]:
        while True:
            changed = self.rec.changed
            found = self._find(cond)
            if found is not None:
                return found
            await changed.wait()

    async def _wait_frame(self, pred: Any) -> dict[str, Any]:
        while True:
            changed = self.rec.changed
            for frame in self.rec.frames[self.base_frames :]:
                if pred(frame):
                    return frame
            await changed.wait()

    # -- writing ------------------------------------------------------------------------
    async def write(self, obj: Any) -> None:
        data = obj if isinstance(obj, bytes) else orjson.dumps(obj)
        async with self._writing:
            if self.stdin_closed:
                raise trio.ClosedResourceError("stdin is closed")
            self.rec.add(self.rec.in_kind, data)
            await self.stdin.send_all(data + b"\n")

    async def close_stdin(self) -> None:
        async with self._writing:
            if not self.stdin_closed:
                self.stdin_closed = True
                await self.stdin.aclose()
                self.rec.note("stdin closed")

    # -- the CLI's own requests -------------------------------------------------------
    async def answer_requests(self) -> None:
        """Answer each control request of the CLI other than ``can_use_tool`` that one of
        the scenario's ``answers`` fits, as it comes (``harness.answers``), while stdin is
        open."""
        if not self.scenario.answers:
            return
        seen = self.base_frames
        try:
            while not self.stdin_closed:
                changed = self.rec.changed
                frames, seen = self.rec.frames[seen:], len(self.rec.frames)
                for frame in frames:
                    await self._answer(frame)
                await changed.wait()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return

    async def _answer(self, frame: dict[str, Any]) -> None:
        request = frame.get("request")
        rid = frame.get("request_id")
        if frame.get("type") != "control_request" or not isinstance(request, dict):
            return
        if request.get("subtype") == "can_use_tool" or not isinstance(rid, str):
            return
        answer = self.answers.pick(request)
        if answer is None:
            return
        if answer.delay:
            await trio.sleep(answer.delay)
        await self.write(answer.reply(rid, request))

    # -- the script ---------------------------------------------------------------------
    async def run_steps(self) -> None:
        try:
            if self.scenario.initialize:
                init = CBC_INITIALIZE if self.dialect == "cbc" else INITIALIZE
                await self.write({"type": "control_request", "request_id": "init", "request": init})
                await self._wait_frame(_is_reply_to("init"))
            for i, step in enumerate(self.scenario.steps):
                self.current = i
                await self._play(i, step)
                self.mark = (len(self.rec.lines), len(self.rec.model_latest))
            self.current = len(self.scenario.steps)
            if not self.scenario.keep_stdin_open:
                await self.close_stdin()
            self.finished = True
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.rec.note(f"stdin is closed: the client script stopped at {self._where()}")
            self.finished = True

    def _where(self) -> str:
        if self.current < 0:
            return "initialize"
        if self.current >= len(self.scenario.steps):
            return "the end"
        step = self.scenario.steps[self.current]
        after = f" after {step.after.describe()}" if step.after else ""
        return f"step {self.current + 1} ({step.action}{after})"

    def report_unfinished(self) -> None:
        if not self.finished:
            self.rec.note(f"the client script did not finish: it was at {self._where()}")

    async def _play(self, i: int, step: Step) -> None:
        frame: dict[str, Any] = {}
        if step.after is not None:
            frame = await self.wait_for(step.after)
        if step.delay:
            await trio.sleep(step.delay)
        if step.note:
            self.rec.note(step.note)
        values = {
            k: str(v)
            for k, v in frame.items()
            if isinstance(v, str | int | float) and not isinstance(v, bool)
        }
        if step.user is not None:
            await self.write(self._user(i, step, _sub(step.user, values)))
        elif step.line is not None:
            await self.write(_sub(step.line, values).encode())
        elif step.control is not None:
            await self.write(
                {
                    "type": "control_request",
                    "request_id": step.request_id or f"req-{i + 1}",
                    "request": self._control(_sub(step.control, values)),
                }
            )
        elif step.permission is not None:
            req = await self._wait_frame(self._unanswered_permission)
            rid = str(req.get("request_id"))
            self.answered.add(rid)
            answer = self._permission(dict(step.permission), dict_at(req, "request") or {})
            await self.write(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": rid, "response": answer},
                }
            )
        elif step.close_stdin:
            await self.close_stdin()

    # -- the dialects -----------------------------------------------------------------
    def session_id(self) -> str | None:
        """The session id this client read: the first non-empty ``session_id`` of a frame
        of this run (the SDKs' own rule), None before one arrived."""
        return next(
            (
                f["session_id"]
                for f in self.rec.frames[self.base_frames :]
                if isinstance(f.get("session_id"), str) and f["session_id"]
            ),
            None,
        )

    def _user(self, i: int, step: Step, content: Any) -> dict[str, Any]:
        if self.dialect == "cbc":  # both cbc SDKs: the session id they read, no uuid
            msg: dict[str, Any] = {
                "type": "user",
                "session_id": self.session_id() or "",
                "message": {"role": "user", "content": content},
                "parent_tool_use_id": None,
            }
            if step.uuid:
                msg["uuid"] = step.uuid
            return msg
        uid = step.uuid or str(
            uuid.uuid5(uuid.NAMESPACE_URL, f"ccbridge-scenario:{self.scenario.name}:{i}")
        )
        return {
            "type": "user",
            "message": {"role": "user", "content": content},
            "parent_tool_use_id": None,
            "session_id": "",
            "uuid": uid,
        }

    def _control(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.dialect != "cbc" or request.get("subtype") not in CBC_SESSION_CONTROLS:
            return request
        out = dict(request)
        sid = self.session_id()
        if sid is not None:
            out.setdefault("session_id", sid)
        if out.get("subtype") == "interrupt":
            out.setdefault("reason", CBC_INTERRUPT_REASON)
        return out

    def _permission(self, answer: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        """The scenario's answer (Claude's ``{behavior, updatedInput, message}`` or cbc's
        ``{allowed, ...}``) in this client's dialect; an allow without ``updatedInput``
        carries the request's ``input``. An answer already in cbc's shape is sent as
        written (so a scenario can send a Claude backend what a cbc client writes)."""
        tool_input = request.get("input", {})
        if self.dialect == "cbc":
            if "allowed" not in answer:
                behavior = answer.pop("behavior", None)
                message = answer.pop("message", None)
                allowed = behavior == "allow"
                answer = {"allowed": allowed, **answer}
                if not allowed:
                    answer["reason"] = message if isinstance(message, str) else ""
                    answer.setdefault("interrupt", False)
            if answer.get("allowed") is True and "updatedInput" not in answer:
                answer["updatedInput"] = tool_input
            answer.setdefault("tool_use_id", request.get("tool_use_id", ""))
            return answer
        allow = answer.get("behavior") == "allow" or answer.get("allowed") is True
        if allow and "updatedInput" not in answer:
            answer["updatedInput"] = tool_input
        return answer

    def _unanswered_permission(self, frame: dict[str, Any]) -> bool:
        req = frame.get("request")
        return (
            frame.get("type") == "control_request"
            and isinstance(req, dict)
            and req.get("subtype") == "can_use_tool"
            and str(frame.get("request_id")) not in self.answered
        )


def _is_reply_to(request_id: str) -> Any:
    def pred(frame: dict[str, Any]) -> bool:
        resp = frame.get("response")
        return (
            frame.get("type") == "control_response"
            and isinstance(resp, dict)
            and resp.get("request_id") == request_id
        )

    return pred


def _sub(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return string.Template(value).safe_substitute(values)
    if isinstance(value, dict):
        return {k: _sub(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_sub(v, values) for v in value]
    return value
