"""The CodeBuddy Python SDK (``codebuddy-agent-sdk``, unmodified) drives the real Claude Code
2.1.220 through ``cbc-on-claude`` (profile ``claude-to-cbc``), Claude's model API being the
stand-in of ``harness`` on 127.0.0.1. Each test is what a cbc SDK user's program
does; what is asserted is what the SDK yields. Every wait has a deadline.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.backends import find_backend
from harness.model import ModelScript, ModelServer, Rule
from harness.scenario import load
from tests.bridge.sdk_support import SDK_GC_WARNINGS

sdk = pytest.importorskip(
    "codebuddy_agent_sdk", reason="codebuddy-agent-sdk not installed (pip install -e '.[backends]')"
)
from codebuddy_agent_sdk import (  # noqa: E402
    AssistantMessage,
    CodeBuddyAgentOptions,
    CodeBuddySDKClient,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    tool,
)

pytestmark = [pytest.mark.real_backend, pytest.mark.client, *SDK_GC_WARNINGS]

REPO = Path(__file__).resolve().parents[2]
#: the installed console script (``CCBRIDGE_CBC_DROPIN``: another one, e.g. a checkout's
#: wrapper when the environment was installed before the script existed)
DROPIN = Path(
    os.environ.get("CCBRIDGE_CBC_DROPIN") or Path(sys.executable).with_name("cbc-on-claude")
)
LIMIT = 90


@pytest.fixture
def claude() -> list[str]:
    if not DROPIN.exists():
        pytest.skip(f"{DROPIN} not installed (pip install -e .)")
    argv = find_backend("claude")
    if argv is None:
        pytest.skip("Claude Code not installed: run `ccbridge backends install`")
    return argv


class Stage:
    """The stand-in model and the options a cbc SDK user would pass."""

    def __init__(self, server: ModelServer, env: dict[str, str], root: Path) -> None:
        self.server, self.env, self.root = server, env, root

    def options(self, **kw: Any) -> CodeBuddyAgentOptions:
        return CodeBuddyAgentOptions(
            codebuddy_code_path=str(DROPIN), cwd=str(self.root / "work"), env=self.env, **kw
        )

    def asked(self, text: str) -> bool:
        return any(text in str(e.get("latest", "")) for e in self.server.log)


@asynccontextmanager
async def stage(
    scenario: str | ModelScript, claude: list[str], tmp_path: Path
) -> AsyncIterator[Stage]:
    """A scenario's model (``scenarios/NAME.toml``), or a script."""
    script = (
        scenario
        if isinstance(scenario, ModelScript)
        else load(REPO / "scenarios" / f"{scenario}.toml").model
    )
    server = ModelServer(script)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        for d in ("work", "home", "tmp"):
            (tmp_path / d).mkdir(exist_ok=True)
        env = {
            "CCBRIDGE_BACKEND": shlex.join(claude),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-dummy",
            "HOME": str(tmp_path / "home"),
            "TMPDIR": str(tmp_path / "tmp"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "CCBRIDGE_LOG": str(tmp_path / "bridge.log"),
        }
        try:
            with trio.fail_after(LIMIT):
                yield Stage(server, env, tmp_path)
        finally:
            nursery.cancel_scope.cancel()


async def turn(client: CodeBuddySDKClient, prompt: str) -> list[Any]:
    await client.query(prompt)
    return [m async for m in client.receive_response()]


async def test_query_tool_call_permission_allow_model_and_a_non_uuid_session(
    claude: list[str], tmp_path: Path
) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def allow(tool: str, inp: dict[str, Any], _: Any) -> PermissionResultAllow:
        asked.append((tool, inp))
        return PermissionResultAllow(updated_input=inp)

    async with stage("permission-allow", claude, tmp_path) as st:
        opts = st.options(can_use_tool=allow, session_id="my-bot:session-1")
        async with CodeBuddySDKClient(opts) as client:
            msgs = await turn(client, "TRIGGER_PERM_BASH")
            model = client.get_model()
    assert asked == [("Bash", {"command": "touch perm-probe.txt", "description": "Create a file"})]
    assert (tmp_path / "work/perm-probe.txt").exists()
    uses = [
        b
        for m in msgs
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolUseBlock)
    ]
    assert [u.name for u in uses] == ["Bash"]
    result = msgs[-1]
    assert isinstance(result, ResultMessage)
    assert (result.is_error, result.session_id) == (False, "my-bot:session-1")
    assert model  # currentModelId from the initialize reply


