"""``turn-usage``: a result's ``usage`` is the turn's own main-thread calls, as Claude's
(twins long-session: cbc's running total over ten turns; subagent-foreground: a
sub-agent's calls counted in by cbc, not by Claude)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from compat.playbook import Count, Out, Playbook

from .session_support import drive, full

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"


def _usage(i: int, o: int, **more: Any) -> dict[str, Any]:
    return {
        "input_tokens": i,
        "output_tokens": o,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        **more,
    }


def _assistant(mid: str, usage: Any, parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "assistant",
        "parent_tool_use_id": parent,
        "message": {"id": mid, "role": "assistant", "content": [], "usage": usage},
    }


def _result(usage: Any) -> dict[str, Any]:
    return {"type": "result", "subtype": "success", "num_turns": 1, "usage": usage}


def test_each_turn_counts_its_own_messages_once_and_no_sub_agents() -> None:
    pb = Playbook("turn-usage")
    pb.frame(_assistant("m1", _usage(10, 2)))
    pb.frame(_assistant("m1", _usage(10, 2)))  # a second block of the same message
    pb.frame(_assistant("s1", _usage(50, 9), parent="toolu_1"))  # the sub-agent's
    pb.frame(_assistant("m2", _usage(11, 3)))
    cbc = _usage(71, 14, service_tier=None)
    assert pb.frame(_result(cbc)) == [
        Count("turn-usage"),
        Out(_result(_usage(21, 5, service_tier=None))),
    ]
    pb.frame(_assistant("m3", _usage(12, 4)))
    assert pb.frame(_result(_usage(83, 18)))[-1] == Out(_result(_usage(12, 4)))


def test_a_result_that_already_says_the_turns_usage_passes_as_is() -> None:
    pb = Playbook("turn-usage")
    pb.frame(_assistant("m1", _usage(12, 3)))
    assert pb.frame(_result(_usage(12, 3))) == [Out(_result(_usage(12, 3)))]
    assert pb.counts == {}


def test_a_turn_without_a_message_used_nothing() -> None:
    pb = Playbook("turn-usage")
    assert pb.frame(_result(_usage(40, 7)))[-1] == Out(_result(_usage(0, 0)))


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]), st.none() | st.integers() | st.text(max_size=2)
        ),
        max_size=6,
    )
)
def test_any_counts_are_taken_without_error(messages: list[tuple[str, Any]]) -> None:
    pb = Playbook("turn-usage")
    for mid, n in messages:
        pb.frame(_assistant(mid, {"input_tokens": n, "output_tokens": n}))
    out = pb.frame(_result(_usage(1, 1)))[-1]
    assert isinstance(out, Out)
    assert all(type(v) is int and v >= 0 for v in out.frame["usage"].values())


def _results(path: Path, kind: str = "stdout") -> list[dict[str, Any]]:
    recs = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    frames = [json.loads(r["text"]) for r in recs if r.get("kind") == kind]
    return [f for f in frames if f.get("type") == "result"]


def _bridged(name: str) -> list[dict[str, Any]]:
    recs = [
        json.loads(line) for line in (TWINS / f"{name}.cbc-raw.jsonl").read_text().splitlines()[1:]
    ]
    events = [
        (r["t"], "backend" if r["kind"] == "stdout" else "client", (r["text"] + "\n").encode())
        for r in recs
        if r.get("kind") in ("stdout", "stdin")
    ]
    return [f for f in drive(full(), events).frames() if f.get("type") == "result"]


def test_the_twins_usage_is_claudes_turn_by_turn() -> None:
    for name in ("long-session", "subagent-foreground"):
        claude = _results(TWINS / f"{name}.claude.jsonl")
        got = _bridged(name)
        key = ("input_tokens", "output_tokens")
        assert [[r["usage"][k] for k in key] for r in got] == [
            [r["usage"][k] for k in key] for r in claude
        ]
