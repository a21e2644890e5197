"""``ccbridge demo`` shows what the bridge did (issues 9, "The first hour"): by default one
screen (at most ~40 lines, 80 columns at ``COLUMNS=80``) of the frames the bridge changed,
dropped, held or made, grouped, each with its rules, with a legend, the recorded times and
a verdict from the contract check; ``--all`` every frame both ways, wrapped (never cut, a
rule name never broken at a hyphen), and the statistics as a table; colour only as
``bridge.colour`` decides."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import pytest

from analysis.contract import check
from bridge import demo, demo_render, demo_rows
from bridge.demo_rows import Row
from compat import capture

from .test_cli import BIN, run
from .test_colour import Terminal

ANSI = re.compile(r"\x1b\[[0-9;]*m")
BUNDLED = Path(demo.__file__).parent / "data" / "demo-session.jsonl"
#: what a hostile backend puts in a name (terminal escapes, C1 CSI, bidi override)
EVIL = "evil\x1b]0;pwned\x07\x1b[31m\x9b31m\u202e\u2066\u200b"
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f\x80-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


def plain_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return {**env, "COLUMNS": "80", **extra}


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A demo run as a user runs it (COLUMNS=80, not a terminal), its session kept."""
    d = tmp_path_factory.mktemp("demo")
    r = run(str(BIN / "ccbridge"), "demo", "--keep", str(d), env=plain_env())
    assert r.returncode == 0, r.stderr
    return d, r.stdout.decode()


@pytest.fixture(scope="module")
def session(kept: tuple[Path, str]) -> capture.Capture:
    return capture.parse((kept[0] / "demo-session.capture.jsonl").read_bytes().splitlines())


@pytest.fixture(scope="module")
def source() -> capture.Capture:
    return capture.parse(BUNDLED.read_bytes().splitlines())


@pytest.fixture(scope="module")
def rows(session: capture.Capture, source: capture.Capture, kept: tuple[Path, str]) -> list[Row]:
    return demo.trace(session, str(kept[0] / "work"), source)[1]


def test_every_touched_frame_names_its_rules(rows: list[Row], session: capture.Capture) -> None:
    up = [r for r in rows if r.direction == "up" and r.action != "synthesized"]
    # the client's own lines are shown: initialize, the prompt, the interrupt
    assert [r.sent.split(" ")[:2] for r in up] == [
        ["control_request", "initialize"],
        ["user", "use"],
        ["control_request", "interrupt"],
    ]
    assert "interrupt-request" in up[2].rules
    started = next(r for r in rows if r.sent.startswith("system/task_started"))
    assert {"workflow-name", "workflow-prompt"} <= set(started.rules)
    assert started.got is not None
    assert "workflow_name=par-slow-flow" in started.got
    made = {r.by for r in rows if r.action == "synthesized"}
    assert {"tasks-snapshot", "interrupt-terminal", "progress-final"} <= made
    dropped = {r.by for r in rows if r.action == "dropped"}
    assert {"vocabulary", "interrupt-terminal"} <= dropped
    # a frame the bridge made and a later rule held stays the bridge's (not cbc's)
    killed = next(r for r in rows if r.sent == "system/task_updated patch.status=killed")
    assert (killed.action, killed.by, killed.held_by) == (
        "synthesized",
        "interrupt-terminal",
        "progress-final",
    )
    assert killed.sent_on
    assert demo_rows.fate(killed) == "synthesized"
    # every frame the client received is a row that reached it
    received = len(session.lines("client_out"))
    assert sum(1 for r in rows if r.direction == "down" and r.sent_on) == received


def test_times_are_the_recordings(rows: list[Row], source: capture.Capture) -> None:
    """Each cbc frame at the time the replayed capture recorded it (seconds in, up to 35 s),
    not the replay's few milliseconds; the client's at its recorded lines' times."""
    cbc = [r for r in rows if r.direction == "down" and r.action != "synthesized"]
    assert [r.t for r in cbc] == [r.t for r in source.lines("stdout")]
    client = [r for r in rows if r.direction == "up"]
    assert [round(r.t, 3) for r in client] == [round(r.t, 3) for r in source.lines("stdin")]
    assert max(r.t for r in rows) > 30
    # without the source: the session's own clock
    assert demo.recorded_time(capture.parse([]), None)(1.5) == 1.5


