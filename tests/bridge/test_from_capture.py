"""``ccbridge scenario from-capture``: recorded sessions of both CLIs (direct, through
either profile, stream-json and ``-p``, reference transcripts) turned into scenarios that
(a) load and validate, (b) give the model's recorded replies in order (the stand-in's
decisions for the requests the recording's model log shows), (c) drive the recorded
session to its end (run against ``ccbridge replay`` of the capture: the same frames, up to
ids and clocks), with no credential, machine paths as ``{CWD}``/``{HOME}``, and bad input
said in one line. The real CLIs: ``test_converted_capture_runs_the_same_on_the_real_cli``
(``-m real_backend``)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import orjson
import pytest

from analysis import diff as semantic
from bridge.backends import find_backend
from compat import capture
from harness import from_capture, runner, scenario_cmd, toml_write
from harness.brain import Brain, Request
from harness.scenario import Scenario, loads

REPO = Path(__file__).resolve().parents[2]
TWINS = REPO / "captures" / "twins"
REFERENCE = REPO / "captures" / "reference"

#: a representative set, both CLIs: (capture, what it shows)
SESSIONS = {
    "simple-success.claude": "simple success",
    "simple-success.cbc-raw": "simple success",
    "parallel-tools.claude": "two tool calls in one reply",
    "parallel-tools.cbc-raw": "two tool calls in one reply",
    "bg-agent-frames.claude": "a background sub-agent that runs a tool itself",
    "eof-with-bg-work.claude": "a slow sub-agent (its delay), background work at EOF",
    "interrupt-midturn-workflow.claude": "an interrupt mid-turn",
    "interrupt-midturn-workflow.cbc-raw": "an interrupt mid-turn",
    "interrupt-permission-prompt.cbc-raw": "an interrupt while a prompt is open",
    "permission-allow.claude": "a permission prompt answered allow",
    "permission-deny.cbc-raw": "a permission prompt answered deny",
    "stop-task-control.claude": "stop_task with the task id a frame gave",
    "api-retry-overloaded.claude": "529 twice, then the reply",
    "api-error-exhausted.cbc-raw": "a failed request (cbc)",
    "stop-refusal.claude": "a refusal (Claude's notice)",
    "stop-refusal.cbc-raw": "a refusal (cbc's notice)",
    "stop-max-tokens.cbc-raw": "max_tokens and the recovery request",
    "thinking.cbc-raw": "thinking, the answer's frame missing (cbc)",
    "partial-messages.claude": "stream events",
    "headless-stream-json.claude": "-p stream-json",
    "headless-json-schema.cbc-raw": "-p json (cbc's log) with a StructuredOutput call",
    "headless-text.claude": "-p text",
    "permission-allow.cbc-bridged": "cbc through cbc-to-claude",
    "user-line-during-first-turn.cbc-bridged": "a line the bridge holds until the turn ends",
    "user-line-during-first-turn.cbc-raw": "a line cbc answers at once, in a second session",
}
#: the stand-in's own replies to what no rule scripts
DEFAULTS = (["text", "ok"], ["text", "done."], ["text", "Mock title"])


def convert(path: Path, **kw: Any) -> from_capture.Converted:
    cap, n = from_capture.read(path)
    return from_capture.convert(cap, source=str(path), n_lines=n, **kw)


def scenario_of(path: Path, **kw: Any) -> Scenario:
    return loads(convert(path, **kw).text(), str(path))


def model_log(path: Path) -> list[dict[str, Any]]:
    """The model requests a scenario run's capture notes (``model {...}``)."""
    cap = capture.parse(path.read_bytes().splitlines(keepends=True))
    notes = [orjson.loads(r.text[6:]) for r in cap.records if r.text.startswith("model {")]
    return [n for n in notes if n.get("method") == "POST" and "agent" in n]


def request(note: dict[str, Any]) -> Request:
    """The request a model note describes, as the stand-in's rules see it (``latest``: the
    note's, the end of the latest input)."""
    return Request(
        dialect=note["dialect"],
        agent=note["agent"],
        model=note["model"],
        stream=note["stream"],
        n_messages=note["n_messages"],
        tools=("Tool",) * note["n_tools"],
        latest=note["latest"],
        after_tool=False,
    )


