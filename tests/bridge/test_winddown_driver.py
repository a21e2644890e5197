"""``eof-wind-down`` through the driver: the engine decides when cbc's stdin closes, when it
is terminated and what status the bridge exits with; the driver carries it out. The backend
is a cbc-like stand-in that, like cbc with a workflow running, never exits on stdin EOF but
exits 0 on SIGTERM."""

from __future__ import annotations

import io
import json
import time

import trio
import trio.testing

from bridge.driver import Session, SessionConfig
from bridge.log import Logger
from compat.engine import Engine
from compat.profiles import build, parse_rule_settings

from ..compat.tasks_support import det_env
from .fakes import PY

CBC_LIKE = r"""
import json, signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))  # cbc exits 0 on SIGTERM
SID = "s-1"
def out(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
error = sys.argv[1] == "error"
workflow = sys.argv[2] == "workflow"
for raw in sys.stdin:
    msg = json.loads(raw)
    if msg.get("type") != "user":
        continue
    out({"type": "system", "subtype": "init", "uuid": SID, "session_id": SID, "cwd": "/w",
         "tools": ["Bash"], "model": "default-model"})
    time.sleep(0.2)
    out({"type": "assistant", "uuid": "a", "session_id": SID, "parent_tool_use_id": None,
         "message": {"role": "assistant", "model": "m", "content": [
             {"type": "tool_use", "id": "w1", "name": "Workflow", "input": {"script": "x"}}]}})
    if workflow:
        out({"type": "system", "subtype": "task_started", "task_id": "wf1", "tool_use_id": "w1",
             "description": "flow", "task_type": "local_workflow", "uuid": "t",
             "session_id": SID})
    out({"type": "result", "subtype": "success", "is_error": error, "result": "done.",
         "uuid": "r", "session_id": SID, "duration_ms": 1, "duration_api_ms": 1,
         "num_turns": 1, "total_cost_usd": 0, "usage": {"input_tokens": 1, "output_tokens": 1},
         "permission_denials": [], "modelUsage": {}})
while True:  # stdin closed: cbc keeps running (a workflow, or its 30 s poll)
    time.sleep(1)
"""
USER = b'{"type":"user","message":{"role":"user","content":"go"},"session_id":"",' \
       b'"parent_tool_use_id":null}\n'  # fmt: skip


async def run_session(error: bool, workflow: bool, rules: list[str]) -> tuple[int, list[dict],
                                                                             float]:
    up, down = build("cbc-to-claude", parse_rule_settings(rules))
    engine = Engine(up, down, det_env())
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    got = bytearray()
    argv = [PY, "-c", CBC_LIKE, "error" if error else "ok", "workflow" if workflow else "-"]
    s = Session(SessionConfig(argv, eof_grace=30.0), engine, in_recv, out_send,
                Logger(io.StringIO()), stderr=lambda b: None)

    async def drain() -> None:
        while data := await out_recv.receive_some(65536):
            got.extend(data)

    started = time.monotonic()
    async with trio.open_nursery() as n:
        n.start_soon(drain)
        await in_send.send_all(USER)
        await in_send.aclose()  # the SDK's one-shot query(): the line, then EOF at once
        with trio.fail_after(30):
            status = await s.run()
        await out_send.aclose()
    frames = [json.loads(x) for x in bytes(got).splitlines() if x.strip()]
    return status, frames, time.monotonic() - started


FAST = ["eof-wind-down.settle=0.2", "eof-wind-down.close_wait=0.3"]


async def test_the_turn_finishes_then_cbc_is_closed_terminated_and_we_exit_0() -> None:
    status, frames, took = await run_session(False, False, FAST)
    assert [f["type"] for f in frames] == ["system", "assistant", "result"]
    assert status == 0  # Claude's status, although cbc had to be terminated
    assert took < 10


async def test_exit_1_when_the_last_result_was_an_error() -> None:
    status, frames, _ = await run_session(True, False, FAST)
    assert frames[-1]["is_error"] is True
    assert status == 1


async def test_a_workflow_that_never_ends_is_bounded_and_closed() -> None:
    status, frames, took = await run_session(False, True, [*FAST, "eof-wind-down.ceiling=1"])
    sub = [f.get("subtype") for f in frames if f["type"] == "system"]
    assert sub[-2:] == ["task_updated", "task_notification"]
    note = frames[-1]
    assert note["task_id"] == "wf1"
    assert note["status"] == "stopped"
    assert status == 0
    assert 1.0 < took < 15


