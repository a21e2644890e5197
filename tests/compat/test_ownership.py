"""One owner per fact (issue 10): every stage declares the shared facts it reads and writes
(``Stage.reads``/``writes``, names from ``compat.facts``), the declarations are what the
stages do on every capture we have, a fact has one writer in a profile (or is a declared
queue, ``compat.facts.SHARED``), and a reader comes after its writer in its direction unless
it says it reads what an earlier frame left (``reads_earlier``)."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from compat.facts import FACTS, LAUNCH, SHARED
from compat.profiles import PROFILES
from compat.stages import REGISTRY

from .ownership_support import measure

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"


def _runs() -> list[tuple[str, Path]]:
    """Every capture of a session we have, with the profile its backend runs behind."""
    fwd = sorted((ROOT / "captures" / "twins").glob("*.cbc-raw.jsonl"))
    fwd += sorted(DATA.glob("mockoai_*.transcript.jsonl")) + sorted(
        DATA.glob("nomodel_*.transcript.jsonl")
    )
    fwd += sorted((ROOT / "captures" / "reference" / "cbc-2.163.0").glob("*.transcript.jsonl"))
    rev = sorted((ROOT / "captures" / "twins-reverse").glob("*.claude-raw.jsonl"))
    rev += sorted((ROOT / "captures" / "reference" / "claude-2.1.220").glob("*.transcript.jsonl"))
    return [("cbc-to-claude", p) for p in fwd] + [("claude-to-cbc", p) for p in rev]


def _writers(profile: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = collections.defaultdict(set)
    for direction in ("up", "down"):
        for rule in PROFILES[profile][direction]:
            for fact in REGISTRY[rule].writes:
                out[fact].add(rule)
    return out


def test_every_declared_fact_exists_and_the_launch_facts_are_no_stages() -> None:
    for rule, cls in REGISTRY.items():
        assert cls.reads | cls.writes <= FACTS, rule
        assert not cls.writes & LAUNCH, (rule, cls.writes & LAUNCH)
    assert set(SHARED) <= FACTS


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_fact_has_one_writer_in_a_profile(profile: str) -> None:
    for fact, rules in _writers(profile).items():
        if fact in SHARED:
            assert rules <= SHARED[fact], (fact, sorted(rules - SHARED[fact]))
        else:
            assert len(rules) == 1, f"{fact} has writers {sorted(rules)}: one owner per fact"


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_reader_comes_after_the_writer_of_its_direction(profile: str) -> None:
    writers = _writers(profile)
    for direction in ("up", "down"):
        order = list(PROFILES[profile][direction])
        for i, rule in enumerate(order):
            cls = REGISTRY[rule]
            for fact in cls.reads - cls.reads_earlier:
                later = [w for w in writers.get(fact, ()) if w in order and order.index(w) > i]
                assert not later, (
                    f"{profile} {direction}: {rule} reads {fact}, which {later} write after "
                    "it: move it after them, or declare the fact in its reads_earlier"
                )


def test_the_declarations_are_what_the_stages_do(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs()
    assert len(runs) > 80  # the twins of both directions and the reference transcripts
    seen, _ = measure(runs, monkeypatch)
    wrong = {}
    for rule, cls in REGISTRY.items():
        writes = seen.writes.get(rule, set())
        reads = seen.reads.get(rule, set()) - writes
        extra_w, extra_r = writes - cls.writes, reads - cls.reads - cls.writes
        if extra_w or extra_r:
            wrong[rule] = {"writes": sorted(extra_w), "reads": sorted(extra_r)}
    assert not wrong, f"undeclared (add them to the stage's reads/writes): {wrong}"


def test_the_measure_sees_a_write_that_is_not_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    """The evidence is real: a stage made to write a fact it does not declare is caught."""
    from compat.frames import Frame
    from compat.stage import Context
    from compat.stages.session import SessionStage

    real = SessionStage.on_frame

    def meddling(self: SessionStage, frame: Frame, ctx: Context) -> object:
        ctx.state.control.user_lines += 1
        return real(self, frame, ctx)

    monkeypatch.setattr(SessionStage, "on_frame", meddling)
    seen, _ = measure(_runs()[:1], monkeypatch)
    assert "control.user_lines" in seen.writes["session"]
    assert "control.user_lines" not in SessionStage.writes
