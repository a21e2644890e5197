"""Support for the control-protocol rule tests: reference transcripts (both layouts) read
into records, and a two-sided replay through an engine that fires timers at their exact
deadlines.

The cbc ``nomodel_*`` transcripts use ``{"meta"}`` then ``{"t", "stream", "line"}``
records (``stream``: ``stdin``/``stdout``/``event``); the others ``{"t", "kind", "text"}``.
Copies live in ``data/`` (from ``shared/reference/captures``) so the tests never skip.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from compat.engine import Engine, Log, Write
from compat.profiles import build, parse_rule_settings
from tests.compat.helpers import det_env
from tests.compat.tasks_support import tag

DATA = Path(__file__).resolve().parent / "data"


@attrs.frozen
class Rec:
    t: float
    kind: str  # stdin | stdout | exit | note
    text: str

    @property
    def obj(self) -> Any:
        return json.loads(self.text)


def records(name: str) -> list[Rec]:
    out = []
    for raw in (DATA / f"{name}.transcript.jsonl").read_text().splitlines():
        r = json.loads(raw)
        if "meta" in r:
            continue
        if "stream" in r:
            kind, text = r["stream"], r.get("line", "")
            if kind == "event":
                kind = "exit" if text.startswith("exit code") else "note"
                text = text.removeprefix("exit code ").strip()
        else:
            kind, text = r["kind"], r["text"]
        out.append(Rec(r["t"], kind, text))
    return out


def stdout_frames(name: str) -> list[dict[str, Any]]:
    return [r.obj for r in records(name) if r.kind == "stdout"]


def stdout_frame(name: str, pred: Any) -> dict[str, Any]:
    return next(f for f in stdout_frames(name) if pred(f))


def reply_to(name: str, rid: str) -> dict[str, Any]:
    """The backend's control_response to ``rid`` in a transcript."""
    return stdout_frame(
        name,
        lambda f: f.get("type") == "control_response" and f["response"].get("request_id") == rid,
    )


def engine(rules: Iterable[str] = (), *, stdio: bool = False, pid: int = 4242) -> Engine:
    up, down = build("cbc-to-claude", parse_rule_settings(list(rules)))
    eng = Engine(up, down, det_env(), strict=True)
    eng.state.stdio_permissions = stdio
    eng.state.pid = pid
    return eng


@attrs.define
class Run:
    """What a replay produced: (time, frame) per side, and the log lines."""

    client: list[tuple[float, Any]] = attrs.Factory(list)  # what the client got
    backend: list[tuple[float, Any]] = attrs.Factory(list)  # what cbc got
    logs: list[Log] = attrs.Factory(list)

    def take(self, commands: Iterable[object], t: float) -> None:
        for c in commands:
            if isinstance(c, Write):
                dest = self.client if c.side == "client" else self.backend
                for raw in c.data.splitlines():
                    if raw.strip():
                        try:
                            dest.append((t, json.loads(raw)))
                        except ValueError:
                            dest.append((t, raw))
            elif isinstance(c, Log):
                self.logs.append(c)

    def frames(self, side: str = "client") -> list[Any]:
        return [f for _, f in (self.client if side == "client" else self.backend)]


def replay(
    eng: Engine,
    name: str | None = None,
    *,
    extra: Iterable[tuple[float, str, Any]] = (),
    stdin: bool = True,
    until: float | None = None,
) -> Run:
    """Feed a transcript's stdout (as the backend) and, with ``stdin``, its stdin (as the
    client), plus ``extra`` (time, "client"|"backend", frame or raw line) in time order;
    timers fire at their deadlines; the ``exit`` record ends the backend."""
    events: list[tuple[float, int, str, bytes]] = []
    n = 0
    for r in records(name) if name else ():
        n += 1
        if r.kind == "stdout":
            events.append((r.t, n, "backend", r.text.encode() + b"\n"))
        elif r.kind == "stdin" and stdin:
            events.append((r.t, n, "client", r.text.encode() + b"\n"))
        elif r.kind == "exit":
            events.append((r.t, n, "exit", b""))
    for t, side, frame in extra:
        n += 1
        raw = frame if isinstance(frame, bytes) else json.dumps(frame).encode() + b"\n"
        events.append((t, n, side, raw))
    events.sort(key=lambda e: (e[0], e[1]))
    run = Run()
    for t, _, side, data in events:
        if until is not None and t > until:
            break
        advance(eng, run, t)
        if side == "exit":
            run.take(eng.backend_exited(0, t), t)
        else:
            run.take(eng.feed(side, data, t), t)  # type: ignore[arg-type]
    return run


def advance(eng: Engine, run: Run, t: float) -> None:
    deadline = eng.next_deadline()
    while deadline is not None and deadline <= t:
        run.take(eng.advance(deadline), deadline)
        deadline = eng.next_deadline()


def label(f: Any) -> str:
    """``control_response:<rid>``, ``task_updated:killed``, ``assistant``, ``system/init``..."""
    if not isinstance(f, dict):
        return "<raw>"
    t, st = f.get("type"), f.get("subtype")
    if t in ("control_response",):
        return f"control_response:{f['response'].get('request_id')}"
    if t in ("control_request", "control_cancel_request"):
        return f"{t}:{f.get('request_id')}"
    if t == "system":
        if st in ("task_updated", "task_notification", "background_tasks_changed"):
            return tag(f)
        return f"system/{st}"
    return str(t)


def cr(rid: str, **request: Any) -> dict[str, Any]:
    return {"type": "control_request", "request_id": rid, "request": request}


def user(text: str, uuid: str | None = None, session_id: str = "") -> dict[str, Any]:
    f: dict[str, Any] = {
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": None,
        "session_id": session_id,
    }
    if uuid is not None:
        f["uuid"] = uuid
    return f


def cbc_init(sid: str, **over: Any) -> dict[str, Any]:
    """cbc 2.163.0's ``system/init`` of a session with Bash (the raw runs of issue 12's
    control scenarios); ``over`` adds or replaces fields."""
    return {
        "type": "system",
        "subtype": "init",
        "uuid": sid,
        "session_id": sid,
        "cwd": "/w",
        "tools": ["Bash"],
        "mcp_servers": [],
        "model": "default-model",
        **over,
    }