# -- (a) and (b): every capture of the set ----------------------------------------------
@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_the_scenario_loads_and_gives_the_recorded_replies_in_order(name: str) -> None:
    path = TWINS / f"{name}.jsonl"
    sc = scenario_of(path)  # (a) the project's loader validates it
    assert sc.model.rules, name
    brain = Brain(sc.model)
    for note in model_log(path):  # (b) each request, in the recorded order
        d = brain.decide(request(note))
        want = note["decision"]
        if d.rule is None:  # nothing scripted: the stand-in's default, as in the run
            assert want in DEFAULTS, (name, note["n"], want)
        elif "cut" in want:  # (a cut reply's words never reach a client)
            assert d.cut, (name, note["n"], want)
        else:
            assert d.summary() == want, (name, note["n"], d.summary(), want)
    unused = [i for i, r in enumerate(sc.model.rules) if brain.fired[i] < (r.times or 1)]
    assert not unused, (name, unused)


def test_what_the_set_shows() -> None:
    rules = {n: scenario_of(TWINS / f"{n}.jsonl").model.rules for n in SESSIONS}
    sub = [r for r in rules["bg-agent-frames.claude"] if r.agent == "sub"]
    assert [(r.when, r.tool) for r in sub] == [("SUB_TOOL then report", "Bash"), (None, None)]
    slow = [r for r in rules["eof-with-bg-work.claude"] if r.agent == "sub"]
    assert slow[0].when == "MOCK_SLOW please"
    assert 19 < slow[0].delay < 22
    assert [(r.status, r.times) for r in rules["api-retry-overloaded.claude"]][0] == (529, 2)
    assert rules["api-error-exhausted.cbc-raw"][0].status == 500
    assert rules["stop-refusal.claude"][0].stop == "refusal"
    assert rules["stop-refusal.cbc-raw"][0].stop == "refusal"
    assert rules["stop-max-tokens.cbc-raw"][0].stop == "max_tokens"
    thinking = rules["thinking.cbc-raw"][0]
    assert (thinking.thinking, thinking.text) == (
        "The user wants a short answer. I will keep it brief.",
        "brief answer",
    )
    assert [c.tool for c in rules["parallel-tools.claude"][0].calls] == ["Read", "Bash"]
    assert rules["headless-json-schema.cbc-raw"][0].tool == "StructuredOutput"


def test_the_client_side() -> None:
    sc = scenario_of(TWINS / "permission-deny.cbc-raw.jsonl")
    assert sc.initialize
    assert not sc.keep_stdin_open
    assert [s.action for s in sc.steps] == ["user", "permission", "close_stdin"]
    assert sc.steps[1].permission == {"behavior": "deny", "message": "denied by probe"}
    assert sc.steps[1].after is not None
    assert sc.steps[1].after.subtype == "can_use_tool"
    stop = scenario_of(TWINS / "stop-task-control.claude.jsonl")
    first = next(s for s in stop.steps if s.control)
    assert first.control == {"subtype": "stop_task", "task_id": "${task_id}"}
    assert first.after is not None
    assert first.after.subtype == "task_started"
    interrupt = scenario_of(TWINS / "interrupt-midturn-workflow.claude.jsonl")
    step = next(s for s in interrupt.steps if s.control)
    assert step.control == {"subtype": "interrupt"}
    assert step.request_id == "stop-1"
    assert step.delay == 2.0
    headless = scenario_of(TWINS / "headless-stdin.claude.jsonl")
    assert headless.headless
    assert headless.args[:2] == ("-p", "review this")
    assert [s.line for s in headless.steps if s.line] == ["diff --git a/x b/x", "+new line"]


@pytest.mark.parametrize("role", ["claude", "cbc-raw", "cbc-bridged"])
def test_a_resumed_second_run_becomes_the_scenarios_resume(role: str) -> None:
    """A recording of a scenario's two runs (the second with ``--resume``): the first
    run's steps, then ``[resume]`` with the second's, waiting from its own start; the
    model's replies of both runs in order."""
    sc = scenario_of(TWINS / f"resume-session.{role}.jsonl")
    assert [s.user for s in sc.steps if s.user] == ["remember BLUE"]
    assert sc.resume is not None
    assert sc.resume.args is None  # the first run's, --resume added by the runner
    assert [s.action for s in sc.resume.steps] == ["user", "close_stdin"]
    assert sc.resume.steps[0].user == "what did I say"
    assert sc.resume.steps[0].after is None
    assert sc.resume.steps[1].after is not None
    assert sc.resume.steps[1].after.type == "result"
    assert [r.when for r in sc.model.rules] == ["remember BLUE", "what did I say"]
    assert sc.model.rules[1].text == "you said BLUE"


