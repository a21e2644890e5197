"""``ccbridge replay``: a capture served as a backend."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import orjson
import trio
import trio.testing

from bridge.log import Logger
from bridge.replay import Replayer, plan
from compat import capture

INIT = {"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}
REPLY = {
    "type": "control_response",
    "response": {"subtype": "success", "request_id": "init", "response": {}},
}
USER = {"type": "user", "message": {"role": "user", "content": "hi"}}


def take(stream: trio.testing.MemorySendStream) -> bytes:
    try:
        return bytes(stream.get_data_nowait())
    except trio.WouldBlock:
        return b""


def cap_file(tmp_path: Path, records: list[tuple[str, object]], status: int = 0) -> Path:
    path = tmp_path / "c.jsonl"
    with path.open("wb") as f:
        f.write(capture.encode_header(capture.header("test", files={"flows/x.js": "X"})))
        for i, (kind, obj) in enumerate(records):
            data = obj.encode() if isinstance(obj, str) else orjson.dumps(obj)
            f.write(capture.encode_record(i * 0.1, kind, data))
        f.write(capture.encode_record(9.0, "exit", str(status).encode()))
    return path


async def test_waits_for_inputs_and_rewrites_request_ids(tmp_path: Path) -> None:
    path = cap_file(
        tmp_path,
        [
            ("stdin", INIT),
            ("stdout", REPLY),
            ("stdin", USER),
            ("stdout", {"type": "result"}),
            ("note", "stdin closed"),
        ],
    )
    with path.open("rb") as f:
        steps = plan(capture.parse(f))
    rep = Replayer(steps, Logger(io.StringIO()), {})
    c_send, r_recv = trio.testing.memory_stream_one_way_pair()
    c_recv = trio.testing.MemorySendStream()  # what the replay writes, read back here
    async with trio.open_nursery() as n:
        n.start_soon(rep.run, r_recv, c_recv)
        await trio.testing.wait_all_tasks_blocked()
        assert take(c_recv) == b""  # nothing before the client speaks
        await c_send.send_all(b'{"type":"keep_alive"}\n')  # not what it waits for
        await c_send.send_all(orjson.dumps({**INIT, "request_id": "mine-7"}) + b"\n")
        await trio.testing.wait_all_tasks_blocked()
        got = take(c_recv)
        assert orjson.loads(got)["response"]["request_id"] == "mine-7"
        await c_send.send_all(orjson.dumps(USER) + b"\n")
        await trio.testing.wait_all_tasks_blocked()
        assert orjson.loads(take(c_recv)) == {"type": "result"}
        await c_send.aclose()  # the replay ends only at the client's EOF
    assert take(c_recv) == b""


def test_plain_dump_expects_a_request_before_each_response() -> None:
    cap = capture.parse([orjson.dumps(REPLY), orjson.dumps({"type": "system", "subtype": "init"})])
    kinds = [(s.kind, s.sig[0]) for s in plan(cap)]
    assert kinds == [("expect", "control_request"), ("out", ""), ("expect", "user"), ("out", "")]


def test_subprocess_exit_status_placeholders_and_files(tmp_path: Path) -> None:
    path = cap_file(tmp_path, [("stdin", USER), ("stdout", {"cwd": "{CWD}"})], status=3)
    wd = tmp_path / "wd"
    wd.mkdir()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bridge",
            "replay",
            "--materialize",
            str(path),
            "-p",
            "--verbose",
            "--unknown-flag",
        ],
        input=orjson.dumps(USER) + b"\n",
        capture_output=True,
        cwd=wd,
        timeout=30,
    )
    assert r.returncode == 3
    assert orjson.loads(r.stdout) == {"cwd": str(wd)}
    assert (wd / "flows" / "x.js").read_text() == "X"


def test_unreadable_capture_is_exit_2(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "bridge", "replay", str(tmp_path / "none")],
        capture_output=True,
        timeout=30,
    )
    assert r.returncode == 2
    assert r.stderr.decode().splitlines() == [
        f"ccbridge replay: {tmp_path / 'none'}: cannot be read (No such file or directory)"
    ]
