"""Support for the background-task rule tests: a deterministic engine, cbc-shaped frame
builders (copied from the shapes in ``cbc-2.163.0/mockoai_*``) and a transcript replayer
that fires timers at their exact deadlines."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from compat.capture import parse
from compat.engine import Engine, Log, Write
from compat.profiles import build, make_stage, parse_rule_settings
from compat.stage import Env, Stage

from .helpers import result_block

DATA = Path(__file__).resolve().parent / "data"
SID = "01a226f1-054d-775d-a993-0bab94fddfcb"
CWD = "/home/user/probe/wd"
EPOCH_MS = 1_795_949_000_000


class ScriptFiles:
    """``Env.read_script`` for tests: a dict of path -> text, and the reads it served."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files = dict(files or {})
        self.reads: list[tuple[str, str]] = []

    def __call__(self, cwd: str, path: str) -> str | None:
        self.reads.append((cwd, path))
        return self.files.get(path)


def det_env(scripts: dict[str, str] | None = None) -> Env:
    counter = itertools.count(1)
    return Env(
        new_uuid=lambda: f"uuid-{next(counter)}",
        read_script=ScriptFiles(scripts),
        epoch_ms=EPOCH_MS,
    )


def stages(*specs: str | tuple[str, dict[str, str]]) -> list[Stage]:
    """``session`` (the bookkeeping every task rule reads) plus the named rules."""
    out: list[Stage] = [make_stage("session", {})]  # type: ignore[list-item]
    for spec in specs:
        rule, opts = (spec, {}) if isinstance(spec, str) else spec
        st = make_stage(rule, opts)
        assert st is not None
        out.append(st)
    return out


def engine(
    *specs: str | tuple[str, dict[str, str]], scripts: dict[str, str] | None = None
) -> Engine:
    return Engine([], stages(*specs), det_env(scripts), strict=True)


def full_engine(rules: Sequence[str] = (), scripts: dict[str, str] | None = None) -> Engine:
    up, down = build("cbc-to-claude", parse_rule_settings(rules))
    return Engine(up, down, det_env(scripts), strict=True)


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def lines(*objs: Any) -> bytes:
    return b"".join(line(o) for o in objs)


def out(commands: Iterable[object]) -> list[dict[str, Any]]:
    data = b"".join(c.data for c in commands if isinstance(c, Write) and c.side == "client")
    return [json.loads(x) for x in data.splitlines() if x.strip()]


def logs(commands: Iterable[object]) -> list[Log]:
    return [c for c in commands if isinstance(c, Log)]


def tag(f: dict[str, Any]) -> str:
    """A short label: ``task_started:local_workflow``, ``task_updated:completed``..."""
    st = f.get("subtype")
    if f.get("type") != "system" or st is None:
        return str(f.get("type"))
    if st == "task_started":
        return f"{st}:{f.get('task_type')}"
    if st == "task_updated":
        return f"{st}:{(f.get('patch') or {}).get('status')}"
    if st == "task_notification":
        return f"{st}:{f.get('status')}"
    if st == "background_tasks_changed":
        return f"{st}:{len(f.get('tasks') or [])}"
    return str(st)


def tags(frames: Iterable[dict[str, Any]], task_id: str | None = None) -> list[str]:
    """Labels of all frames, or of one task's lifecycle frames and the snapshots."""
    res = []
    for f in frames:
        if task_id is not None:
            st = str(f.get("subtype", "")) if f.get("type") == "system" else ""
            if not (
                st == "background_tasks_changed"
                or (st.startswith("task_") and f.get("task_id") == task_id)
            ):
                continue
        res.append(tag(f))
    return res


# -- cbc-shaped frames ---------------------------------------------------------------------


def init(sid: str = SID, cwd: str = CWD) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "init",
        "uuid": sid,
        "session_id": sid,
        "cwd": cwd,
        "tools": ["Agent", "Bash", "Workflow"],
        "model": "default-model",
    }


def result(is_error: bool = False, **over: Any) -> dict[str, Any]:
    """A cbc turn's ``result`` (``over`` replaces fields)."""
    r = {
        "type": "result",
        "subtype": "success",
        "is_error": is_error,
        "result": "done.",
        "uuid": f"r-{is_error}",
        "session_id": SID,
        "duration_ms": 1,
        "duration_api_ms": 1,
        "num_turns": 1,
        "total_cost_usd": 0,
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "permission_denials": [],
        "modelUsage": {},
    }
    r.update(over)
    return r


def tool_use(use_id: str, name: str, inp: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": "a-" + use_id,
        "session_id": SID,
        "message": {
            "id": "m",
            "role": "assistant",
            "type": "message",
            "content": [{"type": "tool_use", "id": use_id, "name": name, "input": inp}],
        },
        "parent_tool_use_id": None,
    }


def tool_result(use_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": "u-" + use_id,
        "session_id": SID,
        "message": {
            "role": "user",
            "content": [{**result_block(use_id, text), "is_error": False}],
        },
        "parent_tool_use_id": None,
    }


def started(
    tid: str, task_type: str, description: str, use_id: str | None = None, **extra: Any
) -> dict[str, Any]:
    f: dict[str, Any] = {"type": "system", "subtype": "task_started", "task_id": tid}
    if use_id is not None:
        f["tool_use_id"] = use_id
    f.update(description=description, task_type=task_type, **extra)
    f.update(uuid=f"s-{tid}", session_id=SID)
    return f


