"""The client's ``--max-turns`` reaches cbc unchanged and the rules as the launch fact
``max_turns`` (rule ``max-turns``, issue 26): a positive integer, else no limit."""

from __future__ import annotations

import pytest

from bridge import launch, proxy
from compat.argv import translate_to_cbc

CLIENT = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]


@pytest.mark.parametrize(
    ("given", "limit"),
    [
        (["--max-turns", "3"], 3),
        (["--max-turns=2"], 2),
        (["--max-turns", "1", "--max-turns", "4"], 4),  # the last one, as commander
        (["--max-turns", "0"], None),  # Claude: no limit
        (["--max-turns", "x"], None),  # not a number (Claude refuses it)
        ([], None),
    ],
)
def test_the_limit_as_the_rules_read_it(given: list[str], limit: int | None) -> None:
    assert translate_to_cbc(["-p", "hi", *given]).max_turns == limit


def test_the_launch_gives_cbc_the_flag_and_the_engine_the_fact() -> None:
    plan = launch.plan(
        "test",
        "cbc-to-claude",
        ["backend"],
        [*CLIENT, "--max-turns", "2"],
        {"HOME": "/h"},
        (),
        launch.DeferredLog(),
    )
    argv = list(plan.backend_argv)
    assert argv[argv.index("--max-turns") + 1] == "2"
    engine = proxy.build_engine(plan.profile, plan.rules, epoch_ms=0)
    assert engine.state.max_turns is None
    proxy.set_launch_facts(engine, plan)
    assert engine.state.max_turns == 2
