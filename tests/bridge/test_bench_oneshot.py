"""``bench.oneshot``'s figures from its runs (the runs themselves need the real cbc: the
benchmark is run by hand, never timed in the suite)."""

from __future__ import annotations

from bench.oneshot import Run, report


def run(target: str, wall: float, first: float, cpu: float, **kw: object) -> Run:
    return Run(target, wall=wall, first_byte=first, cpu=cpu, ok=True, **kw)  # type: ignore[arg-type]


def test_added_times_are_medians_of_the_paired_differences() -> None:
    got = [
        run("bridge", 1.30, 1.25, 1.8, own_cpu=0.1, own_rss=30 * 1024),
        run("bare", 1.20, 1.10, 1.6),
        run("bare", 1.00, 0.90, 1.5),
        run("bridge", 1.05, 1.00, 1.7, own_cpu=0.1, own_rss=34 * 1024),
        run("bridge", 2.00, 1.90, 1.9, own_cpu=0.3, own_rss=32 * 1024),
        Run("bare", error="exit 1: 'boom'"),
    ]
    rep = report(got)
    # pairs in order: (1.30, 1.20), (1.05, 1.00); the third bridge run's pair failed
    assert rep["added_wall_ms"] == 75.0
    assert rep["added_first_byte_ms"] == 125.0
    assert rep["bridge_rss_mib"] == 32.0
    assert rep["bridge"]["ok"] == 3
    assert rep["bare"] == {
        "runs": 3,
        "ok": 2,
        "wall_s": 1.1,
        "first_byte_s": 1.0,
        "cpu_s": 1.55,
    }
    assert rep["errors"] == ["bare: exit 1: 'boom'"]
