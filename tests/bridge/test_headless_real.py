"""Every headless probe (``bridge/testing/headless.py``) on the real cbc 2.163.0 behind
``claude-on-cbc``, against what Claude 2.1.220 printed for the same probe
(``data/headless/claude-2.1.220``): the same exit status, the same stderr, the same text,
the same result fields, ``--continue``/``--resume`` in the first run's session. Skipped
with a reason when cbc is not installed (``ccbridge backends install``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.backends import find_backend
from bridge.testing.headless import PROBES, ProbeResult, run_all

DATA = Path(__file__).resolve().parent / "data/headless/claude-2.1.220"
pytestmark = [
    pytest.mark.real_backend,
    pytest.mark.skipif(find_backend("cbc") is None,
                       reason="cbc not installed: run `ccbridge backends install`"),
]
#: API timing figures Claude measures and cbc does not report
TIMINGS = {"ttft_ms", "ttft_stream_ms", "time_to_request_ms"}


@pytest.fixture(scope="module")
def bridged() -> dict[str, ProbeResult]:
    return {r.name: r for r in trio.run(run_all, "cbc-via-bridge", ())}


def claude(name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    return out


@pytest.mark.parametrize("name", [p.name for p in PROBES])
def test_probe_matches_claude(bridged: dict[str, ProbeResult], name: str) -> None:
    got, want = bridged[name], claude(name)
    assert got.status == want["status"], got.stderr
    assert got.stderr == want["stderr"]
    if want["stdout"].startswith(("{", "[")):
        # stream-json: the result frame (the line before it may differ: see README)
        g, w = (json.loads(got.stdout.splitlines()[-1]),
                json.loads(want["stdout"].splitlines()[-1]))
        if isinstance(w, list):
            assert [m["type"] for m in g][-1] == [m["type"] for m in w][-1] == "result"
            g, w = g[-1], w[-1]
        assert set(w) - set(g) <= TIMINGS, set(w) - set(g)
        for key in ("type", "subtype", "is_error", "result", "structured_output", "errors",
                    "terminal_reason", "num_turns"):
            assert g.get(key) == w.get(key), key
    else:
        assert got.stdout == want["stdout"]


def test_continue_and_resume_stay_in_the_first_session(
        bridged: dict[str, ProbeResult]) -> None:
    first = bridged["continue-first"].session_id
    assert first is not None
    assert bridged["continue-second"].session_id == first
    assert bridged["resume-second"].session_id == first