def test_a_resumed_run_with_its_own_args_keeps_them(tmp_path: Path) -> None:
    data = (TWINS / "resume-session.claude.jsonl").read_bytes()
    note = b"--verbose --resume "
    assert data.count(note) == 1
    path = tmp_path / "two.jsonl"
    path.write_bytes(data.replace(note, b"--verbose --model haiku --resume "))
    sc = scenario_of(path)
    assert sc.resume is not None
    assert sc.resume.args == ("--model", "haiku")


def test_a_foreground_agents_last_reply_comes_from_the_calls_result() -> None:
    """Claude writes no frame for a foreground agent's last reply (its answer is the Agent
    call's result): the scenario answers the agent's last request with it; cbc writes the
    frame, which is read as it is, once."""
    for role in ("claude", "cbc-raw"):
        sc = scenario_of(TWINS / f"subagent-foreground.{role}.jsonl")
        sub = [r for r in sc.model.rules if r.agent == "sub"]
        assert [r.text for r in sub] == [
            None,
            "sub-agent report: the echo printed from-fg-subagent",
        ]
        assert sub[0].tool == "Bash"


def test_reference_transcripts_of_both_clis() -> None:
    claude = scenario_of(
        REFERENCE
        / "claude-2.1.220"
        / "mockapi_permission-prompt-stdio_interrupt_cli-sends-control-cancel-request"
        ".transcript.jsonl"
    )
    assert claude.args == ("--permission-prompt-tool", "stdio")
    [r] = claude.model.rules
    assert (r.when, r.tool, r.input["command"]) == (
        "TRIGGER_PERM_BASH",
        "Bash",
        "touch perm-probe.txt",
    )
    assert [s.action for s in claude.steps] == ["user", "control", "close_stdin"]
    cbc = scenario_of(REFERENCE / "cbc-2.163.0" / "mockoai_fg-agent.transcript.jsonl")
    sub = [r for r in cbc.model.rules if r.agent == "sub"]
    assert [(r.when, r.text) for r in sub] == [("say hi from fg subagent", "ok")]


# -- (c) the client's side drives the recorded session to its end ---------------------------
REPLAYED = [
    "simple-success.claude",
    "permission-allow.cbc-raw",
    "stop-task-control.claude",
    "interrupt-permission-prompt.claude",
]


@pytest.mark.parametrize("name", REPLAYED)
async def test_the_scenario_drives_a_replay_of_its_capture(name: str, tmp_path: Path) -> None:
    path = TWINS / f"{name}.jsonl"
    target = runner.Target("other", (sys.executable, "-m", "bridge", "replay", str(path)))
    out = tmp_path / "run.jsonl"
    result = await runner.run(scenario_of(path), target, out)
    assert result.exit == str(capture.parse(path.read_bytes().splitlines(True)).exit_status)
    run = capture.parse(out.read_bytes().splitlines(keepends=True))
    assert not [r.text for r in run.records if "did not finish" in r.text]
    original = capture.parse(path.read_bytes().splitlines(keepends=True))
    d = semantic.diff(original, run)
    assert d.equivalent, semantic.format_text(d)


# -- paths, files, secrets --------------------------------------------------------------------
SECRET = "sk-ant-api03-" + "S3CRETS3CRETS3CRETS3CRETS3CRET"
GH_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


def _record(t: float, kind: str, obj: Any) -> bytes:
    text = obj if isinstance(obj, str) else orjson.dumps(obj).decode()
    return orjson.dumps({"t": t, "kind": kind, "text": text}) + b"\n"


