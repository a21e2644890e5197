"""``compat.claude_store``: the records Claude Code 2.1.220 writes in its session store,
built from what a client sent and received. Fed the frames of runs of real Claude, the
builder gives the records that Claude wrote for them (``tests/bridge/data/claude-store``);
fed anything, it never raises and keeps a consistent chain."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.claude_store import CHAINED, Record, StoreBuilder, StoreMeta, is_uuid, text_of
from compat.frames import dumps

from .store_support import LEFT_OUT_TYPES, claude_store, frames, structure

SID = "11111111-2222-4333-8444-555555555555"
OTHER = "99999999-2222-4333-8444-555555555555"
META = StoreMeta(cwd="{ROOT}/work", version="2.1.220")
NOW = "2026-01-01T00:00:00.000Z"
#: the fields a reader of the store uses, on every chained record
READER_FIELDS = (
    "parentUuid",
    "isSidechain",
    "userType",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "type",
    "uuid",
    "timestamp",
)


def uuids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"00000000-0000-4000-8000-{next(counter):012d}"


def builder(meta: StoreMeta = META) -> StoreBuilder:
    return StoreBuilder(meta, uuids())


def init(sid: str = SID, **extra: Any) -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "session_id": sid, **extra}


def user_line(text: str, uuid: str | None = None) -> dict[str, Any]:
    line: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": text}}
    if uuid is not None:
        line["uuid"] = uuid
    return line


def assistant(content: list[dict[str, Any]], uuid: str, agent: str | None = None) -> Record:
    message = {"role": "assistant", "content": content}
    return {"type": "assistant", "message": message, "uuid": uuid, "parent_tool_use_id": agent}


def tool_result(call: str, uuid: str, agent: str | None = None) -> Record:
    block = {"type": "tool_result", "tool_use_id": call, "content": "out"}
    message = {"role": "user", "content": [block]}
    return {
        "type": "user",
        "message": message,
        "uuid": uuid,
        "parent_tool_use_id": agent,
        "tool_use_result": {"stdout": "out"},
    }


def feed(b: StoreBuilder, run: list[tuple[str, Record]], leaf: str | None = None) -> list[Record]:
    out: list[Record] = []
    for way, obj in run:
        if way == "in":
            out += b.client(obj, NOW)
        elif (sid := b.starts(obj)) is not None:
            out += b.start(obj, sid, leaf, NOW)
        else:
            out += b.frame(obj, NOW)
    return out + b.close(NOW)


def last_link(records: list[Record]) -> str | None:
    links = [r["uuid"] for r in records if r.get("type") in CHAINED and not r["isSidechain"]]
    return links[-1] if links else None


# -- what real Claude wrote ------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["simple-success", "failing-tool", "parallel-tools", "resume-session"]
)
def test_fed_claudes_frames_the_builder_writes_the_records_claude_wrote(name: str) -> None:
    written: list[Record] = []
    for run in frames(name):  # a resumed run: a new process, the chain from the file's end
        written += feed(builder(), run, last_link(written))
    claude = claude_store(name)
    assert structure(written) == structure(claude)
    # the ids, the session and the clock of every message come from the frames
    ours = [r for r in written if r.get("type") in ("user", "assistant")]
    theirs = [r for r in claude if r.get("type") in ("user", "assistant")]
    for key in ("uuid", "sessionId", "cwd", "version", "gitBranch", "isSidechain"):
        assert [r.get(key) for r in ours] == [r.get(key) for r in theirs], key
    assert [r["timestamp"] for r in ours if r["type"] == "assistant"] == [
        r["timestamp"] for r in theirs if r["type"] == "assistant"
    ]
    assert [r.get("toolUseResult") for r in ours] == [r.get("toolUseResult") for r in theirs]
    assert [r["leafUuid"] for r in written if r["type"] == "last-prompt"] == [
        r["leafUuid"] for r in claude if r["type"] == "last-prompt"
    ]


def test_the_records_claude_leaves_out_are_only_its_own_listings() -> None:
    kinds = {
        r.get("type") for name in ("failing-tool", "resume-session") for r in claude_store(name)
    }
    assert kinds - {"queue-operation", "user", "assistant", "last-prompt"} == LEFT_OUT_TYPES


# -- the session and the queue ---------------------------------------------------------


def test_lines_before_the_init_are_held_then_written_in_order() -> None:
    b = builder()
    assert b.client(user_line("one", "aaaaaaaa-0000-4000-8000-000000000001"), "T1") == []
    assert b.frame(assistant([], "aaaaaaaa-0000-4000-8000-000000000009"), "T2") == []
    records = b.start(init(), SID, None, "T3")
    assert [(r["type"], r.get("operation")) for r in records] == [
        ("queue-operation", "enqueue"),
        ("queue-operation", "dequeue"),
        ("user", None),
    ]
    assert records[0]["timestamp"] == "T1"  # enqueued when it arrived
    assert records[0]["content"] == "one"
    assert records[2]["uuid"] == "aaaaaaaa-0000-4000-8000-000000000001"
    assert records[2]["parentUuid"] is None
    assert b.session_id == SID


def test_a_line_sent_during_a_turn_starts_its_turn_after_the_result() -> None:
    b = builder()
    b.start(init(), SID, None, NOW)
    first = b.client(user_line("one"), NOW)
    reply = b.frame(
        assistant([{"type": "text", "text": "hi"}], "bbbbbbbb-0000-4000-8000-000000000001"), NOW
    )
    queued = b.client(user_line("two"), "T-queued")
    assert [r.get("operation") for r in queued] == ["enqueue"]
    end = b.frame({"type": "result", "subtype": "success"}, "T-result")
    assert [(r["type"], r.get("operation")) for r in end] == [
        ("last-prompt", None),
        ("queue-operation", "dequeue"),
        ("user", None),
    ]
    assert end[0]["lastPrompt"] == "one"
    assert end[0]["leafUuid"] == reply[0]["uuid"]
    assert end[2]["parentUuid"] == reply[0]["uuid"]
    assert end[2]["promptId"] != first[-1]["promptId"]


def test_close_writes_the_lines_of_a_turn_that_never_ended() -> None:
    b = builder()
    b.start(init(), SID, None, NOW)
    b.client(user_line("one"), NOW)
    b.client(user_line("two"), NOW)
    assert [r["message"]["content"] for r in b.close(NOW) if r["type"] == "user"] == ["two"]


def test_a_resumed_session_goes_on_from_the_files_last_record() -> None:
    b = builder()
    leaf = "cccccccc-0000-4000-8000-000000000001"
    b.start(init(), SID, leaf, NOW)
    assert b.client(user_line("again"), NOW)[-1]["parentUuid"] == leaf


def test_only_a_new_init_starts_a_session() -> None:
    b = builder()
    assert b.starts(init()) == SID
    b.start(init(permissionMode="acceptEdits"), SID, None, NOW)
    assert b.starts(init()) is None
    assert b.starts({"type": "system", "subtype": "status", "session_id": OTHER}) is None
    assert b.starts(init(OTHER)) == OTHER
    assert b.client(user_line("x"), NOW)[-1]["permissionMode"] == "acceptEdits"


def test_what_is_not_a_prompt_is_not_recorded() -> None:
    b = builder()
    b.start(init(), SID, None, NOW)
    assert b.client({"type": "control_request", "request": {}}, NOW) == []
    assert b.client({"type": "user", "message": "not an object"}, NOW) == []
    replay = {"type": "user", "isReplay": True, "message": {"role": "user", "content": "x"}}
    assert b.frame(replay, NOW) == []
    assert b.frame({"type": "stream_event", "event": {}}, NOW) == []
    assert b.frame({"type": "system", "subtype": "status"}, NOW) == []


# -- the chain -------------------------------------------------------------------------


def test_parallel_results_hang_from_their_own_call() -> None:
    b = builder()
    b.start(init(), SID, None, NOW)
    b.client(user_line("go"), NOW)
    a1 = b.frame(
        assistant([{"type": "tool_use", "id": "t1"}], "dddddddd-0000-4000-8000-000000000001"), NOW
    )
    a2 = b.frame(
        assistant([{"type": "tool_use", "id": "t2"}], "dddddddd-0000-4000-8000-000000000002"), NOW
    )
    r1 = b.frame(tool_result("t1", "dddddddd-0000-4000-8000-000000000003"), NOW)[0]
    r2 = b.frame(tool_result("t2", "dddddddd-0000-4000-8000-000000000004"), NOW)[0]
    assert r1["parentUuid"] == r1["sourceToolAssistantUUID"] == a1[0]["uuid"]
    assert r2["parentUuid"] == r2["sourceToolAssistantUUID"] == a2[0]["uuid"]
    assert r2["toolUseResult"] == {"stdout": "out"}
    nxt = b.frame(assistant([], "dddddddd-0000-4000-8000-000000000005"), NOW)[0]
    assert nxt["parentUuid"] == r2["uuid"]


def test_a_sub_agents_frames_are_a_sidechain_of_their_own() -> None:
    b = builder()
    b.start(init(), SID, None, NOW)
    b.client(user_line("go"), NOW)
    call = b.frame(
        assistant([{"type": "tool_use", "id": "agent1"}], "eeeeeeee-0000-4000-8000-000000000001"),
        NOW,
    )[0]
    s1 = b.frame(assistant([], "eeeeeeee-0000-4000-8000-000000000002", "agent1"), NOW)[0]
    s2 = b.frame(tool_result("x", "eeeeeeee-0000-4000-8000-000000000003", "agent1"), NOW)[0]
    assert (s1["isSidechain"], s1["parentUuid"]) == (True, None)
    assert (s2["isSidechain"], s2["parentUuid"]) == (True, s1["uuid"])
    assert "sourceToolAssistantUUID" not in s2
    done = b.frame(tool_result("agent1", "eeeeeeee-0000-4000-8000-000000000004"), NOW)[0]
    assert done["parentUuid"] == call["uuid"]


def test_a_repeated_or_malformed_id_gets_a_fresh_one() -> None:
    b = builder()
    b.start(init(), SID, None, NOW)
    u = b.client(user_line("go", "not-a-uuid"), NOW)[-1]
    assert is_uuid(u["uuid"])
    same = "ffffffff-0000-4000-8000-000000000001"
    first = b.frame(assistant([], same), NOW)[0]
    again = b.frame(assistant([], same), NOW)[0]
    assert first["uuid"] == same
    assert again["uuid"] != same
    assert again["parentUuid"] == same  # never its own parent


def test_a_compaction_starts_a_new_root() -> None:
    b = builder()
    b.start(init(), SID, None, NOW)
    before = b.client(user_line("go"), NOW)[-1]
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "compact_metadata": {"trigger": "manual", "pre_tokens": 10},
    }
    (record,) = b.frame(boundary, NOW)
    assert record["parentUuid"] is None
    assert record["logicalParentUuid"] == before["uuid"]
    assert record["compactMetadata"] == {"trigger": "manual", "preTokens": 10}
    after = b.frame(assistant([], "abababab-0000-4000-8000-000000000001"), NOW)[0]
    assert after["parentUuid"] == record["uuid"]


def test_text_of_a_message() -> None:
    assert text_of("hi") == "hi"
    assert (
        text_of([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}])
        == "a\nb"
    )
    assert text_of(None) == ""


# -- any frames ------------------------------------------------------------------------

_ids = st.sampled_from(["t1", "t2", "agent1", None, 5])
_uuid = st.one_of(
    st.none(),
    st.sampled_from(
        ["12345678-1234-4234-8234-123456789012", "87654321-1234-4234-8234-123456789012"]
    ),
    st.text(max_size=5),
)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": _ids}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": _ids}),
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=5)}),
    _json,
)
_message = st.one_of(
    st.fixed_dictionaries(
        {
            "role": st.just("user"),
            "content": st.one_of(st.text(max_size=5), st.lists(_block, max_size=3)),
        }
    ),
    _json,
)
_frame = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["assistant", "user"]),
            "message": _message,
            "uuid": _uuid,
            "parent_tool_use_id": _ids,
        },
        optional={"tool_use_result": _json, "isReplay": st.booleans(), "timestamp": _json},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("system"),
            "subtype": st.sampled_from(["init", "compact_boundary", "status"]),
            "session_id": st.sampled_from([SID, OTHER, "", 3]),
        },
        optional={"permissionMode": _json, "compact_metadata": _json},
    ),
    st.fixed_dictionaries({"type": st.just("result")}),
    st.dictionaries(st.sampled_from(["type", "message", "uuid", "subtype"]), _json, max_size=4),
)
_line = st.one_of(
    st.fixed_dictionaries({"type": st.just("user"), "message": _message, "uuid": _uuid}),
    st.dictionaries(st.sampled_from(["type", "message", "uuid"]), _json, max_size=3),
)
_events = st.lists(st.tuples(st.sampled_from(["in", "out"]), st.one_of(_frame, _line)), max_size=25)


@given(_events, st.sampled_from([None, "12121212-1234-4234-8234-123456789012"]))
@settings(max_examples=300, deadline=None)
def test_any_frames_make_records_readers_can_use(
    events: list[tuple[str, Record]], leaf: str | None
) -> None:
    records = feed(builder(), events, leaf)
    seen: set[str] = {leaf} if leaf else set()
    main: set[str] = set(seen)
    for r in records:
        dumps(r)  # JSON, as written
        assert isinstance(r["sessionId"], str)
        assert is_uuid(r["sessionId"])
        if r["type"] in CHAINED:
            for field in READER_FIELDS:
                assert field in r, (field, r)
            assert r["uuid"] not in seen  # ids are unique
            assert r["parentUuid"] is None or r["parentUuid"] in seen  # parents come first
            if not r["isSidechain"]:
                assert r["parentUuid"] is None or r["parentUuid"] in main
                main.add(r["uuid"])
            seen.add(r["uuid"])
        elif r["type"] == "last-prompt":
            assert r["leafUuid"] in main
        if r["type"] in ("user", "assistant"):
            assert isinstance(r["message"], dict)
