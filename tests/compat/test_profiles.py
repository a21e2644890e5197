"""Profiles and rule settings: the stage order is pinned, settings are strict."""

from __future__ import annotations

import pytest

from compat.profiles import (
    PROFILES,
    RuleError,
    build,
    known_rules,
    make_stage,
    parse_rule_settings,
)
from compat.stage import REGISTRY


def test_every_profile_rule_is_registered_and_every_registered_rule_is_used() -> None:
    used = {r for p in PROFILES for r in known_rules(p)}
    assert used <= set(REGISTRY)
    assert set(REGISTRY) <= used, "a rule no profile runs is dead code"


def test_stage_order_matches_the_profile_lists() -> None:
    up, down = build("cbc-to-claude")
    assert [s.rule for s in down] == list(PROFILES["cbc-to-claude"]["down"])
    assert [s.rule for s in up] == list(PROFILES["cbc-to-claude"]["up"])
    assert [s.rule for s in down][:13] == [
        "session",
        "foreign-init",
        "max-turns",
        "init-once",
        "tool-errors",
        "hook-deny",
        "bash-output",
        "task-tool-results",
        "task-output-records",
        "file-tool-results",
        "agent-tool-result",
        "exit-plan-mode",
        "private-fields",
    ]
    assert build("identity") == ([], [])


def test_settings_parse_switch_modes_and_options() -> None:
    settings = parse_rule_settings(
        ["late-progress=fold, tasks-snapshot=off", "late-progress.grace=2.5"]
    )
    assert settings == {
        "late-progress": {"mode": "fold", "grace": "2.5"},
        "tasks-snapshot": {"mode": "off"},
    }
    up, down = build("cbc-to-claude", settings)
    rules = [s.rule for s in down]
    assert "tasks-snapshot" not in rules
    late = next(s for s in down if s.rule == "late-progress")
    assert late.mode == "fold"
    assert late.grace == 2.5  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["nope=on"], "unknown rule"),
        (["late-progress=sideways"], "unknown mode"),
        (["late-progress.colour=red"], "no option"),
        (["late-progress.grace=soon"], "late-progress"),
        (["session=off"], "cannot be switched off"),
        (["late-progress"], "not ID=VALUE"),
    ],
)
def test_bad_settings_are_errors_that_say_why(items: list[str], message: str) -> None:
    with pytest.raises(RuleError, match=message):
        build("cbc-to-claude", parse_rule_settings(items))


def test_identity_profile_refuses_rules_it_does_not_run() -> None:
    with pytest.raises(RuleError, match="not part of profile"):
        build("identity", parse_rule_settings(["late-progress=pass"]))


def test_make_stage_on_means_default_mode() -> None:
    st = make_stage("private-fields", {"mode": "on"})
    assert st is not None
    assert st.mode == "strip"


def test_session_and_wind_down_rules_sit_where_they_must() -> None:
    """init-shape sees only the init init-once lets through; interrupted-turn and
    result-shape see the turn after the rules that drop cbc's own post-interrupt turn;
    eof-wind-down sees results as the client will, and its shell kills pass the task rules
    that snapshot, register and complete them."""
    down = list(PROFILES["cbc-to-claude"]["down"])
    pos = {r: down.index(r) for r in down}
    assert pos["init-once"] < pos["init-shape"]
    assert pos["vocabulary"] < pos["tool-parent"]
    assert pos["interrupt-terminal"] < pos["interrupted-turn"] < pos["result-shape"]
    assert pos["permission-routing"] < pos["interrupted-turn"]
    assert pos["result-shape"] < pos["eof-wind-down"] < pos["progress-final"]
    assert pos["eof-wind-down"] < pos["terminal-guarantee"] < pos["tasks-snapshot"]


def test_launch_translations_are_switched_like_rules() -> None:
    from compat.profiles import translation_enabled

    settings = parse_rule_settings(["session-pin=off", "argv=on"])
    build("cbc-to-claude", settings)  # accepted, not stages
    assert not translation_enabled("cbc-to-claude", settings, "session-pin")
    assert translation_enabled("cbc-to-claude", settings, "argv")
    assert translation_enabled("cbc-to-claude", settings, "env")
    assert not translation_enabled("identity", {}, "argv")
    with pytest.raises(RuleError, match="unknown mode"):
        build("cbc-to-claude", parse_rule_settings(["argv=sideways"]))
    with pytest.raises(RuleError, match="no option"):
        build("cbc-to-claude", parse_rule_settings(["env.colour=red"]))
    with pytest.raises(RuleError, match="not part of profile"):
        build("identity", parse_rule_settings(["session-pin=off"]))