def dropin_capture(tmp_path: Path, secrets: bool = False) -> Path:
    """A session as ``CCBRIDGE_RECORD`` records a drop-in (``claude-on-cbc``: profile
    cbc-to-claude), in /home/alice/proj; written raw, so that the secrets in it (when
    asked) are not redacted by the capture writer."""
    cwd = "/home/alice/proj"
    head = {
        "format": "ccbridge-capture",
        "version": 1,
        "source": "claude-on-cbc (ccbridge 0.1.0, profile cbc-to-claude)",
        "argv": [
            "/usr/lib/codebuddy/codebuddy-headless",
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--add-dir",
            "/home/alice/other",
            *(["--api-key", SECRET] if secrets else []),
        ],
        "profile": "cbc-to-claude",
        "env": {"CODEBUDDY_API_KEY": SECRET, "CLAUDE_CODE_MAX_RETRIES": "1"},
    }
    init = {"type": "control_request", "request_id": "i1", "request": {"subtype": "initialize"}}
    words = f"read {cwd}/src/a.py for $HOME" + (f" with {GH_TOKEN}" if secrets else "")
    user = {"type": "user", "message": {"role": "user", "content": words}, "uuid": "u-1"}
    sys_init = {"type": "system", "subtype": "init", "cwd": cwd, "session_id": "s1"}
    read_input: dict[str, Any] = {"file_path": f"{cwd}/src/a.py"}
    if secrets:
        read_input["token"] = "hunter2-very-secret"
    call = {"type": "tool_use", "id": "c1", "name": "Read", "input": read_input}
    lines = [
        orjson.dumps(head) + b"\n",
        _record(0.1, "client_in", init),
        _record(0.1, "stdin", init),
        _record(0.5, "stdout", {"type": "control_response", "response": {"request_id": "i1"}}),
        _record(0.5, "client_out", {"type": "control_response", "response": {"request_id": "i1"}}),
        _record(0.6, "client_in", user),
        _record(0.6, "stdin", user),
        _record(0.8, "stdout", sys_init),
        _record(0.8, "client_out", sys_init),
        _record(
            0.9,
            "stdout",
            {"type": "assistant", "message": {"id": "m1", "content": [call]}, "session_id": "s1"},
        ),
        _record(
            1.0,
            "stdout",
            {
                "type": "user",
                "message": {
                    "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "hi"}]
                },
            },
        ),
        _record(
            1.1,
            "stdout",
            {
                "type": "assistant",
                "message": {"id": "m2", "content": [{"type": "text", "text": "it says hi"}]},
                "session_id": "s1",
            },
        ),
        _record(1.2, "stdout", {"type": "result", "subtype": "success", "result": "it says hi"}),
        _record(
            1.2, "client_out", {"type": "result", "subtype": "success", "result": "it says hi"}
        ),
        _record(1.5, "note", "stdin closed"),
        _record(1.6, "exit", "0"),
    ]
    path = tmp_path / "session-20261201T101500-4242.jsonl"
    path.write_bytes(b"".join(lines))
    return path


def test_machine_paths_become_placeholders_and_the_reads_are_listed(tmp_path: Path) -> None:
    conv = convert(dropin_capture(tmp_path))
    text = conv.text()
    assert "/home/alice" not in text
    sc = loads(text)
    assert sc.args == ("--add-dir", "{HOME}/other")
    assert sc.env == {"CLAUDE_CODE_MAX_RETRIES": "1"}
    read, answer = sc.model.rules
    assert (read.when, read.tool, read.input) == (
        "read {CWD}/src/a.py for $HOME",
        "Read",
        {"file_path": "{CWD}/src/a.py"},
    )
    assert answer.text == "it says hi"
    assert sc.steps[0].user == "read {CWD}/src/a.py for $$HOME"  # ($ escaped for ${field})
    assert "#   - Read {CWD}/src/a.py" in text
    assert any("profile cbc-to-claude" in w for w in conv.warnings)
    # --files DIR: the file is the scenario's now, and no longer listed
    files = tmp_path / "proj"
    (files / "src").mkdir(parents=True)
    (files / "src" / "a.py").write_text("print('hi')\n")
    (files / "blob.bin").write_bytes(b"\xff\xfe\x00")
    with_files = convert(dropin_capture(tmp_path), files_dir=files)
    sc2 = loads(with_files.text())
    assert sc2.files == {"src/a.py": "print('hi')\n"}
    assert "Read {CWD}/src/a.py" not in with_files.text()
    assert any("blob.bin" in w for w in with_files.warnings)


