"""The throughput benchmark runs and reports what it measured (not its speed: timings are
the benchmark's business, compared within one run, never asserted by a test)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.cbcstream import DEFAULT_CAPTURES, TURN_TEMPLATE
from bench.throughput import main

needs_captures = pytest.mark.skipif(
    not (DEFAULT_CAPTURES / TURN_TEMPLATE).is_file(),
    reason=f"no cbc 2.163.0 reference captures at {DEFAULT_CAPTURES} (set CCBRIDGE_SHARED)",
)


@needs_captures
def test_small_run_reports_ratios_memory_and_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--frames", "3000", "--runs", "1", "--breakdown", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["stream"]["frames"] >= 3000
    assert r["ratio"] == pytest.approx(r["bridge"]["best_s"] / r["relay"]["best_s"])
    assert set(r["breakdown"]) == {"every rule's calls no-ops", "no rules", "private-fields only"}
    rules = r["statistics"]["rules"]
    assert rules["private-fields"]["rewritten"] > 0.9 * r["stream"]["frames"]
    assert r["statistics"]["frames"]["down"]["in"] == r["stream"]["frames"]
    assert r["memory"]["full"]["peak"] > 0
    reads = r["line_reads"]
    assert reads["lines"] == r["stream"]["frames"]  # (fewer than --line-reads: all of them)
    assert reads["one_line"]["best_s"] > 0
    assert reads["blocks"]["best_s"] > 0
    assert len(r["per_frame_us_by_quarter"]) == 4
    assert all(us > 0 for us in r["per_frame_us_by_quarter"])
    assert isinstance(r["slows"], bool)


def test_quarters_split_the_cpu_by_frames_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPU per frame in each quarter of a run, from the reads' newlines and the clock at
    each boundary: a stream whose last quarter costs twice the first says so."""
    from bench import throughput

    clock = iter([0.0, 1.0, 2.0, 3.0, 5.0])
    monkeypatch.setattr("bench.throughput.time.process_time", lambda: next(clock))
    q = throughput.Quarters(400)  # starts at 0.0
    q(b"x\n" * 100)  # 100 frames: the first quarter ends (1.0)
    q(b"x\n" * 50)  # 150: no boundary, no clock
    q(b"x\n" * 60)  # 210: the second ends (2.0), at the read that crosses it
    q(b"x\n" * 90)  # 300: the third (3.0)
    q(b"x\n" * 100)
    assert q.finish() == 5.0  # the last quarter: 2 s for 100 frames
    assert q.per_frame_us() == pytest.approx([1e4, 1e6 / 110, 1e6 / 90, 2e4])


