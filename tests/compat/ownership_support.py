"""What each stage really reads and writes of the shared state (``compat.facts``), measured
by replaying captures through an engine whose state objects record every field access
(the evidence of tests/compat/test_ownership.py)."""

from __future__ import annotations

import collections
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from compat import reverse_state, session
from compat.capture import parse
from compat.engine import Engine
from compat.facts import PREFIXES, is_fact
from compat.profiles import build
from compat.stage import Env, Stage

HOOKS = ("on_frame", "on_timer", "on_backend_input_closed", "on_backend_exit", "on_client_eof")


class Measured:
    """rule -> the facts it read, and those it wrote (changed)."""

    def __init__(self) -> None:
        self.rule: str | None = None
        self.reads: dict[str, set[str]] = collections.defaultdict(set)
        self.writes: dict[str, set[str]] = collections.defaultdict(set)


def _tracked(cls: type, prefix: str, seen: Measured) -> type:
    names = {f.name for f in attrs.fields(cls) if is_fact(f)} - {"control"}

    def __getattribute__(self: Any, name: str) -> Any:  # noqa: N807
        if name in names and seen.rule is not None:
            seen.reads[seen.rule].add(prefix + name.lstrip("_"))
        return object.__getattribute__(self, name)

    return type(
        f"Tracked{cls.__name__}", (cls,), {"__slots__": (), "__getattribute__": __getattribute__}
    )


def _snapshot(state: session.SessionState) -> dict[str, str]:
    """Every fact's value, comparable (a task's fields per task id)."""
    out: dict[str, str] = {}
    objects: list[tuple[type, Any, str]] = [
        (session.SessionState, state, ""),
        (session.ControlState, object.__getattribute__(state, "control"), "control."),
    ]
    rev = reverse_state._STATES.get(id(state))
    if rev is not None:
        objects.append((reverse_state.ReverseState, rev, "rev."))
    for cls, obj, prefix in objects:
        for f in attrs.fields(cls):
            if f.name != "control" and is_fact(f):
                v = object.__getattribute__(obj, f.name)
                out[prefix + f.name.lstrip("_")] = repr(sorted(v) if f.name == "tasks" else v)
    for tid, t in object.__getattribute__(state, "tasks").items():
        for f in attrs.fields(session.TaskInfo):
            if is_fact(f):
                value = object.__getattribute__(t, f.name)
                out[f"task.{f.name.lstrip('_')}@{tid}"] = repr(value)
    return out


@contextlib.contextmanager
def measuring(stages: list[Stage], state: Any, seen: Measured) -> Iterator[None]:
    """Every hook of the stages' classes records, per rule, what it read and changed."""
    saved: list[tuple[type, str, Any]] = []
    for st in stages:
        for klass in type(st).__mro__:
            for h in HOOKS:
                fn = klass.__dict__.get(h)
                if fn is None or klass is Stage or any(c is klass and n == h for c, n, _ in saved):
                    continue
                saved.append((klass, h, fn))

                def wrapped(self: Any, *a: Any, _fn: Any = fn, **k: Any) -> Any:
                    outer = seen.rule
                    seen.rule = self.rule
                    before = _snapshot(state)
                    try:
                        return _fn(self, *a, **k)
                    finally:
                        after = _snapshot(state)
                        for key in before.keys() & after.keys():
                            if before[key] != after[key]:
                                seen.writes[self.rule].add(key.partition("@")[0])
                        seen.rule = outer

                setattr(klass, h, wrapped)
    try:
        yield
    finally:
        for klass, h, fn in reversed(saved):
            setattr(klass, h, fn)


def events(path: Path) -> list[tuple[float, int, str, bytes]]:
    """(time, order, side, line) of a capture (``compat.capture``) or a transcript."""
    out: list[tuple[float, int, str, bytes]] = []
    text = path.read_bytes()
    if path.name.endswith(".transcript.jsonl"):
        for n, raw in enumerate(text.splitlines()):
            r = json.loads(raw)
            kind = r.get("stream", r.get("kind"))
            line = r.get("line", r.get("text", ""))
            if kind in ("stdout", "stdin"):
                side = "backend" if kind == "stdout" else "client"
                out.append((r["t"], n, side, line.encode()))
            elif kind == "event" and str(line).startswith("exit code"):
                out.append((r["t"], n, "exit", b""))
        return out
    for n, rec in enumerate(parse(text.splitlines()).records):
        if rec.kind in ("stdout", "stdin", "client_in"):
            out.append((rec.t, n, "backend" if rec.kind == "stdout" else "client", rec.data))
        elif rec.kind == "exit":
            out.append((rec.t, n, "exit", b""))
    return out


def measure(
    runs: list[tuple[str, Path]], monkeypatch: pytest.MonkeyPatch
) -> tuple[Measured, dict[str, list[Stage]]]:
    """Replay each (profile, capture) through a fresh engine; what every rule did."""
    seen = Measured()
    tracked = {cls: _tracked(cls, prefix, seen) for cls, prefix in PREFIXES}
    monkeypatch.setattr(session, "TaskInfo", tracked[session.TaskInfo])
    monkeypatch.setattr(reverse_state, "ReverseState", tracked[reverse_state.ReverseState])
    profiles: dict[str, list[Stage]] = {}
    for profile, path in runs:
        up, down = build(profile, {})
        profiles.setdefault(profile, [*up, *down])
        eng = Engine(up, down, Env(new_uuid=lambda: "u"), strict=False)
        state = eng.state
        state.__class__ = tracked[session.SessionState]
        object.__getattribute__(state, "control").__class__ = tracked[session.ControlState]
        with measuring([*up, *down], state, seen):
            t = 0.0
            for t, _, side, data in sorted(events(path)):
                while (d := eng.next_deadline()) is not None and d <= t:
                    eng.advance(d)
                if side == "exit":
                    eng.backend_exited(0, t)
                else:
                    eng.feed(side, data + b"\n", t)  # type: ignore[arg-type]
            eng.eof("client", t)
            while (d := eng.next_deadline()) is not None:
                eng.advance(d)
    return seen, profiles