def test_the_runner_makes_the_placeholders_the_runs_paths(tmp_path: Path) -> None:
    sc = scenario_of(dropin_capture(tmp_path))
    dirs = {"CWD": "/r/work", "HOME": "/r/home"}
    done = runner._scenario_in(sc, dirs)
    assert done.args == ("--add-dir", "/r/home/other")
    assert done.steps[0].user == "read /r/work/src/a.py for $$HOME"
    assert done.model.rules[0].when == "read /r/work/src/a.py for $HOME"
    assert done.model.rules[0].input == {"file_path": "/r/work/src/a.py"}


def test_no_credential_travels(tmp_path: Path) -> None:
    files = tmp_path / "proj"
    files.mkdir()
    (files / ".env").write_text(f"ANTHROPIC_API_KEY={SECRET}\n")
    conv = convert(dropin_capture(tmp_path, secrets=True), files_dir=files)
    text = conv.text()
    for secret in (SECRET, GH_TOKEN, "hunter2-very-secret"):
        assert secret not in text
    assert "# Credentials: none." in text
    sc = loads(text)
    assert "CODEBUDDY_API_KEY" not in sc.env
    assert sc.model.rules[0].input["token"] == "<redacted>"
    words = sc.steps[0].user
    assert words is not None
    assert sc.model.rules[0].when == words.replace("$$", "$")[:80]  # (still the same words)