@needs_captures
def test_client_eof_runs_the_stream_through_the_wind_down(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--frames", "3000", "--runs", "1", "--client-eof", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["client_eof"] is True
    assert r["statistics"]["rules"]["eof-wind-down"]["passed-after-close"] > 0


@needs_captures
def test_per_rule_reports_every_switchable_rule_of_the_stream_direction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from compat.profiles import ALWAYS_ON, PROFILES

    assert main(["--frames", "1000", "--runs", "1", "--per-rule"]) == 0
    out = capsys.readouterr().out
    assert "CPU of each rule" in out
    for rule in PROFILES["cbc-to-claude"]["down"]:
        if rule not in ALWAYS_ON:
            assert f"  {rule} " in out, rule


@needs_captures
def test_calls_sorts_every_stage_call_by_what_it_gave(tmp_path: Path) -> None:
    """``--calls``: each call is counted once, under what it returned; the stage classes
    are as they were after it (a later run is not timed)."""
    from bench import throughput
    from bench.cbcstream import generate
    from compat.stages.hygiene import PrivateFields

    stream = tmp_path / "s.jsonl"
    frames = generate(stream, 2000, 7, DEFAULT_CAPTURES)["frames"]
    on_frame = PrivateFields.__dict__["on_frame"]
    got = throughput.calls(stream)
    assert PrivateFields.__dict__["on_frame"] is on_frame
    kinds = got["by_kind"]
    assert set(kinds) == set(throughput.CALL_KINDS)
    # private-fields cuts nearly every cbc line
    cuts = [t for t in got["top"] if t["rule"] == "private-fields"]
    assert sum(t["calls"] for t in cuts) > 0.9 * frames
    assert kinds["passed"]["calls"] > 0
    assert kinds["changed"]["calls"] > 0
    assert all(v["s"] >= 0 for v in kinds.values())
    assert sum(t["calls"] for t in got["top"]) <= sum(v["calls"] for v in kinds.values())


def test_calls_counts_an_inherited_hook_under_each_rule_that_runs_it(tmp_path: Path) -> None:
    """Two rules whose ``on_frame`` is one base class's: each call is its own rule's."""
    from typing import ClassVar

    import attrs

    from bench import throughput
    from compat.engine import Engine
    from compat.frames import Frame
    from compat.stage import Context, Env, Output, Stage

    @attrs.define
    class Seen(Stage):
        kinds: ClassVar[frozenset[str] | None] = None

        def on_frame(self, frame: Frame, ctx: Context) -> Output:
            return None

    @attrs.define
    class First(Seen):
        rule: ClassVar[str] = "first"

    @attrs.define
    class Second(Seen):
        rule: ClassVar[str] = "second"

    stream = tmp_path / "s.jsonl"
    stream.write_bytes(b'{"type":"x"}\n' * 3)
    got = throughput.calls(stream, make=lambda: Engine([], [First(), Second()], Env(str)))
    assert {(t["rule"], t["gave"], t["calls"]) for t in got["top"]} == {
        ("first", "passed", 3),
        ("second", "passed", 3),
    }
    assert got["by_kind"]["passed"]["calls"] == 6


def test_long_lines_benchmark_runs_and_checks_its_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``bench.longlines`` at 1 and 2 MiB: every mode's output is checked inside (a line cut
    or altered exits non-zero), and the report has every figure."""
    from bench.longlines import MODES
    from bench.longlines import main as longlines

    assert longlines(["--sizes", "1,2", "--runs", "1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert set(r["sizes"]) == {"1", "2"}
    for modes in r["sizes"].values():
        assert set(modes) == set(MODES)
        assert modes["relay"]["ratio"] == 1.0
        assert all(m["peak_rss_mib"] > 0 for m in modes.values())
    assert r["sizes"]["2"]["identity"]["extra_rss_per_line"] is not None


def test_instruction_counts_are_read_from_callgrinds_report() -> None:
    from bench.instructions import collected

    assert collected(b"==41== Events    : Ir\n==41== Collected : 5448699402\n") == 5448699402
    with pytest.raises(RuntimeError, match="no instruction count"):
        collected(b"valgrind: not a tool\n")


def test_instructions_says_when_valgrind_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import instructions

    monkeypatch.setattr(shutil, "which", lambda name: None)  # (the module's own shutil)
    assert instructions.main(["--frames", "10"]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err


@needs_captures
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_instructions_counts_the_engine_without_its_start_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bench.instructions import main as instructions

    assert instructions(["--frames", "300", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    r = report["tree"]
    assert report["frames"] >= 300
    assert r["engine"] == r["total"] - r["start_up"]
    assert r["engine"] > 0  # the stream costs something past the imports
    assert r["per_line"] == pytest.approx(r["engine"] / report["frames"])


def test_halves_compare_the_late_lines_with_a_fresh_engine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The second half's cost inside the run is the whole minus the first half alone; a
    session whose lines cost more once it has seen the first half says so (here: a fake
    count, 10 a line fresh, and the whole run 100 more than its halves alone)."""
    from bench import instructions

    def fake(tree: Path, stream: Path) -> int:
        n = len(stream.read_bytes().splitlines())
        return 7 + 10 * n + (100 if stream.name == "s.jsonl" else 0)  # 7: the start-up

    monkeypatch.setattr(instructions, "count", fake)
    stream, empty = tmp_path / "s.jsonl", tmp_path / "e.jsonl"
    stream.write_bytes(b"{}\n" * 20)
    empty.write_bytes(b"")
    h = instructions.halves(tmp_path, stream, empty, tmp_path)
    assert h == {"late_per_line": 20.0, "fresh_per_line": 10.0, "late_over_fresh": 2.0}


@needs_captures
def test_a_hollowed_engine_dispatches_like_the_full_one_and_changes_nothing(
    tmp_path: Path,
) -> None:
    """``hollow``: the same stages, interests and plans as the full engine (so its cost is the
    framework's as the rules meet it), every call a no-op: the stream leaves byte for
    byte, and the stage classes themselves are untouched (a full engine built after it
    still rewrites)."""
    from bench.cbcstream import generate
    from bench.throughput import bridge, full_engine, hollow

    stream = tmp_path / "s.jsonl"
    generate(stream, 2000, 7, DEFAULT_CAPTURES)
    hollowed = hollow(full_engine())
    full = full_engine()
    for d in ("up", "down"):
        mine, theirs = hollowed.pipelines[d].stages, full.pipelines[d].stages
        assert [type(s).__mro__[1] for s in mine] == [type(s) for s in theirs]
        for a, b in zip(mine, theirs, strict=True):
            assert (a.rule, a.kinds, a.triggers) == (b.rule, b.kinds, b.triggers)
            assert a.interested("assistant", None) == b.interested("assistant", None)
    out = tmp_path / "out.jsonl"
    eng = bridge(stream, out=str(out), make=lambda: hollow(full_engine()))
    assert out.read_bytes() == stream.read_bytes()
    assert not [r for r, c in eng.statistics()["rules"].items() if c]
    bridge(stream, out=str(out))  # the full engine, after: the rules still work
    assert out.read_bytes() != stream.read_bytes()