def test_the_default_fits_one_screen(kept: tuple[Path, str], session: capture.Capture) -> None:
    out = kept[1].rsplit("\n\nthe whole session is in\n", 1)[0]  # --keep's path, last
    lines = out.splitlines()
    assert len(lines) <= 42, out
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert not ANSI.search(out)  # not a terminal
    assert lines[0].startswith("Replayed a real cbc 2.163.0 session")
    assert "legend: · as sent  ~ rewritten  - dropped on purpose  > held  + synthesized" in out
    # the recorded times: the interrupt at 7.33 s, cbc's late end 27 s later
    assert re.search(r"^  7\.33 ~ client: control_request interrupt", out, re.M)
    assert re.search(r"^ 34\.41 - init, task_updated", out, re.M)
    assert "27.1 s later" in out
    # grouped, each with its rule; a rewritten frame with what it became
    assert re.search(r"^  4\.10 ~ task_progress ×3 +workflow-prompt,$", out, re.M)
    assert "task_started workflow_name=path:par-slow-flow.js" in out
    assert "→ workflow_name=par-slow-flow +prompt=<script>" in out
    assert re.search(r"^  3\.49 - status +vocabulary$", out, re.M)
    assert "private-fields rewrote 18 of cbc's 20 frames (not repeated below)" in out
    # no rule name broken at a hyphen
    for line in lines:
        assert not re.search(r"[a-z]-$", line), line
    # the verdict: the contract check's own count on what the client saw
    received = len(session.lines("client_out"))
    violations = len(check(session))
    assert violations == 0
    tail = " ".join(x.strip() for x in lines[-2:])
    assert tail == (
        f"verdict: the client saw a Claude Code 2.1.220 session: {received} frames, "
        f"{received} changed by 13 rules, 0 contract violations"
    )
    assert "statistics" not in out  # --all


def test_all_lists_every_frame_and_the_statistics() -> None:
    r = run(str(BIN / "ccbridge"), "demo", "--all", env=plain_env(NO_COLOR="1"))
    out = r.stdout.decode()
    assert r.returncode == 0
    assert not ANSI.search(out)
    assert all(len(line) <= 80 for line in out.splitlines())
    words = " ".join(out.split())
    assert "what was sent (→ what the other side received)" in words
    assert "rewritten by private-fields, workflow-name" in words
    assert "synthesized by tasks-snapshot" in words
    assert "synthesized by interrupt-terminal; held by progress-final, sent later" in words
    table = out.split("bridge statistics", 1)[1]
    assert re.search(r"^down\s+\d+\s+\d+$", table, re.M)
    assert re.search(r"^workflow-name\s+1$", table, re.M)
    assert "verdict: the client saw a Claude Code 2.1.220 session" in out


def test_color_always_wins_over_no_color() -> None:
    r = run(str(BIN / "ccbridge"), "demo", "--color", "always", env=plain_env(NO_COLOR="1"))
    out = r.stdout.decode()
    assert r.returncode == 0
    assert ANSI.search(out)
    assert "\x1b[34m-\x1b[0m \x1b[34mstatus" in out  # dropped on purpose: blue, not red
    assert "\x1b[31m" not in out
    assert all(len(ANSI.sub("", line)) <= 80 for line in out.splitlines())


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_wrapped_to_the_width(rows: list[Row], width: int) -> None:
    text = demo.render_rows(rows, width)
    assert all(len(line) <= width for line in text.splitlines())
    assert "workflow_name=path:par-slow-flow.js" in text.replace("\n", " ")
    assert not ANSI.search(text)
    for line in text.splitlines():
        assert not re.search(r"[a-z]-$", line), line  # never broken at a hyphen
    coloured = demo.render_rows(rows, width, colour=True)
    assert ANSI.search(coloured)
    assert ANSI.sub("", coloured) == text
    summary = demo_render.render_summary(rows, width)
    assert all(len(line) <= width for line in summary.splitlines())
    coloured = demo_render.render_summary(rows, width, colour=True)
    assert ANSI.sub("", coloured) == summary


def test_fates_marks_and_the_legend() -> None:
    made = Row(1.0, "down", "", action="synthesized", by="a-rule", sent_on=True)
    assert demo_rows.fate(made) == "synthesized"
    made.dropped_by = "b-rule"
    assert (demo_rows.fate(made), demo_rows.rules_of(made)) == ("dropped", ["b-rule"])
    held = Row(1.0, "down", "x", rules=["r1"], action="held", by="h", held_by="h")
    assert demo_rows.fate(held) == "dropped"  # held, never sent
    held.sent_on = True
    assert (demo_rows.fate(held), demo_rows.rules_of(held)) == ("held", ["r1", "h"])
    assert demo_rows.fate(Row(1.0, "up", "x")) == "passed"
    assert demo_rows.fate(Row(1.0, "up", "x", got="y")) == "rewritten"
    assert demo_render.legend(80).count("\n") == 0
    assert demo_render.legend(40).count("\n") >= 1
    assert all(len(x) <= 40 for x in demo_render.legend(40).splitlines())