# -- bad input ------------------------------------------------------------------------------
def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge", "scenario", "from-capture", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"hello\nworld\n", "not a capture"),
        (b"", "not a capture"),
        (bytes(range(256)), "not a capture"),
        (
            (
                REFERENCE / "claude-2.1.220" / "mockapi_simple-success_then-eof-exit0.jsonl"
            ).read_bytes(),
            "no client side",
        ),
    ],
    ids=["text", "empty", "binary", "stdout-dump"],
)
def test_bad_input_is_one_line_and_exit_2(content: bytes, said: str, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_bytes(content)
    done = run_cli(str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"ccbridge scenario from-capture: {path}: ")
    assert said in line


def test_a_missing_file_and_a_bad_files_dir(tmp_path: Path) -> None:
    done = run_cli(str(tmp_path / "nope.jsonl"))
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    done = run_cli(str(TWINS / "simple-success.claude.jsonl"), "--files", str(tmp_path / "no"))
    assert done.returncode == 2
    assert "not a directory" in done.stderr


def test_a_cut_capture_is_converted_from_what_is_whole(tmp_path: Path) -> None:
    data = (TWINS / "permission-allow.claude.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    cut = b"".join(lines[:-3]) + lines[-3][: len(lines[-3]) // 2]  # (a writer killed mid-line)
    path = tmp_path / "cut.jsonl"
    path.write_bytes(cut)
    out = tmp_path / "cut.toml"
    done = run_cli(str(path), "-o", str(out))
    assert done.returncode == 0, done.stderr
    warning = next(x for x in done.stderr.splitlines() if "cut" in x)
    assert f"line {len(lines) - 2}" in warning
    sc = loads(out.read_text())
    assert sc.model.rules
    assert sc.steps[-1].action == "wait"


def test_the_command_writes_the_file_and_says_what_it_made(tmp_path: Path) -> None:
    out = tmp_path / "mine.toml"
    rc = scenario_cmd.main(
        [
            "from-capture",
            str(TWINS / "bg-agent-frames.claude.jsonl"),
            "-o",
            str(out),
            "--name",
            "mine",
        ]
    )
    assert rc == 0
    sc = loads(out.read_text())
    assert sc.name == "mine"
    assert out.stat().st_mode & 0o077 == 0


# -- the TOML writer ------------------------------------------------------------------------
def test_the_toml_writer_round_trips() -> None:
    doc = {
        "name": 'q"uote\\back\tslash\x01\x7f\u2028 é',
        "n": 3,
        "x": 0.5,
        "ok": True,
        "args": ["a b", "{CWD}", ""],
        "env": {"A.B": "1", "": "empty key"},
        "files": {"dir/f.txt": 'line """ 1\n\\line 2\r\n\x00end'},
        "model": {
            "rules": [
                {"input": {"deep": [{"k": [1, "2", False]}]}, "calls": [{"tool": "T", "input": {}}]}
            ]
        },
        "steps": [{"after": {"type": "result", "nth": 2}}, {"close_stdin": True}],
    }
    text = toml_write.dumps(doc, ["a comment", ""])
    assert text.startswith("# a comment\n#\n")
    assert tomllib.loads(text) == doc
    cleaned, dropped = toml_write.clean({"a": None, "b": [1, None, {"c": None}]})
    assert (cleaned, dropped) == ({"b": [1, {}]}, 3)


# -- the real CLIs -----------------------------------------------------------------------------
@pytest.mark.real_backend
@pytest.mark.parametrize(
    ("backend", "name"),
    # (cbc's permission twins are not reproduced yet: the scenario answers a prompt in the
    # runner's shape, and the recorded raw answer made cbc write its own denial text)
    [("claude", "permission-allow.claude"), ("cbc", "simple-success.cbc-raw")],
)
def test_converted_capture_runs_the_same_on_the_real_cli(
    backend: str, name: str, tmp_path: Path
) -> None:
    if find_backend(backend) is None:
        pytest.skip(f"{backend} not installed: run `ccbridge backends install`")
    original = TWINS / f"{name}.jsonl"
    scenario = tmp_path / f"{name}.toml"
    out = tmp_path / f"{name}.run.jsonl"
    made = run_cli(str(original), "-o", str(scenario))
    assert made.returncode == 0, made.stderr
    done = subprocess.run(
        [sys.executable, "-m", "bridge", "scenario", "run", str(scenario), "--backend", backend]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    a = capture.parse(original.read_bytes().splitlines(keepends=True))
    b = capture.parse(out.read_bytes().splitlines(keepends=True))
    assert not [r.text for r in b.records if "did not finish" in r.text]
    d = semantic.diff(a, b)  # ids, clocks, durations, costs, paths masked
    assert d.equivalent, f"(capture: {out})\n" + semantic.format_text(d)


# -- the client's dialect and its answers, as recorded ----------------------------------------
@pytest.mark.parametrize(
    ("name", "dialect"),
    [
        ("permission-deny.cbc-raw", "claude"),  # a Claude client on raw cbc (the header)
        ("permission-allow.cbc-bridged", "claude"),  # the client cbc-to-claude serves
        ("simple-success.claude", None),  # nothing says: the runner's default for the CLI
    ],
)
def test_the_scenario_keeps_the_recorded_clients_dialect(name: str, dialect: str | None) -> None:
    assert scenario_of(TWINS / f"{name}.jsonl").client == dialect


def test_a_cbc_clients_answer_is_kept_in_its_own_shape(tmp_path: Path) -> None:
    """A capture with no header word on its client: the answer's shape says it, and the
    answer is written as the client sent it (every field but the call's id)."""
    cap = tmp_path / "cbc-client.jsonl"
    request = {
        "type": "control_request",
        "request_id": "perm_1",
        "request": {
            "subtype": "can_use_tool",
            "tool_name": "Bash",
            "input": {"command": "touch x"},
            "tool_use_id": "call_1",
        },
    }
    answer = {"allowed": False, "reason": "no", "interrupt": True, "tool_use_id": "call_1"}
    records = [
        orjson.dumps({"format": "ccbridge-capture", "version": 1, "backend": "cbc"}) + b"\n",
        _record(0.1, "stdin", {"type": "user", "message": {"role": "user", "content": "go"}}),
        _record(0.5, "stdout", request),
        _record(
            0.6,
            "stdin",
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": "perm_1", "response": answer},
            },
        ),
        _record(0.9, "exit", "0"),
    ]
    cap.write_bytes(b"".join(records))
    sc = scenario_of(cap)
    assert sc.client == "cbc"
    [perm] = [s.permission for s in sc.steps if s.permission is not None]
    assert perm == {"allowed": False, "reason": "no", "interrupt": True}


def test_the_documented_example_is_what_the_converter_writes() -> None:
    """docs/commands.md shows a converted scenario: it is the converter's own output."""
    doc = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    start = doc.index("```toml\n# Converted by `ccbridge scenario from-capture`") + len("```toml\n")
    shown = doc[start : doc.index("```", start)]
    name = "permission-deny.cbc-raw.jsonl"
    cap, n = from_capture.read(TWINS / name)
    assert shown == from_capture.convert(cap, source=name, n_lines=n).text()
