"""The official ``claude-agent-sdk`` (Python) drives ``claude-on-cbc`` over the real cbc
2.163.0, whose model API is the stand-in of ``harness`` started by the test: the
workflow and interrupt scenarios, as a user's program would run them. What is asserted is
what the SDK yields (``TaskStartedMessage`` of a ``local_workflow`` named by the script's
``meta.name``, one ``TaskNotificationMessage`` per task, ``stopped`` after an interrupt).
Every wait has a deadline: a hang fails, and every process of the session is swept.
"""

from __future__ import annotations

import secrets
import shlex
from pathlib import Path
from typing import Any

import pytest
import trio

from analysis import ab_cmd
from harness import runner
from harness.model import ModelServer
from harness.scenario import Scenario, load

from .sdk_support import (
    DROPIN,
    SDK_GC_WARNINGS,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskStartedMessage,
    cbc_behind_dropin,
    query,
)
from .streams import closing

pytestmark = [
    pytest.mark.real_backend,
    pytest.mark.client,
    *SDK_GC_WARNINGS,
]


@pytest.fixture
def cbc() -> list[str]:
    return cbc_behind_dropin()


class Session:
    """The stand-in model of a scenario, and claude-on-cbc's options for the real cbc."""

    def __init__(
        self, scenario: Scenario, server: ModelServer, opts: ClaudeAgentOptions, mark: str
    ) -> None:
        self.scenario, self.server, self.opts, self.mark = scenario, server, opts, mark

    def asked(self, text: str) -> bool:
        return any(text in str(e.get("latest", "")) for e in self.server.log)

    async def wait_asked(self, *texts: str) -> None:
        """Until the model was asked something containing each of ``texts``."""
        arrived = trio.Event()

        def poke(_entry: Any, _req: Any) -> None:
            nonlocal arrived
            arrived.set()
            arrived = trio.Event()

        self.server.on_request = poke
        try:
            while not all(self.asked(t) for t in texts):
                await arrived.wait()
        finally:
            self.server.on_request = None


async def open_session(name: str, cbc: list[str], tmp_path: Path, nursery: trio.Nursery) -> Session:
    scenario = load(ab_cmd.SCENARIOS / f"{name}.toml")
    server = ModelServer(scenario.model)
    url = await nursery.start(server.serve)
    dirs = {k: tmp_path / k for k in ("work", "home", "tmp", "record")}
    for d in dirs.values():
        d.mkdir()
    for rel, text in scenario.files.items():
        (dirs["work"] / rel).parent.mkdir(parents=True, exist_ok=True)
        (dirs["work"] / rel).write_text(text)
    mark = secrets.token_hex(8)
    env = {
        "CCBRIDGE_BACKEND": shlex.join(cbc),
        "CODEBUDDY_BASE_URL": url,
        "CODEBUDDY_API_KEY": "dummy",
        "HOME": str(dirs["home"]),
        "TMPDIR": str(dirs["tmp"]),
        "DISABLE_AUTOUPDATER": "1",
        "CODEBUDDY_DISABLE_AUTO_MEMORY": "1",
        "CCBRIDGE_LOG": str(tmp_path / "bridge.log"),
        "CCBRIDGE_RECORD": str(tmp_path / "record"),
        runner.MARK: mark,
    }
    args = list(scenario.args)
    tools = args[args.index("--allowedTools") + 1 :] if "--allowedTools" in args else []
    opts = ClaudeAgentOptions(
        cli_path=str(DROPIN), cwd=str(dirs["work"]), env=env, allowed_tools=tools
    )
    return Session(scenario, server, opts, mark)


def lifecycles(messages: list[Any]) -> dict[str, dict[str, Any]]:
    """Per task: started once, then progress, then exactly one notification, nothing after."""
    tasks: dict[str, dict[str, Any]] = {}
    for m in messages:
        if isinstance(m, TaskStartedMessage):
            assert m.task_id not in tasks, f"task_started twice for {m.task_id}"
            tasks[m.task_id] = {"started": m, "progress": [], "notifications": []}
        elif isinstance(m, TaskProgressMessage):
            t = tasks[m.task_id]
            assert not t["notifications"], "task_progress after task_notification"
            t["progress"].append(m)
        elif isinstance(m, TaskNotificationMessage):
            tasks[m.task_id]["notifications"].append(m)
    for tid, t in tasks.items():
        assert len(t["notifications"]) == 1, f"{tid}: {len(t['notifications'])} notifications"
    return tasks


