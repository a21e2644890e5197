"""A client that awaits initialize (``--await-initialize``: TypeScript SDK 0.3.337 with MCP
servers): the bridge reads its first line before it starts cbc, cbc's command line gets the
launch options inside it, and the session reads that line first (``bridge.launch``,
``compat.launch_init``). The rules' side: ``tests/compat/test_launch_init.py``; the real
SDK over the real cbc: ``test_ts_sdk_mcp_real.py``."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import trio

from bridge import launch, proxy
from bridge.await_init import read_first_line
from bridge.headless_streams import PrereadStream

from ..conftest import REPO
from .test_headless_dropin import probe

CLIENT = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
AWAITS = [*CLIENT, "--await-initialize"]
SERVERS = {"ext": {"type": "stdio", "command": "srv", "args": ["-x"]}}


def init_line(**fields: object) -> bytes:
    request = {"subtype": "initialize", "hooks": {}, **fields}
    return json.dumps({"type": "control_request", "request_id": "i", "request": request}).encode()


USER = b'{"type":"user","message":{"role":"user","content":"hi"},"session_id":""}\n'


def plan_of(client: list[str], first: bytes | None, rules: list[str] | None = None) -> launch.Plan:
    def first_line() -> bytes:
        if first is None:
            raise AssertionError("the client's stdin was read before the launch")
        return first

    return launch.plan(
        "test",
        "cbc-to-claude",
        ["cbc"],
        client,
        {"HOME": "/h"},
        rules or [],
        launch.DeferredLog(),
        new_session_id=lambda: "sid",
        first_line=first_line,
    )


def option_value(argv: tuple[str, ...] | list[str], option: str) -> str:
    [value] = [
        (w.partition("=")[2] or argv[i + 1])
        for i, w in enumerate(argv)
        if w.partition("=")[0] == option
    ]
    return value


def test_the_launch_options_in_the_initialize_reach_cbcs_command_line() -> None:
    settings = {"env": {"TOKEN": "s3cret"}, "model": "m"}
    first = (
        init_line(mcpServers=SERVERS, settings=settings, additionalDirectories=["/tmp/a"])
        + b"\n"
        + USER
    )
    plan = plan_of(AWAITS, first)
    assert plan.private_dir is not None
    try:
        # the JSON values the client kept off command lines are in private files
        assert "s3cret" not in " ".join(plan.backend_argv)
        assert stat.S_IMODE(os.stat(plan.private_dir).st_mode) == 0o700
        for option, want in (("--mcp-config", {"mcpServers": SERVERS}), ("--settings", settings)):
            path = Path(option_value(plan.backend_argv, option))
            assert path.parent == Path(plan.private_dir)
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert json.loads(path.read_text()) == want
    finally:
        shutil.rmtree(plan.private_dir)
    assert "/tmp/a" in plan.backend_argv
    assert plan.backend_argv[-2:] == ("--session-id", "sid")  # the same pin
    assert plan.preread == first  # every byte read is the session's
    assert plan.launch_fields == {"mcpServers", "settings", "additionalDirectories"}
    engine = proxy.build_engine(plan.profile, plan.rules, epoch_ms=0)
    proxy.set_launch_facts(engine, plan)
    assert engine.state.launch_fields == plan.launch_fields


def test_a_private_file_that_cannot_be_written_leaves_the_value_on_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def full(*a: object, **k: object) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("tempfile.mkdtemp", full)
    log = launch.DeferredLog()
    plan = launch.plan(
        "test",
        "cbc-to-claude",
        ["cbc"],
        AWAITS,
        {},
        [],
        log,
        first_line=lambda: init_line(mcpServers=SERVERS),
    )
    assert json.loads(option_value(plan.backend_argv, "--mcp-config")) == {"mcpServers": SERVERS}
    assert plan.private_dir is None
    assert any("No space left on device" in m for level, _, m in log.records if level == "warning")


def test_nothing_is_read_before_the_launch_unless_the_client_awaits_initialize() -> None:
    plain = plan_of(CLIENT, None)
    assert plain.preread == b""
    assert plain.launch_fields == frozenset()
    assert plan_of(["-p", "hi", "--await-initialize"], None).preread == b""
    off = plan_of(AWAITS, None, ["argv=off"])  # the client's line as is: cbc decides
    assert off.backend_argv == ("cbc", *AWAITS)


def test_a_first_line_that_is_no_initialize_launches_cbc_as_without_it() -> None:
    plan = plan_of(AWAITS, USER)
    assert plan.preread == USER
    assert plan.backend_argv == plan_of(CLIENT, None).backend_argv
    assert plan_of(AWAITS, b"").preread == b""  # stdin closed at once


def test_the_first_line_is_read_up_to_its_newline_or_the_limit() -> None:
    def read(written: bytes, *, close: bool, later: bytes = b"", limit: int | None = None) -> bytes:
        r, w = os.pipe()
        os.write(w, written)
        if close:
            os.close(w)
        writer = threading.Timer(0.05, os.write, (w, later))
        if later:
            writer.start()
        try:
            return read_first_line(r, limit)
        finally:
            writer.join() if later else None
            os.close(r)
            if not close:
                os.close(w)

    assert read(b"abc\nd", close=False) == b"abc\nd"  # a newline read: no more is waited for
    assert read(b"ab", close=False, later=b"c\n") == b"abc\n"  # a line in pieces
    assert read(b"abc", close=True) == b"abc"  # EOF first
    assert read(b"x" * 30, close=False, limit=15) == b"x" * 30  # past the limit: no wait


async def test_the_session_reads_the_preread_bytes_first() -> None:
    send, receive = trio.testing.memory_stream_one_way_pair()
    stream = PrereadStream(b"first\n", receive)
    await send.send_all(b"then")
    assert await stream.receive_some(3) == b"fir"
    assert await stream.receive_some() == b"st\n"
    assert await stream.receive_some() == b"then"
    await stream.aclose()


#: a cbc stand-in that records its command line, the files its --mcp-config and --settings
#: name (read at its start, as cbc does) and its stdin lines, and answers the user line
#: with a stream cbc 2.163.0 wrote (``test_headless_dropin``'s probe)
FAKE = r"""
import json, os, sys
log, stream, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
seen = {"argv": argv, "files": {}, "stdin": []}
for i, word in enumerate(argv[:-1]):
    if word in ("--mcp-config", "--settings") and os.path.isfile(argv[i + 1]):
        seen["files"][word] = open(argv[i + 1]).read()
