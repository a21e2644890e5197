"""commander's "Did you mean" (compat/suggest.py) and the drop-in's refusal of an option
Claude does not know (compat/headless.py ``unknown_option``)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compat.flags import CLAUDE_VISIBLE
from compat.headless import mode_of, unknown_option
from compat.suggest import did_you_mean, distance, similar

from .. import conftest


def test_the_candidates_are_what_claude_help_lists() -> None:
    text = (conftest.REPO / "captures/reference/claude-2.1.220/help.txt").read_text()
    listed = re.findall(r"^  (?:-[a-zA-Z], )?(--[a-zA-Z0-9-]+)", text, re.M)
    assert CLAUDE_VISIBLE == tuple(listed)


@pytest.mark.parametrize(
    ("a", "b", "d"),
    [("", "", 0), ("abc", "abc", 0), ("abc", "acb", 1), ("ca", "abc", 3), ("kitten", "sitting", 3)],
)
def test_distance_is_the_optimal_string_alignment_one(a: str, b: str, d: int) -> None:
    assert distance(a, b) == d


@given(st.text(max_size=8), st.text(max_size=8))
def test_distance_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert distance(a, b) == distance(b, a) <= max(len(a), len(b))
    assert (distance(a, b) == 0) == (a == b)


@pytest.mark.parametrize(
    ("word", "hint"),
    [
        ("--outptu-format", "\n(Did you mean --output-format?)"),
        ("--modle", "\n(Did you mean --model?)"),
        ("--verbos", "\n(Did you mean --verbose?)"),
        ("--permision-mode", "\n(Did you mean --permission-mode?)"),
        ("--tool", "\n(Did you mean --tools?)"),
        ("--zzzzzzzz", ""),
    ],
)
def test_claudes_suggestion_among_its_listed_options(word: str, hint: str) -> None:
    assert did_you_mean(word, CLAUDE_VISIBLE) == hint


def test_several_at_the_same_distance_are_listed_sorted() -> None:
    assert similar("--bat", ["--cat", "--bar", "--xyz"]) == ["--bar", "--cat"]
    assert did_you_mean("--bat", ["--cat", "--bar"]) == "\n(Did you mean one of --bar, --cat?)"


def test_the_drop_in_refuses_the_first_option_neither_cli_knows_as_claude_does() -> None:
    mode = mode_of(["--outptu-format", "json", "-p", "hi"])
    assert mode.usage_error() == (
        "error: unknown option '--outptu-format'\n(Did you mean --output-format?)"
    )
    assert mode_of(["-p", "--frobnicate=1", "hi"]).usage_error() == (
        "error: unknown option '--frobnicate=1'"
    )
    assert unknown_option("-Z") == "error: unknown option '-Z'"
    # what Claude knows, or cbc declares (an SDK's extra_args aimed at cbc), is no error
    assert mode_of(["-p", "--model", "x", "--verbose", "hi"]).usage_error() is None


def test_a_misspelt_rule_or_option_is_answered_with_the_nearest() -> None:
    from compat.profiles import build, parse_rule_settings
    from compat.rulespec import RuleError

    with pytest.raises(RuleError, match=r"unknown rule 'privat-fields' \(Did you mean private-f"):
        build("cbc-to-claude", parse_rule_settings(["privat-fields=off"]))
    with pytest.raises(RuleError, match=r"no option 'settel' \(Did you mean settle\?\)"):
        build("cbc-to-claude", parse_rule_settings(["user-line.settel=0"]))
    with pytest.raises(RuleError, match=r"unknown rule 'xyzzy' \(ccbridge rules lists them\)"):
        build("cbc-to-claude", parse_rule_settings(["xyzzy=off"]))


def test_an_option_without_its_value_is_refused_as_claude_refuses_it() -> None:
    """commander throws while it parses: before an unknown option (recorded probes
    missing-value*, tests/bridge/data/headless)."""
    assert mode_of(["-p", "hi", "--model"]).usage_error() == (
        "error: option '--model <model>' argument missing"
    )
    assert mode_of(["--frob", "-p", "hi", "--add-dir"]).usage_error() == (
        "error: option '--add-dir <directories...>' argument missing"
    )
    assert mode_of(["-p", "--model=", "hi"]).usage_error() is None  # an empty value is one


def test_the_placeholders_are_what_claude_help_shows() -> None:
    from compat.flags import CLAUDE_PLACEHOLDERS

    text = (conftest.REPO / "captures/reference/claude-2.1.220/help.txt").read_text()
    shown = dict(re.findall(r"^  (?:-[a-zA-Z], )?(--[a-zA-Z0-9-]+) (<[^>]+>)", text, re.M))
    assert shown == CLAUDE_PLACEHOLDERS
