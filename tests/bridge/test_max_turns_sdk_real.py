"""The real Python ``claude-agent-sdk`` with ``max_turns`` on ``claude-on-cbc`` in front of
the real cbc 2.163.0, its model looping on a Bash call the session denies (rule
``max-turns``, issue 26; the same loop ``tests/bridge/test_max_turns_real.py`` runs from
the command line): each looping query ends with a ``ResultMessage`` ``error_max_turns``
after ``max_turns`` model requests, as on Claude Code 2.1.220, and the session answers the
next query. Without the rule cbc loops until killed. Skipped, with the reason, when cbc,
the drop-in or the SDK is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from harness.scenario import load

from .sdk_support import SDK_GC_WARNINGS, ResultMessage, cbc_behind_dropin, session, turn

pytestmark = [pytest.mark.client, pytest.mark.real_backend, *SDK_GC_WARNINGS]
SESSION = Path(__file__).resolve().parent / "data" / "max-turns" / "denied-loop-session.toml"
#: cbc starts in 1-15 s; a stopped query takes a second; a looping one never ends
DEADLINE = 60


@pytest.fixture
def cbc() -> list[str]:
    return cbc_behind_dropin()


@pytest.mark.parametrize("n", [1, 2])
async def test_sdk_queries_end_at_max_turns_and_the_session_goes_on(
    cbc: list[str], tmp_path: Path, n: int
) -> None:
    (loop,) = load(SESSION).model.rules
    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, loop, max_turns=n, allowed_tools=["Read"]) as (
            client,
            server,
            _,
        ):
            ends = [(await turn(client, p))[-1] for p in ("LOOP run it", "hello", "LOOP again")]
    assert all(isinstance(r, ResultMessage) for r in ends)
    assert [r.subtype for r in ends] == ["error_max_turns", "success", "error_max_turns"]
    assert [r.num_turns for r in ends] == [n + 1, 1, n + 1]
    assert [r.is_error for r in ends] == [True, False, True]
    requests = sum(1 for e in server.log if e.get("agent") == "main")
    assert 2 * n + 1 <= requests <= 2 * n + 3, requests
