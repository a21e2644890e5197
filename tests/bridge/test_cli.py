"""The command line: versions answer without starting anything, errors map to statuses,
the drop-in finds (or fails to find) its backend, the demo runs end to end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bridge import cli, dropin

from ..conftest import CAPTURES

BIN = Path(sys.executable).parent


def run(
    *args: str, env: dict[str, str] | None = None, stdin: bytes = b"", cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        list(args),
        input=stdin,
        capture_output=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def test_versions(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("ccbridge 0.1.0")
    assert dropin.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2.1.220 (Claude Code")
    assert "ccbridge" in out


def test_dropin_help_lists_claude_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert dropin.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--permission-prompt-tool" in out
    assert "--allowedTools" in out


def test_rules_lists_modes_options_and_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rules"]) == 0
    out = capsys.readouterr().out
    assert "late-progress  [on|drop|pass|fold|off]" in out
    assert "--rule user-line.settle=0.2" in out
    assert "--rule late-progress.grace=5.0" in out
    assert "user-line._held" not in out  # state, not an option
    assert re.search(r"^cbc-to-claude up: +stdin-vocabulary > user-line", out, re.M)
    assert cli.main(["rules", "user-line"]) == 0
    one = capsys.readouterr().out
    assert one.startswith("user-line  [on|off]")
    assert "late-progress" not in one
    assert cli.main(["rules", "no-such-rule"]) == 2
    assert "unknown rule id(s): no-such-rule" in capsys.readouterr().err


def test_unknown_command_and_bad_rule_are_usage_errors(tmp_path: Path) -> None:
    assert cli.main(["frobnicate"]) == 2
    r = run(str(BIN / "ccbridge"), "run", "--backend", "true", "--rule", "no-such-rule=on")
    assert r.returncode == 2
    assert b"unknown rule" in r.stderr
    r = run(str(BIN / "ccbridge"), "run", "--backend", "true", "--rule", "late-progress=zzz")
    assert r.returncode == 2
    assert b"unknown mode" in r.stderr


def test_dropin_without_backend_says_what_it_tried_and_exits_127(tmp_path: Path) -> None:
    env = {
        "PATH": str(tmp_path),
        "CCBRIDGE_BACKEND": "",
        "CODEBUDDY_CODE_PATH": "",
        "HOME": str(tmp_path),
    }
    # a python that cannot import codebuddy_agent_sdk: hide site-packages' copy
    code = (
        "import sys, importlib.util as u; u.find_spec = lambda n, *a: None; "
        "from bridge.dropin import main; sys.exit(main(['-p', 'hello']))"
    )
    r = run(sys.executable, "-c", code, env=env, cwd=tmp_path)
    assert r.returncode == 127
    err = r.stderr.decode()
    assert "CCBRIDGE_BACKEND" in err
    assert "CODEBUDDY_CODE_PATH" in err
    assert "cbc on PATH" in err


def test_config_file_unknown_key_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "ccbridge.toml").write_text('backend = "x"\nbackendd = "typo"\n')
    r = run(str(BIN / "claude-on-cbc"), "-p", cwd=tmp_path)
    assert r.returncode == 2
    assert b"backendd" in r.stderr


def test_run_relays_a_replay_and_records_it(tmp_path: Path) -> None:
    rec = tmp_path / "session.jsonl"
    backend = f"{sys.executable} -m bridge replay --materialize {CAPTURES / 'cbc-bg-bash.jsonl'}"
    stdin = (
        b'{"type":"control_request","request_id":"i","request":{"subtype":"initialize"}}\n'
        b'{"type":"user","message":{"role":"user","content":"go"},"session_id":""}\n'
    )
    r = run(
        str(BIN / "ccbridge"),
        "run",
        "--backend",
        backend,
        "--record",
        str(rec),
        "--stats",
        "--",
        "--verbose",
        stdin=stdin,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert b'"request_id":"i"' in r.stdout  # the replay answered the id we sent
    assert b"ccbridge stats:" in r.stderr
    from compat.capture import parse

    with rec.open("rb") as f:
        cap = parse(f)
    kinds = {x.kind for x in cap.records}
    assert {"client_in", "stdin", "stdout", "client_out", "exit", "stats"} <= kinds
    assert b"__timestamp" not in r.stdout  # private-fields ran


def test_demo_runs(tmp_path: Path) -> None:
    r = run(str(BIN / "ccbridge"), "demo", "--keep", str(tmp_path))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "verdict: the client saw a Claude Code 2.1.220 session" in out
    assert "workflow_name=par-slow-flow" in out  # meta.name, where cbc sent path:…
    assert "workflow_name=path:par-slow-flow.js" in out
    assert (tmp_path / "demo-session.capture.jsonl").exists()


def test_bundled_demo_capture_matches_captures_folder() -> None:
    bundled = Path(cli.__file__).parent / "data" / "demo-session.jsonl"
    assert bundled.read_bytes() == (CAPTURES / "cbc-interrupt-idle-workflow.jsonl").read_bytes()


def test_the_rule_reference_in_docs_is_what_the_code_says() -> None:
    """docs/rules.md is generated (``ccbridge rules --markdown``); regenerate it after
    changing a rule's docstring, options, interest or place in a profile."""
    from bridge.rules_cmd import markdown
    from compat.stage import REGISTRY

    text = markdown()
    path = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
    assert path.read_text() == text, "run: ccbridge rules --markdown > docs/rules.md"
    for rule in REGISTRY:
        assert f"### `{rule}`" in text
    assert "`close_wait` = `0.2`: seconds an idle cbc gets" in text  # the option's #: note


def test_the_rules_at_a_glance_name_every_rule_of_the_profile() -> None:
    """docs/rules-overview.md is written by hand: a rule added to ``cbc-to-claude`` gets
    its line there too."""
    from compat.profiles import PROFILES

    page = (Path(__file__).resolve().parents[2] / "docs" / "rules-overview.md").read_text()
    profile = PROFILES["cbc-to-claude"]
    missing = [r for r in (*profile["up"], *profile["down"]) if f"| `{r}`" not in page]
    assert not missing, f"docs/rules-overview.md has no line for {missing}"
