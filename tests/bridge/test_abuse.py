"""Trustworthy under abuse: a recording or a log that cannot be written never costs the
session; nothing is written through a link or over a file the bridge did not create;
closed standard descriptors; ``--version`` checks the target; what ended the backend is
said, not guessed. Each test feeds the bad input itself (``/dev/full``, a file-size limit,
planted links, a daemon's closed stderr) to a real ``ccbridge``/``claude-on-cbc`` process
or to the piece that handles it."""

from __future__ import annotations

import datetime
import json
import os
import resource
import shlex
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge import files
from bridge.recorder import Recorder, open_capture
from compat import capture
from compat.engine import Engine
from compat.profiles import build, parse_rule_settings

from ..compat.tasks_support import det_env
from .fakes import PY
from .memory_backend import MemoryBackend
from .test_winddown_driver import memory_session

#: a backend that answers each user line with a padded assistant frame and a result, says
#: something on its stderr, and exits 0 at its EOF
TALKER = r"""
import json, sys
pad = "x" * int(sys.argv[1])
for line in sys.stdin:
    sys.stderr.write("BACKEND-" + "STDERR\n"); sys.stderr.flush()
    for t in ("assistant", "result"):
        sys.stdout.write(json.dumps({"type": t, "pad": pad}) + "\n")
    sys.stdout.flush()
"""
#: the start of a turn: its init and the first event of a streamed message
TURN_START = [
    {"type": "system", "subtype": "init", "session_id": "s1", "uuid": "u0"},
    {
        "type": "stream_event",
        "session_id": "s1",
        "parent_tool_use_id": None,
        "uuid": "u1",
        "event": {
            "type": "message_start",
            "message": {"id": "m1", "role": "assistant", "content": [], "model": "m"},
        },
    },
]
#: a backend that starts a streamed message and exits (status argv[1]) in the middle of it
MIDSTREAM = f"""
import sys
sys.stdin.readline()
sys.stdout.write({"".join(json.dumps(o) + chr(10) for o in TURN_START)!r})
sys.stdout.flush()
sys.exit(int(sys.argv[1]))
"""
LINES = b"".join(b'{"type":"user","n":%d}\n' % i for i in range(20))


