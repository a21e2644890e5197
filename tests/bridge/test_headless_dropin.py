"""``claude-on-cbc`` in Claude's headless modes, as a process, in front of a fake cbc that
answers the stream-json user line with a stream cbc 2.163.0 wrote for the same probe
(``data/headless/cbc-2.163.0``); what it prints is compared with what Claude 2.1.220
printed (``data/headless/claude-2.1.220``). The real-cbc run of every probe is
``test_headless_real.py``."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "data/headless"
REPO = Path(__file__).resolve().parents[2]

#: a cbc stand-in: records its argv and stdin lines, writes STREAM after the first line
#: (placeholders of the probe masking resolved), exits 0 at stdin EOF (after writing the
#: file ``FAKE_LATE`` names, if set: what a cbc writes after its stdin closed)
FAKE_CBC = r"""
import json, os, sys
log, stream = sys.argv[1], sys.argv[2]
lines = []
def save():
    with open(log, "w") as f:
        json.dump({"argv": sys.argv[3:], "stdin": lines}, f)
save()
for line in sys.stdin:
    lines.append(line)
    save()
    if len(lines) == 1:
        with open(stream) as f:
            data = f.read().replace("<session-1>", "11111111-2222-3333-4444-555555555555")
        sys.stdout.write(data.replace("<uuid>", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"))
        sys.stdout.flush()
if os.environ.get("FAKE_LATE"):
    with open(os.environ["FAKE_LATE"]) as f:
        sys.stdout.write(f.read())
"""


def probe(name: str, backend: str = "claude-2.1.220") -> dict[str, Any]:
    out: dict[str, Any] = json.loads((DATA / backend / f"{name}.json").read_text())
    return out


def dropin_process(
    tmp_path: Path,
    stream: str = "arg-stream-json-verbose",
    env: dict[str, str] | None = None,
    text: str | None = None,
) -> tuple[list[str], dict[str, str], Path]:
    """The drop-in's command line, environment and the fake's log path: the fake cbc
    answers its first line with ``text`` (default: the probe ``stream`` cbc wrote)."""
    fake, log = tmp_path / "fake_cbc.py", tmp_path / "fake.json"
    fake.write_text(FAKE_CBC)
    data = tmp_path / "stream.jsonl"
    data.write_text(probe(stream, "cbc-2.163.0")["stdout"] if text is None else text)
    e = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "CCBRIDGE_BACKEND": shlex.join([sys.executable, str(fake), str(log), str(data)]),
        **(env or {}),
    }
    argv = [sys.executable, "-c", "import sys; from bridge.dropin import main; sys.exit(main())"]
    return argv, e, log


def dropin(
    tmp_path: Path,
    args: list[str],
    stream: str = "arg-stream-json-verbose",
    stdin: bytes | None = b"",
    env: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[bytes], dict[str, Any] | None]:
    argv, e, log = dropin_process(tmp_path, stream, env)
    done = subprocess.run(
        [*argv, *args],
        input=stdin,
        capture_output=True,
        env=e,
        cwd=tmp_path,
        timeout=60,
        check=False,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )
    seen = json.loads(log.read_text()) if log.exists() else None
    return done, seen


def user_content(seen: dict[str, Any] | None) -> str:
    assert seen is not None
    assert len(seen["stdin"]) == 1
    content: str = json.loads(seen["stdin"][0])["message"]["content"]
    return content


def test_prompt_argument_text_output(tmp_path: Path) -> None:
    done, seen = dropin(tmp_path, ["-p", "hello"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == probe("arg-text")["stdout"].encode()
    assert user_content(seen) == "hello"
    assert seen is not None
    assert "hello" not in seen["argv"]  # the prompt is a user line, not a word for cbc
    assert seen["argv"][0] in ("-p", "--print")
    assert "--output-format" in seen["argv"]
    assert seen["argv"][seen["argv"].index("--output-format") + 1] == "stream-json"


def test_prompt_on_stdin_and_argument_joined(tmp_path: Path) -> None:
    done, seen = dropin(tmp_path, ["-p", "review this"], stdin=b"diff --git a/x b/x\n+new line\n")
    assert done.returncode == 0, done.stderr
    assert user_content(seen) == probe("arg-and-stdin")["model_inputs"][0]
    done, seen = dropin(tmp_path, ["-p"], stdin=b"hello from stdin\n")
    assert user_content(seen) == "hello from stdin\n"
    assert done.stdout == b"ok\n"


def test_json_output_is_the_result_frame(tmp_path: Path) -> None:
    done, _ = dropin(tmp_path, ["-p", "hello", "--output-format", "json"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(b"\n") == 1
    got, claude = json.loads(done.stdout), json.loads(probe("arg-json")["stdout"])
    assert got["type"] == "result"
    assert got["result"] == claude["result"] == "ok"
    # every key Claude writes except its API timing figures, which cbc does not measure
    missing = set(claude) - set(got)
    assert missing <= {"ttft_ms", "ttft_stream_ms", "time_to_request_ms"}, missing


def _late_result(tmp_path: Path) -> dict[str, str]:
    """``FAKE_LATE``: a result the fake writes after its stdin closed."""
    stream = probe("arg-stream-json-verbose", "cbc-2.163.0")["stdout"]
    result = json.loads(next(x for x in stream.splitlines() if '"type":"result"' in x))
    result["result"] = "written after its stdin closed"
    late = tmp_path / "late.jsonl"
    late.write_text(json.dumps(result) + "\n")
    return {"FAKE_LATE": str(late)}


@pytest.mark.parametrize("output", ["text", "json"])
def test_output_is_the_settled_sessions(tmp_path: Path, output: str) -> None:
    """The text (or result) is printed when the session settles (its result written,
    nothing running: Claude prints and exits there), not when cbc exits: what cbc writes
    after its stdin was closed is not the run's answer."""
    env = _late_result(tmp_path)
    done, _ = dropin(tmp_path, ["-p", "hello", "--output-format", output], env=env)
    assert done.returncode == 0, done.stderr
    if output == "text":
        assert done.stdout == probe("arg-text")["stdout"].encode()
    else:
        assert json.loads(done.stdout)["result"] == "ok"
    # a stream-json run loses none of it: the late result reaches the client too
    done, _ = dropin(
        tmp_path, ["-p", "hello", "--output-format", "stream-json", "--verbose"], env=env
    )
    results = [json.loads(x) for x in done.stdout.splitlines() if b'"type":"result"' in x]
    assert [r["result"] for r in results] == ["ok", "written after its stdin closed"]


def test_stream_json_verbose_passes_the_stream(tmp_path: Path) -> None:
    done, seen = dropin(tmp_path, ["-p", "hello", "--output-format", "stream-json", "--verbose"])
    assert done.returncode == 0, done.stderr
    kinds = [json.loads(x)["type"] for x in done.stdout.splitlines()]
    assert kinds[0] == "system"
    assert kinds[-1] == "result"
    assert "assistant" in kinds
    assert user_content(seen) == "hello"


def test_max_turns_error_result_exits_1(tmp_path: Path) -> None:
    done, _ = dropin(
        tmp_path, ["-p", "TRIGGER_TOOL run it", "--max-turns", "1"], stream="stream-max-turns"
    )
    assert done.returncode == 1
    assert done.stdout == probe("arg-max-turns-text")["stdout"].encode()


@pytest.mark.parametrize(
    "name",
    [
        "no-prompt",
        "arg-stream-json-no-verbose",
        "bad-output-format",
        "bad-input-format",
        "stream-input-text-output",
        "unknown-option",
        "unknown-option-far",
        "missing-value",
        "missing-value-variadic",
    ],
)
def test_usage_errors_as_claude_and_no_backend_started(tmp_path: Path, name: str) -> None:
    p = probe(name)
    stdin = b"" if name == "no-prompt" else None
    done, seen = dropin(tmp_path, p["argv"], stdin=stdin)
    assert (done.returncode, done.stdout.decode(), done.stderr.decode()) == (
        p["status"],
        p["stdout"],
        p["stderr"],
    )
    assert seen is None


def test_stream_json_client_is_untouched(tmp_path: Path) -> None:
    line = b'{"type":"user","message":{"role":"user","content":"hello"}}\n'
    done, seen = dropin(
        tmp_path,
        ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
        stdin=line,
    )
    assert done.returncode == 0, done.stderr
    assert seen is not None
    assert seen["stdin"] == [line.decode()]
    assert json.loads(done.stdout.splitlines()[-1])["type"] == "result"
