"""Follow-up lines written 0-20 ms after each answer, through the bridge to the real cbc
2.163.0 on the stand-in model (``bench.followup``'s sessions, fewer of them): every line
gets its own turn, once. cbc alone loses or answers twice a line that reaches it as it
starts its drain poll, right after its first result (``user-line``, issue 27); each fresh
session's first follow-up is such a line. No timing is asserted.

Skipped, saying why, without cbc (``ccbridge backends install`` or ``pip install
codebuddy-agent-sdk``)."""

from __future__ import annotations

import pytest
import trio

from bench.followup import measure
from bridge.backends import find_backend

pytestmark = pytest.mark.real_backend

SESSIONS = 10
LINES = 5  # follow-up lines per session: 50 in all, 10 of them first follow-ups
DEADLINE = 600.0


@pytest.fixture
def cbc() -> list[str]:
    # a sync fixture skips: a skip raised inside the trio test loses its reason
    argv = find_backend("cbc")
    if argv is None:
        pytest.skip("cbc not installed: run `ccbridge backends install`")
    return argv


async def test_every_follow_up_line_gets_its_own_turn_once(cbc: list[str]) -> None:
    with trio.fail_after(DEADLINE):
        got = await measure(cbc, SESSIONS, LINES, max_delay=0.020, patience=10.0, only="bridge")
    assert len(got) == SESSIONS
    assert [s.error for s in got if s.error] == []
    failed = [
        (s_i, n, round(1000 * line.delay, 1), "lost" if line.turn is None else "twice")
        for s_i, s in enumerate(got)
        for n, line in enumerate(s.lines, 1)
        if line.turn is None or line.duplicated
    ]
    assert failed == [], "(session, line, ms after the answer, what happened)"
    assert sum(len(s.lines) for s in got) == SESSIONS * LINES
