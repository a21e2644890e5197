"""Real clients drive the drop-in ``claude-on-cbc`` against replayed cbc sessions.

The backend is ``ccbridge replay --materialize captures/<name>.jsonl`` (cbc's own frames,
recorded from the real cbc 2.163.0): ``CCBRIDGE_BACKEND`` points the drop-in at it, as a
user would point it at cbc. What is asserted is what the *SDK* yields. Every test has a
deadline: a hang is a failure, not a stuck CI.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from ..conftest import CAPTURES
from .sdk_support import (
    DROPIN,
    SDK_GC_WARNINGS,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskStartedMessage,
    query,
)
from .streams import closing

pytestmark = [
    pytest.mark.client,
    *SDK_GC_WARNINGS,
]
TERMINAL_AGENT_STATES = {"done", "error", "cached"}


def options(tmp_path: Path, capture: str, **kw: Any) -> ClaudeAgentOptions:
    if not DROPIN.exists():
        pytest.skip(f"{DROPIN} not installed (pip install -e .)")
    backend = [
        sys.executable,
        "-m",
        "bridge",
        "replay",
        "--materialize",
        str(CAPTURES / f"{capture}.jsonl"),
    ]
    # a replayed cbc never reports a background agent it did not report in the capture;
    # Claude's wind-down would wait for it up to CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS (600 s
    # by default; eof-wind-down honours the same variable)
    env = {
        "CCBRIDGE_BACKEND": shlex.join(backend),
        "CCBRIDGE_LOG_LEVEL": "warning",
        "CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "3000",
    }
    return ClaudeAgentOptions(cli_path=str(DROPIN), cwd=str(tmp_path), env=env, **kw)


def script_of(tmp_path: Path, rel: str) -> str:
    return (tmp_path / rel).read_text()


def check_task_lifecycles(messages: list[Any]) -> dict[str, dict[str, Any]]:
    """Per task: started once, exactly one notification, no progress after it."""
    tasks: dict[str, dict[str, Any]] = {}
    for m in messages:
        if isinstance(m, TaskStartedMessage):
            assert m.task_id not in tasks, f"task_started twice for {m.task_id}"
            tasks[m.task_id] = {"started": m, "progress": [], "notifications": []}
        elif isinstance(m, TaskProgressMessage):
            t = tasks[m.task_id]  # progress only after task_started
            assert not t["notifications"], "task_progress after task_notification"
            t["progress"].append(m)
        elif isinstance(m, TaskNotificationMessage):
            tasks[m.task_id]["notifications"].append(m)
    for tid, t in tasks.items():
        assert len(t["notifications"]) == 1, f"{tid}: {len(t['notifications'])} notifications"
    return tasks


def final_agents(task: dict[str, Any]) -> list[dict[str, Any]]:
    last = task["progress"][-1].data.get("workflow_progress", [])
    return [e for e in last if e.get("type") == "workflow_agent"]


async def collect_query(prompt: str, opts: ClaudeAgentOptions) -> list[Any]:
    out: list[Any] = []
    with trio.fail_after(60):
        async for m in query(prompt=prompt, options=opts):
            out.append(m)
    return out


async def test_query_workflow_by_path(tmp_path: Path) -> None:
    msgs = await collect_query(
        "use a workflow please TRIGGER_WORKFLOW_PATH WF_VIA_DIRECT",
        options(tmp_path, "cbc-workflow-by-path"),
    )
    tasks = check_task_lifecycles(msgs)
    [wf] = [t for t in tasks.values() if t["started"].task_type == "local_workflow"]
    assert wf["started"].data["workflow_name"] == "mock-flow"  # meta.name, not path:…
    assert wf["started"].data["prompt"] == script_of(tmp_path, "flows/mock-flow.js")
    assert wf["started"].description == "Mock two-phase workflow"
    assert wf["notifications"][0].status == "completed"
    assert all(a["state"] in TERMINAL_AGENT_STATES for a in final_agents(wf))
    assert any(isinstance(m, ResultMessage) for m in msgs)


async def test_query_inline_workflow(tmp_path: Path) -> None:
    msgs = await collect_query(
        "use a workflow please TRIGGER_WORKFLOW WF_VIA_DIRECT",
        options(tmp_path, "cbc-workflow-inline"),
    )
    tasks = check_task_lifecycles(msgs)
    [wf] = tasks.values()
    started = wf["started"]
    assert started.task_type == "local_workflow"
    assert started.data["workflow_name"] == "mock-flow"
    assert started.data["prompt"].startswith("export const meta = {")
    assert wf["notifications"][0].status == "completed"
    labels = {a["label"]: a["state"] for a in final_agents(wf)}
    # cbc went idle before reporting "summer": only what it reported can be corrected
    assert labels["scanner"] == "done"
    assert set(labels.values()) <= TERMINAL_AGENT_STATES


@pytest.mark.parametrize(
    ("capture", "prompt"),
    [
        ("cbc-bg-bash", "please TRIGGER_BG_BASH"),
        ("cbc-bg-agent", "please TRIGGER_BG_AGENT"),
    ],
)
async def test_query_background_tasks(tmp_path: Path, capture: str, prompt: str) -> None:
    msgs = await collect_query(prompt, options(tmp_path, capture))
    tasks = check_task_lifecycles(msgs)
    [t] = tasks.values()
    expected = "local_bash" if "bash" in capture else "local_agent"
    assert t["started"].task_type == expected
    assert t["started"].tool_use_id  # correlated with the tool call that started it


async def test_query_sees_one_assistant_message_per_content_block(tmp_path: Path) -> None:
    """cbc writes a message with a text and a tool call as one frame; Claude writes one frame
    per block (frame-fields): the SDK yields two AssistantMessages of one message id, the
    message's stop_reason on neither (Claude's streaming shape), and the turn still ends."""
    records = (CAPTURES / "cbc-bg-bash.jsonl").read_text().splitlines()
    for i, line in enumerate(records):
        rec = json.loads(line)
        if rec.get("kind") == "stdout" and '"type":"assistant"' in rec["text"]:
            frame = json.loads(rec["text"])
            if frame["message"]["content"][0]["type"] == "tool_use":
                frame["message"]["content"].insert(0, {"type": "text", "text": "Starting it."})
                records[i] = json.dumps({**rec, "text": json.dumps(frame)})
                message_id = frame["message"]["id"]
                break
    capture = tmp_path / "two-blocks.jsonl"
    capture.write_text("\n".join(records) + "\n")
    opts = options(tmp_path, "cbc-bg-bash")
    opts.env["CCBRIDGE_BACKEND"] = shlex.join(
        [sys.executable, "-m", "bridge", "replay", "--materialize", str(capture)]
    )
    msgs = await collect_query("please TRIGGER_BG_BASH", opts)
    parts = [m for m in msgs if isinstance(m, AssistantMessage) and m.message_id == message_id]
    assert [[type(b).__name__ for b in m.content] for m in parts] == [
        ["TextBlock"],
        ["ToolUseBlock"],
    ]
    assert [m.stop_reason for m in parts] == [None, None]
    assert parts[0].uuid != parts[1].uuid
    assert isinstance(msgs[-1], ResultMessage)
    assert msgs[-1].stop_reason == "end_turn"


async def _interrupt_session(tmp_path: Path, capture: str, midturn: bool) -> list[Any]:
    msgs: list[Any] = []
    opts = options(tmp_path, capture)
    with trio.fail_after(60):
        async with ClaudeSDKClient(opts) as client:
            await client.query("use a workflow TRIGGER_WORKFLOW_PATH_PAR_SLOW WF_VIA_DIRECT")
            async for m in client.receive_response():
                msgs.append(m)
            if midturn:
                await client.query("TRIGGER_SLOW_BASH")
                async with closing(client.receive_messages()) as stream:
                    async for m in stream:
                        msgs.append(m)
                        content = getattr(m, "content", None) or []
                        if any(getattr(b, "name", "") == "Bash" for b in content):
                            break  # the slow foreground Bash runs: interrupt mid-turn
            await client.interrupt()
            async with closing(client.receive_messages()) as stream:
                async for m in stream:
                    msgs.append(m)
                    if isinstance(m, TaskNotificationMessage) and (
                        not midturn or any(isinstance(x, ResultMessage) for x in msgs[-3:])
                    ):
                        break
                    if (
                        midturn
                        and isinstance(m, ResultMessage)
                        and any(isinstance(x, TaskNotificationMessage) for x in msgs)
                    ):
                        break
    return msgs


@pytest.mark.parametrize("midturn", [False, True], ids=["idle", "midturn"])
async def test_interrupt_stops_the_workflow(tmp_path: Path, midturn: bool) -> None:
    capture = "cbc-interrupt-midturn-workflow" if midturn else "cbc-interrupt-idle-workflow"
    msgs = await _interrupt_session(tmp_path, capture, midturn)
    tasks = check_task_lifecycles(msgs)
    [wf] = [t for t in tasks.values() if t["started"].task_type == "local_workflow"]
    assert wf["started"].data["workflow_name"] == "par-slow-flow"
    assert wf["notifications"][0].status == "stopped"
    agents = final_agents(wf)
    assert {a["label"] for a in agents} == {"slow-a", "slow-b"}
    assert all(a["state"] in TERMINAL_AGENT_STATES for a in agents)


def test_seed000_javascript_consumer_cancel_resolves(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed")
    if not DROPIN.exists():
        pytest.skip(f"{DROPIN} not installed (pip install -e .)")
    script = Path(__file__).resolve().parent.parent / "js" / "seed000_consumer.mjs"
    backend = [
        sys.executable,
        "-m",
        "bridge",
        "replay",
        "--materialize",
        str(CAPTURES / "cbc-interrupt-idle-workflow.jsonl"),
    ]
    env = {**os.environ, "CCBRIDGE_BACKEND": shlex.join(backend), "CCBRIDGE_LOG_LEVEL": "warning"}
    proc = subprocess.run(
        [node, str(script), str(DROPIN)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["cancelled"] is True
    [task] = summary["tasks"]
    assert task["notified"]
    assert task["status"] == "stopped"
    assert summary["notifications"] == 1
