"""``--max-turns N`` through ``claude-on-cbc`` on the real cbc 2.163.0 (rule ``max-turns``,
issue 26), with a model that keeps calling Bash where Bash is not allowed (``--allowedTools
Read``, no permission prompts: each call is denied). cbc then ignores ``--max-turns`` and
asks the model again at once, about 10 times a second, until killed (153 requests in 15 s
of a stream-json session through the bridge before the rule, 198 in 20 s with ``-p``).

Claude Code 2.1.220 (runs of 2026-12-04 on the same stand-in model): N model requests,
then ``error_max_turns``, ``errors: ["Reached maximum number of turns (N)"]``,
``terminal_reason: max_turns``, ``num_turns`` N + 1, ``stop_reason: tool_use``, the N
denied calls in ``permission_denials``; exit 1 with ``-p`` in every output format (text:
``Error: Reached max turns (N)``); in a stream-json session the next line is answered, and
the session exits 1 at EOF after an error result. Skipped, with the reason, when cbc is
not installed (``ccbridge backends install``)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from bridge.backends import find_backend
from harness import headless, runner
from harness.model import ModelServer
from harness.scenario import load

from ..compat.test_max_turns_loop import assert_max_turns_result

pytestmark = pytest.mark.real_backend

SESSION = Path(__file__).resolve().parent / "data" / "max-turns" / "denied-loop-session.toml"
#: far more than a stopped run takes (about 2 s); a run cbc loops in reaches it
LIMIT = 40.0
#: a run that ends within this many seconds was stopped, not timed out
BOUNDED = 20.0


@pytest.fixture
def cbc() -> str:
    # a sync fixture skips: a skip raised inside the trio test loses its reason
    if find_backend("cbc") is None:
        pytest.skip("cbc not installed: run `ccbridge backends install`")
    return "cbc"


@attrs.frozen
class Headless:
    status: int | None  # None: killed at LIMIT
    stdout: str
    seconds: float
    requests: int  # the main agent's model requests


async def _headless(args: list[str]) -> Headless:
    """``claude-on-cbc ARGS`` (stdin empty) against the stand-in model of the session
    scenario; killed after ``LIMIT`` seconds."""
    prefix, kind, extra = headless.command("cbc-via-bridge")
    server = ModelServer(load(SESSION).model)
    dirs, mark = runner.make_root(), os.urandom(6).hex()
    done = None
    t0 = time.monotonic()
    try:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(server.serve)
            env = {**runner.backend_env(kind, url, dirs, mark), **extra}
            with trio.move_on_after(LIMIT):
                done = await trio.run_process(
                    [*prefix, *args],
                    stdin=b"",
                    capture_stdout=True,
                    capture_stderr=True,
                    env=env,
                    cwd=dirs["CWD"],
                    check=False,
                )
            nursery.cancel_scope.cancel()
    finally:
        await trio.to_thread.run_sync(runner.sweep, mark)
        shutil.rmtree(dirs["ROOT"], ignore_errors=True)
    return Headless(
        done.returncode if done is not None else None,
        done.stdout.decode() if done is not None else "",
        time.monotonic() - t0,
        sum(1 for e in server.log if e.get("agent") == "main"),
    )


def _claudes(result: dict[str, Any], n: int) -> None:
    assert_max_turns_result(result, n)
    assert len(result["permission_denials"]) == n


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("output", ["text", "json", "stream-json"])
async def test_print_mode_stops_a_denied_loop_as_claude(cbc: str, output: str, n: int) -> None:
    args = ["-p", "LOOP run it", "--max-turns", str(n), "--allowedTools", "Read"]
    if output != "text":
        args += ["--output-format", output]
    if output == "stream-json":
        args.append("--verbose")
    run = await _headless(args)
    assert run.status == 1, (run.seconds, run.requests, run.stdout[-2000:])
    assert run.seconds < BOUNDED
    # Claude asks N times; cbc may have sent the next request before the interrupt landed
    assert n <= run.requests <= n + 1, run.requests
    if output == "text":
        assert run.stdout == f"Error: Reached max turns ({n})"
        return
    lines = [json.loads(x) for x in run.stdout.splitlines() if x.strip()]
    _claudes(lines[-1], n)
    if output == "stream-json":
        calls = [f for f in lines if f["type"] == "assistant"]
        assert len(calls) == n
        assert [f["type"] for f in lines].count("result") == 1


@pytest.mark.parametrize("n", [1, 2])
async def test_a_stream_json_session_goes_on_after_max_turns(
    cbc: str, n: int, tmp_path: Path
) -> None:
    """SDK style (``--input-format stream-json --output-format stream-json``): a looping
    line, a plain one, a looping one: error_max_turns, the answer, error_max_turns; the
    session exits 1 at EOF, as Claude's."""
    scenario = attrs.evolve(
        load(SESSION), args=("--max-turns", str(n), "--allowedTools", "Read"), time_limit=LIMIT
    )
    argv = find_backend(cbc)
    assert argv is not None
    t0 = time.monotonic()
    res = await runner.run(
        scenario, runner.Target(cbc, tuple(argv)), tmp_path / "run.jsonl", via="cbc-to-claude"
    )
    assert time.monotonic() - t0 < BOUNDED + 10, res.exit
    results = [f for f in res.frames if f.get("type") == "result"]
    assert [r["subtype"] for r in results] == ["error_max_turns", "success", "error_max_turns"]
    _claudes(results[0], n)
    _claudes(results[2], n)
    assert results[1]["num_turns"] == 1
    assert not [f for f in res.frames if "Interrupted by user" in json.dumps(f)]
    requests = sum(1 for e in res.model_log if e.get("agent") == "main")
    assert 2 * n + 1 <= requests <= 2 * n + 3, requests
    assert res.exit == "1"
