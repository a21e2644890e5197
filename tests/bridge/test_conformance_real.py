"""Every scenario on the real CLIs: Claude Code 2.1.220 directly, cbc 2.163.0 through the
bridge (``--via cbc-to-claude``, as ``claude-on-cbc`` runs it), compared. The model API of
every run is the stand-in (``harness``); nothing leaves the machine. (The official
``claude-agent-sdk`` over the real cbc: ``test_sdk_real.py``.)

The A/B test asserts that every remaining difference (and every contract violation) has a
reason in ``analysis/data/known_differences.toml``: an unexplained one fails, with the diff
and the captures' location. All pairs run up front, at most ``JOBS`` CLIs at once (two
cores), under one deadline; each scenario then gets its own test. Skipped, with the way to
install them, when a CLI is not found (``ccbridge backends install``;
``CCBRIDGE_BACKENDS_DIR`` points at another cache).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest
import trio

from analysis import ab_cmd, conformance, conformance_cmd
from bridge.backends import find_backend

pytestmark = [pytest.mark.real_backend]

SCENARIOS = conformance_cmd.scenario_names()
JOBS = 3
#: the whole A/B batch; the sum of the scenarios' own time limits bounds each run
DEADLINE = 900.0


def _need(*names: str) -> dict[str, list[str]]:
    # a sync fixture skips: a skip raised inside a trio test loses its reason
    found = {n: find_backend(n) for n in names}
    missing = [n for n, argv in found.items() if argv is None]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed: run `ccbridge backends install` "
            "(or set CCBRIDGE_BACKENDS_DIR)"
        )
    return {n: argv for n, argv in found.items() if argv is not None}


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run every scenario on both sides once; ``{"rows": {name: Row}, "dir", "seconds"}``."""
    _need("claude", "cbc")
    d = tmp_path_factory.mktemp("twins")
    work = conformance_cmd.twin_jobs(d, SCENARIOS, ("claude", "cbc-bridged"))
    t0 = time.monotonic()
    outcomes = trio.run(
        lambda: ab_cmd.run_jobs(
            work, limit=JOBS, deadline=DEADLINE, progress=lambda m: print(m, file=sys.stderr)
        )
    )
    seconds = time.monotonic() - t0
    known = ab_cmd.load_known_default()
    errors = {o.job.out.name: o.error for o in outcomes if not o.ok}
    rows = {r.scenario: r for r in conformance_cmd.load_rows(d, known, sorted(SCENARIOS))}
    print(
        f"\nA/B of {len(SCENARIOS)} scenarios: {seconds:.0f}s with {JOBS} CLIs at once; "
        f"captures in {d}",
        file=sys.stderr,
    )
    return {"rows": rows, "dir": d, "seconds": seconds, "errors": errors, "known": known}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_claude_and_bridged_cbc_differ_only_as_explained(twins: dict[str, Any], name: str) -> None:
    where = f"(captures: {twins['dir']}/{name}.*.jsonl)"
    errors = {k: v for k, v in twins["errors"].items() if k.startswith(name + ".")}
    assert not errors, f"runs did not finish: {errors} {where}"
    row: conformance.Row = twins["rows"][name]
    assert not {"claude", "cbc-bridged"} & set(row.missing), where
    assert row.bridged is not None
    assert row.meta["claude"].get("backend_version") == "2.1.220"
    assert row.meta["cbc-bridged"].get("backend_version") == "2.163.0"
    unexplained = [
        f"{i.path}: Claude {i.a!r:.120}, cbc {i.b!r:.120}" for i in row.bridged.unexplained
    ]
    assert not unexplained, (
        f"{len(unexplained)} difference(s) no entry of known_differences.toml explains "
        f"{where}:\n" + "\n".join(unexplained)
    )


def test_the_ab_batch_stays_within_budget(twins: dict[str, Any]) -> None:
    # two cores, three CLIs at once: the batch took about 3 minutes when written
    assert twins["seconds"] < DEADLINE
