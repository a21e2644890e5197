"""``claude-on-cbc`` leaves Claude's session store, as a process, in front of a fake cbc that
answers with a stream cbc 2.163.0 wrote (``test_headless_dropin``'s): in ``-p`` runs and for
stream-json clients; read back by the Python SDK's own session functions; not written when
switched off. The real cbc's store is compared with Claude's in
``test_session_store_real.py``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bridge.transcripts import project_slug

from .test_headless_dropin import dropin, dropin_process, probe

#: the session id of the fake's stream (``test_headless_dropin.FAKE_CBC``)
SID = "11111111-2222-3333-4444-555555555555"
USER = (
    b'{"type":"user","message":{"role":"user","content":"hello"},"session_id":"",'
    b'"parent_tool_use_id":null}\n'
)
STREAM_JSON = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]


def store_file(tmp_path: Path) -> Path:
    return (
        tmp_path
        / ".claude"
        / "projects"
        / project_slug(os.path.realpath(tmp_path))
        / f"{SID}.jsonl"
    )


def records(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in store_file(tmp_path).read_text().splitlines()]


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["-p", "hello"], b""),
        (["-p", "--output-format", "json"], b"hello"),
        (STREAM_JSON, USER),
    ],
    ids=["print-text", "print-json-stdin", "stream-json"],
)
def test_every_mode_leaves_claudes_records(tmp_path: Path, args: list[str], stdin: bytes) -> None:
    done, _ = dropin(tmp_path, args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(store_file(tmp_path).stat().st_mode) == 0o600
    got = records(tmp_path)
    assert [(r["type"], r.get("operation")) for r in got] == [
        ("queue-operation", "enqueue"),
        ("queue-operation", "dequeue"),
        ("user", None),
        ("assistant", None),
        ("last-prompt", None),
    ]
    user, reply = got[2], got[3]
    assert user["message"] == {"role": "user", "content": "hello"}
    assert reply["message"]["content"] == [{"type": "text", "text": "ok"}]
    assert reply["parentUuid"] == user["uuid"]
    assert {r["sessionId"] for r in got} == {SID}
    assert user["cwd"] == os.path.realpath(tmp_path)
    assert user["version"] == "2.1.220"
    assert b"session store" not in done.stderr


def test_the_sdks_session_functions_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk not installed")
    done, _ = dropin(tmp_path, STREAM_JSON, stdin=USER)
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / ".claude"))
    (info,) = sdk.list_sessions(directory=str(tmp_path))
    assert info.session_id == SID
    assert info.first_prompt == "hello"
    assert info.cwd == os.path.realpath(tmp_path)
    messages = sdk.get_session_messages(SID, directory=str(tmp_path))
    assert [(m.type, m.message["content"]) for m in messages] == [
        ("user", "hello"),
        ("assistant", [{"type": "text", "text": "ok"}]),
    ]


def test_switched_off_nothing_is_written(tmp_path: Path) -> None:
    done, _ = dropin(tmp_path, ["-p", "hello"], env={"CCBRIDGE_SESSION_STORE": "off"})
    assert done.returncode == 0, done.stderr
    (tmp_path / "ccbridge.toml").write_text("session_store = false\n")
    done, _ = dropin(tmp_path, STREAM_JSON, stdin=USER)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / ".claude").exists()


def test_a_store_that_cannot_be_written_is_one_warning(tmp_path: Path) -> None:
    (tmp_path / ".claude").write_text("a file where Claude's directory goes")
    done, _ = dropin(tmp_path, ["-p", "hello"])
    assert done.returncode == 0
    assert done.stdout == b"ok\n"
    lines = [line for line in done.stderr.decode().splitlines() if "session store" in line]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr.decode()


def _hook_stream() -> str:
    """The fake's stream with a PreToolUse hook request after its init, as cbc asks an
    SDK's hook, naming cbc's own transcript."""
    lines = probe("arg-stream-json-verbose", "cbc-2.163.0")["stdout"].splitlines(keepends=True)
    hook = {
        "type": "control_request",
        "request_id": "hook_1",
        "request": {
            "subtype": "hook_callback",
            "callback_id": "hook_0",
            "tool_use_id": "call_1",
            "input": {
                "hook_event_name": "PreToolUse",
                "session_id": "<session-1>",
                "transcript_path": "/home/u/.codebuddy/projects/x/<session-1>.jsonl",
                "cwd": "/w",
                "tool_name": "Bash",
                "tool_input": {"command": "true"},
                "tool_use_id": "call_1",
            },
        },
    }
    return "".join([lines[0], json.dumps(hook) + "\n", *lines[1:]])


@pytest.mark.parametrize("store", ["on", "off"])
def test_a_hook_is_told_the_transcript_the_store_writes(tmp_path: Path, store: str) -> None:
    """A hook request names the session's file in Claude's store (the file the drop-in
    writes), as Claude names its own; with the store off, cbc's transcript."""
    argv, env, _ = dropin_process(
        tmp_path, env={"CCBRIDGE_SESSION_STORE": store}, text=_hook_stream()
    )
    with subprocess.Popen(
        [*argv, *STREAM_JSON], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=tmp_path
    ) as p:
        assert p.stdin is not None
        assert p.stdout is not None
        p.stdin.write(USER)
        p.stdin.flush()
        frames = iter(map(json.loads, p.stdout))
        hook = next(f for f in frames if f.get("type") == "control_request")
        p.stdin.close()
        p.stdout.read()
    assert p.returncode == 0
    path = hook["request"]["input"]["transcript_path"]
    if store == "on":
        assert path == str(store_file(tmp_path))
        assert store_file(tmp_path).exists()
    else:
        assert path == f"/home/u/.codebuddy/projects/x/{SID}.jsonl"
