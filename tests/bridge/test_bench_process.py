"""The whole-process benchmark runs small and reports every figure it promises (its
timings are the benchmark's business, compared within one run, never asserted here)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.process import BRIDGE_MODES, RATES, bridge_modes, main

from .test_bench import needs_captures


@needs_captures
def test_a_small_run_reports_throughput_latency_and_start_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--frames", "1500", "--runs", "1", "--seconds", "0.1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    t = r["throughput"]
    assert set(t["modes"]) == {"cat", "relay", "proof-loop", *BRIDGE_MODES}
    assert t["modes"]["relay"]["wall_ratio"] == 1.0
    frames = t["stream"]["frames"]
    assert frames >= 1500
    # cat, the relays, identity and the hollowed engine pass the stream byte for byte
    # (checked inside); the bridge with every rule on writes about as many lines
    assert t["modes"]["identity"]["lines_out"] == frames
    assert t["modes"]["framework-open"]["lines_out"] == frames
    assert t["modes"]["cbc-to-claude"]["lines_out"] > 0.9 * frames
    assert t["modes"]["cbc-to-claude-open"]["lines_out"] > 0.9 * frames
    assert all(m["peak_rss_mib"] > 0 and m["cpu_s"] > 0 for m in t["modes"].values())
    for rate in RATES:
        lat = r["latency"][str(rate)]
        assert set(lat) == {"direct", "identity", "cbc-to-claude"}
        assert lat["direct"]["added_p99_ms"] == 0
        assert all(m["frames"] >= 20 for m in lat.values())  # every stamped frame came back
    s = r["startup"]
    assert set(s["version"]) == {"python -c pass", "claude-on-cbc --version", "ccbridge --version"}
    if shutil.which("bash"):
        first = s["first_frame"]
        assert set(first) == {"direct", "claude-on-cbc", "ccbridge run identity"}
        for m in first.values():
            assert 0 < m["to_backend_start_ms"] <= m["to_first_frame_ms"]


@needs_captures
def test_against_a_revision_runs_its_bridge_and_ours_with_its_rules_in_the_same_rounds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--against REV``: REV's bridge (a worktree, gone after) beside this tree's, each
    round, and this tree's CPU over REV's per round; against HEAD the rules are the same."""
    assert main(["--frames", "600", "--runs", "2", "--only", "throughput", "--json",
                 "--against", "HEAD"]) == 0  # fmt: skip
    t = json.loads(capsys.readouterr().out)["throughput"]
    frames = t["stream"]["frames"]
    for mode in BRIDGE_MODES:
        assert t["modes"][f"HEAD: {mode}"]["cpu_s"] > 0
        assert len(t["against"]["cpu_ratios"][mode]["rounds"]) == 2
    assert t["modes"]["HEAD: framework-open"]["lines_out"] == frames  # (checked verbatim)
    same = t["modes"]["cbc-to-claude, HEAD's rules"]
    assert same["lines_out"] == t["modes"]["cbc-to-claude"]["lines_out"]
    assert t["against"]["cpu_ratios"]["cbc-to-claude-open, HEAD's rules"]["median"] > 0


def test_bridge_modes_switch_the_rules_asked_off_in_every_bridge_mode() -> None:
    modes = bridge_modes(Path("/s.jsonl"), off=["tasks-snapshot", "late-progress"])
    assert set(modes) == set(BRIDGE_MODES)
    for name, mode in modes.items():
        argv = mode.argv
        run = argv.index("run")
        profile = "identity" if name == "identity" else "cbc-to-claude"
        assert argv[run + 1 : run + 7] == [
            *("--profile", profile),
            *("--rule", "tasks-snapshot=off"),
            *("--rule", "late-progress=off"),
        ]
        assert argv[-1].endswith("exec cat /s.jsonl' sh")
    assert modes["framework-open"].hold
    assert modes["identity"].verbatim
