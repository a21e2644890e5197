"""``--target 2.1.332``: the first answer of a client line's turn names the line.

Claude Code 2.1.332 writes ``user_message_uuid`` and ``user_message_uuids`` (``[line]``) on
the first main-thread ``assistant`` frame of a turn a client line started: its first model
message's first block, not the messages after a tool result, not a subagent's, not in a
task notification's turn (``captures/twins-2.1.332/*.claude.jsonl``; a message of two
blocks: ``data/claude-2.1.332_{parallel-tools,thinking}.jsonl``, ``ccbridge scenario run``
on the 2.1.332 binary). 2.1.220 writes neither (``compat.target.V220``).

The cbc side is a real cbc 2.163.0 session, replayed from the bridged twins of both
``captures/twins/`` and ``captures/twins-2.1.332/`` (what the client sent, what cbc wrote).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest

from compat import target as tgt
from compat.capture import parse
from compat.engine import Engine, Write
from compat.profiles import build, parse_rule_settings
from compat.stage import Env

REPO = Path(__file__).resolve().parents[2]
TWINS = REPO / "captures" / "twins"
TWINS_332 = REPO / "captures" / "twins-2.1.332"
DATA = Path(__file__).resolve().parent / "data"
CORE = (
    "simple-success",
    "bg-bash",
    "bg-agent",
    "interrupt-midturn-workflow",
    "stop-task-control",
    "workflow-inline",
)
KEYS = ("user_message_uuid", "user_message_uuids")

#: a change to one line of the session before the bridge sees it: (side, frame) -> lines
Edit = Callable[[str, dict[str, Any]], list[dict[str, Any]]]


def replay(cbc_side: Path, version: str, edit: Edit | None = None) -> list[bytes]:
    """The client's lines of a bridged twin's cbc session replayed under ``version``."""
    up, down = build("cbc-to-claude", parse_rule_settings([]))
    counter = itertools.count(1)
    env = Env(
        new_uuid=lambda: f"00000000-0000-4000-8000-{next(counter):012d}",
        epoch_ms=1_796_000_000_000,
        target_version=version,
    )
    eng = Engine(up, down, env, strict=True)
    events: list[tuple[float, int, Literal["client", "backend", "exit"], bytes]] = []
    for n, r in enumerate(parse(cbc_side.read_bytes().splitlines()).records):
        if r.kind in ("stdout", "client_in"):
            side: Literal["client", "backend"] = "backend" if r.kind == "stdout" else "client"
            datas = [r.data]
            if edit is not None:
                datas = [json.dumps(x).encode() for x in edit(side, json.loads(r.data))]
            events += [(r.t, n, side, d) for d in datas]
        elif r.kind == "exit":
            events.append((r.t, n, "exit", b""))
    got: list[bytes] = []

    def take(cmds: list[Any]) -> None:
        data = b"".join(c.data for c in cmds if isinstance(c, Write) and c.side == "client")
        got.extend(x for x in data.splitlines() if x.strip())

    for t, _, kind, data in sorted(events, key=lambda e: (e[0], e[1])):
        deadline = eng.next_deadline()
        while deadline is not None and deadline <= t:
            take(list(eng.advance(deadline)))
            deadline = eng.next_deadline()
        if kind == "exit":
            take(list(eng.backend_exited(0, t)))
        else:
            take(list(eng.feed(kind, data + b"\n", t)))
    return got


def frames(lines: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(x) for x in lines]


def claude(path: Path) -> list[dict[str, Any]]:
    return [json.loads(r.data) for r in parse(path.read_bytes().splitlines()).lines("stdout")]


def line_turns(fs: list[dict[str, Any]]) -> list[tuple[str, list[bool]]]:
    """Each turn a client line started: the line, and for each main-thread assistant frame
    of the turn whether it names a line."""
    out: list[tuple[str, list[bool]]] = []
    current: list[bool] | None = None
    for f in fs:
        if f.get("type") == "command_lifecycle" and f.get("state") == "started":
            current = []
            out.append((f["command_uuid"], current))
        elif f.get("type") == "result":
            current = None
        elif f.get("type") == "assistant" and f.get("parent_tool_use_id") is None:
            if current is not None:
                current.append("user_message_uuid" in f)
    return out


def check_names(fs: list[dict[str, Any]]) -> None:
    """Every frame naming a line names the line of its turn, in Claude's shape and order;
    nothing outside a line's turn names one."""
    current: str | None = None
    for f in fs:
        if f.get("type") == "command_lifecycle" and f.get("state") == "started":
            current = f["command_uuid"]
        elif f.get("type") == "result":
            current = None
        elif f.get("type") == "assistant" and "user_message_uuid" in f:
            assert current is not None, f
            assert f["user_message_uuid"] == current
            assert f["user_message_uuids"] == [current]
            assert list(f)[-2:] == list(KEYS)  # after everything else, as Claude's
        elif kind_of(f) not in ("result", "system/init"):  # theirs: the turn's lines
            assert not set(KEYS) & set(f), f