for line in sys.stdin:
    seen["stdin"].append(line)
    with open(log, "w") as f:
        json.dump(seen, f)
    if '"type":"user"' in line:
        sys.stdout.write(open(stream).read().replace("<session-1>", "s").replace("<uuid>", "u"))
        sys.stdout.flush()
"""


@pytest.mark.parametrize("delivery", ["initialize", "argv"])
def test_the_dropin_gives_cbc_the_servers_a_client_sends_in_its_initialize(
    tmp_path: Path, delivery: str
) -> None:
    """As a process, in front of a fake cbc: the servers reach it either way; those sent
    inside initialize through a private file, removed when the session ends."""
    if delivery == "initialize":
        args, stdin = AWAITS, init_line(mcpServers=SERVERS) + b"\n" + USER
    else:
        args = [*CLIENT, "--mcp-config", json.dumps({"mcpServers": SERVERS})]
        stdin = init_line() + b"\n" + USER
    fake, log, stream = tmp_path / "fake_cbc.py", tmp_path / "seen.json", tmp_path / "out"
    fake.write_text(FAKE)
    stream.write_text(probe("arg-stream-json-verbose", "cbc-2.163.0")["stdout"])
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "CCBRIDGE_BACKEND": shlex.join([sys.executable, str(fake), str(log), str(stream)]),
    }
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from bridge.dropin import main; sys.exit(main())"]
        + args,
        input=stdin,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(log.read_text())
    config = option_value(seen["argv"], "--mcp-config")
    if delivery == "initialize":
        assert json.loads(seen["files"]["--mcp-config"]) == {"mcpServers": SERVERS}
        assert not Path(config).exists()  # the private directory went with the session
    else:
        assert json.loads(config) == {"mcpServers": SERVERS}
    first, user = (json.loads(line) for line in seen["stdin"][:2])
    assert first["request"] == {"subtype": "initialize", "hooks": {}}
    assert user["message"]["content"] == "hi"
    assert b"Traceback" not in done.stderr
    assert b"dropped" not in done.stderr
