"""``eof-wind-down`` through the driver: the engine decides when cbc's stdin closes, when it
is terminated and what status the bridge exits with; the driver carries it out. The backend
is a cbc-like stand-in that, like cbc with a workflow running, never exits on stdin EOF but
exits 0 on SIGTERM."""

from __future__ import annotations

import io
import json
import signal
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
import trio
import trio.testing

from bridge.driver import Session, SessionConfig
from bridge.log import Logger
from compat.engine import Engine
from compat.profiles import build, parse_rule_settings

from ..compat.tasks_support import det_env, result
from .fakes import PY
from .memory_backend import MemoryBackend

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
    # (no final text: the turn's last message was the call; rule final-answer adds none)
    out({"type": "result", "subtype": "success", "is_error": error, "result": "",
         "uuid": "r", "session_id": SID, "duration_ms": 1, "duration_api_ms": 1,
         "num_turns": 1, "total_cost_usd": 0, "usage": {"input_tokens": 1, "output_tokens": 1},
         "permission_denials": [], "modelUsage": {}})
while True:  # stdin closed: cbc keeps running (a workflow, or its 30 s poll)
    time.sleep(1)
"""
USER = (
    b'{"type":"user","message":{"role":"user","content":"go"},"session_id":"",'
    b'"parent_tool_use_id":null}\n'
)


def wind_down_session(
    engine: Engine,
    client: trio.abc.ReceiveStream,
    out: trio.abc.SendStream,
    backend: Any = None,
    *,
    argv: Sequence[str] = (),
    eof_grace: float = 30.0,
    log: io.StringIO | None = None,
    on_settled: Callable[[], Awaitable[None]] | None = None,
) -> Session:
    """A session of these tests: the client on memory streams, the logs to ``log``, the
    backend's stderr dropped."""
    return Session(
        SessionConfig(list(argv), eof_grace=eof_grace),
        engine,
        client,
        out,
        Logger(log if log is not None else io.StringIO()),
        stderr=lambda _: None,
        backend=backend,
        on_settled=on_settled,
    )


async def run_session(
    error: bool, workflow: bool, rules: list[str]
) -> tuple[int, list[dict[str, Any]]]:
    up, down = build("cbc-to-claude", parse_rule_settings(rules))
    engine = Engine(up, down, det_env())
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    got = bytearray()
    argv = [PY, "-c", CBC_LIKE, "error" if error else "ok", "workflow" if workflow else "-"]
    s = wind_down_session(engine, in_recv, out_send, argv=argv)

    async def drain() -> None:
        while data := await out_recv.receive_some(65536):
            got.extend(data)

    async with trio.open_nursery() as n:
        n.start_soon(drain)
        await in_send.send_all(USER)
        await in_send.aclose()  # the SDK's one-shot query(): the line, then EOF at once
        with trio.fail_after(30):
            status = await s.run()
        await out_send.aclose()
    frames = [json.loads(x) for x in bytes(got).splitlines() if x.strip()]
    return status, frames


FAST = ["eof-wind-down.settle=0.2", "eof-wind-down.close_wait=0.3"]


async def test_the_turn_finishes_then_cbc_is_closed_terminated_and_we_exit_0() -> None:
    """The real-process smoke test of the wind-down (its exact times: in memory below)."""
    status, frames = await run_session(False, False, FAST)
    assert [f["type"] for f in frames] == ["system", "assistant", "result"]
    assert status == 0  # Claude's status, although cbc had to be terminated


SID = "s-1"


def cbc_like(error: bool, workflow: bool) -> Any:
    """CBC_LIKE in memory: a turn per user line (init, 0.2 s, assistant, the task, the
    result), then it never exits on stdin EOF (exits 0 on SIGTERM, like cbc)."""

    async def script(b: MemoryBackend) -> int:
        async def out(o: dict[str, Any]) -> None:
            await b.write(json.dumps(o).encode() + b"\n")

        async for raw in b.lines():
            if json.loads(raw).get("type") != "user":
                continue
            await out(
                {
                    "type": "system",
                    "subtype": "init",
                    "uuid": SID,
                    "session_id": SID,
                    "cwd": "/w",
                    "tools": ["Bash"],
                    "model": "default-model",
                }
            )
            await trio.sleep(0.2)
            await out(
                {
                    "type": "assistant",
                    "uuid": "a",
                    "session_id": SID,
                    "parent_tool_use_id": None,
                    "message": {
                        "role": "assistant",
                        "model": "m",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "w1",
                                "name": "Workflow",
                                "input": {"script": "x"},
                            }
                        ],
                    },
                }
            )
            if workflow:
                await out(
                    {
                        "type": "system",
                        "subtype": "task_started",
                        "task_id": "wf1",
                        "tool_use_id": "w1",
                        "description": "flow",
                        "task_type": "local_workflow",
                        "uuid": "t",
                        "session_id": SID,
                    }
                )
            await out(result(error, uuid="r", session_id=SID, result=""))
        await b.forever()
        return 0

    return script


