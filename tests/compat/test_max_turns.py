"""``result-shape`` at ``--max-turns``: cbc 2.163.0 writes an assistant message "Max turns
(N) exceeded" of its own, then ``error_during_execution``; Claude 2.1.220 writes no such
message and ends with ``error_max_turns`` (probes in tests/bridge/data/headless)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .session_support import drive, full, line
from .tasks_support import SID

PROBES = Path(__file__).resolve().parents[1] / "bridge" / "data" / "headless"


def frames_of(side: str) -> list[dict[str, Any]]:
    probe = json.loads((PROBES / side / "stream-max-turns.json").read_text())
    return [json.loads(x) for x in probe["stdout"].splitlines() if x.strip()]


def test_cbcs_max_turns_notice_is_dropped_and_the_result_is_claudes() -> None:
    eng = full()
    events = [(0.1 * i, "backend", line(f)) for i, f in enumerate(frames_of("cbc-2.163.0"))]
    run = drive(eng, [*events, (9.0, "exit", b"0")])
    got = [(f["type"], f.get("subtype")) for f in run.frames()]
    want = [(f["type"], f.get("subtype")) for f in frames_of("claude-2.1.220")]
    assert [k for k in got if k[0] in ("assistant", "result")] == [
        k for k in want if k[0] in ("assistant", "result")
    ]
    assert not any("Max turns" in json.dumps(f) for f in run.frames() if f["type"] == "assistant")
    result = run.frames()[-1]
    assert result["errors"] == ["Reached maximum number of turns (1)"]
    stats = eng.statistics()["rules"]["result-shape"]
    assert (stats["held"], stats["released"], stats["dropped"]) == (1, 1, 1)


def test_the_same_words_from_the_model_are_kept() -> None:
    """A model that answers "Max turns (2) exceeded" in a successful turn: held for a
    moment, then released before the result, in order."""
    eng = full()
    answer = {
        "type": "assistant",
        "uuid": "a1",
        "session_id": SID,
        "parent_tool_use_id": None,
        "message": {
            "id": "m1",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": "Max turns (2) exceeded"}],
        },
    }
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "Max turns (2) exceeded",
        "uuid": "r1",
        "session_id": SID,
        "duration_ms": 1,
        "duration_api_ms": 1,
        "num_turns": 1,
        "total_cost_usd": 0,
        "usage": {},
        "modelUsage": {},
        "permission_denials": [],
    }
    init = {
        "type": "system",
        "subtype": "init",
        "uuid": SID,
        "session_id": SID,
        "cwd": "/w",
        "tools": [],
        "model": "m",
    }
    run = drive(
        eng,
        [
            (0.0, "backend", line(init)),
            (0.1, "backend", line(answer)),
            (0.2, "backend", line(result)),
        ],
    )
    kinds = [f["type"] for f in run.frames()]
    assert kinds[-2:] == ["assistant", "result"]
    assert run.frames()[-2]["message"]["content"][0]["text"] == "Max turns (2) exceeded"
    assert run.frames()[-1]["stop_reason"] == "end_turn"


def test_parallel_calls_are_one_turn_in_cbcs_own_max_turns_result() -> None:
    """Claude's ``num_turns`` at ``--max-turns N`` is N + 1 whatever the Nth message's
    parallel calls were (2.1.220, two calls at N = 1: 2); counting the tool results would
    say 3."""
    frames = frames_of("cbc-2.163.0")
    for f in frames:
        content = f.get("message", {}).get("content")
        if f["type"] == "assistant" and content and content[0].get("type") == "tool_use":
            content.append({**content[0], "id": "call_second"})
        if f["type"] == "user" and content and content[0].get("type") == "tool_result":
            content.append({**content[0], "tool_use_id": "call_second"})
    eng = full()
    run = drive(
        eng, [*((0.1 * i, "backend", line(f)) for i, f in enumerate(frames)), (9.0, "exit", b"0")]
    )
    result = run.frames()[-1]
    assert result["subtype"] == "error_max_turns"
    assert result["num_turns"] == 2
