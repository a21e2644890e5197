"""The stage protocol is declared on ``Stage`` and checked where a rule is declared; the
wind-down's phases are an enum whose transition table refuses what cannot happen."""

from __future__ import annotations

from typing import ClassVar

import attrs
import pytest

from compat.profiles import PROFILES
from compat.stage import OPTIMIZER, REGISTRY, Context, Stage
from compat.stages.winddown import Phase


@pytest.mark.parametrize("flag", ["lazy", "pure", "raw_pass", "cold_parsed", "raw_triggers"])
def test_a_rule_answers_no_question_about_speed(flag: str) -> None:
    """What is parsed and what is skipped is the pipeline's: a rule that declares one of the
    old contract's optimizer flags, or a ``cold``/``on_raw`` method, is refused."""
    with pytest.raises(TypeError, match=f"{flag}: a rule declares frames, facts and behaviour"):
        type("Fast", (Stage,), {"rule": "test-fast", flag: True})
    with pytest.raises(TypeError, match="cold: a rule declares"):

        @attrs.define
        class Cold(Stage):
            rule: ClassVar[str] = "test-cold"

            def cold(self, kind: tuple[str | None, str | None], ctx: Context) -> bool:
                return True


@pytest.mark.parametrize(
    "kinds",
    [{"user"}, frozenset({"system/"}), frozenset({"a/b/c"}), frozenset({""}), ("user",)],
)
def test_kinds_are_declared_as_type_or_type_subtype_names(kinds: object) -> None:
    bad = kinds
    with pytest.raises(TypeError, match="kinds must be"):

        @attrs.define
        class Odd(Stage):
            rule: ClassVar[str] = "test-odd-kinds"
            kinds: ClassVar[object] = bad  # type: ignore[assignment]


@pytest.mark.parametrize("triggers", [(b"",), ("text",), [b"x"], b"x"])
def test_triggers_are_declared_as_non_empty_bytes(triggers: object) -> None:
    bad = triggers
    with pytest.raises(TypeError, match="triggers must be"):

        @attrs.define
        class Odd(Stage):
            rule: ClassVar[str] = "test-odd-triggers"
            triggers: ClassVar[object] = bad  # type: ignore[assignment]


def test_every_registered_stage_declares_consistently() -> None:
    for rule, cls in REGISTRY.items():
        assert not any(hasattr(cls, name) for name in OPTIMIZER), rule
    in_profiles = {r for dirs in PROFILES.values() for stages in dirs.values() for r in stages}
    assert {"eof-wind-down", "private-fields"} <= in_profiles


@pytest.mark.parametrize(
    ("start", "to"),
    [(Phase.CLOSING, Phase.WAITING), (Phase.DONE, Phase.OPEN), (Phase.OPEN, Phase.CLOSING)],
)
def test_the_wind_down_refuses_an_impossible_transition(start: Phase, to: Phase) -> None:
    with pytest.raises(ValueError, match="no transition"):
        start.to(to)


def test_the_wind_down_walks_its_phases_in_order() -> None:
    p = Phase.OPEN.to(Phase.WAITING).to(Phase.CLOSING).to(Phase.DONE)
    assert p is Phase.DONE
