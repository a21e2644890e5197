"""Every headless probe (``harness/headless.py``) on the real cbc 2.163.0 behind
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
from harness.headless import PROBES, ProbeResult, run_all

DATA = Path(__file__).resolve().parent / "data/headless/claude-2.1.220"
pytestmark = [
    pytest.mark.real_backend,
    pytest.mark.skipif(
        find_backend("cbc") is None, reason="cbc not installed: run `ccbridge backends install`"
    ),
]
#: API timing figures Claude measures and cbc does not report
TIMINGS = {"ttft_ms", "ttft_stream_ms", "time_to_request_ms"}


@pytest.fixture(scope="module")
def bridged() -> dict[str, ProbeResult]:
    return {r.name: r for r in trio.run(run_all, "cbc-via-bridge", ())}


def claude(name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    return out


#: cbc 2.163.0 now and then validates a StructuredOutput call against a schema other than
#: the one it offered the model, either way round: it offers {answer} and answers 'missing
#: required parameter(s): data' (about 1 run in 3 on a loaded 2-core machine), or offers
#: {data: …} and rejects that shape with 'Output does not match required schema: root:
#: must have required property …' (known differences in docs/conformance.md, twins
#: structured-output);
#: never on Claude. That turn then ends without structured_output, whatever the bridge does
CBC_SCHEMA_RACES = (
    "missing required parameter(s): data",
    "Output does not match required schema: root: must have required property",
)


def _raced(got: ProbeResult) -> bool:
    # (the rejection is the tool result cbc sent its model next; in stream-json it is on
    # stdout too)
    return _lost_structured_output(got) or any(
        race in got.stdout or any(race in i for i in got.model_inputs) for race in CBC_SCHEMA_RACES
    )


def _lost_structured_output(got: ProbeResult) -> bool:
    """A ``--json-schema`` run whose result is a success without ``structured_output``:
    what the race ends in, seen in two whole-suite CI runs with neither rejection text in
    what the stand-in model was asked (never when the probe runs alone: 10 of 10)."""
    if "--json-schema" not in got.argv or not got.stdout.strip():
        return False
    try:
        last = json.loads(got.stdout.splitlines()[-1])
    except ValueError:
        return False
    if isinstance(last, list):
        last = last[-1] if last else {}
    return (
        isinstance(last, dict)
        and last.get("subtype") == "success"
        and "structured_output" not in last
    )


def _settled(got: ProbeResult) -> ProbeResult:
    """The probe again (twice at most) when cbc hit its StructuredOutput race."""
    for _ in range(2):
        if not _raced(got):
            return got
        got = {r.name: r for r in trio.run(run_all, "cbc-via-bridge", (got.name,))}[got.name]
    if _raced(got):
        pytest.skip(
            "cbc lost its own StructuredOutput 3 times (rejected its schema: "
            f"{CBC_SCHEMA_RACES}, or ended the turn without it)"
        )
    return got


@pytest.mark.parametrize("name", [p.name for p in PROBES])
def test_probe_matches_claude(bridged: dict[str, ProbeResult], name: str) -> None:
    got, want = _settled(bridged[name]), claude(name)
    assert got.status == want["status"], got.stderr
    assert got.stderr == want["stderr"]
    if want["stdout"].startswith(("{", "[")):
        # stream-json: the result frame (the line before it may differ: see docs/conformance.md)
        g, w = (
            json.loads(got.stdout.splitlines()[-1]),
            json.loads(want["stdout"].splitlines()[-1]),
        )
        if isinstance(w, list):
            assert [m["type"] for m in g][-1] == [m["type"] for m in w][-1] == "result"
            g, w = g[-1], w[-1]
        assert set(w) - set(g) <= TIMINGS, (set(w) - set(g), got.model_inputs, got.stdout[-3000:])
        for key in (
            "type",
            "subtype",
            "is_error",
            "result",
            "structured_output",
            "errors",
            "terminal_reason",
            "num_turns",
        ):
            assert g.get(key) == w.get(key), key
    else:
        assert got.stdout == want["stdout"]


def test_continue_and_resume_stay_in_the_first_session(bridged: dict[str, ProbeResult]) -> None:
    first = bridged["continue-first"].session_id
    assert first is not None
    assert bridged["continue-second"].session_id == first
    assert bridged["resume-second"].session_id == first