async def memory_session(
    script: Any,
    rules: list[str],
    eof_grace: float = 30.0,
    *,
    user: bytes = USER,
    engine: Engine | None = None,
) -> tuple[int, list[dict[str, Any]], MemoryBackend, float]:
    """The session over a memory backend (``engine``: default one of ``rules``); the client
    writes ``user`` (none when empty) and EOF at t=0."""
    if engine is None:
        engine = Engine(*build("cbc-to-claude", parse_rule_settings(rules)), det_env())
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    got = bytearray()

    async def drain() -> None:
        while data := await out_recv.receive_some(65536):
            got.extend(data)

    async with trio.open_nursery() as n:
        b = MemoryBackend(n, script, on_signal={signal.SIGTERM: 0})
        s = wind_down_session(engine, in_recv, out_send, b, eof_grace=eof_grace)
        n.start_soon(drain)
        if user:
            await in_send.send_all(user)
        await in_send.aclose()
        status = await s.run()
        ended = trio.current_time()
        await out_send.aclose()
    frames = [json.loads(x) for x in bytes(got).splitlines() if x.strip()]
    return status, frames, b, ended


async def test_the_wind_down_times_are_exact(autojump_clock: object) -> None:
    """The result at 0.2 s, nothing running: cbc's stdin is closed at once, and the idle
    cbc is terminated close_wait (0.3 s) later: SIGTERM at exactly 0.5 s, the session ends
    then, with Claude's 0 although cbc had to be terminated."""
    status, frames, b, ended = await memory_session(cbc_like(False, False), FAST)
    assert [f["type"] for f in frames] == ["system", "assistant", "result"]
    assert [sig for _, sig in b.signals] == [signal.SIGTERM]
    assert b.signals[0][0] == pytest.approx(0.5)
    assert ended == pytest.approx(0.5)
    assert status == 0


async def test_exit_1_when_the_last_result_was_an_error(autojump_clock: object) -> None:
    status, frames, b, _ = await memory_session(cbc_like(True, False), FAST)
    assert frames[-1]["is_error"] is True
    assert status == 1


async def test_a_workflow_that_never_ends_is_bounded_and_closed(autojump_clock: object) -> None:
    status, frames, b, ended = await memory_session(
        cbc_like(False, True), [*FAST, "eof-wind-down.ceiling=1"]
    )
    sub = [f.get("subtype") for f in frames if f["type"] == "system"]
    assert sub[-2:] == ["task_updated", "task_notification"]
    note = frames[-1]
    assert note["task_id"] == "wf1"
    assert note["status"] == "stopped"
    assert status == 0
    # the ceiling (1 s from the EOF) closes cbc's stdin, close_wait (0.3 s) later SIGTERM
    assert [sig for _, sig in b.signals] == [signal.SIGTERM]
    assert b.signals[0][0] == pytest.approx(1.3)
    assert ended == pytest.approx(1.3)


async def self_starting(b: MemoryBackend) -> int:
    """A backend that never reads its stdin; init at 0.3 s, an assistant frame
    every 0.3 s, the result at 1.5 s; then it lingers like cbc (exits 0 on SIGTERM)."""

    async def out(o: dict[str, Any]) -> None:
        await b.write(json.dumps(o).encode() + b"\n")

    await trio.sleep(0.3)
    await out(
        {
            "type": "system",
            "subtype": "init",
            "uuid": "s-2",
            "session_id": "s-2",
            "cwd": "/w",
            "tools": [],
            "model": "m",
        }
    )
    for i in range(4):
        await trio.sleep(0.3)
        await out(
            {
                "type": "assistant",
                "uuid": f"a{i}",
                "session_id": "s-2",
                "parent_tool_use_id": None,
                "message": {
                    "id": f"m{i}",
                    "role": "assistant",
                    "model": "m",
                    "content": [{"type": "text", "text": f"part {i}"}],
                },
            }
        )
    await out(result(False, uuid="r", session_id="s-2", result="part 3"))
    await b.forever()
    return 0


async def test_stdin_at_dev_null_loses_none_of_the_backends_output(autojump_clock: object) -> None:
    """The client's EOF comes first; everything the backend writes afterwards reaches the
    client (before: 0 of 6 frames, dropped as 'after-close'), and once it went idle after
    its result (1.5 s) it is ended close_wait (default 0.2 s) later: at exactly 1.7 s."""
    engine = Engine(*build("cbc-to-claude", {}), det_env())
    status, frames, b, _ = await memory_session(self_starting, [], user=b"", engine=engine)
    assert [f["type"] for f in frames] == ["system", *["assistant"] * 4, "result"]
    assert status == 0
    stats = engine.statistics()["rules"]["eof-wind-down"]
    assert stats["passed-after-close"] == 6
    assert [sig for _, sig in b.signals] == [signal.SIGTERM]
    assert b.signals[0][0] == pytest.approx(1.7)


