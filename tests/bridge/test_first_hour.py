"""The first hour with the tools: what is not a capture is said at once (exit 2, one line);
``ab`` takes scenario names; every command's errors start ``ccbridge COMMAND:``; every
``--help`` has a description, each option's help and default, examples and the exit
statuses; ``ccbridge completion`` prints bash, zsh and fish scripts from the parsers.

Exit statuses and stderr are checked on real processes (``python -m bridge``)."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from bridge import demo_check
from bridge.cli import command_modules
from bridge.completion_cmd import SHELLS, combined, command_parser
from compat import capture
from harness import corpus

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "captures"
#: a real HAR file's shape (one line, and pretty-printed as browsers save it)
HAR = {"log": {"version": "1.2", "creator": {"name": "x"}, "entries": []}}
#: what is not a capture, and what the reason must say
NOT_CAPTURES = {
    "empty.jsonl": (b"", "an empty file"),
    "blank.jsonl": (b"\n  \n\n", "an empty file"),
    "one-line.har": (orjson.dumps(HAR), "a HAR file"),
    "pretty.har": (json.dumps(HAR, indent=2).encode(), "a HAR file"),
    "binary.bin": (bytes(range(256)) * 4, "binary data"),
    "latin1.txt": ("caf\xe9\n".encode("latin-1"), "binary data"),
    "capture.jsonl.gz": (gzip.compress(b'{"type":"system"}\n'), "gzip-compressed"),
    "requests.jsonl": (b'{"t": 1.5, "method": "POST", "path": "/v1/messages"}\n', '"type"'),
    "array.json": (b"[1, 2, 3]\n", "a JSON array"),
    "pretty.json": (b'{\n  "a": 1,\n  "b": [2]\n}\n', "one JSON document over several lines"),
    "text.txt": (b"hello\nworld\n", "not JSON"),
}


def bridge(
    *args: str, stdin: bytes = b"", cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge", *args],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line on stderr (never a traceback), and nothing on stdout."""
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert done.stdout == ""
    return lines[0]


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    d = tmp_path_factory.mktemp("not-captures")
    out = {}
    for name, (data, why) in NOT_CAPTURES.items():
        (d / name).write_bytes(data)
        out[name] = (d / name, why)
    return out


# -- 1. what a capture is ------------------------------------------------------------------


@pytest.mark.parametrize("name", list(NOT_CAPTURES))
def test_read_says_why_it_is_not_a_capture(name: str) -> None:
    data, why = NOT_CAPTURES[name]
    with pytest.raises(capture.CaptureError, match=r"^not a capture \(") as e:
        capture.read(data)
    assert why in str(e.value)


def test_read_takes_the_three_flavours_and_nothing_empty() -> None:
    head = capture.encode_header(capture.header("t"))
    assert capture.read(head + capture.encode_record(0.1, "stdout", b"{}")).flavor == "ccbridge"
    assert capture.read(head).flavor == "ccbridge"  # a session with nothing in it yet
    rec = b'{"t": 0.1, "kind": "stdout", "text": "{\\"type\\":\\"result\\"}"}\n'
    assert capture.read(rec).flavor == "transcript"
    # a dump: one frame is enough; what else it holds is for the contract check to judge
    dump = capture.read(b'not json\n{"type":"system","subtype":"init"}\n')
    assert dump.flavor == "stdout"
    assert len(dump.records) == 2
    with pytest.raises(capture.CaptureError, match="cannot be read"):
        capture.load(str(REPO / "no-such-file.jsonl"))
    with pytest.raises(capture.CaptureError, match="cannot be read"):
        capture.load(str(REPO))


def test_whose_session_a_capture_is() -> None:
    twins = CAPTURES / "twins"
    assert capture.load(str(twins / "simple-success.claude.jsonl")).backend == "claude"
    assert capture.load(str(twins / "simple-success.cbc-raw.jsonl")).backend == "cbc"
    ref = CAPTURES / "reference"
    assert capture.load(str(ref / "cbc-2.163.0/mockoai_bg-bash.jsonl")).backend == "cbc"
    claude = ref / "claude-2.1.220/mockapi_simple-success_then-eof-exit0.transcript.jsonl"
    assert capture.load(str(claude)).backend == "claude"
    assert capture.read(b'{"type":"result"}\n').backend is None


