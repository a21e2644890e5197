"""``ccbridge check`` and ``ccbridge diff`` (analysis/check_cmd.py, analysis/diff_cmd.py), run
in-process through ``bridge.cli.main`` and once as ``python -m bridge check -``: exit codes,
JSON output, colour only on a terminal without NO_COLOR, and stream strings escaped."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from analysis.contract import RULES
from bridge.cli import main
from bridge.colour import use_colour as use_color

REPO = Path(__file__).resolve().parents[2]
CLAUDE_WORKFLOW = "claude-2.1.220/mockapi_workflow_local-workflow-task-progress.jsonl"
CBC_WORKFLOW = "cbc-2.163.0/mockoai_workflow-inline.jsonl"
SID = "5e55104e-0000-4000-8000-000000000001"
#: a terminal title change, a C1 CSI (U+009B) and a bidi override: what must not get through
EVIL = "mock\x1b]0;pwned\x07\u009b31m\u202eflow"
RAW_CSI = "\u009b"


def frames(name: str = "mock-flow", task_type: str = "local_workflow") -> list[dict[str, Any]]:
    sys_ = {"session_id": SID, "uuid": "00000000-0000-4000-8000-00000000000"}
    return [
        {
            "type": "system",
            "subtype": "task_started",
            "task_id": "w1",
            "tool_use_id": "t1",
            "description": "d",
            "task_type": task_type,
            "workflow_name": name,
            **sys_,
        },
        {
            "type": "system",
            "subtype": "task_notification",
            "task_id": "w1",
            "tool_use_id": "t1",
            "status": "completed",
            "output_file": "",
            "summary": f"{name} done",
            **sys_,
        },
    ]


def write(tmp_path: Path, name: str, objs: list[dict[str, Any]], extra: bytes = b"") -> str:
    """A stdout dump; orjson writes U+009B and U+202E raw (only C0 is escaped in JSON)."""
    p = tmp_path / name
    p.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objs) + extra)
    return str(p)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# -- check -------------------------------------------------------------------------------


def test_check_exit_codes(
    reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["check", str(reference / CLAUDE_WORKFLOW)], capsys)
    assert code == 0
    assert out == "no violations of the Claude Code 2.1.220 contract\n"
    code, out, _ = run(["check", str(reference / CBC_WORKFLOW)], capsys)
    assert code == 1
    assert "[task-noise]" in out
    assert "violation(s) of the Claude Code 2.1.220 contract" in out.splitlines()[-1]
    code, out, err = run(["check", str(tmp_path / "missing.jsonl")], capsys)
    assert (code, out) == (2, "")
    assert "missing.jsonl" in err
    bad = tmp_path / "future.jsonl"
    bad.write_text('{"format": "ccbridge-capture", "version": 99}\n')
    code, _, err = run(["check", str(bad)], capsys)
    assert code == 2
    assert "version 99" in err
    assert run(["check"], capsys)[0] == 2
    assert run(["check", "--no-such-flag", str(bad)], capsys)[0] == 2


def test_check_json_and_rules(
    reference: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(["check", "--json", str(reference / CBC_WORKFLOW)], capsys)
    doc = json.loads(out)
    assert code == 1
    assert doc["ok"] is False
    assert doc["counts"]["task-noise"] >= 1
    assert {v["rule"] for v in doc["violations"]} == set(doc["counts"])
    code, out, _ = run(["check", "--rules"], capsys)
    assert code == 0
    # each rule id at the start of a line, what it checks beside it (wrapped: indented)
    assert [ln.split()[0] for ln in out.splitlines() if ln[:1] != " "] == list(RULES)
    assert all(len(ln) <= 80 for ln in out.splitlines())  # COLUMNS=80
    assert json.loads(run(["check", "--rules", "--json"], capsys)[1]) == RULES


def test_check_reads_stdin(
    reference: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = (reference / CLAUDE_WORKFLOW).read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert run(["check", "-"], capsys)[0] == 0


def test_colour_only_on_a_terminal_and_never_with_no_color(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    capture = write(tmp_path, "c.jsonl", frames(task_type="Workflow"))
    for no_color, coloured in ((None, True), ("1", False)):
        if no_color is None:
            monkeypatch.delenv("NO_COLOR", raising=False)
        else:
            monkeypatch.setenv("NO_COLOR", no_color)
        for cmd in (["check", capture], ["diff", capture, write(tmp_path, "d.jsonl", frames())]):
            tty = Terminal()
            monkeypatch.setattr(sys, "stdout", tty)
            assert main(cmd) == 1
            assert ("\x1b[" in tty.getvalue()) is coloured, (cmd, no_color)
    assert not use_color(io.StringIO(), {})
    assert use_color(Terminal(), {"NO_COLOR": ""})  # NO_COLOR counts only when non-empty


def test_untrusted_strings_are_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a Workflow task_type (a task-type violation quoting the frame) named EVIL, and a line
    # that is not JSON carrying a raw ESC (a framing violation quoting the line)
    evil = write(tmp_path, "evil.jsonl", frames(EVIL, "Workflow"), b"\x1b[2J not json\n")
    plain = write(tmp_path, "plain.jsonl", frames())
    monkeypatch.delenv("NO_COLOR", raising=False)
    for cmd in (
        ["check", evil],
        ["check", "--json", evil],
        ["diff", plain, evil],
        ["diff", "--json", plain, evil],
    ):
        tty = Terminal()  # colour on: our own escapes are there, the stream's are not
        monkeypatch.setattr(sys, "stdout", tty)
        assert main(cmd) == 1
        out = tty.getvalue()
        for bad in ("\x1b]0;", "\x07", RAW_CSI, "\u202e", "\x1b[2J"):
            assert bad not in out, (cmd, bad)
        if "--json" in cmd:
            json.loads(out)
        else:
            assert "\\x9b" in out, cmd
    monkeypatch.setattr(sys, "stdout", tty := Terminal())
    main(["diff", plain, evil])
    # orjson's \u escapes for C0, contract.escape's for C1 and bidi
    assert (
        'workflow_name\x1b[0m: \x1b[31mA "mock-flow"\x1b[0m, \x1b[32mB "mock\\u001b]0;pwned'
        '\\u0007\\x9b31m\\u202eflow"' in tty.getvalue()
    )


# -- diff --------------------------------------------------------------------------------


def test_diff_exit_codes_and_json(
    reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude, cbc = str(reference / CLAUDE_WORKFLOW), str(reference / CBC_WORKFLOW)
    transcript = claude.replace(".jsonl", ".transcript.jsonl")
    code, out, _ = run(["diff", claude, transcript], capsys)
    assert code == 0
    assert out.splitlines()[-1].startswith("equivalent")
    code, out, _ = run(["diff", claude, cbc], capsys)
    assert code == 1
    assert 'task_started.workflow_name: A "mock-flow", B "inline-7d0e95"' in out
    code, out, _ = run(["diff", "--json", claude, cbc], capsys)
    doc = json.loads(out)
    assert code == 1
    assert doc["equivalent"] is False
    assert {"path", "a", "b", "kind"} == set(doc["differences"][0])
    assert run(["diff", claude, str(tmp_path / "nope")], capsys)[0] == 2
    assert run(["diff", "-", "-"], capsys)[0] == 2
    assert run(["diff", claude], capsys)[0] == 2


def test_diff_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path, "a.jsonl", frames())
    b_frames = frames()
    b_frames[0]["extra"] = 1
    b_frames[1]["status"] = "failed"
    b = write(tmp_path, "b.jsonl", b_frames)
    code, out, _ = run(["diff", a, b], capsys)
    assert code == 1
    assert 'task_notification.status: A "completed", B "failed"' in out
    assert run(["diff", "--ignore", "extra,task_notification.status", a, b], capsys)[0] == 0
    assert run(["diff", "--ignore", "extra", "--ignore", "status", a, b], capsys)[0] == 0
    assert run(["diff", "--strict", "--keep-model", a, a], capsys)[0] == 0


# -- as a process ------------------------------------------------------------------------


def test_python_m_bridge_check_reads_stdin(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}

    def check(data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "bridge", "check", *args, "-"],
            input=data,
            capture_output=True,
            cwd=REPO,
            env=env,
            timeout=60,
        )

    good = b"".join(orjson.dumps(o) + b"\n" for o in frames())
    bad = b"".join(orjson.dumps(o) + b"\n" for o in frames(EVIL, "Workflow"))
    r = check(good)
    assert (r.returncode, r.stdout) == (0, b"no violations of the Claude Code 2.1.220 contract\n")
    r = check(bad)
    assert r.returncode == 1
    assert b"[task-type]" in r.stdout
    assert b"\x1b" not in r.stdout  # a pipe: no colour, and the stream's ESC escaped
    assert RAW_CSI.encode() not in r.stdout
    r = check(bad, "--json")
    assert r.returncode == 1
    assert json.loads(r.stdout)["counts"] == {"task-type": 1}
    r = check(b'{"format": "ccbridge-capture", "version": 2}\n')
    assert r.returncode == 2
    assert r.stdout == b""
    assert b"version 2" in r.stderr
