"""Support for the session-shape and wind-down tests: a whole-session replayer (the client's
lines, the backend's lines, the client's EOF and the backend's exit, in time order, with
every timer fired at its exact deadline) and the contract checker over what the client got.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from analysis.contract import Violation, check_records
from compat.capture import Record, parse
from compat.engine import CloseBackendInput, Command, Engine, TerminateBackend, Write

from .tasks_support import det_env


@attrs.define
class Run:
    #: (time, frame) the client got
    out: list[tuple[float, dict[str, Any]]] = attrs.Factory(list)
    #: (time, command) for everything but writes to the client
    commands: list[tuple[float, Command]] = attrs.Factory(list)
    raw: list[tuple[float, bytes]] = attrs.Factory(list)
    #: when the engine asked for the backend to be terminated: a replayed backend writes
    #: nothing after that (cbc exits at once on SIGTERM)
    terminated_at: float | None = None

    def frames(self) -> list[dict[str, Any]]:
        return [f for _, f in self.out]

    def to_backend(self) -> list[dict[str, Any]]:
        """The frames the engine wrote to the backend (its stdin), in order."""
        return [
            json.loads(x)
            for _, c in self.commands
            if isinstance(c, Write) and c.side == "backend"
            for x in c.data.splitlines()
            if x.strip()
        ]

    def kinds(self) -> list[tuple[float, str]]:
        return [
            (t, type(c).__name__)
            for t, c in self.commands
            if not (isinstance(c, Write) and c.side == "backend") and type(c).__name__ != "Log"
        ]

    def violations(self) -> list[Violation]:
        recs = [Record(t, "stdout", line, lineno=i + 1) for i, (t, line) in enumerate(self.raw)]
        return check_records(recs)


def take(run: Run, cmds: Iterable[Command], t: float, eng: Engine | None = None) -> None:
    """Record what the engine asked for; a ``CloseBackendInput`` is carried out at once (as
    the driver does with nothing queued) and reported back (``Engine.input_closed``)."""
    closed = False
    for c in cmds:
        closed = closed or isinstance(c, CloseBackendInput)
        if isinstance(c, Write) and c.side == "client":
            for line in c.data.splitlines():
                if line.strip():
                    run.raw.append((t, line))
                    run.out.append((t, json.loads(line)))
        else:
            run.commands.append((t, c))
            if isinstance(c, TerminateBackend) and run.terminated_at is None:
                run.terminated_at = t
    if closed and eng is not None:
        take(run, eng.input_closed(t), t, eng)


def drive(
    eng: Engine,
    events: Sequence[tuple[float, str, bytes]],
    until: float | None = None,
    run: Run | None = None,
) -> Run:
    """``events``: (time, "client"|"backend"|"eof"|"exit", data). Timers fire at their exact
    deadlines in between; after the last event they keep firing up to ``until``."""
    run = run or Run()
    for t, kind, data in sorted(events, key=lambda e: e[0]):
        advance(eng, run, t)
        if kind == "backend" and run.terminated_at is not None and t > run.terminated_at:
            continue  # the backend was terminated before it wrote this
        if kind in ("client", "backend"):
            take(run, eng.feed(kind, data, t), t, eng)  # type: ignore[arg-type]
        elif kind == "eof":
            take(run, eng.eof("client", t), t, eng)
        else:
            take(run, eng.backend_exited(int(data or b"0"), t), t, eng)
    if until is not None:
        advance(eng, run, until)
    return run


def advance(eng: Engine, run: Run, t: float) -> None:
    deadline = eng.next_deadline()
    while deadline is not None and deadline <= t:
        take(run, eng.advance(deadline), deadline, eng)
        deadline = eng.next_deadline()


def transcript_events(path: Path) -> list[tuple[float, str, bytes]]:
    """A reference transcript as events: its stdin lines (the client), stdout lines (the
    backend), the harness closing stdin (EOF) and the exit."""
    raw = path.read_bytes().splitlines()
    events: list[tuple[float, str, bytes]] = []
    if raw and b'"stream"' in raw[-1]:  # the older nomodel_* layout: {t, stream, line}
        for x in raw:
            rec = json.loads(x)
            stream, text, t = rec.get("stream"), rec.get("line", ""), rec.get("t", 0.0)
            if stream == "stdin":
                events.append((t, "client", text.encode() + b"\n"))
            elif stream == "stdout":
                events.append((t, "backend", text.encode() + b"\n"))
            elif stream == "event" and "stdin closed" in text:
                events.append((t, "eof", b""))
            elif stream == "event" and text.startswith("exit code"):
                events.append((t, "exit", text.split()[-1].encode()))
        return events
    cap = parse(raw)
    for r in cap.records:
        if r.kind == "stdin":
            events.append((r.t, "client", r.data + b"\n"))
        elif r.kind == "stdout":
            events.append((r.t, "backend", r.data + b"\n"))
        elif r.kind in ("note", "event") and "stdin closed" in r.text:
            events.append((r.t, "eof", b""))
        elif r.kind == "exit":
            events.append((r.t, "exit", b"0"))
    return events


def full(rules: Sequence[str] = ()) -> Engine:
    from compat.profiles import build, parse_rule_settings

    up, down = build("cbc-to-claude", parse_rule_settings(rules))
    return Engine(up, down, det_env(), strict=True)


def line_turn(frames: list[dict[str, Any]], line: str) -> list[dict[str, Any]]:
    """The client frames of a user line's turn: from its ``command_lifecycle`` ``started``
    to the frame after the turn's result (its ``completed``)."""
    start = next(
        i
        for i, f in enumerate(frames)
        if f.get("type") == "command_lifecycle"
        and f["state"] == "started"
        and f["command_uuid"] == line
    )
    end = next(i for i in range(start, len(frames)) if frames[i].get("type") == "result")
    return frames[start : end + 2]


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"
