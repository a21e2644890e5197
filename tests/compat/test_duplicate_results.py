"""A user frame that names one call in two ``tool_result`` blocks (a hostile or confused
backend) is taken as one answer by the rules that track running calls: no rule fails on it
(in a strict engine it raised ``KeyError``; in use the rule failed open)."""

from __future__ import annotations

from typing import Any

import pytest

from compat.playbook import Playbook, outs

from .tasks_support import SID
from .test_max_turns_loop import call, denied


def twice(n: int, rq: str) -> dict[str, Any]:
    frame = denied(n, rq)
    block = frame["message"]["content"][0]
    frame["message"]["content"] = [block, dict(block)]
    return frame


@pytest.mark.parametrize(
    ("rule", "facts"),
    [
        ("max-turns", {"max_turns": 1, "session_id": SID}),
        ("interrupted-turn", {"session_id": SID}),
    ],
)
def test_a_call_answered_twice_in_one_frame_is_answered_once(
    rule: str, facts: dict[str, Any]
) -> None:
    pb = Playbook(rule, facts=facts)
    pb.frame(call(1, "rq1"), at=1.0)
    out = outs(pb.frame(twice(1, "rq1"), at=1.1))
    assert out[-1]["message"]["content"][0]["tool_use_id"] == "c1"