@pytest.mark.parametrize("name", list(NOT_CAPTURES))
def test_check_refuses_what_is_not_a_capture(bad: dict[str, tuple[Path, str]], name: str) -> None:
    path, why = bad[name]
    done = bridge("check", str(path))
    assert done.returncode == 2
    line = one_line(done)
    assert line.startswith(f"ccbridge check: {path}: not a capture ("), line
    assert why in line


def test_check_refuses_an_empty_stdin() -> None:
    done = bridge("check", "-")
    assert done.returncode == 2
    assert one_line(done) == (
        "ccbridge check: stdin: not a capture (an empty file: a session has at least one line)"
    )


def test_diff_replay_and_demo_refuse_it_the_same_way(bad: dict[str, tuple[Path, str]]) -> None:
    good = str(CAPTURES / "twins/simple-success.cbc-raw.jsonl")
    har, why = bad["one-line.har"]
    for args, start in [
        (["diff", good, str(har)], f"ccbridge diff: {har}: not a capture ("),
        (["diff", str(har), good], f"ccbridge diff: {har}: not a capture ("),
        (["replay", str(har)], f"ccbridge replay: {har}: not a capture ("),
        (["demo", "--capture", str(har)], f"ccbridge demo: --capture {har}: not a capture ("),
    ]:
        done = bridge(*args)
        assert done.returncode == 2, args
        line = one_line(done)
        assert line.startswith(start), line
        assert why in line
    empty, _ = bad["empty.jsonl"]
    done = bridge("replay", str(empty))  # an empty file is not a session to serve
    assert done.returncode == 2
    assert "an empty file" in one_line(done)


#: captures the demo can show, one of each kind and place: derived, bundled-like, a twin
#: (raw, bridged), a reverse twin, a reference transcript, a test's
SHOWN = [
    "captures/cbc-bg-bash.jsonl",
    "captures/cbc-interrupt-idle-workflow.jsonl",
    "captures/twins/workflow-inline.cbc-raw.jsonl",
    "captures/twins/two-bg-tasks-apart.cbc-bridged.jsonl",
    "captures/twins-reverse/workflow-failed.cbc.jsonl",
    "captures/reference/cbc-2.163.0/mockoai_workflow-inline.transcript.jsonl",
]
#: captures it cannot, and the reason it gives at once
REFUSED = {
    "captures/twins/simple-success.claude.jsonl": "a Claude Code session",
    "captures/reference/claude-2.1.220/mockapi_workflow_local-workflow-task-progress.jsonl": (
        "a Claude Code session"
    ),
    "captures/twins/simple-success.cbc-raw.jsonl": "waits for a task_notification",
    "captures/cbc-interrupt-midturn-workflow.jsonl": "second user message",
    "captures/reference/cbc-2.163.0/mockoai_bg-bash.mock-requests.jsonl": "not a capture",
}


def _repository_captures() -> list[Path]:
    roots = (CAPTURES, REPO / "bridge/data", REPO / "tests")
    return sorted({p for root in roots for p in root.rglob("*.jsonl")})


def _shown_by_the_demo() -> list[Path]:
    out = []
    for p in _repository_captures():
        try:
            demo_check.check("--capture", str(p))
        except capture.CaptureError:
            continue
        out.append(p)
    return out


def test_the_demo_check_knows_what_it_can_show() -> None:
    shown = {str(p.relative_to(REPO)) for p in _shown_by_the_demo()}
    assert set(SHOWN) <= shown
    assert "bridge/data/demo-session.jsonl" in shown
    for path, why in REFUSED.items():
        assert path not in shown
        with pytest.raises(capture.CaptureError, match=why):
            demo_check.check("--capture", str(REPO / path))


@pytest.mark.parametrize("path", SHOWN)
def test_the_demo_shows_a_capture_it_accepts(path: str) -> None:
    done = bridge("demo", "--capture", path, timeout=120)
    assert done.returncode in (0, 1), done.stderr  # 1: the client saw contract violations
    assert "did not end within" not in done.stderr
    assert done.stdout.strip(), done.stderr