async def still_writing(b: MemoryBackend) -> int:
    """A line every 0.2 s for 2 s after its stdin closed, then
    exits 3 by itself."""
    await b.read_to_eof()
    for i in range(10):
        await trio.sleep(0.2)
        await b.write(b'{"type":"stream_event","n":%d}\n' % i)
    return 3


async def identity_session(script: Any, eof_grace: float) -> tuple[int, bytes, MemoryBackend, str]:
    from ..compat.helpers import engine_for

    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    got = bytearray()
    log = io.StringIO()

    async def drain() -> None:
        while data := await out_recv.receive_some(65536):
            got.extend(data)

    async with trio.open_nursery() as n:
        b = MemoryBackend(n, script)
        s = wind_down_session(
            engine_for("identity"), in_recv, out_send, b, eof_grace=eof_grace, log=log
        )
        n.start_soon(drain)
        await in_send.aclose()
        status = await s.run()
        await out_send.aclose()
    return status, bytes(got), b, log.getvalue()


async def test_a_backend_still_writing_is_not_terminated_by_the_grace(
    autojump_clock: object,
) -> None:
    """identity: the grace (0.5 s) is counted from the backend's last output, so a backend
    that writes every 0.2 s for 2 s after the EOF keeps running, loses nothing, and exits
    with its own status, at 2.0 s, never signalled."""
    status, got, b, _ = await identity_session(still_writing, 0.5)
    assert len(got.splitlines()) == 10
    assert status == 3
    assert b.signals == []
    assert b.exited_at == pytest.approx(2.0)


async def test_a_silent_backend_is_terminated_after_the_grace(autojump_clock: object) -> None:
    async def silent(b: MemoryBackend) -> int:
        await b.write(b'{"type":"system","subtype":"init"}\n')
        await b.read_to_eof()
        await b.forever()
        return 0

    status, _, b, log = await identity_session(silent, 0.5)
    assert status == 143
    assert b.signals == [(0.5, signal.SIGTERM)]
    assert "wrote nothing for 0.5s" in log


async def test_a_backend_silent_after_writing_is_terminated_a_grace_after_its_last_line(
    autojump_clock: object,
) -> None:
    """Three lines at 0.2 s intervals after the EOF, then silence: SIGTERM at exactly
    0.6 + 0.5 s (the grace counts from its last output, not from the EOF)."""

    async def then_silent(b: MemoryBackend) -> int:
        await b.read_to_eof()
        for i in range(3):
            await trio.sleep(0.2)
            await b.write(b'{"type":"stream_event","n":%d}\n' % i)
        await b.forever()
        return 0

    status, got, b, _ = await identity_session(then_silent, 0.5)
    assert len(got.splitlines()) == 3
    assert status == 143
    assert [sig for _, sig in b.signals] == [signal.SIGTERM]
    assert b.signals[0][0] == pytest.approx(1.1)


class _Seen(trio.abc.SendStream):
    """The client's stdout: what was written, in order, with the settled mark."""

    def __init__(self) -> None:
        self.events: list[bytes | str] = []

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.events.append(bytes(data))
        await trio.lowlevel.checkpoint()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def settling(workflow: bool, rules: list[str]) -> tuple[int, _Seen, list[Any]]:
    """A session over ``cbc_like`` whose ``on_settled`` notes when it came (trio time, cbc's
    status then: None while it runs) among what the client was written."""
    engine = Engine(*build("cbc-to-claude", parse_rule_settings(rules)), det_env())
    seen = _Seen()
    calls: list[tuple[float, int | None]] = []
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    async with trio.open_nursery() as n:
        b = MemoryBackend(n, cbc_like(False, workflow), on_signal={signal.SIGTERM: 0})

        async def settled() -> None:
            calls.append((trio.current_time(), b.returncode))
            seen.events.append("settled")

        s = wind_down_session(engine, in_recv, seen, b, on_settled=settled)
        await in_send.send_all(USER)
        await in_send.aclose()
        status = await s.run()
    return status, seen, calls


async def test_the_session_settles_after_the_result_is_written_before_cbc_exits(
    autojump_clock: object,
) -> None:
    """At the last result with nothing running the driver calls ``on_settled`` (a -p run
    prints there, as Claude does before it exits): after the result's bytes reached the
    client, while cbc still lingers (its SIGTERM comes close_wait later); once only."""
    status, seen, calls = await settling(False, FAST)
    assert status == 0
    assert len(calls) == 1
    assert calls[0][0] == pytest.approx(0.2)  # at the result, while cbc lives (SIGTERM at 0.5)
    assert calls[0][1] is None
    assert seen.events[-1] == "settled"
    written = b"".join(e for e in seen.events if isinstance(e, bytes))
    assert json.loads(written.splitlines()[-1])["type"] == "result"


async def test_a_session_closed_by_the_ceiling_never_settles(autojump_clock: object) -> None:
    status, _, calls = await settling(True, [*FAST, "eof-wind-down.ceiling=1"])
    assert status == 0
    assert calls == []  # the workflow still ran: the output waits for cbc's exit
