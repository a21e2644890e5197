"""``ccbridge ab --via claude-to-cbc``: which side runs behind the profile, and that a pair
with a reverse side is checked against cbc's contract (analysis.contract_cbc), not Claude's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.ab_cmd import Job, Outcome, Side, compare_pair, via_sides
from harness import runner


def test_via_puts_the_profiles_backend_behind_it() -> None:
    a, b = via_sides(Side("cbc", None, "a"), Side("claude", None, "b"), "claude-to-cbc")
    assert (a.via, b.via) == (None, "claude-to-cbc")
    a, b = via_sides(Side("claude", None, "a"), Side("cbc", None, "b"), "cbc-to-claude")
    assert (a.via, b.via) == (None, "cbc-to-claude")
    a, b = via_sides(Side("x", None, "a"), Side("y", "identity", "b"), "claude-to-cbc")
    assert (a.via, b.via) == (None, "identity")  # --via-b wins; neither side is claude
    assert via_sides(Side("cbc"), Side("claude"), None) == (Side("cbc"), Side("claude"))


CAPTURE = (
    b'{"format":"ccbridge-capture","version":1}\n'
    b'{"t":0.1,"kind":"client_out","text":"{\\"type\\":\\"command_lifecycle\\",'
    b'\\"state\\":\\"queued\\",\\"session_id\\":\\"s\\"}"}\n'
)


def outcome(tmp: Path, side: Side) -> Outcome:
    out = tmp / f"{side.label}.jsonl"
    out.write_bytes(CAPTURE)
    res = runner.RunResult("0", [], [], "v", out, 1.0, None)
    return Outcome(Job(out, None, side, out), res)  # type: ignore[arg-type]


def test_a_reverse_pair_is_checked_against_cbcs_contract(tmp_path: Path) -> None:
    pair = compare_pair(
        "x",
        outcome(tmp_path, Side("cbc", None, "a")),
        outcome(tmp_path, Side("claude", "claude-to-cbc", "b")),
    )
    assert pair.error is None, pair.error
    assert {v.rule for v in pair.violations[1]} == {"rev-vocabulary"}
    forward = compare_pair(
        "x",
        outcome(tmp_path, Side("claude", None, "a")),
        outcome(tmp_path, Side("cbc", "cbc-to-claude", "b")),
    )
    assert "rev-vocabulary" not in {v.rule for v in forward.violations[1]}


REF = Path(__file__).resolve().parents[2] / "captures/reference"


def test_check_with_cbcs_contract(capsys: Any) -> None:
    from analysis.check_cmd import main

    raw = str(REF / "claude-2.1.220/mockapi_background-agent_local-agent-frames.transcript.jsonl")
    assert main(["--contract", "cbc", raw]) == 1
    out = capsys.readouterr().out
    assert "[rev-background-agent]" in out
    assert out.rstrip().endswith(
        "contract (rev-background-agent: 1, rev-initialize-reply: 2, "
        "rev-task-type: 1, rev-vocabulary: 5)"
    )
    assert "cbc 2.163.0 contract" in out
    assert (
        main(["--contract", "cbc", str(REF / "cbc-2.163.0/mockoai_bg-bash.transcript.jsonl")]) == 0
    )
    assert main(["--contract", "cbc", "--rules"]) == 0
    assert "rev-interrupted-turn" in capsys.readouterr().out
