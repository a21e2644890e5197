"""One transition helper for every state enum of the rules.

A rule's state is an enum whose allowed moves are a table (``{state: frozenset(next
states)}``), declared once beside it with ``transitions``; ``state.to(new)`` is the only way
to move, and a move the table does not allow raises (a bug in the rule, caught by the tests
on every path, not a protocol error). Flags a state implies are derived from the state
(a frozenset of states, or a property), never kept beside it.

    class Phase(Phased):
        OPEN = "open"
        DONE = "done"

    transitions(Phase, "eof-wind-down", {Phase.OPEN: {Phase.DONE}, Phase.DONE: set()})
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import TypeVar

P = TypeVar("P", bound="Phased")
#: every ``Phased`` enum's table and the name its errors give (``transitions``)
_TABLES: dict[type[Phased], tuple[str, dict[Phased, frozenset[Phased]]]] = {}


class Phased(enum.Enum):
    """A state enum with a transition table (``transitions``)."""

    def to(self, new: P) -> P:
        """``new``, when the table allows the move from this state; otherwise ValueError."""
        name, table = _TABLES[type(self)]
        if new not in table[self]:
            raise ValueError(f"{name}: no transition {self.value} -> {new.value}")
        return new

    def can(self, new: Phased) -> bool:
        """Whether the table allows the move from this state to ``new``."""
        return new in _TABLES[type(self)][1][self]


def transitions(
    cls: type[Phased], name: str, table: Mapping[Phased, Iterable[Phased]]
) -> dict[Phased, frozenset[Phased]]:
    """Declare ``cls``'s allowed moves (every state must be listed, even a final one with
    no move) under ``name`` (what its errors say); returns the table, frozen."""
    missing = [s.name for s in cls if s not in table]
    if missing:
        raise ValueError(f"{name}: no transitions given for {', '.join(missing)}")
    frozen = {state: frozenset(nexts) for state, nexts in table.items()}
    _TABLES[cls] = (name, frozen)
    return frozen
