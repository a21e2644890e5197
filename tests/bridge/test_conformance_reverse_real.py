"""A few scenarios in the other direction on the real CLIs: cbc 2.163.0 raw (the reference a
cbc client expects) and Claude Code 2.1.220 behind ``claude-to-cbc`` (as ``cbc-on-claude``
runs it), the scenario client a cbc SDK; every difference must have a reason in
``bridge/data/known_differences_reverse.toml`` and the bridged side must keep cbc's contract.
Bounded: ``SCENARIOS`` (a permission answered in cbc's shape, a background shell), one CLI at
a time, under ``DEADLINE``. The whole corpus: ``ccbridge conformance --profile claude-to-cbc
--regenerate`` (its committed result is tested in ``test_conformance_reverse.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

from bridge import ab_cmd, conformance_cmd
from bridge.backends import find_backend
from compat import contract_cbc
from compat.conformance import REVERSE, load_known

pytestmark = [pytest.mark.real_backend]

SCENARIOS = ("permission-deny", "bg-bash")
DEADLINE = 240.0


def test_claude_through_the_bridge_differs_from_cbc_only_as_explained(tmp_path: Path) -> None:
    missing = [n for n in ("claude", "cbc") if find_backend(n) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: run `ccbridge backends install`")
    names = conformance_cmd.scenario_names()
    roles = REVERSE.roles[:2]  # cbc, claude-bridged
    work = conformance_cmd.twin_jobs(
        tmp_path, {n: names[n] for n in SCENARIOS}, roles, conformance_cmd.SIDES_REVERSE
    )
    outcomes = trio.run(
        lambda: ab_cmd.run_jobs(
            work, limit=1, deadline=DEADLINE, progress=lambda m: print(m, file=sys.stderr)
        )
    )
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    path = conformance_cmd.KNOWN_REVERSE
    known = load_known(path.read_text(encoding="utf-8"), str(path), REVERSE)
    for row in conformance_cmd.load_rows(tmp_path, known, list(SCENARIOS), REVERSE):
        where = f"(captures: {tmp_path}/{row.scenario}.*.jsonl)"
        assert row.bridged is not None, where
        assert row.meta["cbc"].get("backend_version") == "2.163.0"
        assert row.meta["claude-bridged"].get("backend_version") == "2.1.220"
        assert not row.bridged.violations_b, contract_cbc.format_text(row.bridged.violations_b)
        unexplained = [(i.path, i.kind) for i in row.bridged.unexplained]
        assert not unexplained, (row.scenario, unexplained, where)
        assert row.bridged.equivalent_but_explained, where