async def test_sdk_query_workflow_on_real_cbc(
    cbc: list[str], tmp_path: Path, nursery: trio.Nursery
) -> None:
    s = await open_session("workflow-inline", cbc, tmp_path, nursery)
    prompt = s.scenario.steps[0].user
    assert prompt
    msgs: list[Any] = []
    try:
        with trio.fail_after(150):
            async for m in query(prompt=prompt, options=s.opts):
                msgs.append(m)
    finally:
        runner.sweep(s.mark)
    tasks = lifecycles(msgs)
    [wf] = [t for t in tasks.values() if t["started"].task_type == "local_workflow"]
    assert wf["started"].data["workflow_name"] == "mock-flow"  # meta.name, not inline-<sha>
    assert wf["started"].description == "Mock two-phase workflow"
    assert wf["notifications"][0].status == "completed"
    assert wf["started"].tool_use_id
    results = [m for m in msgs if isinstance(m, ResultMessage)]
    assert results
    assert not results[0].is_error


async def test_sdk_interrupt_stops_the_workflow_on_real_cbc(
    cbc: list[str], tmp_path: Path, nursery: trio.Nursery
) -> None:
    s = await open_session("interrupt-idle-workflow", cbc, tmp_path, nursery)
    prompt = s.scenario.steps[0].user
    assert prompt
    msgs: list[Any] = []
    try:
        with trio.fail_after(150):
            async with ClaudeSDKClient(s.opts) as client:
                await client.query(prompt)
                async for m in client.receive_response():
                    msgs.append(m)
                # both workflow agents are waiting on the (slow) model: the session is idle
                await s.wait_asked("MOCK_SLOW first", "MOCK_SLOW second")
                await trio.sleep(2)
                await client.interrupt()
                t_interrupt = trio.current_time()
                async with closing(client.receive_messages()) as stream:
                    async for m in stream:
                        msgs.append(m)
                        if isinstance(m, TaskNotificationMessage):
                            break
                latency = trio.current_time() - t_interrupt
                # anything else about that task (a second notification, late progress)?
                with trio.move_on_after(3):
                    async with closing(client.receive_messages()) as stream:
                        async for m in stream:
                            msgs.append(m)
    finally:
        runner.sweep(s.mark)
    tasks = lifecycles(msgs)
    [wf] = [t for t in tasks.values() if t["started"].task_type == "local_workflow"]
    assert wf["started"].data["workflow_name"] == "par-slow-flow"
    assert wf["notifications"][0].status == "stopped"
    # cbc's own notification takes up to ~30 s (PROTOCOL.md interrupt-terminal)
    assert latency < 45, latency
    assert list((tmp_path / "record").iterdir())  # the bridge recorded the session


async def test_sdk_query_ends_at_its_result_and_the_session_resumes(
    cbc: list[str], tmp_path: Path, nursery: trio.Nursery
) -> None:
    """After the client's EOF and the last result, with nothing running, Claude exits at
    once; cbc lingers up to ~20 s after its stdin closes, so the bridge ends it
    (eof-wind-down close_wait, 0.2 s). Ending it so must not lose the session: a second
    run resumes it, and, as on Claude, nothing of the first run is replayed to the client
    (resume-replay: the SDK sends no hasPrompt, on which cbc would replay the old exchange,
    its result included, which this query() would then take for its answer)."""
    s = await open_session("simple-success", cbc, tmp_path, nursery)
    ends: list[float] = []
    sid = None
    try:
        with trio.fail_after(90):
            for _ in range(3):
                result_at = None
                async for m in query(prompt="remember the word PAPAYA", options=s.opts):
                    if isinstance(m, ResultMessage):
                        result_at, sid = trio.current_time(), m.session_id
                assert result_at is not None
                ends.append(trio.current_time() - result_at)
            first = len(s.server.log)
            s.opts.resume = sid
            replayed: list[Any] = []
            async for m in query(prompt="which word?", options=s.opts):
                replayed.append(m)
    finally:
        runner.sweep(s.mark)
    # each query() ended well before the old 1 s settle + 3 s close_wait (measured 1.04 to
    # 4.06 s before); typically ~0.1 s
    assert max(ends) < 1.0, ends
    # the resumed session holds the first run's exchange, so the session file was complete
    # when cbc was terminated: cbc sends it to the model with the new line; the client is
    # shown none of it (no old prompt, one result: the new line's)
    history = [m for m in replayed if "PAPAYA" in repr(getattr(m, "content", ""))]
    asked = [e for e in s.server.log[first:] if "which word?" in str(e.get("latest", ""))]
    with_history = any(e["n_messages"] > s.server.log[0]["n_messages"] for e in asked)
    assert with_history, (replayed, s.server.log[first:])
    assert not history, history
    assert len([m for m in replayed if isinstance(m, ResultMessage)]) == 1, replayed
