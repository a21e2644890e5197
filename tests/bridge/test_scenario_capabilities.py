"""The scenario format's new parts (parallel calls, errors, hooks, MCP servers, a resumed
second run) and the scripted MCP server, without a real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from harness import mcp_server, runner
from harness.brain import Call
from harness.scenario import ScenarioError, loads

RICH = """
name = "rich"
hooks = { PreToolUse = [{ matcher = "Bash", hooks = [{ type = "command", command = "{PYTHON} {CWD}/hook.py" }] }] }
[mcp_servers.probe]
command = "{PYTHON}"
args = ["{REPO}/harness/mcp_server.py", "--tool", "lookup=found {args}"]

[[model.rules]]
when = "GO"
thinking = "hmm"
calls = [{ tool = "Read", input = { file_path = "a" } }, { tool = "Bash", input = { command = "ls" } }]

[[model.rules]]
when = "BUSY"
status = 529
times = 2

[[steps]]
user = "GO"

[resume]
args = ["--max-turns", "3"]
[[resume.steps]]
user = "again"
[[resume.steps]]
after = { type = "result" }
"""  # noqa: E501


def test_rich_scenario_parses() -> None:
    sc = loads(RICH)
    go, busy = sc.model.rules
    assert go.calls == (Call("Read", {"file_path": "a"}), Call("Bash", {"command": "ls"}))
    assert go.thinking == "hmm"
    assert (busy.status, busy.times) == (529, 2)
    assert sc.resume is not None
    assert sc.resume_args_for("claude") == ("--max-turns", "3")
    second = sc.second_run()
    assert [s.user for s in second.steps] == ["again", None]
    assert second.resume is None
    assert sc.mcp_servers is not None
    assert sc.hooks is not None


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('name = "x"\n[resume]\nsteps = []\nargz = []', "argz"),
        ('name = "x"\n[[model.rules]]\ncalls = [{ tool = "A", inptu = {} }]', "inptu"),
        ('name = "x"\n[[model.rules]]\nstatus = 529\ntext = "no"', "no text"),
        ('name = "x"\nmcp_servers = { a = 1 }', "mcp_servers.a"),
        ('name = "x"\nheadless = true\n[resume]\n[[resume.steps]]\nuser = "hi"', "headless"),
    ],
)
def test_strict_errors(text: str, error: str) -> None:
    with pytest.raises(ScenarioError, match=error):
        loads(text)


def test_resume_args_default_to_the_first_runs() -> None:
    sc = loads('name = "x"\nargs = ["--a"]\nbackend_args = { cbc = ["--b"] }\n[resume]\n')
    assert sc.resume_args_for("claude") == ("--a",)
    assert sc.resume_args_for("cbc") == ("--b",)


def test_launch_files_are_written_and_named_on_the_command_line(tmp_path: Path) -> None:
    sc = loads(RICH)
    dirs = {"ROOT": str(tmp_path), "CWD": str(tmp_path / "work"), "HOME": str(tmp_path / "h")}
    flags = runner._launch_files(sc, dirs)
    assert flags == [
        "--settings",
        str(tmp_path / "settings.json"),
        "--mcp-config",
        str(tmp_path / "mcp.json"),
    ]
    settings = orjson.loads((tmp_path / "settings.json").read_bytes())
    cmd = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert cmd == f"{sys.executable} {tmp_path}/work/hook.py"
    mcp = orjson.loads((tmp_path / "mcp.json").read_bytes())["mcpServers"]["probe"]
    assert mcp["command"] == sys.executable
    assert mcp["args"][0] == f"{runner.REPO}/harness/mcp_server.py"
    assert runner._launch_files(loads('name = "x"'), dirs) == []


def test_session_id_is_the_first_one_seen() -> None:
    frames = [
        {"type": "control_response"},
        {"type": "system", "session_id": ""},
        {"type": "system", "session_id": "s-1"},
        {"session_id": "s-2"},
    ]
    assert runner._session_id(frames) == "s-1"
    assert runner._session_id([{"type": "x"}]) is None


def test_mcp_server_speaks_json_rpc_on_stdio() -> None:
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "lookup", "arguments": {"q": "x"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "broken", "arguments": {}},
        },
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nope"}},
        {"jsonrpc": "2.0", "id": 6, "method": "resources/list"},
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in msgs) + "not json\n"
    done = subprocess.run(
        [
            sys.executable,
            mcp_server.__file__,
            "--tool",
            "lookup=found {args}",
            "--error-tool",
            "broken=it failed",
        ],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5, 6, None]  # no reply to the note
    assert replies[0]["result"]["protocolVersion"] == "2025-03-26"
    assert [t["name"] for t in replies[1]["result"]["tools"]] == ["lookup", "broken"]
    assert replies[2]["result"] == {
        "content": [{"type": "text", "text": 'found {"q": "x"}'}],
        "isError": False,
    }
    assert replies[3]["result"]["isError"] is True
    assert replies[4]["error"]["code"] == -32602
    assert replies[5]["error"]["code"] == -32601
    assert replies[6]["error"]["code"] == -32700


def test_model_script_paths_are_the_runs(tmp_path: Path) -> None:
    sc = loads(
        'name = "x"\n[[model.rules]]\nwhen = "A"\ntext = "in {CWD}"\n'
        'calls = [{ tool = "Read", input = { file_path = "{CWD}/notes.txt" } }]\n'
        '[[model.rules]]\ntool = "Bash"\ninput = { command = "ls {HOME}" }\n'
    )
    script = runner._script_in(sc.model, {"CWD": "/r/work", "HOME": "/r/home"})
    first, second = script.rules
    assert first.text == "in /r/work"
    assert first.calls[0].input == {"file_path": "/r/work/notes.txt"}
    assert second.input == {"command": "ls /r/home"}


async def test_a_second_runs_client_ignores_the_first_runs_frames() -> None:
    from typing import Any, cast

    import trio

    from harness.client import Client, Recording, _is_reply_to
    from harness.scenario import Condition

    rec = Recording([], via=False)
    rec.start()
    rec._line("stdout", b'{"type":"control_response","response":{"request_id":"init"}}')
    rec._line("stdout", b'{"type":"result","subtype":"success"}')
    sc = loads(RICH)
    client = Client(sc.second_run(), cast(Any, None), rec)
    assert client.scenario.name == "rich#resume"  # its lines' uuids differ from run 1's
    with trio.move_on_after(0.2) as cs:
        await client._wait_frame(_is_reply_to("init"))
    assert cs.cancelled_caught  # run 1's initialize reply does not count
    assert client._find(Condition(type="result")) is None
    rec._line("stdout", b'{"type":"result","subtype":"success"}')
    assert client._find(Condition(type="result")) == {"type": "result", "subtype": "success"}


def test_scrubber_covers_launch_paths_and_the_bare_model_address() -> None:
    dirs = {"ROOT": "/t/r", "CWD": "/t/r/work", "HOME": "/t/r/home", "TMP": "/t/r/tmp"}
    pairs = runner.scrubber(dirs, "http://127.0.0.1:4321")
    text = (
        f"{sys.executable} {runner.REPO}/x.py gateway (127.0.0.1:4321) http://127.0.0.1:4321/v1"
    ).encode()
    for old, new in pairs:
        text = text.replace(old, new)
    assert text == b"{PYTHON} {REPO}/x.py gateway ({MODEL_ADDR}) {MODEL_URL}/v1"


CORPUS = sorted((runner.REPO / "scenarios").glob("*.toml"))


def test_the_corpus_is_whole() -> None:
    assert len(CORPUS) >= 39  # three times the 13 scenarios before issue 12
    assert not (runner.REPO / "scenarios" / "issue12").exists()  # every one moved up


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_scenario_loads_and_is_named_after_its_file(path: Path) -> None:
    from harness.scenario import load

    assert load(path).name == path.stem


def test_a_second_bridge_capture_is_merged_after_the_second_spawn(tmp_path: Path) -> None:
    from compat import capture
    from harness.client import Recording

    path = tmp_path / "bridge-capture-2.jsonl"
    path.write_bytes(
        capture.encode_header(capture.header("bridge"))
        + capture.encode_record(0.5, "stdout", b'{"type":"result"}', False)
    )
    rec = Recording([], via=True)
    rec.add("client_out", b'{"type":"result","n":1}')  # run 1, t ~ 0
    rec.records[-1] = (0.3, *rec.records[-1][1:])
    rec.records.append((5.2, "client_out", b'{"type":"result","n":2}', False))  # run 2
    rec.merge_bridge_capture(str(path), since=5.0)
    (merged,) = [r for r in rec.records if r[1] == "stdout"]
    assert merged[0] >= 5.0  # on run 2's side of the clock, not among run 1's records
