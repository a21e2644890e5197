"""One colour policy (``bridge.colour``) for every command that colours: ``--color
always|never`` first, then ``NO_COLOR`` (set and not empty), ``FORCE_COLOR`` (not empty),
``TERM=dumb``, and a terminal; the whole decision table, and each colouring command's
``--color`` winning over the environment."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.cli import main
from bridge.colour import CHOICES, use_colour

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Closed:
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


TTY, PIPE = Terminal(), io.StringIO()

#: (stream, environment, --color) -> colour?
TABLE: list[tuple[Any, dict[str, str], str, bool]] = [
    # nothing said: a terminal decides
    (TTY, {}, "auto", True),
    (PIPE, {}, "auto", False),
    # NO_COLOR set and not empty: never (whatever its value, FORCE_COLOR too)
    (TTY, {"NO_COLOR": "1"}, "auto", False),
    (TTY, {"NO_COLOR": "0"}, "auto", False),
    (TTY, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, "auto", False),
    # NO_COLOR empty: as if unset
    (TTY, {"NO_COLOR": ""}, "auto", True),
    (PIPE, {"NO_COLOR": ""}, "auto", False),
    # FORCE_COLOR not empty: colour off a terminal too, and over TERM=dumb
    (PIPE, {"FORCE_COLOR": "1"}, "auto", True),
    (PIPE, {"FORCE_COLOR": "true"}, "auto", True),
    (TTY, {"FORCE_COLOR": "1", "TERM": "dumb"}, "auto", True),
    (PIPE, {"NO_COLOR": "", "FORCE_COLOR": "1"}, "auto", True),
    # FORCE_COLOR empty: as if unset
    (PIPE, {"FORCE_COLOR": ""}, "auto", False),
    (TTY, {"FORCE_COLOR": ""}, "auto", True),
    # TERM=dumb: no colour, even on a terminal; another TERM changes nothing
    (TTY, {"TERM": "dumb"}, "auto", False),
    (TTY, {"TERM": "xterm-256color"}, "auto", True),
    (PIPE, {"TERM": "xterm-256color"}, "auto", False),
    # a stream that cannot say, or is closed: no colour
    (object(), {}, "auto", False),
    (Closed(), {}, "auto", False),
    # --color always / never win over everything
    (PIPE, {"NO_COLOR": "1", "TERM": "dumb"}, "always", True),
    (Closed(), {}, "always", True),
    (TTY, {"FORCE_COLOR": "1"}, "never", False),
    (TTY, {}, "never", False),
]


@pytest.mark.parametrize(("stream", "env", "choice", "coloured"), TABLE)
def test_the_decision_table(stream: Any, env: dict[str, str], choice: str, coloured: bool) -> None:
    assert use_colour(stream, env, choice=choice) is coloured


def test_the_environment_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    assert use_colour(TTY)
    monkeypatch.setenv("NO_COLOR", "")
    assert use_colour(TTY)
    monkeypatch.setenv("NO_COLOR", "yes")
    assert not use_colour(TTY)
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_colour(PIPE)


def test_one_function_decides() -> None:
    """No other module of the tools reads NO_COLOR, FORCE_COLOR or TERM for colour."""
    found = []
    for layer in ("bridge", "analysis", "harness"):
        for path in sorted((REPO / layer).rglob("*.py")):
            text = path.read_text()
            if path.name != "colour.py" and re.search(r"NO_COLOR|FORCE_COLOR|\"TERM\"", text):
                found.append(str(path.relative_to(REPO)))
    assert found == []


@pytest.fixture
def plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm")


def _check_and_diff(tmp_path: Path) -> list[list[str]]:
    bad = tmp_path / "bad.jsonl"  # a task_started with a task type Claude never sends
    bad.write_text(
        '{"type":"system","subtype":"task_started","task_id":"t","task_type":"Workflow",'
        '"session_id":"s","uuid":"u"}\n'
    )
    good = tmp_path / "good.jsonl"
    good.write_text('{"type":"system","subtype":"status","session_id":"s","uuid":"u"}\n')
    return [["check", str(bad)], ["diff", str(good), str(bad)]]


@pytest.mark.usefixtures("plain_env")
@pytest.mark.parametrize(
    ("env", "tty", "flag", "coloured"),
    [
        ({}, True, [], True),
        ({}, False, [], False),
        ({"NO_COLOR": ""}, True, [], True),
        ({"NO_COLOR": "1"}, True, [], False),
        ({"FORCE_COLOR": "1"}, False, [], True),
        ({"TERM": "dumb"}, True, [], False),
        ({"NO_COLOR": "1"}, False, ["--color", "always"], True),
        ({"FORCE_COLOR": "1"}, True, ["--color", "never"], False),
        ({}, True, ["--color", "auto"], True),
    ],
)
def test_check_and_diff_follow_the_policy(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    tty: bool,
    flag: list[str],
    coloured: bool,
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for cmd in _check_and_diff(tmp_path):
        out = Terminal() if tty else io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        assert main([*cmd, *flag]) == 1
        assert bool(ANSI.search(out.getvalue())) is coloured, (cmd, env, tty, flag)


def test_every_colouring_command_takes_color(capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in ("check", "diff", "ab", "demo"):
        assert main([cmd, "--help"]) == 0
        assert "--color" in capsys.readouterr().out, cmd
    assert main(["check", "--color", "sometimes", "x"]) == 2
    assert "sometimes" in capsys.readouterr().err
    assert CHOICES == ("auto", "always", "never")