async def test_permission_deny_with_reason(claude: list[str], tmp_path: Path) -> None:
    async def deny(tool: str, inp: dict[str, Any], _: Any) -> PermissionResultDeny:
        return PermissionResultDeny(message="not in this repo")

    async with stage("permission-deny", claude, tmp_path) as st:
        async with CodeBuddySDKClient(st.options(can_use_tool=deny)) as client:
            msgs = await turn(client, "TRIGGER_PERM_BASH")
    results = [
        b
        for m in msgs
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert results
    assert results[0].is_error
    assert "not in this repo" in str(results[0].content)
    assert not (tmp_path / "work/perm-probe.txt").exists()
    assert isinstance(msgs[-1], ResultMessage)


async def test_interrupt_then_a_next_turn(claude: list[str], tmp_path: Path) -> None:
    slow = ModelScript(
        rules=(
            Rule(
                when="TRIGGER_SLOW_BASH",
                tool="Bash",
                input={
                    "command": "sleep 20; echo slow-done",
                    "description": "Slow foreground sleep",
                },
            ),
        )
    )
    async with stage(slow, claude, tmp_path) as st:
        async with CodeBuddySDKClient(st.options(allowed_tools=["Bash"])) as client:
            await client.query("please TRIGGER_SLOW_BASH")
            got: list[Any] = []
            async for m in client.receive_response():  # an ExecutionError would raise here
                got.append(m)
                if isinstance(m, AssistantMessage) and any(
                    isinstance(b, ToolUseBlock) for b in m.content
                ):
                    await trio.sleep(1.0)
                    await client.interrupt()
            after = await turn(client, "hello again")
    result = got[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error) == ("success", False)
    said = [
        b.text
        for m in got
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, TextBlock)
    ]
    assert "Interrupted by user" in said  # cbc's words
    assert isinstance(after[-1], ResultMessage)
    assert after[-1].is_error is False
    assert after[-1].result  # the model answered the next turn


async def test_resume_a_non_uuid_session(claude: list[str], tmp_path: Path) -> None:
    async with stage("simple-success", claude, tmp_path) as st:
        async with CodeBuddySDKClient(st.options(session_id="bot:resume-me")) as client:
            first = await turn(client, "remember MARKER_ONE")
        async with CodeBuddySDKClient(st.options(resume="bot:resume-me")) as client:
            second = await turn(client, "and now MARKER_TWO")
        history = [e for e in st.server.log if "MARKER_TWO" in str(e.get("latest", ""))]
    assert isinstance(first[-1], ResultMessage)
    assert isinstance(second[-1], ResultMessage)
    assert second[-1].session_id == "bot:resume-me"
    assert history
    assert history[-1]["n_messages"] >= 3  # the resumed conversation went to the model


async def test_resume_without_a_prompt_replays_the_history(
    claude: list[str], tmp_path: Path
) -> None:
    async with stage("simple-success", claude, tmp_path) as st:
        async with CodeBuddySDKClient(st.options(session_id="bot:history")) as client:
            await turn(client, "the first question")
        async with CodeBuddySDKClient(st.options(resume="bot:history")) as client:
            replay: list[Any] = []
            async for m in client.receive_messages():  # initialize{hasPrompt:false}
                replay.append(m)
                if isinstance(m, ResultMessage):
                    break
            after = await turn(client, "a second question")
    users = [m for m in replay if isinstance(m, UserMessage)]
    assert [u.content for u in users] == ["the first question"]
    assert any(isinstance(m, AssistantMessage) for m in replay)
    assert isinstance(replay[-1], ResultMessage)
    assert replay[-1].session_id == "bot:history"
    assert isinstance(after[-1], ResultMessage)
    assert after[-1].is_error is False


async def test_sdk_mcp_server_its_tool_and_its_status(claude: list[str], tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []

    @tool("echo", "Echo the text back", {"text": str})  # type: ignore[type-var]  # the SDK types F as a sync callable
    async def echo(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"echo: {args.get('text')}"}]}

    server = create_sdk_mcp_server(name="probe", tools=[echo])
    script = ModelScript(
        rules=(Rule(when="TRIGGER_MCP", tool="mcp__probe__echo", input={"text": "hi there"}),)
    )
    async with stage(script, claude, tmp_path) as st:
        opts = st.options(mcp_servers={"probe": server}, allowed_tools=["mcp__probe__echo"])
        async with CodeBuddySDKClient(opts) as client:
            msgs = await turn(client, "TRIGGER_MCP")
            status = await client.mcp_server_status()
    assert calls == [{"text": "hi there"}]
    results = [
        b
        for m in msgs
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert "echo: hi there" in str(results[0].content)
    assert [(s.name, s.status) for s in status] == [("probe", "connected")]  # was []


async def until_notified(client: CodeBuddySDKClient) -> list[Any]:
    """The messages of a turn that starts a background task, up to its notification and
    the result of the turn that notification started."""
    msgs: list[Any] = []
    results = 0
    async for m in client.receive_messages():
        msgs.append(m)
        results += isinstance(m, ResultMessage)
        if any(isinstance(x, TaskNotificationMessage) for x in msgs) and results >= 2:
            break
    return msgs


async def test_background_shell_and_its_notification(claude: list[str], tmp_path: Path) -> None:
    async with stage("bg-bash", claude, tmp_path) as st:
        async with CodeBuddySDKClient(st.options(allowed_tools=["Bash"])) as client:
            await client.query("please TRIGGER_BG_BASH")
            msgs = await until_notified(client)
    [started] = [m for m in msgs if isinstance(m, TaskStartedMessage)]
    assert started.task_type == "Bash"  # cbc's name, not local_bash
    [note] = [m for m in msgs if isinstance(m, TaskNotificationMessage)]
    assert (note.task_id, note.status) == (started.task_id, "completed")
    assert not [m for m in msgs if getattr(m, "subtype", "") == "background_tasks_changed"]
    texts = [
        b.text
        for m in msgs
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, TextBlock)
    ]
    assert texts


