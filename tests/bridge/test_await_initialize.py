"""A client that awaits initialize (``--await-initialize``: TypeScript SDK 0.3.337 with MCP
servers): the bridge reads its first line before it starts cbc, cbc's command line gets the
launch options inside it, and the session reads that line first (``bridge.launch``,
``compat.launch_init``). The rules' side: ``tests/compat/test_launch_init.py``; the real
SDK over the real cbc: ``test_ts_sdk_mcp_real.py``."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
import trio

from bridge import launch, proxy
from bridge.headless_streams import PrereadStream

from .test_headless_dropin import dropin

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


def mcp_config(argv: tuple[str, ...] | list[str]) -> object:
    [config] = [
        (w.partition("=")[2] or argv[i + 1])
        for i, w in enumerate(argv)
        if w.partition("=")[0] == "--mcp-config"
    ]
    return json.loads(config)


def test_the_launch_options_in_the_initialize_reach_cbcs_command_line() -> None:
    first = init_line(mcpServers=SERVERS, additionalDirectories=["/tmp/a"]) + b"\n" + USER
    plan = plan_of(AWAITS, first)
    assert mcp_config(plan.backend_argv) == {"mcpServers": SERVERS}
    assert "/tmp/a" in plan.backend_argv
    assert plan.backend_argv[-2:] == ("--session-id", "sid")  # the same pin
    assert plan.preread == first  # every byte read is the session's
    assert plan.launch_fields == {"mcpServers", "additionalDirectories"}
    engine = proxy.build_engine(plan.profile, plan.rules, epoch_ms=0)
    proxy.set_launch_facts(engine, plan)
    assert engine.state.launch_fields == plan.launch_fields


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
            return launch.read_first_line(r, limit)
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


@pytest.mark.parametrize("delivery", ["initialize", "argv"])
def test_the_dropin_gives_cbc_the_servers_a_client_sends_in_its_initialize(
    tmp_path: Path, delivery: str
) -> None:
    """As a process, in front of a fake cbc that records its command line and stdin."""
    if delivery == "initialize":
        args, stdin = AWAITS, init_line(mcpServers=SERVERS) + b"\n" + USER
    else:
        args = [*CLIENT, "--mcp-config", json.dumps({"mcpServers": SERVERS})]
        stdin = init_line() + b"\n" + USER
    done, seen = dropin(tmp_path, args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert seen is not None
    assert mcp_config(seen["argv"]) == {"mcpServers": SERVERS}
    first, user = (json.loads(line) for line in seen["stdin"][:2])
    assert first["request"] == {"subtype": "initialize", "hooks": {}}
    assert user["message"]["content"] == "hi"
    assert b"Traceback" not in done.stderr
    assert b"dropped" not in done.stderr
