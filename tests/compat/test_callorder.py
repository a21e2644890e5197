"""``call-order``: the frames of one message's tool calls reach the client in call order.

Fed from the raw cbc 2.163.0 runs of the twins: two-bg-tasks-apart (two background Bash
calls in one message; cbc started the second call first) and parallel-tools (a Read and a
Bash in one message, already in order), plus cbc-shaped frames for what those runs do not
show (results the other way round, a result that never comes, the end of the turn).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compat.engine import Engine, Write
from tests.compat.tasks_support import (
    engine,
    full_engine,
    init,
    lines,
    out,
    replay,
    result,
    started,
    tag,
    tool_result,
    tool_use,
    updated,
)

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"
DATA = Path(__file__).resolve().parent / "data"
#: the raw twin before its regeneration: cbc started the second call first
LAST_FIRST = DATA / "two-bg-tasks-apart.last-first.cbc-raw.jsonl"
#: cbc's side of a bridged run (its stdout): the second call's task_started came before
#: cbc wrote that call's assistant frame
START_BEFORE_CALL = DATA / "two-bg-tasks-apart.start-before-call.cbc-bridged.jsonl"


def _label(f: dict[str, Any]) -> str:
    """``task_started:<call>``, ``user:<call>``, ``background_tasks_changed:<descriptions>``."""
    if f["type"] == "user":
        return "user:" + ",".join(b["tool_use_id"] for b in f["message"]["content"])
    st = f.get("subtype")
    if st in ("task_started", "task_updated"):
        return f"{tag(f)}:{f.get('tool_use_id') or f['task_id']}"
    if st == "background_tasks_changed":
        return f"{st}:" + ",".join(e["description"] for e in f["tasks"])
    return tag(f)


def _first_turn(rules: list[str], path: Path) -> list[str]:
    got = replay(full_engine(rules), path)
    frames = [f for _, f in got]
    end = next(i for i, f in enumerate(frames) if f["type"] == "result")
    return [
        _label(f)
        for f in frames[: end + 1]
        if f["type"] in ("user", "result")
        or f.get("subtype") in ("task_started", "background_tasks_changed")
    ]


def test_two_background_calls_of_one_message_start_and_return_in_call_order() -> None:
    # the raw run: cbc started call_mock_0003 (Long sleep, the second call) first, then
    # wrote both results; Claude writes each call's snapshot, start and result together
    assert _first_turn([], LAST_FIRST) == [
        "background_tasks_changed:Short sleep",
        "task_started:local_bash:call_mock_0002",
        "user:call_mock_0002",
        "background_tasks_changed:Short sleep,Long sleep",
        "task_started:local_bash:call_mock_0003",
        "user:call_mock_0003",
        "result",
    ]


def test_switched_off_the_stream_keeps_cbc_order() -> None:
    assert _first_turn(["call-order=off"], LAST_FIRST)[:2] == [
        "background_tasks_changed:Long sleep",
        "task_started:local_bash:call_mock_0003",
    ]


def test_a_task_started_before_its_call_waits_for_the_call() -> None:
    got = [f for _, f in replay(full_engine(), START_BEFORE_CALL)]
    end = next(i for i, f in enumerate(got) if f["type"] == "result")
    turn = [
        (_label(f) if f["type"] != "assistant" else "assistant:" + f["message"]["content"][0]["id"])
        + (":" + f["description"] if f.get("subtype") == "task_started" else "")
        for f in got[:end]
        if f["type"] == "user"
        or (f["type"] == "assistant" and f["message"]["content"][0]["type"] == "tool_use")
        or f.get("subtype") in ("task_started", "background_tasks_changed")
    ]
    # Claude's description (the call's, workflow-prompt) once the call is known
    assert turn == [
        "assistant:call_mock_0002",
        "background_tasks_changed:Short sleep",
        "task_started:local_bash:call_mock_0002:Short sleep",
        "assistant:call_mock_0003",
        "user:call_mock_0002",
        "background_tasks_changed:Short sleep,Long sleep",
        "task_started:local_bash:call_mock_0003:Long sleep",
        "user:call_mock_0003",
    ]
    off = [f for _, f in replay(full_engine(["call-order=off"]), START_BEFORE_CALL)]
    first = next(f for f in off if f.get("subtype") == "task_started")
    assert first["description"] == "sleep 8; echo second-done"


def _client_bytes(eng: Engine, path: Path) -> bytes:
    from compat.capture import parse

    cap = parse(path.read_bytes().splitlines())
    data = b""
    for r in cap.records:
        if r.kind == "stdout":
            cmds = eng.feed("backend", r.data + b"\n", r.t)
            data += b"".join(c.data for c in cmds if isinstance(c, Write) and c.side == "client")
    return data


def test_calls_already_in_order_pass_byte_identical() -> None:
    # parallel-tools: a Read and a Bash of one message, their results in call order
    path = TWINS / "parallel-tools.cbc-raw.jsonl"
    on = _client_bytes(full_engine(), path)
    off = _client_bytes(full_engine(["call-order=off"]), path)
    assert on == off
    eng = engine("call-order")
    _client_bytes(eng, path)
    assert "call-order" not in eng.statistics()["rules"]


def _two_calls() -> list[dict[str, Any]]:
    return [
        init(),
        tool_use("call_a", "Bash", {"command": "sleep 2", "run_in_background": True}),
        tool_use("call_b", "Bash", {"command": "sleep 8", "run_in_background": True}),
    ]


def _labels(frames: list[dict[str, Any]]) -> list[str]:
    return [
        _label(f)
        for f in frames
        if f["type"] in ("user", "result", "system") and f.get("subtype") != "init"
    ]


def test_a_later_result_waits_for_the_earlier_one() -> None:
    eng = engine("call-order")
    frames = [*_two_calls(), tool_result("call_b", "b done"), tool_result("call_a", "a done")]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert _labels(got) == ["user:call_a", "user:call_b"]
    stats = eng.statistics()["rules"]["call-order"]
    assert stats["held"] == 1
    assert stats["released"] == 1


def test_a_task_of_a_later_call_waits_with_its_frames_and_others_pass() -> None:
    eng = engine("call-order")
    status = {"type": "system", "subtype": "status", "status": None, "session_id": "s"}
    frames = [
        *_two_calls(),
        started("tb", "Bash", "sleep 8", "call_b"),
        updated("tb", "running"),
        status,  # belongs to no call: passes at once
        started("ta", "Bash", "sleep 2", "call_a"),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    assert _labels(got) == ["status", "task_started:Bash:call_a"]
    got = out(eng.feed("backend", lines(tool_result("call_a", "a")), 0.1))
    assert _labels(got) == [
        "user:call_a",
        "task_started:Bash:call_b",
        "task_updated:running:tb",
    ]
    got = out(eng.feed("backend", lines(tool_result("call_b", "b")), 0.2))
    assert _labels(got) == ["user:call_b"]


def test_frames_of_a_later_call_are_released_after_wait() -> None:
    eng = engine(("call-order", {"wait": "0.5"}))
    got = out(
        eng.feed("backend", lines(*_two_calls(), started("tb", "Bash", "sleep 8", "call_b")), 1.0)
    )
    assert _labels(got) == []
    assert eng.next_deadline() == 1.5
    assert _labels(out(eng.advance(1.5))) == ["task_started:Bash:call_b"]
    assert eng.statistics()["rules"]["call-order"] == {"held": 1, "released": 1}
    # call_a given up on: its late result and call_b's pass as they come
    got = out(eng.feed("backend", lines(tool_result("call_b", "b"), tool_result("call_a", "a")), 2))
    assert _labels(got) == ["user:call_b", "user:call_a"]


def test_a_frame_rewritten_before_the_hold_counts_as_released_not_synthesized() -> None:
    # frame-fields rewrites the tool result before call-order holds it; the timer lets it go
    eng = full_engine(["call-order.wait=0.5"])
    frames = [*_two_calls(), tool_result("call_b", "b")]
    assert _labels(out(eng.feed("backend", lines(*frames), 0.0))) == []
    assert _labels(out(eng.advance(0.5))) == ["user:call_b"]
    assert eng.statistics()["rules"]["call-order"] == {"held": 1, "released": 1}


def test_the_turn_result_the_next_message_and_the_exit_release_what_is_held() -> None:
    held = [*_two_calls(), started("tb", "Bash", "sleep 8", "call_b")]
    eng = engine("call-order")
    got = out(eng.feed("backend", lines(*held, result()), 0.0))
    assert _labels(got) == ["task_started:Bash:call_b", "result"]
    assert eng.next_deadline() is None

    eng = engine("call-order")
    nxt = tool_use("call_c", "Read", {"file_path": "x"})
    nxt["message"]["id"] = "m2"
    got = out(eng.feed("backend", lines(*held, nxt), 0.0))
    assert [f.get("subtype") or f["type"] for f in got][-2:] == ["task_started", "assistant"]

    eng = engine("call-order")
    assert _labels(out(eng.feed("backend", lines(*held), 0.0))) == []
    assert _labels(out(eng.backend_exited(0, 0.1))) == ["task_started:Bash:call_b"]


def test_calls_of_different_messages_and_subagent_frames_are_not_ordered() -> None:
    eng = engine("call-order")
    a = tool_use("call_a", "Bash", {"command": "sleep 2"})
    b = tool_use("call_b", "Bash", {"command": "sleep 8"})
    b["message"]["id"] = "m2"
    frames = [init(), a, b, tool_result("call_b", "b"), tool_result("call_a", "a")]
    assert _labels(out(eng.feed("backend", lines(*frames), 0.0))) == ["user:call_b", "user:call_a"]

    eng = engine("call-order")
    sub = tool_result("call_b", "b")
    sub["parent_tool_use_id"] = "call_x"
    got = out(eng.feed("backend", lines(*_two_calls(), sub), 0.0))
    assert _labels(got) == ["user:call_b"]