@pytest.mark.skipif(
    not os.environ.get("CCBRIDGE_DEMO_ALL"),
    reason="every capture the demo accepts (about 40 runs): CCBRIDGE_DEMO_ALL=1",
)
def test_the_demo_shows_every_capture_it_accepts() -> None:
    failed = []
    for p in _shown_by_the_demo():
        done = bridge("demo", "--capture", str(p), timeout=120)
        if done.returncode not in (0, 1) or "did not end within" in done.stderr:
            failed.append(f"{p}: {done.returncode} {done.stderr[-300:]}")
    assert not failed, failed


@pytest.mark.parametrize("path", list(REFUSED))
def test_the_demo_refuses_the_others_at_once(path: str) -> None:
    t0 = time.monotonic()
    done = bridge("demo", "--capture", path)
    assert time.monotonic() - t0 < 20  # not the demo's 90 s deadline
    assert done.returncode == 2
    line = one_line(done)
    assert line.startswith(f"ccbridge demo: --capture {REPO / path}: ")
    assert REFUSED[path] in line


# -- 2. ab takes scenario names --------------------------------------------------------------


def test_scenario_names_resolve_as_drift_resolves_them(tmp_path: Path) -> None:
    assert corpus.scenario_file("simple-success") == corpus.scenarios() / "simple-success.toml"
    assert corpus.scenario_file("x/y.toml") == Path("x/y.toml")
    assert corpus.scenario_file("y.toml") == Path("y.toml")
    assert "simple-success" in corpus.scenario_names()
    with pytest.raises(FileNotFoundError, match="did you mean simple-success"):
        corpus.scenario_file("simple-sucess")
    from analysis import ab_cmd, drift_cmd

    assert ab_cmd.scenario_files(["simple-success"], False) == drift_cmd.scenario_files(
        "simple-success"
    )


def test_ab_runs_a_scenario_by_name_and_writes_exit_as_a_number(tmp_path: Path) -> None:
    """Both sides a recorded cbc session (``ccbridge replay``): no backend, no model."""
    twin = CAPTURES / "twins/simple-success.cbc-raw.jsonl"
    spec = shlex.join([sys.executable, "-m", "bridge", "replay", str(twin)])
    out = str(tmp_path)
    args = ["simple-success", "--a", spec, "--b", spec, "--out", out, "--json", "--quiet"]
    done = bridge("ab", *args, timeout=180)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    [s] = doc["scenarios"]
    assert s["scenario"] == "simple-success"
    assert s["equivalent"] is True
    for side in ("a", "b"):
        assert s[side]["exit"] == 0
        assert isinstance(s[side]["exit"], int)
        assert s[side]["exit_text"] == "0"
    assert (tmp_path / "simple-success.a.jsonl").is_file()


def test_ab_says_which_scenario_name_it_does_not_know() -> None:
    done = bridge("ab", "simple-sucess", "--a", "cbc", "--b", "claude")
    assert done.returncode == 2
    line = one_line(done)
    assert line.startswith("ccbridge ab: no scenario named 'simple-sucess'")
    assert "did you mean simple-success?" in line


# -- 3. one error format ---------------------------------------------------------------------


def test_every_command_starts_its_errors_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x\n")
    cases = {
        "check": ["check", str(tmp_path / "missing.jsonl")],
        "diff": ["diff", "-", "-"],
        "replay": ["replay", str(tmp_path / "afile")],
        "demo": ["demo", "--capture", str(tmp_path / "afile")],
        "ab": ["ab", "--a", "cbc", "--b", "claude"],
        "scenario": ["scenario", "run", "no-such", "--backend", "cbc", "--out", "x.jsonl"],
        "drift": ["drift", "--jobs", "0"],
        "conformance": ["conformance", "--captures", str(tmp_path / "none")],
        "rules": ["rules", "no-such-rule"],
        "backends": ["backends", "install", "--dir", str(tmp_path / "afile")],
        "run": ["run", "--target", "9.9.9", "--backend", "false"],
        "record": ["record", "--out", str(tmp_path / "r.jsonl"), "--"],
        "completion": ["completion", "tcsh"],
    }
    assert set(cases) == set(command_modules())  # every command is tried
    for name, args in cases.items():
        done = bridge(*args, cwd=tmp_path)
        assert done.returncode == 2, (name, done.stderr)
        line = one_line(done)
        assert line.startswith(f"ccbridge {name}: "), line
        assert not line.startswith(f"ccbridge {name}: error:"), line  # a usage error, said so
    done = bridge("frobnicate")  # the dispatcher's own
    assert done.returncode == 2
    assert one_line(done).startswith("ccbridge: unknown command 'frobnicate'")


