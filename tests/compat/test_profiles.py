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
    assert [s.rule for s in down][:5] == ["session", "foreign-init", "init-once",
                                         "private-fields", "vocabulary"]
    assert build("identity") == ([], [])


def test_settings_parse_switch_modes_and_options() -> None:
    settings = parse_rule_settings(["late-progress=fold, tasks-snapshot=off",
                                    "late-progress.grace=2.5"])
    assert settings == {"late-progress": {"mode": "fold", "grace": "2.5"},
                        "tasks-snapshot": {"mode": "off"}}
    up, down = build("cbc-to-claude", settings)
    rules = [s.rule for s in down]
    assert "tasks-snapshot" not in rules
    late = next(s for s in down if s.rule == "late-progress")
    assert late.mode == "fold"
    assert late.grace == 2.5  # type: ignore[attr-defined]


@pytest.mark.parametrize(("items", "message"), [
    (["nope=on"], "unknown rule"),
    (["late-progress=sideways"], "unknown mode"),
    (["late-progress.colour=red"], "no option"),
    (["late-progress.grace=soon"], "late-progress"),
    (["session=off"], "cannot be switched off"),
    (["late-progress"], "not ID=VALUE"),
])
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