def test_delta_says_what_changed() -> None:
    d = demo_rows.delta
    assert (
        d(
            "system/task_started workflow_name=path:f.js task_type=local_workflow",
            "system/task_started workflow_name=f task_type=local_workflow prompt=<script>",
        )
        == "workflow_name=f +prompt=<script>"
    )
    assert d("control_request interrupt", "control_request interrupt reason=User interrupt") == (
        "+reason=User interrupt"
    )
    assert d("control_response success a, b", "control_response success b, c") == "+c -a"
    assert d("result x", "assistant y") == "assistant y"
    long = d("t", "t session_id=01a226ef-85a9-7f4e-a45d-9189913b211f")
    assert long == "+session_id=01a226ef-85a9-7…"


def test_statistics_fit_the_width() -> None:
    stats = {
        "frames": {"up": {"in": 3, "out": 3}, "down": {"in": 20, "out": 16}},
        "rules": {
            "interrupt-terminal": {
                "dropped": 5,
                "synthesized": 2,
                "held": 1,
                "released": 1,
                "auto-turn": 1,
                "late-duplicate": 2,
            },
            "vocabulary": {"dropped": 2, "dropped:" + "x" * 300: 2},
            "r" * 100: {"rewritten": 10**40},
        },
    }
    for width in (80, 100):
        table = demo.stats_table(stats, width)
        assert all(len(line) <= width for line in table.splitlines()), table
        # the other counts, by rule: each name with its count on its line
        assert re.search(r"^interrupt-terminal +auto-turn +1$", table, re.M), table
        assert re.search(r"^ +late-duplicate +2$", table, re.M), table
        assert re.search(r"^vocabulary +dropped:x+… +2$", table, re.M), table  # cut, counted
        assert re.search(r"^r{23}… +10{7}…$", table, re.M), table  # a rule and a count, cut


def test_what_the_stream_sent_is_escaped_everywhere() -> None:
    rows = [
        Row(0.0, "down", demo.summarize({"type": EVIL}), rules=[EVIL], action="rewritten"),
        Row(0.5, "down", demo.summarize({"type": "system", "subtype": EVIL}), by=EVIL),
        Row(1.0, "up", demo.summarize({"type": "user", "message": {"content": EVIL}})),
    ]
    rows[0].got = demo.summarize({"type": "result", "subtype": EVIL})
    rows[1].action = "dropped"
    for colour in (False, True):
        for text in (
            demo_render.render_summary(rows, 80, colour),
            demo.render_rows(rows, 80, colour),
        ):
            assert not UNSAFE.findall(text.replace("\x1b[", "[")), repr(text)
            assert "\\x1b]0;pwned\\x07" in text


def test_the_verdict_counts_what_the_client_saw(rows: list[Row]) -> None:
    c = demo_rows.counts(rows, 16)
    assert (c.received, c.changed, c.rules, c.sent, c.dropped, c.made) == (16, 16, 13, 20, 9, 5)
    text = demo_render.verdict(c, "2.1.220", 2, 80)
    assert "2 contract violations" in text
    assert "not checked" in demo_render.verdict(c, "2.1.220", None, 80)
    assert all(len(line) <= 80 for line in text.splitlines())


@pytest.mark.parametrize(
    ("env", "flag", "coloured"),
    [
        ({"FORCE_COLOR": "1"}, "never", False),  # --color never beats FORCE_COLOR
        ({"FORCE_COLOR": "1"}, "auto", True),
        ({"NO_COLOR": "1", "TERM": "dumb"}, "always", True),
        ({"NO_COLOR": "1"}, "auto", False),
    ],
)
@pytest.mark.parametrize("every", [False, True])
def test_the_report_is_coloured_as_decided(
    kept: tuple[Path, str],
    session: capture.Capture,
    source: capture.Capture,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    flag: str,
    coloured: bool,
    every: bool,
) -> None:
    """The whole report (both views, the statistics too) on a terminal of 80 columns: the
    colour ``bridge.colour`` decides, whatever rich would make of the environment."""
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM", "COLORTERM", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"COLUMNS": "80", **env}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "stdout", Terminal())
    args = argparse.Namespace(color=flag, all=every, capture=None)
    work = str(kept[0] / "work")
    text = demo._report(args, session, source, str(BUNDLED), 0, work, 0)
    assert bool(ANSI.search(text)) is coloured
    assert "\x1b" in text if coloured else "\x1b" not in text
    assert ("bridge statistics" in text) is every
    assert all(len(ANSI.sub("", line)) <= 80 for line in text.splitlines())
