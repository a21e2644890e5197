"""``ccbridge`` answers a misspelt command with the nearest one (compat/suggest.py)."""

from __future__ import annotations

import pytest

from bridge.cli import main


def test_a_misspelt_command_is_answered_with_the_nearest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["scenaro"], {}) == 2
    said = "ccbridge: unknown command 'scenaro' (Did you mean scenario?)\n"
    assert capsys.readouterr().err == said
    assert main(["zzzzzz"], {}) == 2
    assert "(ccbridge --help lists them)" in capsys.readouterr().err
