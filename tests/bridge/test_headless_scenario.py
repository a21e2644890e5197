"""Headless scenarios (``headless = true``): the runner launches the client's own command
line (no stream-json base argv, no ``initialize``), writes ``line`` steps to stdin as a
piped prompt and records what is printed; behind ``--via cbc-to-claude`` the bridge runs
the headless mode (``ccbridge run -- -p ...``). Fake CLIs stand in for the real ones
(``test_headless_real.py`` and the conformance twins use the real ones)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compat import capture
from harness import runner
from harness.scenario import ScenarioError, load, loads

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
#: a "claude" that prints its argv and its stdin, as text
ECHO_CLI = r"""
import json, sys
data = sys.stdin.read()
sys.stdout.write(json.dumps({"argv": sys.argv[1:], "stdin": data}) + "\n")
"""
#: a "cbc" that answers each stream-json user line with a result quoting it
FAKE_CBC = r"""
import json, sys
for line in sys.stdin:
    text = json.loads(line)["message"]["content"]
    sys.stdout.write(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                                 "result": "got: " + text, "session_id": "s"}) + "\n")
    sys.stdout.flush()
"""
HEADLESS = """
name = "fake-headless"
time_limit = 30
headless = true
args = ["-p", "review this", "--output-format", "text"]
[[steps]]
line = "diff --git a/x b/x"
"""


def script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return f"{sys.executable} {path}"


async def test_a_headless_run_is_the_clients_own_command_line(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    res = await runner.run(
        loads(HEADLESS), runner.resolve_target(script(tmp_path, "echo_cli.py", ECHO_CLI)), out
    )
    assert res.exit == "0"
    cap = capture.parse(out.read_bytes().splitlines())
    [printed] = res.frames
    assert printed["argv"] == ["-p", "review this", "--output-format", "text"]
    assert printed["stdin"] == "diff --git a/x b/x\n"  # no initialize, the line as written
    assert "stream-json" not in " ".join(cap.header["argv"])


async def test_a_headless_run_through_the_bridge(tmp_path: Path) -> None:
    out = tmp_path / "via.jsonl"
    res = await runner.run(
        loads(HEADLESS),
        runner.resolve_target(script(tmp_path, "fake_cbc.py", FAKE_CBC)),
        out,
        via="cbc-to-claude",
    )
    assert res.exit == "0"
    cap = capture.parse(out.read_bytes().splitlines())
    # (a capture holds lines without their newline)
    printed = [r.data for r in cap.lines("client_out")]
    assert printed[:2] == [b"got: review this", b"diff --git a/x b/x"]
    assert not any(printed[2:])
    # cbc was spoken to in stream-json: one user line holding the whole prompt
    assert [r.data.count(b'"type":"user"') for r in cap.lines("stdin")] == [1]


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("headless-*.toml")), ids=lambda p: p.stem)
def test_bundled_headless_scenarios(path: Path) -> None:
    s = load(path)
    assert s.headless
    assert not s.initialize
    assert "-p" in s.args


def test_a_headless_scenario_only_writes_stdin() -> None:
    with pytest.raises(ScenarioError, match="headless"):
        loads(HEADLESS + '[[steps]]\ncontrol = { subtype = "interrupt" }\n')
