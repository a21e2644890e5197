"""The property fuzzer of tests/compat/test_fuzz.py on profile ``claude-to-cbc``: mutated
real Claude Code 2.1.220 sessions (lines dropped, repeated, swapped, values changed) never
make a reverse rule fail (the engine is strict), every frame is accounted for, and what is
written is the lines in or valid JSON."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat import reverse_state
from compat.argv_cbc import translate_to_claude
from compat.engine import Engine
from compat.profiles import build, parse_rule_settings

from .helpers import det_env
from .session_support import transcript_events
from .test_fuzz import FUZZ, OPS, Event, check, mutate, run
from .test_reverse import CLAUDE

EXAMPLES = int(os.environ.get("CCBRIDGE_FUZZ_EXAMPLES_REVERSE", "3000"))


def _sources() -> list[list[Event]]:
    out = []
    for p in sorted(CLAUDE.glob("*.transcript.jsonl")):
        try:
            events = transcript_events(p)
        except (ValueError, KeyError):
            continue
        if any(k == "backend" for _, k, _ in events):
            out.append(events)
    return out


SOURCES = _sources()


def engine(with_session: bool) -> Engine:
    up, down = build("claude-to-cbc", parse_rule_settings(()))
    eng = Engine(up, down, det_env(), strict=True)
    if with_session:  # the client's own session id, and a history to replay
        argv = ["--resume", "bot:fuzz", "--replay-user-messages"]
        history = [{"type": "user", "message": {"role": "user", "content": "x"}}]
        reverse_state.launch(eng.state, translate_to_claude(argv), history, "/w")
    return eng


@pytest.mark.skipif(not SOURCES, reason="no Claude captures to mutate")
@settings(FUZZ, max_examples=EXAMPLES)
@given(st.integers(0, max(0, len(SOURCES) - 1)), OPS, st.booleans())
def test_mutated_claude_sessions_never_crash_a_reverse_rule(
    which: int, ops: list[tuple[int, int, int]], with_session: bool
) -> None:
    events = mutate(SOURCES[which], ops)
    eng = engine(with_session)
    check(eng, events, run(eng, events))


def test_the_unmutated_claude_sessions_hold_the_same_properties() -> None:
    assert len(SOURCES) >= 10
    for events in SOURCES:
        for with_session in (False, True):
            eng = engine(with_session)
            check(eng, events, run(eng, events))
