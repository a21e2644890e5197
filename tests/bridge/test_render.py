"""The tool commands' terminal output, drawn with rich (``bridge.render``): exactly the
colour ``bridge.colour`` decided and the width asked for, whatever the environment tells
rich; no line wider than that width; a peer's string shown as it is (escaped), never read
as rich markup, a link or an emoji code."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from typing import Any

import pytest
from rich.table import Table
from rich.text import Text

from analysis import check_cmd, conformance
from analysis import conformance_render as conf
from analysis.diff import diff
from analysis.diff import format_text as diff_text
from bridge import demo_render, demo_rows, render, rules_cmd
from bridge.demo_rows import Row, summarize
from compat import capture
from compat.profiles import describe

ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: rich markup, a link and an emoji code, as a peer can send them in any string
MARKUP = "[red]x[/red] :smile: [link=javascript:alert(1)]click[/link] [bold]"
#: every variable rich reads, each saying the opposite of what the command decided
HOSTILE = {
    "NO_COLOR": "1",
    "FORCE_COLOR": "1",
    "TERM": "dumb",
    "COLORTERM": "truecolor",
    "TTY_COMPATIBLE": "0",
    "TTY_INTERACTIVE": "1",
    "COLUMNS": "20",
    "LINES": "3",
    "JUPYTER_COLUMNS": "10",
}
LONG = "a-rule-name-with-many-hyphens " * 6


@pytest.fixture(params=["clean", "hostile", "forced"])
def environment(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """No variable rich reads; every one of them against the decision; FORCE_COLOR alone."""
    for name in HOSTILE:
        monkeypatch.delenv(name, raising=False)
    env = {"clean": {}, "hostile": HOSTILE, "forced": {"FORCE_COLOR": "1", "TERM": "xterm"}}
    for name, value in env[request.param].items():
        monkeypatch.setenv(name, value)
    return str(request.param)


@pytest.mark.usefixtures("environment")
def test_the_console_is_what_the_command_decided() -> None:
    on, off = render.console(80, True), render.console(80, False)
    assert (on.width, off.width) == (80, 80)
    assert on.color_system == "standard"
    assert off.color_system is None
    red = Text.styled("x", "red")
    assert render.render(red, width=80, colour=True) == "\x1b[31mx\x1b[0m"
    assert render.render(red, width=80, colour=False) == "x"
    lines = render.render("word " * 40, width=80).splitlines()
    assert len(lines) == 3
    assert max(map(len, lines)) == 79  # wrapped at the width asked, not at COLUMNS=20
    whole = render.render("word " * 40, width=80, wrap=False)
    assert whole == ("word " * 40).rstrip()  # wrap=False: one line, however long


@pytest.mark.usefixtures("environment")
def test_colour_off_has_no_escape_and_on_has_them(rows: list[Row]) -> None:
    counts = demo_rows.counts(rows, 3)
    draws: list[Callable[[bool], str]] = [
        lambda c: demo_render.render_summary(rows, 80, c),
        lambda c: demo_render.render_rows(rows, 80, c),
        lambda c: demo_render.legend(80, c),
        lambda c: demo_render.verdict(counts, "2.1.220", 0, 80, c),
        lambda c: demo_render.stats_table(_stats(), 80, c),
        lambda c: check_cmd.rule_list({"framing": "one JSON object a line"}, c, 80),
    ]
    for draw in draws:
        plain, coloured = draw(False), draw(True)
        assert "\x1b" not in plain
        assert ANSI.search(coloured)
        assert ANSI.sub("", coloured) == plain  # the same text, coloured


def test_trailing_spaces_go_and_the_codes_among_them_stay() -> None:
    assert render._trim("ab  \x1b[0m  \x1b[1m \x1b[0m ") == "ab\x1b[0m\x1b[1m\x1b[0m"
    assert render._trim("  ab") == "  ab"
    table = Table.grid(padding=(0, 1))
    table.add_row(Text.styled("a", "red"), "")
    table.add_row(Text.styled("bbbbbb", "red"), "c")
    coloured = render.render(table, width=40, colour=True)
    assert [line.rstrip() for line in coloured.splitlines()] == coloured.splitlines()
    assert ANSI.sub("", coloured) == "a\nbbbbbb c"


def test_the_width_is_the_terminals_or_80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert (render.columns(), render.columns(160)) == (100, 160)
    monkeypatch.setenv("COLUMNS", "60")
    assert render.columns() == 60
    monkeypatch.setenv("COLUMNS", "5")
    assert render.columns() == 20  # never narrower than that
    monkeypatch.delenv("COLUMNS")

    def not_a_terminal(fd: int = 1) -> os.terminal_size:
        raise OSError("not a terminal")

    monkeypatch.setattr(os, "get_terminal_size", not_a_terminal)
    assert shutil.get_terminal_size((80, 24)).columns == 80
    assert render.columns() == 80


# -- no line wider than the width ------------------------------------------------------


@pytest.fixture
def rows() -> list[Row]:
    frames: list[dict[str, Any]] = [
        {"type": "system", "subtype": "task_started", "workflow_name": LONG, "task_type": LONG},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": LONG * 3}]}},
        {"type": "user", "message": {"content": LONG}},
    ]
    out = [
        Row(0.5, "down", summarize(frames[0]), rules=[LONG.strip(), "b-rule"], sent_on=True),
        Row(9.0, "down", summarize(frames[1]), action="dropped", by="vocabulary"),
        Row(9.5, "up", summarize(frames[2]), sent_on=True),
        Row(9.6, "down", "", action="synthesized", by="tasks-snapshot", sent_on=True),
    ]
    out[0].got = summarize({**frames[0], "workflow_name": "w", "prompt": "p"})
    return out


def _stats() -> dict[str, Any]:
    return {
        "frames": {"up": {"in": 3, "out": 3}, "down": {"in": 10**30, "out": 16}},
        "rules": {LONG: {"rewritten": 1, LONG: 10**20, "late": 2}, "vocabulary": {"dropped": 2}},
    }


def _conformance_rows(name: str) -> tuple[list[conformance.Row], conformance.Known]:
    known = conformance.load_known(
        f'[[difference]]\nid="t"\npaths=["**nothing"]\ncbc="{LONG}"\nevidence="e"\n', "k.toml"
    )
    meta = {"backend": "claude", "backend_version": "2.1.220", "created": "2026-01-01"}
    frames = [{"type": "assistant", "message": {"content": "ok"}}]
    good = capture.parse(json.dumps(f).encode() for f in frames)
    claude = capture.Capture(meta, good.records, "ccbridge")
    other = [{"type": "assistant", "message": {"content": LONG}, LONG: name}]
    bad = capture.Capture(
        {**meta, "backend": "cbc"},
        capture.parse(json.dumps(f).encode() for f in other).records,
        "ccbridge",
    )
    sides = {"claude": claude, "cbc-bridged": bad, "cbc-raw": bad}
    return [conformance.row(name, sides, known), conformance.row(name + "2", {}, known)], known


@pytest.mark.parametrize("colour", [False, True])
def test_no_line_is_wider_than_80_at_80(rows: list[Row], colour: bool) -> None:
    crows, known = _conformance_rows("a-scenario-" + "x" * 120)
    about = {rule: what for rule, what, _ in describe()}
    texts = {
        "summary": demo_render.render_summary(rows, 80, colour, about),
        "rows": demo_render.render_rows(rows, 80, colour),
        "legend": demo_render.legend(80, colour),
        "verdict": demo_render.verdict(demo_rows.counts(rows, 3), "2.1.220", None, 80, colour),
        "stats": demo_render.stats_table(_stats(), 80, colour),
        "conformance": conf.render_text(crows, known, width=80),
        "rules": rules_cmd.rule_list(describe(), [], 80),
        "profiles": rules_cmd.profile_list(80),
        "check --rules": check_cmd.rule_list({LONG: LONG * 2}, colour, 80),
    }
    for name, text in texts.items():
        lines = ANSI.sub("", text).splitlines()
        assert lines, name
        assert max(map(len, lines)) <= 80, (name, max(lines, key=len))
        assert not any(line.endswith(" ") for line in lines), name
    # a rule name is wrapped between words, never broken at its hyphens
    for line in ANSI.sub("", texts["rows"]).splitlines():
        assert not re.search(r"[a-z]-$", line), line


# -- a peer's markup is text -------------------------------------------------------------


def _literal(text: str) -> None:
    """``MARKUP`` shown as it was sent (the words of a wrapped line joined again), and
    nothing of what rich would have made of it."""
    plain = ANSI.sub("", text)
    assert MARKUP in " ".join(plain.split()), plain
    assert "😄" not in plain
    assert "\x1b]8;" not in text  # no hyperlink (OSC 8)
    for line in text.splitlines():  # "[bold]" switched nothing on
        assert "\x1b[1m" not in line.partition("[bold]")[2], line


@pytest.mark.parametrize("colour", [False, True])
def test_rich_markup_and_emoji_codes_from_a_peer_come_out_literally(colour: bool) -> None:
    rows = [
        Row(0.0, "down", summarize({"type": MARKUP}), rules=["a-rule"], sent_on=True),
        Row(1.0, "down", summarize({"type": "system", "subtype": MARKUP}), by=MARKUP),
        Row(2.0, "up", summarize({"type": "user", "message": {"content": MARKUP}})),
    ]
    rows[0].got = summarize({"type": MARKUP, "k": 1})
    rows[1].action = "dropped"
    _literal(demo_render.render_rows(rows, 160, colour))
    _literal(demo_render.render_summary(rows, 160, colour))
    stats = {"frames": {}, "rules": {"[red]x[/red]": {"dropped": 1}, "vocabulary": {MARKUP: 2}}}
    table = demo_render.stats_table(stats, 160, colour)
    _literal(table)
    assert re.search(r"^\[red\]x\[/red\] +1$", ANSI.sub("", table), re.M)
    crows, known = _conformance_rows(MARKUP)
    _literal(conf.render_text(crows, known, width=160))
    a = capture.parse([b'{"type":"assistant","message":{"content":"ok"}}'])
    b = capture.parse([json.dumps({"type": "assistant", "message": {"content": MARKUP}}).encode()])
    _literal(diff_text(diff(a, b), color=colour, names=(MARKUP, MARKUP)))
    report = f"line 1: [task-type] {MARKUP}\n    {MARKUP}\n1 violation(s) ({MARKUP})\n"
    coloured = check_cmd._colour(report, bad=True)
    _literal(coloured)
    assert ANSI.sub("", coloured) == report
    assert "\x1b[33m[task-type]\x1b[0m" in coloured  # our own tag, coloured
    _literal(check_cmd.rule_list({MARKUP: MARKUP}, colour, 160))
    _literal(rules_cmd.rule_list([("user-line", MARKUP, ("on",))], [], 160))
