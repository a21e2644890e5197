"""The target setting's three sources (flag, ``CCBRIDGE_TARGET``, config key ``target``) and
the one-line error for a version the rules cannot emulate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analysis import ab_cmd
from bridge import config, dropin


def test_default_env_and_config_file(tmp_path: Path) -> None:
    assert config.load({"HOME": str(tmp_path)}).target == "2.1.220"
    cfg = tmp_path / "c.toml"
    cfg.write_text('target = "2.1.332"\n')
    assert config.load({"CCBRIDGE_CONFIG": str(cfg)}).target == "2.1.332"
    env = {"CCBRIDGE_CONFIG": str(cfg), "CCBRIDGE_TARGET": "2.1.220"}
    assert config.load(env).target == "2.1.220"  # the environment over the file


@pytest.mark.parametrize("bad", ["2.1.300", "latest", ""])
def test_an_unknown_version_is_one_clear_error(tmp_path: Path, bad: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'target = "{bad}"\n')
    with pytest.raises(config.ConfigError, match=r"target='.*': not a target Claude Code "):
        config.load({"CCBRIDGE_CONFIG": str(cfg)})
    if bad:
        with pytest.raises(config.ConfigError, match=r"^CCBRIDGE_TARGET='[^']+': .*2\.1\.332\)$"):
            config.load({"HOME": str(tmp_path), "CCBRIDGE_TARGET": bad})


def test_a_number_is_not_a_version(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("target = 2.1\n")
    with pytest.raises(config.ConfigError, match="must be a string"):
        config.load({"CCBRIDGE_CONFIG": str(cfg)})


def test_run_flag_refuses_an_unknown_version_before_any_backend() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "bridge", "run", "--target", "9.9.9", "--backend", "false"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "ccbridge run: --target='9.9.9': not a target Claude Code version (one of 2.1.220, 2.1.332)"
    ]


def test_dropin_version_names_the_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CCBRIDGE_TARGET", raising=False)
    assert dropin.version_text().startswith("2.1.220 (Claude Code;")
    monkeypatch.setenv("CCBRIDGE_TARGET", "2.1.332")
    assert dropin.version_text().startswith("2.1.332 (Claude Code;")


def test_conformance_knows_which_claude_and_bridge_a_target_runs(tmp_path: Path) -> None:
    from analysis import conformance_cmd as cc
    from harness import runner

    assert cc.twins_dir("2.1.220") == cc.TWINS
    assert cc.twins_dir("2.1.332").name == "twins-2.1.332"
    assert cc.sides("2.1.220") == cc.SIDES
    with pytest.raises(runner.BackendNotFound, match=r"Claude Code 2\.1\.332 not installed"):
        cc.sides("2.1.332", tmp_path)
    exe = tmp_path / "drift/claude-2.1.332/claude/node_modules/@anthropic-ai/claude-code/bin"
    exe.mkdir(parents=True)
    (exe / "claude.exe").write_text("#!/bin/sh\n")
    (exe / "claude.exe").chmod(0o755)
    run = cc.sides("2.1.332", tmp_path)
    assert run["claude"].spec == str(exe / "claude.exe")
    assert run["cbc-bridged"].via == "cbc-to-claude"
    assert run["cbc-bridged"].bridge_args == ("--target", "2.1.332")
    assert "cbc-raw" not in run  # the raw cbc run does not depend on the target
    scenario = {"bg-bash": ab_cmd.SCENARIOS / "bg-bash.toml"}
    jobs = cc.twin_jobs(tmp_path / "out", scenario, sides=run)
    assert [j.out.name for j in jobs] == ["bg-bash.claude.jsonl", "bg-bash.cbc-bridged.jsonl"]


def test_conformance_refuses_an_unknown_target() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "bridge", "conformance", "--target", "1.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert "--target='1.0.0': not a target Claude Code version" in p.stderr


def test_conformance_write_doc_is_the_default_targets_only() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "bridge", "conformance", "--target", "2.1.332", "--write-doc"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert "use --markdown for --target" in p.stderr