#: a backend that never reads its stdin and writes a session on its own, slowly: six frames
#: over ~1.5 s, the last a result; then it lingers like cbc
SELF_STARTING = r"""
import json, sys, time
SID = "s-2"
def out(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
time.sleep(0.3)
out({"type": "system", "subtype": "init", "uuid": SID, "session_id": SID, "cwd": "/w",
     "tools": [], "model": "m"})
for i in range(4):
    time.sleep(0.3)
    out({"type": "assistant", "uuid": f"a{i}", "session_id": SID, "parent_tool_use_id": None,
         "message": {"id": f"m{i}", "role": "assistant", "model": "m",
                     "content": [{"type": "text", "text": f"part {i}"}]}})
out({"type": "result", "subtype": "success", "is_error": False, "result": "part 3",
     "uuid": "r", "session_id": SID, "duration_ms": 1, "duration_api_ms": 1, "num_turns": 1,
     "total_cost_usd": 0, "usage": {"input_tokens": 1, "output_tokens": 1},
     "permission_denials": [], "modelUsage": {}})
while True:
    time.sleep(1)
"""


async def test_stdin_at_dev_null_loses_none_of_the_backends_output() -> None:
    """The client's EOF comes first; everything the backend writes afterwards reaches the
    client (before: 0 of 6 frames, dropped as 'after-close'), and once it went idle after
    its result it is ended."""
    engine = Engine(*build("cbc-to-claude", {}), det_env())
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    got = bytearray()
    s = Session(SessionConfig([PY, "-c", SELF_STARTING], eof_grace=30.0), engine, in_recv,
                out_send, Logger(io.StringIO()), stderr=lambda b: None)

    async def drain() -> None:
        while data := await out_recv.receive_some(65536):
            got.extend(data)

    async with trio.open_nursery() as n:
        n.start_soon(drain)
        await in_send.aclose()
        with trio.fail_after(20):
            status = await s.run()
        await out_send.aclose()
    frames = [json.loads(x) for x in bytes(got).splitlines() if x.strip()]
    assert [f["type"] for f in frames] == ["system", *["assistant"] * 4, "result"]
    assert status == 0
    stats = engine.statistics()["rules"]["eof-wind-down"]
    assert stats["passed-after-close"] == 6


#: writes a line every 0.2 s for ~2 s after its stdin closed, then exits 3 by itself
STILL_WRITING = r"""
import sys, time
sys.stdin.read()
for i in range(10):
    time.sleep(0.2)
    sys.stdout.write('{"type":"stream_event","n":%d}\n' % i); sys.stdout.flush()
sys.exit(3)
"""


async def test_a_backend_still_writing_is_not_terminated_by_the_grace() -> None:
    """identity: the grace (0.5 s) is counted from the backend's last output, so a backend
    that writes every 0.2 s for 2 s after the EOF keeps running, loses nothing, and exits
    with its own status."""
    from ..compat.helpers import engine_for

    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    got = bytearray()
    s = Session(SessionConfig([PY, "-c", STILL_WRITING], eof_grace=0.5),
                engine_for("identity"), in_recv, out_send, Logger(io.StringIO()),
                stderr=lambda b: None)

    async def drain() -> None:
        while data := await out_recv.receive_some(65536):
            got.extend(data)

    async with trio.open_nursery() as n:
        n.start_soon(drain)
        await in_send.aclose()
        with trio.fail_after(20):
            status = await s.run()
        await out_send.aclose()
    assert len(bytes(got).splitlines()) == 10
    assert status == 3


async def test_a_silent_backend_is_terminated_after_the_grace() -> None:
    from ..compat.helpers import engine_for
    from .fakes import HANG

    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    log = io.StringIO()
    s = Session(SessionConfig([PY, "-c", HANG], eof_grace=0.5), engine_for("identity"),
                in_recv, out_send, Logger(log), stderr=lambda b: None)

    async def drain() -> None:
        while await out_recv.receive_some(65536):
            pass

    async with trio.open_nursery() as n:
        n.start_soon(drain)
        await in_send.aclose()
        with trio.fail_after(20):
            status = await s.run()
        await out_send.aclose()
    assert status == 143
    assert "wrote nothing for 0.5s" in log.getvalue()