def bridge(
    args: list[str],
    stdin: bytes = LINES,
    env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CCBRIDGE_")}
    return subprocess.run(
        [sys.executable, "-m", "bridge", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        env={**full_env, **(env or {})},
        preexec_fn=preexec,
    )


def run_identity(pad: int, *extra: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    backend = f"{PY} -c {shlex.quote(TALKER)} {pad}"
    return bridge(["run", "--profile", "identity", "--backend", backend, *extra], **kw)  # type: ignore[arg-type]


def frames(out: bytes) -> list[dict[str, object]]:
    return [json.loads(x) for x in out.splitlines()]


# -- a recording is an observer -------------------------------------------------------


def test_a_full_disk_stops_the_recording_not_the_session() -> None:
    """``--record /dev/full``: every write fails with ENOSPC. The client gets the whole
    session, the status is the backend's, and stderr says it once."""
    whole = run_identity(2000)
    full = run_identity(2000, "--record", "/dev/full")
    assert whole.returncode == 0
    assert full.returncode == 0
    assert full.stdout == whole.stdout
    assert len(frames(full.stdout)) == 40
    said = [ln for ln in full.stderr.decode().splitlines() if "recording" in ln]
    assert said == [
        "ccbridge: error: recording to /dev/full stopped: No space left on device; "
        "the session goes on (the capture holds what was written before)"
    ]
    assert "Traceback" not in full.stderr.decode()


def test_a_file_size_limit_cuts_the_capture_readably(tmp_path: Path) -> None:
    """``RLIMIT_FSIZE`` (a quota, ``ulimit -f``): the write past it fails with EFBIG (Python
    ignores SIGXFSZ). The session is whole; the capture holds what fitted, read back as a
    cut recording."""
    rec = tmp_path / "cut.jsonl"
    limit = 64 * 1024

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    whole = run_identity(4000)
    done = run_identity(4000, "--record", str(rec), preexec=small_files)
    assert done.returncode == whole.returncode == 0
    assert done.stdout == whole.stdout
    assert b"File too large" in done.stderr
    assert rec.stat().st_size <= limit
    with rec.open("rb") as f:
        cap = capture.parse(f)
    assert cap.records  # what was written before stays readable
    assert cap.cut or cap.records[-1].kind != "exit"


def test_the_recorder_stops_once_and_says_why(tmp_path: Path) -> None:
    said: list[str] = []
    fd = os.open("/dev/full", os.O_WRONLY)
    rec = Recorder((fd, "/dev/full"), "test", on_error=said.append)
    for _ in range(100):
        rec.data("stdout", b"x" * 10_000 + b"\n")
    rec.exit(0, {"frames": {}})
    assert rec.failed == "No space left on device"
    assert len(said) == 1


def test_an_unusable_record_target_is_refused_before_anything_starts(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    backend = f"touch {marker}"
    # /sys: a place where no one creates a file, root included (a test that makes a
    # read-only directory with chmod would pass for root without proving anything)
    ro = "/sys/capture.jsonl"
    done = bridge(["run", "--profile", "identity", "--backend", backend, "--record", ro])
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"ccbridge run: --record='{ro}': Permission denied"
    ]
    assert not marker.exists()
    env = {"CCBRIDGE_RECORD": "/sys", "CCBRIDGE_BACKEND": backend}
    done = bridge(["run", "--profile", "identity"], env=env)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "ccbridge run: CCBRIDGE_RECORD='/sys': Permission denied"
    ]
    assert not marker.exists()


# -- no link followed, nothing replaced ----------------------------------------------------


def _names_for_now(directory: Path) -> list[Path]:
    now = datetime.datetime.now(datetime.UTC)
    return [
        directory / f"session-{(now + datetime.timedelta(seconds=s)).strftime('%Y%m%dT%H%M%S')}"
        f"-{os.getpid()}.jsonl"
        for s in (0, 1, 2)
    ]


def test_a_planted_link_at_the_next_capture_name_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    captures = tmp_path / "captures"
    captures.mkdir()
    for name in _names_for_now(captures):
        name.symlink_to(victim)
    fd, path = open_capture(str(captures) + os.sep)
    os.close(fd)
    assert victim.read_text() == "precious\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert not Path(path).is_symlink()
    assert path.endswith("-2.jsonl")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_capture_of_the_same_name_is_not_replaced(tmp_path: Path) -> None:
    for name in _names_for_now(tmp_path):
        name.write_text("another session\n")
    rec = Recorder(str(tmp_path) + os.sep, "test")
    rec.exit(0)
    for name in _names_for_now(tmp_path):
        assert name.read_text() == "another session\n"
    assert rec.path not in {str(p) for p in _names_for_now(tmp_path)}


def test_create_exclusive_takes_the_next_free_name(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "a-2.jsonl").symlink_to(tmp_path / "nowhere")
    fd, name = files.create_exclusive(str(tmp_path / "a.jsonl"))
    os.close(fd)
    assert name == str(tmp_path / "a-3.jsonl")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("how", ["--record", "CCBRIDGE_LOG", "CCBRIDGE_RECORD"])
def test_a_link_the_user_names_is_refused(tmp_path: Path, how: str) -> None:
    victim = tmp_path / "victim"
    victim.mkdir() if how == "CCBRIDGE_RECORD" else victim.write_text("precious\n")
    link = tmp_path / "link"
    link.symlink_to(victim)
    marker = tmp_path / "started"
    args = ["run", "--profile", "identity", "--backend", f"touch {marker}"]
    env: dict[str, str] = {}
    if how == "--record":
        args += ["--record", str(link)]
    else:
        env[how] = str(link)
    done = bridge(args, env=env)
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "is a symbolic link" in lines[0]
    assert not marker.exists()
    if how != "CCBRIDGE_RECORD":
        assert victim.read_text() == "precious\n"
    else:
        assert list(victim.iterdir()) == []


def test_write_private_replaces_a_link_never_writes_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "report.html"
    out.symlink_to(victim)
    files.write_private(str(out), "<p>report</p>")
    assert victim.read_text() == "precious\n"
    assert not out.is_symlink()
    assert out.read_text() == "<p>report</p>"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "victim"]


def test_directories_the_bridge_makes_are_private(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "records"
    done = bridge(
        ["run", "--profile", "identity"],
        env={"CCBRIDGE_RECORD": str(target), "CCBRIDGE_BACKEND": "true"},
        stdin=b"",
    )
    assert done.returncode == 0, done.stderr
    for d in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    [cap] = list(target.iterdir())
    assert stat.S_IMODE(cap.stat().st_mode) == 0o600


# -- closed standard descriptors ----------------------------------------------------------


def _close_stderr() -> None:
    os.close(2)


def test_a_closed_stderr_costs_nothing_and_never_reaches_stdout() -> None:
    """A daemon starts the drop-in with fd 2 closed: the session's warning (a backend that
    exits mid-turn) goes nowhere, stdout carries the protocol only."""
    backend = f"{PY} -c {shlex.quote(MIDSTREAM)} 0"
    args = ["run", "--backend", backend, "--", "-p", "hi", "--output-format", "stream-json"]
    args.append("--verbose")
    done = subprocess.run(
        [sys.executable, "-m", "bridge", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        timeout=60,
        preexec_fn=_close_stderr,
    )
    out = frames(done.stdout)  # every line is a frame: nothing the bridge said
    assert out[-1]["type"] == "result"
    assert out[-1]["is_error"] is True
    assert done.returncode == 1


def test_with_stderr_closed_an_error_never_goes_to_stdout() -> None:
    """Python leaves ``sys.stderr`` None when fd 2 is closed, and ``print(file=None)``
    prints to stdout: the protocol channel. A refused setting must print nothing there."""
    done = subprocess.run(
        [sys.executable, "-m", "bridge", "run", "--backend", "true"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        timeout=60,
        env={**os.environ, "CCBRIDGE_TARGET": "9.9"},
        preexec_fn=_close_stderr,
    )
    assert done.returncode == 2
    assert done.stdout == b""


def test_with_stderr_closed_the_log_file_does_not_become_stderr(tmp_path: Path) -> None:
    log = tmp_path / "bridge.log"
    backend = f"{PY} -c {shlex.quote(TALKER)} 10"
    done = subprocess.run(
        [sys.executable, "-m", "bridge", "run", "--profile", "identity", "--backend", backend],
        input=LINES,
        stdout=subprocess.PIPE,
        timeout=60,
        env={**os.environ, "CCBRIDGE_LOG": str(log), "CCBRIDGE_LOG_LEVEL": "debug"},
        preexec_fn=_close_stderr,
    )
    assert done.returncode == 0
    assert len(frames(done.stdout)) == 40
    text = log.read_text()
    assert "BACKEND-STDERR" not in text  # the backend's stderr went to our (closed) stderr
    assert all(ln.startswith("ccbridge: ") for ln in text.splitlines())


def test_a_log_on_a_full_disk_stops_with_one_line() -> None:
    whole = run_identity(10)
    done = run_identity(10, env={"CCBRIDGE_LOG": "/dev/full", "CCBRIDGE_LOG_LEVEL": "debug"})
    assert done.returncode == 0
    assert done.stdout == whole.stdout
    said = [ln for ln in done.stderr.decode().splitlines() if ln.startswith("ccbridge")]
    assert said == ["ccbridge: error: logging to /dev/full stopped: No space left on device"]


# -- --version checks the target -------------------------------------------------------------


def test_version_checks_the_target_like_every_path(tmp_path: Path) -> None:
    def version(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-c",
                "from bridge.dropin import main; raise SystemExit(main())",
                "--version",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env},
        )

    bad = version({"CCBRIDGE_TARGET": "2.1.300"})
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.splitlines() == [
        "ccbridge: CCBRIDGE_TARGET='2.1.300': not a target Claude Code version "
        "(one of 2.1.220, 2.1.332)"
    ]
    cfg = tmp_path / "c.toml"
    cfg.write_text('target = "1.0"\n')
    bad = version({"CCBRIDGE_CONFIG": str(cfg), "CCBRIDGE_TARGET": ""})
    assert bad.returncode == 2
    assert "target" in bad.stderr
    assert bad.stdout == ""
    cfg.write_text('target = "2.1.332"\n')
    good = version({"CCBRIDGE_CONFIG": str(cfg), "CCBRIDGE_TARGET": ""})
    assert good.returncode == 0
    assert good.stdout.startswith("2.1.332 (Claude Code;")


# -- what ended the backend is said, never chosen by a race ------------------------------


def midstream(delay: float, rc: int) -> Any:
    """A backend that takes ``delay`` to start its turn, streams the start of a message and
    exits with ``rc`` (negative: killed by that signal) in the middle of it."""

    async def script(b: MemoryBackend) -> int:
        got = b""
        while b"\n" not in got:  # the user line
            got += await b.input.receive_some(65536)
        await trio.sleep(delay)
        for o in TURN_START:
            await b.write(json.dumps(o).encode() + b"\n")
        await trio.sleep(0.01)
        b.exit(rc)
        return rc

    return script


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.3, 2.0, 12.0])
@pytest.mark.parametrize(
    ("rc", "words", "status"),
    [
        (0, "the backend exited with status 0", 1),  # Claude's 1 after an error result
        (3, "the backend exited with status 3", 3),  # a crash keeps its status
        (-9, "the backend was killed by SIGKILL", 137),
    ],
)
async def test_the_error_result_says_what_ended_the_backend(
    autojump_clock: object, delay: float, rc: int, words: str, status: int
) -> None:
    """Whatever the wind-down was doing when the backend went (waiting for the turn to
    start, or with the backend's stdin already closed), the error says what happened, and
    the exit status follows from it."""
    got, frames, _, _ = await memory_session(midstream(delay, rc), [])
    result = frames[-1]
    assert result["type"] == "result"
    assert result["is_error"] is True
    assert result["errors"] == [f"ccbridge: {words} before the turn ended"]
    assert got == status


def test_the_engine_names_a_termination_a_stage_asked_for() -> None:
    engine = Engine(*build("cbc-to-claude", parse_rule_settings([])), det_env())
    stage = engine.pipelines["down"].stages[0]
    engine.terminate(stage, "idle 2s after its stdin was closed (eof-wind-down)")
    engine.backend_exited(143, 1.0)
    assert engine.ctx.backend_end == (
        "the bridge terminated the backend (idle 2s after its stdin was closed (eof-wind-down))"
    )
    other = Engine(*build("cbc-to-claude", parse_rule_settings([])), det_env())
    other.backend_exited(0, 1.0, "the backend was killed by SIGKILL")
    assert other.ctx.backend_end == "the backend was killed by SIGKILL"
