"""Record, then replay (issue "the first hour"): a session recorded through the bridge
(``CCBRIDGE_RECORD``) and served back as the backend (``ccbridge replay REC``) gives the
client the same output and status, for ``-p`` in each output format and a stream-json
client, through ``cbc-to-claude`` (the drop-in) and ``identity``. Before, a ``-p`` replay
hung: the capture's "stdin closed" is the client's EOF, which the wind-down holds back from
the backend until the turn ends; the replay waited for it before answering."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .. import conftest

#: a cbc stand-in: one turn per user line (init, answer, result), exit 0 at stdin EOF
BACKEND = r"""
import json, sys
sid = "11111111-2222-4333-8444-555555555555"
for n, line in enumerate(sys.stdin, 1):
    if '"user"' not in line:
        continue
    for frame in (
        {"type": "system", "subtype": "init", "session_id": sid, "cwd": "/w", "tools": [],
         "model": "m", "permissionMode": "default", "apiKeySource": "none"},
        {"type": "assistant", "session_id": sid, "parent_tool_use_id": None,
         "message": {"id": f"m{n}", "type": "message", "role": "assistant", "model": "m",
                     "content": [{"type": "text", "text": f"answer {n}"}],
                     "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "result", "subtype": "success", "is_error": False, "result": f"answer {n}",
         "session_id": sid, "num_turns": 1, "duration_ms": 5, "duration_api_ms": 4,
         "total_cost_usd": 0, "usage": {"input_tokens": 1, "output_tokens": 1}},
    ):
        print(json.dumps(frame), flush=True)
"""
LINE = b'{"type":"user","message":{"role":"user","content":"hello"},"parent_tool_use_id":null}\n'
DROPIN = "import sys; from bridge.dropin import entry; entry()"
RUN = "import sys; from bridge.cli import entry; entry()"


#: what differs between two runs of one session: ids the bridge makes, clocks
_VARIES = [
    (re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), b"<uuid>"),
    (re.compile(rb'"(timestamp|duration_ms|duration_api_ms)":("[^"]*"|\d+)'), rb'"\1":0'),
]


def masked(out: bytes) -> bytes:
    for pattern, stand_in in _VARIES:
        out = pattern.sub(stand_in, out)
    return out


def command(how: str, args: list[str]) -> list[str]:
    if how == "drop-in":
        return [sys.executable, "-c", DROPIN, *args]
    return [sys.executable, "-c", RUN, "run", "--profile", "identity", "--", *args]


def session(
    tmp_path: Path, argv: list[str], backend: str, stdin: bytes, record: Path | None
) -> subprocess.CompletedProcess[bytes]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(conftest.REPO),
        "CCBRIDGE_CONFIG": os.devnull,
        "CCBRIDGE_BACKEND": backend,
    }
    if record is not None:
        env["CCBRIDGE_RECORD"] = str(record)
    return subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=tmp_path, timeout=60)


P = ["-p", "hello"]
STREAM = ["--output-format", "stream-json", "--verbose"]
#: (how, client argv, its stdin): -p in each format through the drop-in; a stream-json
#: client through both (identity passes -p to a backend that runs it itself)
CASES = [
    ("drop-in", P, b""),
    ("drop-in", [*P, "--output-format", "json"], b""),
    ("drop-in", [*P, *STREAM], b""),
    ("drop-in", ["--input-format", "stream-json", *STREAM], LINE),
    ("identity", ["--input-format", "stream-json", *STREAM], LINE),
]


@pytest.mark.parametrize(
    ("how", "args", "stdin"),
    CASES,
    ids=["p-text", "p-json", "p-stream-json", "stream-json-client", "identity-stream-json"],
)
def test_a_recorded_session_replays_to_the_same_output(
    tmp_path: Path, how: str, args: list[str], stdin: bytes
) -> None:
    script = tmp_path / "backend.py"
    script.write_text(BACKEND)
    recorded = session(
        tmp_path, command(how, args), f"{sys.executable} {script}", stdin, tmp_path / "rec"
    )
    assert recorded.returncode == 0, recorded.stderr.decode()
    (capture,) = (tmp_path / "rec").iterdir()
    replay = f"{shlex.quote(sys.executable)} -m bridge replay {shlex.quote(str(capture))}"
    replayed = session(tmp_path, command(how, args), replay, stdin, None)
    assert replayed.returncode == recorded.returncode, replayed.stderr.decode()
    assert masked(replayed.stdout) == masked(recorded.stdout)
    assert b"answer 1" in replayed.stdout
