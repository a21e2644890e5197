"""The complexity gate of ``.ci/run`` in the suite (``tests.complexity``): no function over
the limit but those listed, none of those more complex than listed, no stale entry, and
the rule code's mean not rising."""

from __future__ import annotations

import json

from .complexity import LIMIT, RATCHET, RULE_MEAN, measure, problems


def test_the_complexity_gate_holds() -> None:
    every, mean = measure()
    assert problems(every, mean, json.loads(RATCHET.read_text())) == []


def test_the_gate_fails_a_new_complex_function_and_a_stale_entry() -> None:
    every, mean = measure()
    ratchet = json.loads(RATCHET.read_text())
    grown = {**every, "compat/new.py:f": LIMIT + 1}
    assert problems(grown, mean, ratchet) == [
        f"compat/new.py:f: complexity {LIMIT + 1} (the limit is {LIMIT})"
    ]
    stale = {**ratchet, "over": {**ratchet["over"], "compat/gone.py:g": 20}}
    assert any("compat/gone.py:g: now within" in p for p in problems(every, mean, stale))
    assert problems(every, max(mean, RULE_MEAN) + 1, ratchet)  # the mean over its bound