JS = REPO / "tests" / "js"
JS_SDK = JS / "node_modules" / "@tencent-ai" / "agent-sdk"


async def _js_session(
    node: str, exe: Path, script_name: str, script: ModelScript, claude: list[str], tmp: Path
) -> dict[str, Any]:
    """Run a tests/js script with the JS SDK over ``exe`` against the stand-in model; its
    summary (the last stdout line), with no failures and exit 0."""
    async with stage(script, claude, tmp) as st:
        cfg = {"cli": str(exe), "cwd": str(tmp / "work"), "env": st.env, "timeout": 80}
        proc = await trio.run_process(
            [node, str(JS / script_name), json.dumps(cfg)],
            cwd=str(JS),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    lines = proc.stdout.decode().strip().splitlines()
    assert lines, proc.stderr.decode()[-2000:]
    summary: dict[str, Any] = json.loads(lines[-1])
    assert summary["failures"] == [], summary
    assert proc.returncode == 0, summary
    return summary


async def test_js_sdk_session_controls_interrupt_resume_and_deny(
    claude: list[str], tmp_path: Path
) -> None:
    """``@tencent-ai/agent-sdk`` (tests/js/cbc_sdk_session.mjs) through cbc-on-claude.exe."""
    import shutil

    node = shutil.which("node")
    if node is None or not JS_SDK.is_dir():
        pytest.skip(
            "node or @tencent-ai/agent-sdk missing (cd tests/js && npm install --omit=optional)"
        )
    exe = DROPIN.with_name("cbc-on-claude.exe")
    script = ModelScript(
        rules=(
            Rule(
                when="TRIGGER_PERM_BASH",
                tool="Bash",
                input={"command": "touch perm-probe.txt", "description": "Create a file"},
            ),
            Rule(
                when="TRIGGER_SLOW_BASH",
                tool="Bash",
                input={"command": "sleep 20; echo slow-done", "description": "Slow sleep"},
            ),
        )
    )
    summary = await _js_session(node, exe, "cbc_sdk_session.mjs", script, claude, tmp_path)
    assert summary["facts"]["model"]


async def test_js_sdk_mcp_server_and_background_tasks(claude: list[str], tmp_path: Path) -> None:
    """``@tencent-ai/agent-sdk`` (tests/js/cbc_sdk_tasks.mjs): an SDK MCP server, its tool and
    ``mcpServerStatus()``; a background shell and a background agent with their
    notifications, in cbc's names."""
    import shutil

    node = shutil.which("node")
    if node is None or not JS_SDK.is_dir():
        pytest.skip(
            "node or @tencent-ai/agent-sdk missing (cd tests/js && npm install --omit=optional)"
        )
    exe = DROPIN.with_name("cbc-on-claude.exe")
    rules = [Rule(when="TRIGGER_MCP", tool="mcp__probe__echo", input={"text": "hi there"})]
    for name in ("bg-bash", "bg-agent"):
        rules += load(REPO / "scenarios" / f"{name}.toml").model.rules
    script = ModelScript(rules=tuple(rules))
    summary = await _js_session(node, exe, "cbc_sdk_tasks.mjs", script, claude, tmp_path)
    bash = summary["facts"]["bash_summary"]
    assert bash == 'Background command "sleep 3; echo bg-done" completed'


async def test_background_agent_as_cbc_reports_it(claude: list[str], tmp_path: Path) -> None:
    async with stage("bg-agent", claude, tmp_path) as st:
        opts = st.options(allowed_tools=["Agent", "Bash"])
        async with CodeBuddySDKClient(opts) as client:
            await client.query("please TRIGGER_BG_AGENT")
            msgs = await until_notified(client)
    [started] = [m for m in msgs if isinstance(m, TaskStartedMessage)]
    assert started.task_type == "Agent"  # cbc's name, not local_agent
    [note] = [m for m in msgs if isinstance(m, TaskNotificationMessage)]
    assert note.status == "completed"
    assert note.summary == 'Background agent "Mock subagent" completed'
    # the agent's own messages stay with the bridge, as cbc keeps them to itself
    assert not [m for m in msgs if isinstance(m, AssistantMessage) and m.parent_tool_use_id]
