"""ccbridge drift without running a CLI: the registries' answers, where a candidate goes,
and the report on captures (the committed twins, edited the way 2.1.332 differs)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from analysis import drift_cmd
from compat import versions

REF = drift_cmd.REFERENCE


def fake(answers: dict[str, tuple[int, str]]) -> drift_cmd.Command:
    def run(argv: Sequence[str]) -> tuple[int, str]:
        for key, ans in answers.items():
            if key in " ".join(argv):
                return ans
        return 127, "not found"

    return run


def test_newest_reads_npm_and_pip() -> None:
    cmd = fake(
        {
            "npm view @anthropic-ai/claude-code version": (0, "2.1.332\n"),
            "pip index versions codebuddy-agent-sdk": (
                0,
                "codebuddy-agent-sdk (0.3.274)\nAvailable versions: 0.3.274, 0.3.273\n",
            ),
        }
    )
    assert drift_cmd.newest("claude", cmd) == "2.1.332"
    assert drift_cmd.newest("cbc", cmd) == "0.3.274"
    with pytest.raises(drift_cmd.DriftError, match="cannot read the newest"):
        drift_cmd.newest("claude", fake({"npm": (1, "E404")}))
    with pytest.raises(drift_cmd.DriftError):
        drift_cmd.newest("cbc", fake({"pip": (0, "garbage")}))


def test_a_candidate_never_replaces_the_verified_install(tmp_path: Path) -> None:
    assert drift_cmd.candidate_dir("cbc", versions.CBC.package_version, tmp_path) == tmp_path
    d = drift_cmd.candidate_dir("claude", "2.1.332", tmp_path)
    assert d == tmp_path / "drift" / "claude-2.1.332"
    calls = []

    def install(d: Path, only: Sequence[str], version: dict[str, str]) -> int:
        calls.append((d, tuple(only), dict(version)))
        exe = d / "claude/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
        return 0

    got = drift_cmd.provide("claude", "2.1.332", tmp_path, install=install)
    assert got[0].startswith(str(d))
    assert calls == [(d, ("claude",), {"claude": "2.1.332"})]
    drift_cmd.provide("claude", "2.1.332", tmp_path, install=install)
    assert len(calls) == 1  # already there: not installed again
    with pytest.raises(drift_cmd.DriftError, match="failed"):
        drift_cmd.provide("cbc", "9.9.9", tmp_path, install=lambda *a, **k: 1)


def edited_twin(tmp_path: Path, scenario: str, role: str, edit: dict[str, object]) -> Path:
    """The committed twin with ``edit`` added to every task frame of the backend's output."""
    out = []
    for line in drift_cmd.twin(scenario, role).read_bytes().splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "stdout" and "text" in rec:
            try:
                frame = json.loads(rec["text"])
            except ValueError:
                frame = None
            if isinstance(frame, dict) and str(frame.get("subtype", "")).startswith("task_"):
                frame.update(edit)
                rec["text"] = json.dumps(frame)
        out.append(json.dumps(rec))
    p = tmp_path / f"{scenario}.{role}.jsonl"
    p.write_text("\n".join(out) + "\n")
    return p


def test_the_verified_twins_are_no_drift() -> None:
    help_text = (REF / "claude-2.1.220/help.txt").read_text()
    r = drift_cmd.analyse(
        "claude", "2.1.220", {"bg-bash": drift_cmd.twin("bg-bash", "claude")}, help_text
    )
    assert r.changes == ()
    assert r.notes == ()
    assert drift_cmd.exit_status([r], [], []) == 0


def test_a_candidate_with_new_fields_and_options_is_unknown(tmp_path: Path) -> None:
    cand = edited_twin(tmp_path, "bg-bash", "claude", {"run_id": "r-1"})
    r = drift_cmd.analyse(
        "claude", "2.1.332", {"bg-bash": cand}, (REF / "claude-2.1.332/help.txt").read_text()
    )
    texts = {c.text() for c in r.changes}
    assert "+ field system/task_started: run_id" in texts
    assert "+ option --autocompact" in texts
    assert any("not a verified version" in n for n in r.notes)
    assert drift_cmd.exit_status([r], [], []) == 1
    out = drift_cmd.format_text([r], [], [])
    assert "UNKNOWN" in out
    assert out.rstrip().endswith("verdict: something the rules do not know appeared")
    doc = json.loads(drift_cmd.to_json([r], [], [], tmp_path))
    assert doc["exit"] == 1
    assert doc["backends"][0]["unknown"] is True
    assert doc["verified"] == {"claude": "2.1.220", "cbc": "2.163.0"}


def test_the_bridged_twin_conforms_and_an_error_is_exit_2() -> None:
    b = drift_cmd.analyse_bridged({"bg-bash": drift_cmd.twin("bg-bash", "cbc-bridged")})
    assert [x.scenario for x in b] == ["bg-bash"]
    assert b[0].unexplained == []
    assert b[0].violations == []
    assert drift_cmd.exit_status([], b, []) == 0
    assert drift_cmd.exit_status([], b, ["bg-bash on cbc: exit 127"]) == 2


def test_a_bridged_run_that_drifted_does_not_conform(tmp_path: Path) -> None:
    # a raw cbc twin through no bridge at all: it is not what Claude writes
    b = drift_cmd.analyse_bridged({"bg-bash": drift_cmd.twin("bg-bash", "cbc-raw")})
    assert b[0].unexplained or b[0].violations
    assert drift_cmd.exit_status([], b, []) == 1
    assert "DOES NOT CONFORM" in drift_cmd.format_text([], b, [])


def test_usage_errors_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    from bridge.cli import main

    assert main(["drift", "--only", "nope"]) == 2
    assert main(["drift", "--scenarios", "no-such-scenario", "--skip-install"]) == 2
    assert "ccbridge drift:" in capsys.readouterr().err
