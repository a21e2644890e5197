"""``ccbridge demo`` shows what the bridge did (issue 9): both directions, the rule behind
every changed, dropped, held or synthesized frame, wrapped (never cut) to the width,
coloured only on request, the statistics as a table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bridge import demo
from compat import capture

from .test_cli import BIN, run

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    r = run(str(BIN / "ccbridge"), "demo", "--keep", str(d))
    assert r.returncode == 0, r.stderr
    return d


@pytest.fixture(scope="module")
def session(kept: Path) -> capture.Capture:
    return capture.parse((kept / "demo-session.capture.jsonl").read_bytes().splitlines())


def test_every_touched_frame_names_its_rules(session: capture.Capture, kept: Path) -> None:
    _, rows = demo.trace(session, str(kept / "work"))  # (where the session's script is)
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
    # every frame the client received is a row that reached it
    received = len(session.lines("client_out"))
    assert sum(1 for r in rows if r.direction == "down" and r.sent_on) == received


@pytest.mark.parametrize("width", [60, 100, 160])
def test_wrapped_to_the_width_never_cut(session: capture.Capture, width: int) -> None:
    _, rows = demo.trace(session)
    text = demo.render_rows(rows, width)
    assert all(len(line) <= width for line in text.splitlines())
    assert "workflow_name=path:par-slow-flow.js" in text.replace("\n", " ")
    assert not ANSI.search(text)
    coloured = demo.render_rows(rows, width, colour=True)
    assert ANSI.search(coloured)
    assert ANSI.sub("", coloured) == text


def test_no_colour_off_a_terminal_and_the_statistics_as_a_table(tmp_path: Path) -> None:
    r = run(str(BIN / "ccbridge"), "demo", env={"NO_COLOR": "1"})
    out = r.stdout.decode()
    assert r.returncode == 0
    assert not ANSI.search(out)
    assert "rewritten by private-fields, workflow-name" in out
    assert "synthesized by tasks-snapshot" in out
    table = out.split("bridge statistics", 1)[1]
    assert re.search(r"^down\s+\d+\s+\d+$", table, re.M)
    assert re.search(r"^workflow-name\s+1$", table, re.M)
