"""Scenario files are strict, and the runner does what a scenario says, with a fake CLI.

The fake CLI (a few lines of Python written to a temp file) speaks just enough
stream-json: it answers ``initialize``, asks the stand-in model (``ANTHROPIC_BASE_URL``)
for each user line, may ask ``can_use_tool``, may leave a process behind in its own
session, and may ignore stdin EOF. That is enough to prove the runner's part: steps,
conditions, placeholders, the capture, the time limit and the orphan sweep.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson
import pytest

from compat import capture
from harness import runner, scenario_cmd
from harness.scenario import ScenarioError, load, loads

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.toml"))

FAKE_CLI = r"""
import json, os, subprocess, sys, time, urllib.request
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
def ask(text):
    body = {"model": "m", "stream": False, "tools": [{"name": "Bash"}],
            "messages": [{"role": "user", "content": text}]}
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
                                 data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    return json.load(urllib.request.urlopen(req))
print("fake cli starting in", os.getcwd(), file=sys.stderr, flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "control_request":
        out({"type": "control_response", "response": {"subtype": "success",
             "request_id": msg["request_id"], "response": {"cwd": os.getcwd()}}})
    elif msg["type"] == "control_response":
        out({"type": "system", "subtype": "answer", "got": msg["response"]["response"]})
    elif msg["type"] == "user":
        text = msg["message"]["content"]
        reply = ask(text)
        out({"type": "assistant", "message": reply})
        for block in reply["content"]:
            if block["type"] == "tool_use":
                out({"type": "control_request", "request_id": "perm-1",
                     "request": {"subtype": "can_use_tool", "tool_name": block["name"],
                                 "input": block["input"]}})
        if "ORPHAN" in text:
            p = subprocess.Popen(["sleep", "300"], start_new_session=True)
            out({"type": "system", "subtype": "task_started", "task_id": "t-%d" % p.pid})
        out({"type": "result", "subtype": "success", "result": text})
if os.environ.get("FAKE_HANG"):
    time.sleep(300)
"""


@pytest.fixture
def fake_cli(tmp_path: Path) -> str:
    p = tmp_path / "fake_cli.py"
    p.write_text(FAKE_CLI)
    return f"{sys.executable} {p}"


# -- files ----------------------------------------------------------------------------
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_bundled_scenario_loads(path: Path) -> None:
    s = load(path)
    assert s.name == path.stem
    assert s.steps


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('name="x"\nfoo=1', "extra fields found (foo) @ $"),
        ('name="x"\n[[steps]]\nusr="a"', "extra fields found (usr) @ $.steps[0]"),
        ('name="x"\n[[steps]]\nuser="a"\nline="b"', "a step does one thing"),
        ('name="x"\n[[steps]]\nafter={type="result", nht=2}', "extra fields found (nht)"),
        ('name="x"\n[model]\ndefault_txt="a"', "extra fields found (default_txt) @ $.model"),
        ('name="x"\n[[model.rules]]\nwhen="a"\nagent="boss"', "$.model.rules[0].agent"),
        ('name="x"\ntime_limit="9"', "expected a number"),
        ('name="x"\n[files]\n"../x.js"="y"', "inside the working directory"),
        ('name="x"\n[backend_args]\ngemini=[]', "unknown backend"),
        ('name="x"\n[[steps]]\nafter={model_request="a", type="b"}', "cannot be combined"),
        ("[[steps]]\nuser='a'", "required field missing @ $.name"),
        ('name = "x', "not valid TOML"),
    ],
)
def test_bad_scenarios_say_where(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        loads(text, "bad.toml")
    assert message in str(e.value)
    assert str(e.value).startswith("bad.toml: ")


def test_backend_args_replace_args() -> None:
    s = loads(
        'name="x"\nargs=["--permission-prompt-tool", "stdio"]\n'
        'backend_args={cbc=[]}\n[[steps]]\nuser="hi"'
    )
    assert s.args_for("cbc") == ()
    assert s.args_for("claude") == ("--permission-prompt-tool", "stdio")


# -- the runner -----------------------------------------------------------------------
SIMPLE = """
name = "fake-run"
time_limit = 30
args = ["--extra", "flag"]
[files]
"flows/a.js" = "export const meta = {}"
[[model.rules]]
when = "TRIGGER"
tool = "Bash"
input = { command = "ls" }
[[steps]]
user = "please TRIGGER"
[[steps]]
permission = { behavior = "allow" }
[[steps]]
after = { type = "system", subtype = "answer" }
user = "cwd check"
[[steps]]
after = { type = "result", nth = 2 }
"""


async def test_run_records_a_reproducible_capture(fake_cli: str, tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    res = await runner.run(loads(SIMPLE), runner.resolve_target(fake_cli), out)
    assert res.exit == "0"
    cap = capture.parse(out.read_bytes().splitlines())
    assert cap.header["scenario"] == "fake-run"
    assert cap.header["backend"] == "other"
    assert cap.header["argv"][-2:] == ["--extra", "flag"]
    assert cap.exit_status == 0
    text = out.read_text()
    assert "ccbscen-" not in text  # every path of the run became a placeholder
    assert "{CWD}" in text
    assert "{MODEL_URL}" in text
    stdin = [orjson.loads(r.data) for r in cap.lines("stdin")]
    assert stdin[0]["request"]["subtype"] == "initialize"
    assert stdin[1]["message"]["content"] == "please TRIGGER"
    # the permission answer: the request's id, and its input as updatedInput
    assert stdin[2]["response"] == {
        "subtype": "success",
        "request_id": "perm-1",
        "response": {"behavior": "allow", "updatedInput": {"command": "ls"}},
    }
    notes = [r.text for r in cap.lines("note")]
    assert any(n.startswith("model ") and '"decision":["tool_use","Bash"]' in n for n in notes)
    assert "stdin closed" in notes
    assert any(r.kind == "stderr" and "fake cli starting in {CWD}" in r.text for r in cap.records)
    assert [f["type"] for f in res.frames].count("result") == 2
    assert len(res.model_log) == 2


async def test_time_limit_kills_and_no_orphan_survives(
    fake_cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "KILL_GRACE", 0.5)
    monkeypatch.setattr(runner, "VERSION_TIMEOUT", 1.0)  # `fake --version` hangs too
    s = loads("""
name = "hang"
time_limit = 3
env = { FAKE_HANG = "1" }
[[steps]]
user = "ORPHAN please"
[[steps]]
after = { type = "result" }
""")
    res = await runner.run(s, runner.resolve_target(fake_cli), tmp_path / "c.jsonl")
    assert res.exit.startswith("sigterm-by-harness") or res.exit == "killed:-9"
    started = next(f for f in res.frames if f.get("subtype") == "task_started")
    pid = int(started["task_id"][2:])
    assert not _alive(pid), "the process the CLI left in its own session was not killed"
    assert 3 <= res.duration < 10
    notes = [
        r.text
        for r in capture.parse((tmp_path / "c.jsonl").read_bytes().splitlines()).lines("note")
    ]
    assert any(n.startswith("time limit 3s reached") for n in notes)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


async def test_unfinished_script_is_noted(fake_cli: str, tmp_path: Path) -> None:
    s = loads('name="x"\ntime_limit=2\n[[steps]]\nafter={type="never"}\nuser="hi"')
    res = await runner.run(s, runner.resolve_target(fake_cli), tmp_path / "c.jsonl")
    cap = capture.parse((tmp_path / "c.jsonl").read_bytes().splitlines())
    assert any("did not finish" in r.text and "step 1" in r.text for r in cap.lines("note"))
    assert res.exit != "0"


async def test_cli_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 1")
    assert await scenario_cmd.run_scenario(bad, "cbc", None, tmp_path / "o") == 2
    good = tmp_path / "good.toml"
    good.write_text('name="x"\n[[steps]]\nuser="hi"')
    monkeypatch.setenv("CCBRIDGE_BACKENDS_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("bridge.backends._cbc_from_package", lambda: None)
    assert await scenario_cmd.run_scenario(good, "cbc", None, tmp_path / "o") == 127
    assert not (tmp_path / "o").exists()


def test_check_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert scenario_cmd.main(["check", *map(str, SCENARIOS)]) == 0
    assert capsys.readouterr().out == ""  # stdout stays clean


def test_target_kinds() -> None:
    assert runner.resolve_target("/x/claude.exe --foo").kind == "claude"
    assert runner.resolve_target("/x/codebuddy-headless").kind == "cbc"
    assert runner.resolve_target(f"{sys.executable} x.py").kind == "other"
    env = runner.backend_env("other", "http://u", {"HOME": "/h", "TMP": "/t"}, "m")
    assert env["ANTHROPIC_BASE_URL"] == env["CODEBUDDY_BASE_URL"] == "http://u"
    assert "ANTHROPIC_API_KEY" not in runner.backend_env("cbc", "u", {"HOME": "", "TMP": ""}, "m")
    assert (
        os.environ.get("ANTHROPIC_API_KEY") is None
        or env["ANTHROPIC_API_KEY"] != (os.environ["ANTHROPIC_API_KEY"])
    )