def updated(tid: str, status: str, end_time: int | None = None) -> dict[str, Any]:
    patch: dict[str, Any] = {"status": status}
    if end_time is not None:
        patch["end_time"] = end_time
    return {
        "type": "system",
        "subtype": "task_updated",
        "task_id": tid,
        "patch": patch,
        "status": status,
        "uuid": f"up-{tid}-{status}",
        "session_id": SID,
    }


def progress(
    tid: str,
    entries: list[dict[str, Any]] | None = None,
    use_id: str | None = None,
    description: str = "d",
    **extra: Any,
) -> dict[str, Any]:
    f: dict[str, Any] = {"type": "system", "subtype": "task_progress", "task_id": tid}
    if use_id is not None:
        f["tool_use_id"] = use_id
    f["description"] = description
    f["usage"] = {"total_tokens": 0, "tool_uses": 0, "duration_ms": 1}
    if entries is not None:
        f["workflow_progress"] = entries
    f.update(extra)
    f.update(uuid=f"p-{tid}-{len(entries or [])}", session_id=SID)
    return f


def notification(
    tid: str, status: str, summary: str | None = None, use_id: str | None = None, **extra: Any
) -> dict[str, Any]:
    f: dict[str, Any] = {"type": "system", "subtype": "task_notification", "task_id": tid}
    if use_id is not None:
        f["tool_use_id"] = use_id
    f["status"] = status
    if summary is not None:
        f["summary"] = summary
    f.update(extra)
    f.update(uuid=f"n-{tid}", session_id=SID)
    return f


def phase(i: int, title: str) -> dict[str, Any]:
    return {"type": "workflow_phase", "index": i, "title": title}


def agent(
    i: int,
    label: str,
    state: str = "start",
    phase_i: int = 1,
    phase_title: str = "Scan",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "type": "workflow_agent",
        "index": i,
        "agentId": f"v2:{label}",
        "state": state,
        "startedAt": EPOCH_MS + i,
        "label": label,
        "phaseTitle": phase_title,
        "phaseIndex": phase_i,
        **extra,
    }


# -- transcripts -----------------------------------------------------------------------------


def replay(
    eng: Engine, path: Path, extra: Sequence[tuple[float, bytes]] = (), until: float | None = None
) -> list[tuple[float, dict[str, Any]]]:
    """Feed a reference transcript's backend stdout (and ``extra`` lines at given times) to
    ``eng`` in time order, firing every timer at its exact deadline; the transcript's
    ``exit`` record becomes ``backend_exited``. Returns (time, frame) the client got."""
    cap = parse(path.read_bytes().splitlines())
    events: list[tuple[float, int, str, bytes]] = []
    for n, r in enumerate(cap.records):
        if r.kind == "stdout":
            events.append((r.t, n, "line", r.data + b"\n"))
        elif r.kind == "exit":
            events.append((r.t, n, "exit", b""))
    events += [(t, -1, "line", data) for t, data in extra]
    events.sort(key=lambda e: (e[0], e[1] if e[1] >= 0 else 1 << 30))
    got: list[tuple[float, dict[str, Any]]] = []

    def take(cmds: Iterable[object], t: float) -> None:
        got.extend((t, f) for f in out(cmds))

    for t, _, kind, data in events:
        if until is not None and t > until:
            break
        deadline = eng.next_deadline()
        while deadline is not None and deadline <= t:
            take(eng.advance(deadline), deadline)
            deadline = eng.next_deadline()
        if kind == "line":
            take(eng.feed("backend", data, t), t)
        else:
            take(eng.backend_exited(0, t), t)
    return got


def capture_frames(name: str) -> list[dict[str, Any]]:
    """The backend stdout frames of ``data/<name>.transcript.jsonl`` (a reference capture)."""
    cap = parse((DATA / f"{name}.transcript.jsonl").read_bytes().splitlines())
    return [json.loads(r.data) for r in cap.lines("stdout")]


def pick(frames: list[dict[str, Any]], subtype: str, n: int = 0, **match: Any) -> dict[str, Any]:
    """The n-th frame of ``subtype`` (``type`` for non-system frames) matching ``match``."""
    found = [
        f
        for f in frames
        if (f.get("subtype") if f.get("type") == "system" else f.get("type")) == subtype
        and all(f.get(k) == v for k, v in match.items())
    ]
    return found[n]


def cbc_message(mid: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``message`` of cbc 2.163.0's ``message_start`` (a phantom empty text block
    announced; ``captures/twins/*partial*.cbc-raw.jsonl``)."""
    return {
        "model": "default-model",
        "id": mid,
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": ""}],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage if usage is not None else {"input_tokens": 0, "output_tokens": 0},
    }


def stream_event(event: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    """A ``stream_event`` frame of ``event`` as cbc writes it (``parent``: a sub-agent's
    thread), its uuid made from what it holds."""
    return {
        "type": "stream_event",
        "event": event,
        "session_id": SID,
        "parent_tool_use_id": parent,
        "uuid": f"e-{parent}-{json.dumps(event, sort_keys=True)}",
    }
