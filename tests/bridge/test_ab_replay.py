"""``ccbridge ab`` on a recording: the differences the replay itself causes (a call that
reads a file the recording does not carry) are counted apart, the verdict comes first in
every report, and a pair whose only differences are the replay's is the same session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis import ab_report, report_html
from analysis.ab_cmd import Job, Outcome, Side
from analysis.replay_diffs import replay_caused
from compat.capture import load as load_capture
from harness import from_capture, runner
from harness.scenario import Differs, Replay, Scenario, loads

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"
READ_NOTES = Differs("Read", {"file_path": "{CWD}/notes.txt"}, "Read {CWD}/notes.txt")


def _outcome(scenario: Scenario, role: str, side: str) -> Outcome:
    path = TWINS / f"parallel-tools.{role}.jsonl"
    result = runner.RunResult("0", [], [], "x", path, 1.0)
    return Outcome(Job(path, scenario, Side(side), path), result)


def _pair(differs: tuple[Differs, ...]) -> ab_report.Pair:
    s = Scenario("parallel-tools", replay=Replay("parallel-tools.claude.jsonl", differs))
    a, b = _outcome(s, "claude", "claude"), _outcome(s, "cbc-bridged", "cbc")
    return ab_report.compare_pair("parallel-tools", a, b)


def test_the_differences_in_a_listed_calls_result_are_the_replays() -> None:
    a = load_capture(str(TWINS / "parallel-tools.claude.jsonl"))
    b = load_capture(str(TWINS / "parallel-tools.cbc-bridged.jsonl"))
    from analysis.diff import diff

    result = diff(a, b)
    caused = replay_caused(result, [READ_NOTES])
    paths = {result.differences[i].path for i in caused}
    # the Read's result (its tool_result's text: its tool_use_result is Claude's record,
    # file-tool-results), not the Bash call's
    assert paths == {"turn 1 / user #1 / message.content[0].content"}
    assert replay_caused(result, []) == frozenset()
    other = Differs("Read", {"file_path": "{CWD}/other.txt"})
    assert replay_caused(result, [other]) == frozenset()


def test_the_verdict_opens_the_text_and_json_reports_and_counts_the_replay_apart(
    tmp_path: Path,
) -> None:
    pair = _pair((READ_NOTES,))
    assert pair.replayed
    assert pair.result is not None
    assert pair.differences == len(pair.result.differences) - 1
    text = ab_report.report_text([pair])
    first = text.splitlines()[0]
    assert first.startswith("verdict: the client would see ")
    assert f"{pair.differences} differences" in first
    assert "1 more comes from the replay" in first
    assert "from the replay (" in text
    doc = json.loads(ab_report.report_json([pair], tmp_path))
    assert doc["verdict"] == first
    [s] = doc["scenarios"]
    assert s["from_replay"] == ["turn 1 / user #1 / message.content[0].content"]
    assert s["same_session"] is False
    assert "+ 1 from the replay" in ab_report.summary_line(pair)


def test_a_pair_whose_only_differences_are_the_replays_is_the_same_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pair = _pair((READ_NOTES,))
    assert pair.result is not None
    # keep only the replay's differences: the backends agree on everything else
    kept = [pair.result.differences[i] for i in sorted(pair.replayed)]
    import attrs

    only = attrs.evolve(
        pair,
        result=attrs.evolve(pair.result, differences=kept),
        replayed=frozenset(range(len(kept))),
    )
    assert only.same
    assert ab_report.exit_status([only]) == ab_report.EXIT_SAME
    line = ab_report.verdict([only])
    assert line.startswith("verdict: the client would see the same session (1 more comes")
    assert ab_report.exit_status([pair]) == ab_report.EXIT_DIFFERENT


def test_a_recording_without_listed_calls_counts_every_difference() -> None:
    pair = _pair(())
    assert pair.result is not None
    assert not pair.replayed
    assert pair.differences == len(pair.result.differences)
    assert "from the replay" not in ab_report.report_text([pair])


def test_the_html_report_gives_the_replays_differences_their_reason() -> None:
    a = load_capture(str(TWINS / "parallel-tools.claude.jsonl"))
    b = load_capture(str(TWINS / "parallel-tools.cbc-bridged.jsonl"))
    rep = report_html.build(a, b, ("A", "B"), differs=[READ_NOTES])
    assert len(rep.replayed) == 1
    line, tone = report_html.verdict(rep)
    assert "1 more from the replay" in line
    assert tone == "differ"
    page = report_html.render_report(rep)
    rows = [r for r in page.split('<tr class="d ')[1:] if "cat-replay" in r.split("</tr>")[0]]
    assert len(rows) == 1


def test_from_capture_lists_the_calls_in_the_scenarios_replay_table() -> None:
    cap, n = from_capture.read(TWINS / "parallel-tools.claude.jsonl")
    conv = from_capture.convert(cap, source="parallel-tools.claude.jsonl", n_lines=n)
    s = loads(conv.text())
    assert s.replay is not None
    assert s.replay.source == "parallel-tools.claude.jsonl"
    assert [(d.tool, d.input) for d in s.replay.differs] == [
        ("Read", {"file_path": "{CWD}/notes.txt"})
    ]
    assert "#   - Read {CWD}/notes.txt" in conv.text()


def test_a_differs_entry_covers_calls_by_tool_and_the_named_input() -> None:
    d = Differs("Grep", {"pattern": "x"})
    assert d.covers("Grep", {"pattern": "x", "path": "{CWD}/src"})
    assert not d.covers("Grep", {"pattern": "y"})
    assert not d.covers("Glob", {"pattern": "x"})
    assert not d.covers("Grep", "not a dict")
    assert Differs("mcp__s__t").covers("mcp__s__t", {"any": 1})