# -- 4. --help -------------------------------------------------------------------------------


def _actions(p: argparse.ArgumentParser, where: str) -> list[tuple[str, argparse.Action]]:
    out: list[tuple[str, argparse.Action]] = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            out.append((where, a))
            for name, child in a.choices.items():
                out += _actions(child, f"{where} {name}")
        elif not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS:
            out.append((where, a))
    return out


@pytest.mark.parametrize("name", sorted(command_modules()))
def test_every_help_has_a_line_options_defaults_examples_and_exits(name: str) -> None:
    p = command_parser(command_modules()[name][1])
    text = p.format_help()
    assert p.description
    assert "\n" not in p.description.strip()
    assert "``" not in text  # no reST
    examples = text.partition("\nexamples:\n")[2].partition("\n\n")[0]
    assert "ccbridge " in examples, text
    assert "\nexit status:\n  " in text
    assert "\n  0 " in text or "\n  N " in text  # what success is
    assert "\n  2 " in text  # a usage error
    for where, action in _actions(p, p.prog):
        label = f"{where} {action.option_strings or action.dest}"
        assert action.help, f"{label}: no help"
        default = action.default
        if default not in (None, False, [], argparse.SUPPRESS):
            assert "default" in action.help, f"{label}: its default {default!r} is not said"


def test_help_is_printed_by_the_real_command() -> None:
    done = bridge("check", "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: ccbridge check ")
    assert "(default: claude)" in done.stdout
    assert "exit status:\n  0     no violations" in done.stdout


@pytest.mark.parametrize("dropin", ["claude-on-cbc", "cbc-on-claude"])
def test_the_dropins_help_fits_in_100_columns(dropin: str) -> None:
    module = "bridge.dropin" if dropin == "claude-on-cbc" else "bridge.dropin_cbc"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; from {module} import main; sys.exit(main(['--help']))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0
    long = [ln for ln in done.stdout.splitlines() if len(ln) > 100]
    assert not long, long
    assert "CLAUDE_CODE" in done.stdout  # the environment table is there, a line each


# -- 5. shell completion ---------------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_completion_prints_a_script_for_every_command(shell: str) -> None:
    done = bridge("completion", shell)
    assert done.returncode == 0, done.stderr
    script = done.stdout
    for name in command_modules():
        assert name in script
    for option in ("contract", "capture", "via-b", "materialize"):  # (fish: -l materialize)
        assert option in script
    marker = {"bash": "complete -o", "zsh": "#compdef ccbridge", "fish": "complete -c ccbridge"}
    assert marker[shell] in script


def test_the_combined_parser_is_every_command_parser() -> None:
    top = combined()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(command_modules())
    check = sub.choices["check"]
    assert {"--contract", "--json", "--rules"} <= set(check._option_string_actions)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_bash_script_completes(tmp_path: Path) -> None:
    script = tmp_path / "ccbridge.bash"
    script.write_text(bridge("completion", "bash").stdout)

    def complete(*words: str) -> list[str]:
        line = " ".join(["ccbridge", *words])
        code = (
            f"source {shlex.quote(str(script))}\n"
            f"COMP_WORDS=(ccbridge {' '.join(shlex.quote(w) for w in words)})\n"
            f"COMP_CWORD={len(words)}; COMP_LINE={shlex.quote(line)}; COMP_POINT={len(line)}\n"
            "_shtab_ccbridge; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
        )
        done = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("ch") == ["check"]
    assert "completion" in complete("co")
    assert complete("check", "--con") == ["--contract"]
    assert complete("check", "--contract", "") == ["claude", "cbc"]
    assert set(complete("backends", "")) == {"install", "list"}


def test_completion_is_documented_and_the_readme_stays_small() -> None:
    readme = (REPO / "README.md").read_text()
    assert "ccbridge completion bash" in readme
    assert len(readme.encode()) <= 20 * 1024
    commands = (REPO / "docs/commands.md").read_text()
    for shell in SHELLS:
        assert f"ccbridge completion {shell}" in commands
