"""The engine under mutated streams (issue 8, "No input crashes it"): property-based.

Each example takes a real session (a reference capture of cbc 2.163.0 or a transcript in
``tests/compat/data``: the client's lines, cbc's lines, the client's EOF, cbc's exit, in
time order), applies a few seeded mutations (drop / duplicate / swap lines, a value turned
into another JSON type, 300 levels of nesting, lone surrogates, integers past 64 bits,
duplicate keys, truncation, random bytes, a line that is not JSON at all) and drives it
through the ``cbc-to-claude`` engine in both directions with ``strict=True`` (a rule that
raises is an error here, not a counted fail-open), every timer fired at its deadline.
It asserts:

- no exception escapes, and no rule failed open (``errors`` is 0 everywhere);
- every line written to a side is a line that side's peer sent, byte for byte, or valid
  JSON (``JSON.parse``'s reading, ``compat.frames.loads``) in valid UTF-8;
- the accounting holds exactly: frames in + synthesized = frames out + dropped + still
  held (held - released), over both directions, and the lines written are the frames out.

The default run (``CCBRIDGE_FUZZ_EXAMPLES``, default 5000; derandomized, so CI sees the
same streams) takes well under 30 s; ``CCBRIDGE_FUZZ_EXAMPLES=20000`` for a long run.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compat.engine import Engine, Write
from compat.frames import dumps, loads
from compat.profiles import build, parse_rule_settings

from ..conftest import REFERENCE
from .helpers import det_env
from .session_support import transcript_events

Event = tuple[float, str, bytes]
DATA = Path(__file__).parent / "data"
EXAMPLES = int(os.environ.get("CCBRIDGE_FUZZ_EXAMPLES", "5000"))
#: how long after its last event a stream keeps running (every grace window and ceiling)
UNTIL = 2000.0


def _sources() -> list[tuple[str, list[Event]]]:
    paths = sorted(DATA.glob("*.transcript.jsonl"))
    if REFERENCE is not None and (REFERENCE / "cbc-2.163.0").is_dir():
        paths += sorted((REFERENCE / "cbc-2.163.0").glob("*.transcript.jsonl"))
    out: list[tuple[str, list[Event]]] = []
    for p in paths:
        try:
            events = transcript_events(p)
        except (ValueError, KeyError):
            continue
        if any(k == "backend" for _, k, _ in events):
            out.append((p.name, events))
    return out


SOURCES = _sources()

# -- mutations ----------------------------------------------------------------------------


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``obj`` (depth-first, bounded)."""
    out = [prefix]
    if len(prefix) < 12:
        if isinstance(obj, dict):
            for k, v in obj.items():
                out += _paths(v, (*prefix, k))
        elif isinstance(obj, list):
            for i, v in enumerate(obj[:20]):
                out += _paths(v, (*prefix, i))
    return out


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return obj


def _other_value(rng: random.Random, old: Any) -> Any:
    deep: Any = "x"
    for i in range(300):
        deep = [deep] if i % 2 else {"k": deep}
    choices: list[Any] = [
        None,
        True,
        False,
        0,
        -1,
        2**70,
        -(2**65),
        1.5,
        1e300,
        "",
        "\ud83d",
        "x\udc00y",
        [],
        [None],
        {},
        {"type": None},
        {"subtype": 7},
        "running",
        "completed",
        "killed",
        "local_agent",
        "local_workflow",
        "success",
        "task-1",
        deep,
        [[[[{}]]]],
        old,
        {"a": old},
        [old],
        str(old),
    ]
    return rng.choice(choices)


def _mutate_line(rng: random.Random, line: bytes) -> bytes:
    nl = line.endswith(b"\n")
    body = line[:-1] if nl else line
    try:
        obj = loads(body)
    except ValueError:
        obj = None
    kind = rng.randrange(9)
    if kind <= 2 and isinstance(obj, dict | list):  # a value becomes another JSON value
        paths = _paths(obj)
        for _ in range(1 + kind):
            path = rng.choice(paths)
            try:
                old: Any = obj
                for k in path:
                    old = old[k]
                obj = _set(obj, path, _other_value(rng, old))
            except (KeyError, IndexError, TypeError):
                pass
            paths = _paths(obj)
        body = dumps(obj)
    elif kind == 3 and body.endswith(b"}"):  # a duplicate key: the last one wins
        key = rng.choice([b"type", b"subtype", b"task_id", b"status", b"session_id", b"uuid"])
        val = dumps(rng.choice(["result", "system", "task_started", "assistant", 1, None]))
        body = body[:-1] + b',"' + key + b'":' + val + b"}"
    elif kind == 4:  # a lone surrogate escape inside some string
        at = body.find(b'":"', rng.randrange(max(1, len(body))))
        if at > 0:
            body = body[: at + 3] + b"\\ud83d" + body[at + 3 :]
    elif kind == 5:  # an integer past 64 bits
        at = body.find(b'":', rng.randrange(max(1, len(body))))
        if at > 0:
            body = body[: at + 2] + b"123456789012345678901234567890," + body[at + 2 :]
            body = body.replace(b",,", b",").replace(b",}", b"}").replace(b",]", b"]")
    elif kind == 6:  # truncation
        body = body[: rng.randrange(len(body) + 1)]
    elif kind == 7:  # random bytes
        at = rng.randrange(len(body) + 1)
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6))).replace(b"\n", b"")
        body = body[:at] + junk + body[at:]
    else:  # not JSON at all, or not an object
        body = rng.choice(
            [
                b"",
                b"null",
                b"[]",
                b'"x"',
                b"42",
                b"{",
                b"{}",
                b'{"type":1}',
                b'{"type":"system"}',
                b'{"type":"result"}',
                b"\xff\xfe",
            ]
        )
    return body + (b"\n" if nl else b"")


