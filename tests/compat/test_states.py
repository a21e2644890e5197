"""The one transition helper of the rules' state enums (compat/states.py)."""

from __future__ import annotations

import pytest

from compat.session import TaskPhase
from compat.stages.winddown import Phase
from compat.states import Phased, transitions


class Light(Phased):
    RED = "red"
    GREEN = "green"
    AMBER = "amber"


transitions(
    Light,
    "light",
    {Light.RED: {Light.GREEN}, Light.GREEN: {Light.AMBER}, Light.AMBER: {Light.RED}},
)


def test_a_move_the_table_allows_gives_the_new_state() -> None:
    assert Light.RED.to(Light.GREEN) is Light.GREEN
    assert Light.RED.can(Light.GREEN)
    assert not Light.RED.can(Light.AMBER)


def test_a_move_the_table_does_not_allow_raises_naming_the_machine() -> None:
    with pytest.raises(ValueError, match="light: no transition red -> amber"):
        Light.RED.to(Light.AMBER)


def test_every_state_must_have_its_row() -> None:
    class Half(Phased):
        A = "a"
        B = "b"

    with pytest.raises(ValueError, match="half: no transitions given for B"):
        transitions(Half, "half", {Half.A: {Half.B}})


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        (TaskPhase.NEW, TaskPhase.RUNNING, True),
        (TaskPhase.NEW, TaskPhase.NOTIFIED, True),
        (TaskPhase.RUNNING, TaskPhase.NOTIFIED, False),  # ended first
        (TaskPhase.NOTIFIED, TaskPhase.RUNNING, False),
        (Phase.OPEN, Phase.CLOSING, False),  # the EOF comes first
        (Phase.WAITING, Phase.CLOSING, True),
        (Phase.DONE, Phase.DONE, True),
    ],
)
def test_the_rules_machines_use_it(old: Phased, new: Phased, ok: bool) -> None:
    assert old.can(new) is ok
    if ok:
        assert old.to(new) is new
    else:
        with pytest.raises(ValueError, match="no transition"):
            old.to(new)
