"""The whole-process benchmark runs small and reports every figure it promises (its
timings are the benchmark's business, compared within one run, never asserted here)."""

from __future__ import annotations

import json
import shutil

import pytest

from bench.process import MODES, RATES, main

from .test_bench import needs_captures


@needs_captures
def test_a_small_run_reports_throughput_latency_and_start_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--frames", "1500", "--runs", "1", "--seconds", "0.1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    t = r["throughput"]
    assert set(t["modes"]) == set(MODES)
    assert t["modes"]["relay"]["wall_ratio"] == 1.0
    frames = t["stream"]["frames"]
    assert frames >= 1500
    # cat, the relay, identity and the hollowed engine pass the stream byte for byte
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