def mutate(events: list[Event], ops: list[tuple[int, int, int]]) -> list[Event]:
    out = list(events)
    for op, a, b in ops:
        rng = random.Random(a * 1_000_003 + b)
        lines = [i for i, e in enumerate(out) if e[1] in ("client", "backend")]
        if not lines:
            break
        i = lines[a % len(lines)]
        t, side, data = out[i]
        if op == 0:
            del out[i]
        elif op == 1:
            out.insert(i, (t, side, data))
        elif op == 2:
            j = lines[b % len(lines)]
            (ti, si, di), (tj, sj, dj) = out[i], out[j]
            if si == sj:
                out[i], out[j] = (ti, si, dj), (tj, sj, di)
        else:
            out[i] = (t, side, _mutate_line(rng, data))
    return out


# -- the driver ---------------------------------------------------------------------------


def engine() -> Engine:
    up, down = build("cbc-to-claude", parse_rule_settings(()))
    return Engine(up, down, det_env(), strict=True)


def run(eng: Engine, events: list[Event]) -> dict[str, bytes]:
    """Drive ``events`` (timers fired at their deadlines); the bytes written to each side."""
    out = {"client": bytearray(), "backend": bytearray()}

    def take(cmds: list[Any]) -> None:
        for c in cmds:
            if isinstance(c, Write):
                out[c.side] += c.data

    def advance(t: float) -> None:
        deadline = eng.next_deadline()
        while deadline is not None and deadline <= t:
            take(eng.advance(deadline))
            deadline = eng.next_deadline()

    exited = False
    for t, kind, data in sorted(events, key=lambda e: e[0]):
        advance(t)
        if kind in ("client", "backend"):
            if kind == "backend" and exited:
                continue
            take(eng.feed(kind, data, t))  # type: ignore[arg-type]
        elif kind == "eof":
            take(eng.eof("client", t))
        elif not exited:
            exited = True
            advance(t)
            take(eng.backend_exited(int(data or b"0"), t))
    last = max((e[0] for e in events), default=0.0)
    advance(last + UNTIL)
    if not exited:
        take(eng.backend_exited(0, last + UNTIL))
    return {k: bytes(v) for k, v in out.items()}


def check(eng: Engine, events: list[Event], written: dict[str, bytes]) -> None:
    stats = eng.statistics()
    rules: dict[str, dict[str, int]] = stats["rules"]
    failed = {r: c["errors"] for r, c in rules.items() if c.get("errors")}
    assert not failed, f"rules failed open: {failed}"
    sent = {
        "backend": b"".join(d for _, k, d in events if k == "client"),
        "client": b"".join(d for _, k, d in events if k == "backend"),
    }
    lines_out = 0
    for side, data in written.items():
        verbatim = set(sent[side].split(b"\n"))
        pieces = data.split(b"\n")
        lines_out += len(pieces) - 1 + (pieces[-1] != b"")
        for piece in pieces:
            if piece in verbatim:
                continue
            piece.decode("utf-8")
            loads(piece)  # valid JSON (raises otherwise)
    frames = stats["frames"]
    f_in = frames["up"].get("in", 0) + frames["down"].get("in", 0)
    f_out = frames["up"].get("out", 0) + frames["down"].get("out", 0)
    total = {
        what: sum(c.get(what, 0) for c in rules.values())
        for what in ("synthesized", "dropped", "held", "released")
    }
    partial = sum(c for k, c in rules.get("framing", {}).items() if k.startswith("partial-"))
    assert lines_out == f_out + partial, (lines_out, f_out, partial)
    assert f_in + total["synthesized"] == (
        f_out + total["dropped"] + total["held"] - total["released"]
    ), (f_in, f_out, total, rules)


# -- the properties -----------------------------------------------------------------------

OPS = st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 2**20), st.integers(0, 2**20)),
    min_size=1,
    max_size=6,
)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _fuzz(source: Callable[[], list[Event]], ops: list[tuple[int, int, int]]) -> None:
    events = mutate(source(), ops)
    eng = engine()
    written = run(eng, events)
    check(eng, events, written)


@pytest.mark.skipif(not SOURCES, reason="no captures to mutate")
@FUZZ
@given(st.integers(0, max(0, len(SOURCES) - 1)), OPS)
def test_mutated_streams_never_crash_and_every_frame_is_accounted_for(
    which: int, ops: list[tuple[int, int, int]]
) -> None:
    _fuzz(lambda: SOURCES[which][1], ops)


def test_the_unmutated_sources_hold_the_same_properties() -> None:
    assert len(SOURCES) >= 10, [n for n, _ in SOURCES]
    for _name, events in SOURCES:
        eng = engine()
        check(eng, events, run(eng, events))


def test_the_mutator_makes_what_it_says() -> None:
    """(The fuzzer would pass vacuously if the mutations did nothing.)"""
    _, events = SOURCES[0]
    rng = random.Random(1)
    made = {
        _mutate_line(random.Random(i), events[-3][2] if events[-3][1] != "eof" else b"{}")
        for i in range(200)
    }
    assert any(b"\\ud83d" in m for m in made)
    assert any(b"123456789012345678901234567890" in m for m in made)
    assert any(m.count(b"[") + m.count(b"{") >= 300 for m in made)
    invalid = 0
    for m in made:
        try:
            json.loads(m)
        except ValueError:
            invalid += 1
    assert invalid > 10
    assert len(mutate(events, [(0, rng.randrange(99), 0)])) == len(events) - 1
    assert len(mutate(events, [(1, rng.randrange(99), 0)])) == len(events) + 1