def kind_of(f: dict[str, Any]) -> str:
    t = f.get("type")
    return f"{t}/{f.get('subtype')}" if t == "system" else str(t)


def shape(turns: list[tuple[str, list[bool]]]) -> list[list[bool]]:
    return [marks for _, marks in turns]


# -- the six core twins ----------------------------------------------------------------------


@pytest.mark.parametrize("twins", [TWINS, TWINS_332], ids=["twins", "twins-2.1.332"])
@pytest.mark.parametrize("name", CORE)
def test_the_first_answer_of_a_lines_turn_names_the_line_as_332_does(
    name: str, twins: Path
) -> None:
    got = frames(replay(twins / f"{name}.cbc-bridged.jsonl", "2.1.332"))
    theirs = claude(TWINS_332 / f"{name}.claude.jsonl")
    check_names(got)
    check_names(theirs)
    mine = line_turns(got)
    assert mine, "the session has a client line's turn"
    assert all(marks and marks[0] and not any(marks[1:]) for marks in shape(mine))
    assert shape(mine) == shape(line_turns(theirs))


@pytest.mark.parametrize("name", CORE)
def test_220_names_no_line_on_an_answer(name: str) -> None:
    for f in frames(replay(TWINS_332 / f"{name}.cbc-bridged.jsonl", "2.1.220")):
        if f.get("type") == "assistant":
            assert not set(KEYS) & set(f), f


@pytest.mark.parametrize("name", CORE)
def test_332_adds_only_the_two_keys_on_the_answer(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``line_answer_keys`` 2.1.332's output is byte for byte the same but for
    the two keys on the answers (the rule touches nothing else)."""
    path = TWINS_332 / f"{name}.cbc-bridged.jsonl"
    with_keys = replay(path, "2.1.332")
    monkeypatch.setitem(tgt.TARGETS, "2.1.332", attrs.evolve(tgt.V332, line_answer_keys=()))
    without = replay(path, "2.1.332")
    stripped = []
    for raw in with_keys:
        f = json.loads(raw)
        if f.get("type") == "assistant" and "user_message_uuid" in f:
            raw = json.dumps(
                {k: v for k, v in f.items() if k not in KEYS}, separators=(",", ":")
            ).encode()
        stripped.append(raw)
    assert len(stripped) == len(without)
    assert [json.loads(x) for x in stripped] == [json.loads(x) for x in without]
    assert with_keys != without


# -- a message of several blocks; a subagent's frame first; lines without uuid ---------------


@pytest.mark.parametrize("name", ["parallel-tools", "thinking"])
def test_only_the_first_block_of_a_split_message_names_the_line(name: str) -> None:
    got = frames(replay(TWINS / f"{name}.cbc-bridged.jsonl", "2.1.332"))
    theirs = claude(DATA / f"claude-2.1.332_{name}.jsonl")
    check_names(got)
    mine = shape(line_turns(got))
    assert mine == shape(line_turns(theirs))
    assert len(mine[0]) >= 2  # frame-fields split the first message; block 1 only names


def test_a_subagents_frame_first_leaves_the_name_to_the_main_threads() -> None:
    def subagent_first(side: str, f: dict[str, Any]) -> list[dict[str, Any]]:
        if side == "backend" and f.get("type") == "assistant":
            return [{**f, "uuid": "sub-" + str(f.get("uuid")), "parent_tool_use_id": "toolu_x"}, f]
        return [f]

    got = frames(replay(TWINS_332 / "simple-success.cbc-bridged.jsonl", "2.1.332", subagent_first))
    answers = [f for f in got if f.get("type") == "assistant"]
    assert [f["parent_tool_use_id"] for f in answers] == ["toolu_x", None]
    assert not set(KEYS) & set(answers[0])
    assert answers[1]["user_message_uuid"] == line_turns(got)[0][0]


def test_a_line_without_uuid_names_nothing() -> None:
    def no_uuid(side: str, f: dict[str, Any]) -> list[dict[str, Any]]:
        if side == "client" and f.get("type") == "user":
            return [{k: v for k, v in f.items() if k != "uuid"}]
        return [f]

    for name in ("simple-success", "bg-bash"):
        got = frames(replay(TWINS_332 / f"{name}.cbc-bridged.jsonl", "2.1.332", no_uuid))
        assert any(f.get("type") == "assistant" for f in got)
        for f in got:
            assert not set(KEYS) & set(f), f
