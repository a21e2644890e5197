"""The stage protocol is declared on ``Stage`` and checked where a rule is declared; the
wind-down's phases are an enum whose transition table refuses what cannot happen."""

from __future__ import annotations

from typing import ClassVar

import attrs
import pytest

from compat.profiles import PROFILES
from compat.stage import REGISTRY, Context, Stage
from compat.stages.winddown import Phase


def test_a_cold_stage_must_be_lazy() -> None:
    with pytest.raises(TypeError, match="only a lazy stage can be cold"):

        @attrs.define
        class Eager(Stage):
            rule: ClassVar[str] = "test-eager"

            def cold(self, kind: tuple[str | None, str | None], ctx: Context) -> bool:
                return True


def test_raw_pass_needs_lazy_and_pure() -> None:
    with pytest.raises(TypeError, match="raw_pass needs lazy and pure"):

        @attrs.define
        class Raw(Stage):
            rule: ClassVar[str] = "test-raw"
            raw_pass: ClassVar[bool] = True
            lazy: ClassVar[bool] = True


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
        assert cls.cools == (cls.cold is not Stage.cold), rule
        assert not cls.cools or cls.lazy, rule
        assert not cls.raw_pass or (cls.lazy and cls.pure), rule
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
