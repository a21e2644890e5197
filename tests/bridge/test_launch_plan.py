"""The CLI is parsed once (issue 10): rule settings are parsed once into one value
(``compat.rulespec``), the client's argv is translated once into a frozen ``launch.Plan``
that the session only reads, and ``main(argv, env)`` runs in-process on the environment it
is given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge import cli, config, dropin, launch, proxy, run_cmd
from compat import argv as forward_argv
from compat import argv_cbc, rulespec
from compat.exits import Exit

CLIENT = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]


def test_rule_settings_parse_into_one_value_later_items_winning() -> None:
    got = rulespec.parse(["late-progress=fold, late-progress.grace=2", "tasks-snapshot=off"])
    assert got == {
        "late-progress": {"mode": "fold", "grace": "2"},
        "tasks-snapshot": {"mode": "off"},
    }
    assert rulespec.parse(["late-progress=pass"], into=got)["late-progress"] == {
        "mode": "pass",
        "grace": "2",
    }
    assert got["late-progress"]["mode"] == "fold"  # ``into`` is not changed
    with pytest.raises(rulespec.RuleError, match="not ID=VALUE"):
        rulespec.parse(["late-progress"])


rule_id = st.from_regex(r"[a-z][a-z-]{0,12}", fullmatch=True)
option = st.from_regex(r"[a-z_]{1,8}", fullmatch=True)
value = st.from_regex(r"[A-Za-z0-9_.:/-]{0,10}", fullmatch=True)


@given(st.dictionaries(rule_id, st.dictionaries(option, value, min_size=1, max_size=3)))
def test_every_form_of_the_settings_is_the_same_value(parsed: dict[str, dict[str, str]]) -> None:
    items = rulespec.items(parsed)
    assert rulespec.parse(items) == parsed
    assert rulespec.settings(items) == parsed
    assert rulespec.settings(parsed) == parsed
    flat = dict(i.split("=", 1) for i in items)
    assert rulespec.settings(flat) == parsed


def test_the_config_file_takes_rules_as_dotted_keys_or_tables(tmp_path: Path) -> None:
    conf = tmp_path / "ccbridge.toml"
    conf.write_text(
        '[rules]\n"tasks-snapshot" = "off"\nlate-progress.grace = 2\nlate-progress.mode = "fold"\n'
    )
    settings = config.load({"CCBRIDGE_CONFIG": str(conf), "CCBRIDGE_RULES": "argv.x=1"})
    assert settings.rules == {
        "tasks-snapshot": {"mode": "off"},
        "late-progress": {"grace": "2", "mode": "fold"},
        "argv": {"x": "1"},
    }
    with pytest.raises(config.ConfigError, match="CCBRIDGE_RULES"):
        config.load({"CCBRIDGE_CONFIG": str(conf), "CCBRIDGE_RULES": "broken"})


def _plan(profile: str, client: list[str], env: dict[str, str] | None = None) -> launch.Plan:
    return launch.plan(
        "test", profile, ["backend"], client, env or {"HOME": "/h"}, (), launch.DeferredLog()
    )


def test_the_argv_is_translated_once_for_the_whole_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = {"forward": 0, "reverse": 0}
    real_forward, real_reverse = forward_argv.translate_to_cbc, argv_cbc.translate_to_claude

    def counted_forward(*a: object, **k: object) -> forward_argv.Translation:
        calls["forward"] += 1
        return real_forward(*a, **k)  # type: ignore[arg-type]

    def counted_reverse(*a: object, **k: object) -> argv_cbc.Translation:
        calls["reverse"] += 1
        return real_reverse(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(forward_argv, "translate_to_cbc", counted_forward)
    monkeypatch.setattr(argv_cbc, "translate_to_claude", counted_reverse)
    for profile, client in (
        ("cbc-to-claude", [*CLIENT, "--permission-prompt-tool", "stdio"]),
        ("claude-to-cbc", [*CLIENT, "--session-id", "not-a-uuid"]),
    ):
        plan = _plan(profile, client)
        engine = proxy.build_engine(plan.profile, plan.rules, epoch_ms=0)
        proxy.set_launch_facts(engine, plan)
    assert calls == {"forward": 1, "reverse": 1}
    # what the rules know is the plan's translation, not another one
    fwd = _plan("cbc-to-claude", [*CLIENT, "--permission-prompt-tool", "stdio"])
    assert fwd.forward is not None
    assert fwd.forward.pinned
    assert fwd.backend_argv[-2:] == ("--session-id", fwd.forward.session_id)
    engine = proxy.build_engine(fwd.profile, fwd.rules, epoch_ms=0)
    proxy.set_launch_facts(engine, fwd)
    assert engine.state.stdio_permissions is True


def test_the_plan_is_frozen_and_holds_the_wind_down_ceiling_once() -> None:
    plan = _plan("cbc-to-claude", CLIENT, {"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "1500"})
    assert plan.rules["eof-wind-down"] == {"ceiling": "1.5"}
    with pytest.raises(AttributeError):
        plan.profile = "identity"  # type: ignore[misc]
    off = launch.plan(
        "test",
        "cbc-to-claude",
        ["b"],
        CLIENT,
        {"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "1500"},
        ["eof-wind-down=off"],
        launch.DeferredLog(),
    )
    assert off.rules["eof-wind-down"] == {"mode": "off"}
    assert "env" not in _plan("identity", CLIENT).rules


def test_main_reads_the_environment_it_is_given_not_os_environ(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("CCBRIDGE_BACKEND", "/bin/true")
    env = {"CCBRIDGE_CONFIG": os.devnull, "HOME": str(tmp_path)}
    assert run_cmd.main(["--profile", "identity"], env) == Exit.USAGE
    assert "--backend is required" in capsys.readouterr().err
    assert cli.main(["run", "--profile", "identity"], env) == Exit.USAGE
    no_cbc = {**env, "PATH": str(tmp_path), "CCBRIDGE_BACKENDS_DIR": str(tmp_path)}
    monkeypatch.setattr("bridge.backends._cbc_from_package", lambda: None)
    assert dropin.main(CLIENT, no_cbc) == Exit.NOT_FOUND
    assert "no cbc backend found" in capsys.readouterr().err


def test_with_the_argv_rule_off_the_line_passes_as_is_and_the_rules_still_learn_the_launch() -> (
    None
):
    client = [*CLIENT, "--permission-prompt-tool", "stdio"]
    plan = launch.plan(
        "test", "cbc-to-claude", ["b"], client, {"HOME": "/h"}, ["argv=off"], launch.DeferredLog()
    )
    assert plan.backend_argv == ("b", *client)  # not translated, no session pin
    assert plan.forward is not None
    engine = proxy.build_engine(plan.profile, plan.rules, epoch_ms=0)
    proxy.set_launch_facts(engine, plan)
    assert engine.state.stdio_permissions is True  # as before the plan: the client's own flag
