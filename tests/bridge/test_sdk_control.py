"""The real Python ``claude-agent-sdk`` drives ``claude-on-cbc`` in front of a real cbc
2.163.0 whose model is the scripted stand-in (``harness.model``, OpenAI dialect):
the control protocol end to end (compat/stages/control.py, interrupts.py, permissions.py).

What is asserted is what the SDK returns or raises. cbc starts slowly (5-15 s before it
answers ``initialize``), so each test has a generous deadline; a hang is still a failure.
Skipped, with the way to get it, when cbc is not installed.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.log import Logger
from harness.model import ModelServer, Rule

from .sdk_support import (
    SDK_GC_WARNINGS,
    AssistantMessage,
    ClaudeSDKClient,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionRuleValue,
    PermissionUpdate,
    ResultMessage,
    StreamEvent,
    TaskNotificationMessage,
    TaskStartedMessage,
    ToolPermissionContext,
    UserMessage,
    cbc_behind_dropin,
    session,
    turn,
)
from .streams import closing

pytestmark = [
    pytest.mark.client,
    pytest.mark.real_backend,
    *SDK_GC_WARNINGS,
]
DEADLINE = 120
SLOW_BASH = Rule(
    when="TRIGGER_SLOW_BASH",
    tool="Bash",
    input={"command": "sleep 30; echo slow-done", "description": "Slow sleep"},
)
ECHO_BASH = Rule(
    when="TRIGGER_ECHO",
    tool="Bash",
    input={"command": "echo hooked > hooked.txt", "description": "Echo to a file"},
)
PERM_BASH = Rule(
    when="TRIGGER_PERM_BASH",
    tool="Bash",
    input={"command": "touch perm-probe.txt", "description": "Create a file"},
)
#: two Bash calls in one turn: the first's output asks the model for the second
FIRST_BASH = Rule(
    when="TRIGGER_TWO_BASH",
    tool="Bash",
    input={"command": "touch first-call.txt && echo NEXT_BASH_PLEASE", "description": "First"},
    times=1,
)
SECOND_BASH = Rule(
    when="NEXT_BASH_PLEASE",
    tool="Bash",
    input={"command": "touch second-call.txt", "description": "Second"},
    times=1,
)


@pytest.fixture
def cbc() -> list[str]:
    return cbc_behind_dropin()


def tool_results(messages: list[Any]) -> list[Any]:
    return [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if getattr(b, "tool_use_id", None)
    ]


def both_calls_ran_unasked(messages: list[Any], tmp_path: Path) -> None:
    """The turn's two tool calls ran without an error or a denial, and the bridge applied
    every permission update it was given (nothing "not applied" in its log)."""
    results = tool_results(messages)
    assert len(results) == 2
    assert not any(r.is_error for r in results)
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert not result.permission_denials
    log = (tmp_path / "bridge.log").read_text() if (tmp_path / "bridge.log").exists() else ""
    assert "not applied" not in log


def models_asked(server: ModelServer) -> list[str]:
    return [e["model"] for e in server.log if e.get("model") and e.get("agent") != "utility"]


async def test_initialize_reply_reaches_the_sdk_claude_shaped(
    tmp_path: Path, cbc: list[str]
) -> None:
    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc) as (client, _, _):
            info = await client.get_server_info()
    assert info is not None
    assert info["commands"]
    assert not any(c["name"].startswith("/") for c in info["commands"])
    assert {"value", "displayName", "description"} <= set(info["models"][0])
    assert info["account"]["apiKeySource"] == "CODEBUDDY_API_KEY"
    assert "0123456789abcdef" not in repr(info)
    assert "89abcdef" not in repr(info)
    assert info["pid"] > 0
    log = (tmp_path / "bridge.log").read_text() if (tmp_path / "bridge.log").exists() else ""
    assert "89abcdef" not in log


async def test_interrupt_stops_a_running_turn(tmp_path: Path, cbc: list[str]) -> None:
    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, SLOW_BASH, allowed_tools=["Bash"]) as (client, _, _):
            await client.interrupt()  # before cbc has a session: Claude succeeds at once
            await client.query("please TRIGGER_SLOW_BASH")
            messages: list[Any] = []
            async with closing(client.receive_messages()) as stream:
                async for m in stream:
                    messages.append(m)
                    if isinstance(m, AssistantMessage) and any(
                        getattr(b, "name", "") == "Bash" for b in m.content
                    ):
                        break
            started = trio.current_time()
            await client.interrupt()
            async with closing(client.receive_response()) as stream:
                async for m in stream:
                    messages.append(m)
            waited = trio.current_time() - started
    assert isinstance(messages[-1], ResultMessage)
    assert waited < 15  # not the 30 s sleep
    assert not any("slow-done" in str(getattr(b, "content", "")) for b in tool_results(messages))


async def test_idle_interrupt_ends_a_background_agent_and_no_turn_follows(
    tmp_path: Path, cbc: list[str]
) -> None:
    """cbc kills the agent at once but reports it ~30 s later, then runs a model turn of
    its own; the SDK sees Claude's behaviour instead: the stopped notification with the
    interrupt's receipt, and no turn after it."""
    bg_agent = Rule(
        when="TRIGGER_SLOW_BG_AGENT",
        tool="Agent",
        input={
            "description": "Slow mock subagent",
            "prompt": "MOCK_SLOW please",
            "subagent_type": "general-purpose",
            "run_in_background": True,
        },
    )
    slow_sub = Rule(when="MOCK_SLOW", agent="sub", delay=300)
    got: list[tuple[float, Any]] = []
    turn_over = trio.Event()

    async def collect(client: ClaudeSDKClient) -> None:
        async with closing(client.receive_messages()) as stream:
            async for m in stream:
                got.append((trio.current_time(), m))
                if isinstance(m, ResultMessage):
                    turn_over.set()

    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, bg_agent, slow_sub, allowed_tools=["Agent", "Bash"]) as (
            client,
            server,
            _,
        ):
            async with trio.open_nursery() as nursery:
                running = trio.Event()  # the agent asked the model: it runs
                server.on_request = lambda entry, req: (
                    running.set() if entry.get("agent") == "sub" else None
                )
                nursery.start_soon(collect, client)
                await client.query("TRIGGER_SLOW_BG_AGENT")
                await running.wait()
                await turn_over.wait()
                await client.interrupt()
                answered = trio.current_time()
                await trio.sleep(40)  # past cbc's 30 s poll and the turn it then runs
                nursery.cancel_scope.cancel()
    started = [m for _, m in got if isinstance(m, TaskStartedMessage)]
    assert [m.task_type for m in started] == ["local_agent"]
    notes = [(t, m) for t, m in got if isinstance(m, TaskNotificationMessage)]
    assert [(m.task_id, m.status) for _, m in notes] == [(started[0].task_id, "stopped")]
    assert notes[0][0] - answered < 2  # with the receipt, not ~30 s later
    after = [m for t, m in got if t > answered and isinstance(m, (AssistantMessage, ResultMessage))]
    assert after == []  # cbc's own post-interrupt turn never reaches the client


async def test_set_permission_mode_before_and_after_the_first_turn(
    tmp_path: Path, cbc: list[str]
) -> None:
    asked: list[str] = []

    async def can_use_tool(
        name: str, inp: dict[str, Any], ctx: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        asked.append(name)
        return PermissionResultAllow()

    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, PERM_BASH, can_use_tool=can_use_tool) as (
            client,
            _,
            work,
        ):
            # cbc answers "Session not found" before its first turn; Claude succeeds
            await client.set_permission_mode("bypassPermissions")
            first = await turn(client, "TRIGGER_PERM_BASH")
            await client.set_permission_mode("default")
            (work / "perm-probe.txt").unlink()
            second = await turn(client, "TRIGGER_PERM_BASH")
    assert isinstance(first[-1], ResultMessage)
    assert isinstance(second[-1], ResultMessage)
    assert asked == ["Bash"]  # bypass: not asked the first time; asked once back at default
    assert (work / "perm-probe.txt").exists()


async def test_set_model(tmp_path: Path, cbc: list[str]) -> None:
    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc) as (client, server, _):
            await turn(client, "hello")
            await client.set_model("fast-model")
            await turn(client, "again")
            await client.set_model(None)  # Claude: back to the default; cbc needs a name
            await turn(client, "once more")
    # cbc's own default comes from its initialize reply (currentModelId). Under load cbc
    # may ask the same model twice within a turn (a retried or hidden request): what is
    # asserted is the sequence of models, not the number of requests
    asked = [
        m for i, m in enumerate(models_asked(server)) if i == 0 or m != models_asked(server)[i - 1]
    ]
    assert asked == ["default-model", "fast-model", "default-model"]


async def test_get_mcp_status_and_other_controls_cbc_lacks(tmp_path: Path, cbc: list[str]) -> None:
    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc) as (client, _, _):
            before = await client.get_mcp_status()
            await turn(client, "hello")
            status = await client.get_mcp_status()
            usage = await client.get_context_usage()
            await client.stop_task("no-such-task")  # Claude: success for an unknown id
            # cbc's "Unknown control request subtype", in Claude's words
            with pytest.raises(Exception, match="Unsupported control request subtype: mcp_"):
                await client.reconnect_mcp_server("nope")
    assert before == {"mcpServers": []}
    assert status == {"mcpServers": []}
    assert usage["totalTokens"] > 0
    assert usage["model"]


async def test_can_use_tool_allow_with_updated_input(tmp_path: Path, cbc: list[str]) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def allow_changed(
        name: str, inp: dict[str, Any], ctx: ToolPermissionContext
    ) -> PermissionResultAllow:
        seen.append((name, inp))
        return PermissionResultAllow(updated_input={**inp, "command": "touch changed.txt"})

    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, PERM_BASH, can_use_tool=allow_changed) as (
            client,
            _,
            work,
        ):
            messages = await turn(client, "TRIGGER_PERM_BASH")
    assert seen == [("Bash", {"command": "touch perm-probe.txt", "description": "Create a file"})]
    assert (work / "changed.txt").exists()
    assert not (work / "perm-probe.txt").exists()
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert not result.permission_denials


async def test_can_use_tool_deny(tmp_path: Path, cbc: list[str]) -> None:
    async def deny(
        name: str, inp: dict[str, Any], ctx: ToolPermissionContext
    ) -> PermissionResultDeny:
        return PermissionResultDeny(message="denied by test")

    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, PERM_BASH, can_use_tool=deny) as (client, _, work):
            messages = await turn(client, "TRIGGER_PERM_BASH")
    [denied] = tool_results(messages)
    assert denied.is_error
    assert "denied by test" in str(denied.content)
    assert not (work / "perm-probe.txt").exists()
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert [d["tool_name"] for d in result.permission_denials or []] == ["Bash"]


async def test_without_stdio_prompts_the_bridge_denies_like_claude(
    tmp_path: Path, cbc: list[str]
) -> None:
    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, PERM_BASH) as (client, _, work):
            messages = await turn(client, "TRIGGER_PERM_BASH")
    [denied] = tool_results(messages)
    assert "Claude requested permissions to use Bash, but you haven't granted it yet." in str(
        denied.content
    )
    assert not (work / "perm-probe.txt").exists()
    result = messages[-1]
    assert [d["tool_name"] for d in result.permission_denials or []] == ["Bash"]


def test_the_logger_redacts_whatever_it_is_given() -> None:
    buf = io.StringIO()
    Logger(buf, "debug").debug(
        'launch: cbc --settings {"apiKey": "sk-live-abcdef123456"} CODEBUDDY_API_KEY=' + "x" * 20,
        "argv",
    )
    text = buf.getvalue()
    assert "abcdef123456" not in text
    assert "x" * 20 not in text
    assert os.linesep in text or text.endswith("\n")


async def test_lines_sent_the_moment_each_turn_ends_are_all_answered(
    tmp_path: Path, cbc: list[str]
) -> None:
    """A client that writes its next line as soon as it has read a result (the SDK's
    ``query()`` right after ``receive_response()``): cbc 2.163.0 alone loses a line that
    reaches it 1-3 ms after its result, and every such line through a proxy lands there;
    ``user-line`` holds it past that (``settle``), so each turn is answered."""
    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, ECHO_BASH, permission_mode="bypassPermissions") as (
            client,
            server,
            _,
        ):
            turns = [
                await turn(client, prompt)
                for prompt in ("one TRIGGER_ECHO", "two", "three TRIGGER_ECHO", "four")
            ]
    assert [type(t[-1]).__name__ for t in turns] == ["ResultMessage"] * 4
    assert all(not t[-1].is_error for t in turns)
    asked = [e["latest"] for e in server.log if e.get("agent") != "utility"]
    assert sum("<user_query>" in str(a) for a in asked) == 4, asked


# -- hooks, and every option that becomes a flag, in one session -----------------------------


async def test_hooks_see_the_prompt_and_the_tool_call_and_a_deny_holds(
    tmp_path: Path, cbc: list[str]
) -> None:
    """The SDK registers its hook callbacks in ``initialize``; cbc calls them back over
    stdio (``hook_callback``) and the bridge passes both ways: UserPromptSubmit sees the
    line, PreToolUse and PostToolUse the Bash call, and a PreToolUse deny keeps the command
    from running."""
    calls: list[tuple[str, Any]] = []
    deny = False

    async def on_prompt(
        inp: HookInput, tool_use_id: str | None, ctx: HookContext
    ) -> HookJSONOutput:
        assert inp["hook_event_name"] == "UserPromptSubmit"
        calls.append(("prompt", inp["prompt"]))
        return {}

    async def pre(inp: HookInput, tool_use_id: str | None, ctx: HookContext) -> HookJSONOutput:
        assert inp["hook_event_name"] == "PreToolUse"
        calls.append(("pre", (inp["tool_name"], inp["tool_input"]["command"], tool_use_id)))
        if not deny:
            return {}
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "not today",
            }
        }

    async def post(inp: HookInput, tool_use_id: str | None, ctx: HookContext) -> HookJSONOutput:
        assert inp["hook_event_name"] == "PostToolUse"
        calls.append(("post", (inp["tool_name"], tool_use_id)))
        return {}

    hooks = {
        "UserPromptSubmit": [HookMatcher(hooks=[on_prompt])],
        "PreToolUse": [HookMatcher(matcher="Bash", hooks=[pre])],
        "PostToolUse": [HookMatcher(matcher="Bash", hooks=[post])],
    }
    with trio.fail_after(DEADLINE):
        async with session(
            tmp_path, cbc, ECHO_BASH, hooks=hooks, permission_mode="bypassPermissions"
        ) as (client, _, work):
            first = await turn(client, "please TRIGGER_ECHO")
            assert (work / "hooked.txt").read_text() == "hooked\n"
            (work / "hooked.txt").unlink()
            deny = True
            second = await turn(client, "again TRIGGER_ECHO")
    [used, denied] = [next(b.tool_use_id for b in tool_results(m)) for m in (first, second)]
    assert calls == [
        ("prompt", "please TRIGGER_ECHO"),
        ("pre", ("Bash", "echo hooked > hooked.txt", used)),
        ("post", ("Bash", used)),
        ("prompt", "again TRIGGER_ECHO"),
        ("pre", ("Bash", "echo hooked > hooked.txt", denied)),
    ]
    assert not (work / "hooked.txt").exists()
    [result] = tool_results(second)
    assert result.is_error
    assert "not today" in str(result.content)
    assert isinstance(second[-1], ResultMessage)
    assert not second[-1].is_error


async def test_every_option_that_becomes_a_flag_in_one_session(
    tmp_path: Path, cbc: list[str]
) -> None:
    """The Python SDK's options that become flags (argv, translated or dropped with a
    warning) all at once, in a real session that runs a tool: cbc starts with the line,
    streams partial messages, runs the tool and ends the turn. (What cannot run here:
    resume/continue/fork need a stored session, an output schema a model that answers it;
    tests/compat/test_argv.py and test_real_cbc_argv.py take those on the command line.)"""
    extra = tmp_path / "extra-dir"
    extra.mkdir()
    options: dict[str, Any] = dict(
        tools=["Bash", "Read"],
        allowed_tools=["Bash", "Read"],
        disallowed_tools=["Write", "Edit"],
        max_turns=5,
        max_budget_usd=5.0,
        model="default-model",
        fallback_model="fast-model",
        betas=["context-1m-2025-08-07"],
        permission_mode="acceptEdits",
        settings='{"alwaysThinkingEnabled": false}',
        add_dirs=[str(extra)],
        include_partial_messages=True,
        include_hook_events=True,
        strict_mcp_config=True,
        setting_sources=["user", "project"],
        thinking={"type": "enabled", "budget_tokens": 2048},
        effort="high",
        system_prompt={"type": "preset", "preset": "claude_code", "append": "Be brief."},
        # (an option neither CLI knows is refused, as Claude refuses it: test_headless_dropin)
        extra_args={"replay-user-messages": None},
    )
    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, ECHO_BASH, **options) as (client, server, work):
            messages = await turn(client, "please TRIGGER_ECHO")
    assert (work / "hooked.txt").read_text() == "hooked\n"
    assert [type(b).__name__ for b in tool_results(messages)] == ["ToolResultBlock"]
    assert any(isinstance(m, StreamEvent) for m in messages)  # include_partial_messages
    assert isinstance(messages[-1], ResultMessage)
    assert messages[-1].subtype == "success"
    assert set(models_asked(server)) == {"default-model"}


async def test_can_use_tool_always_allow_is_applied(tmp_path: Path, cbc: list[str]) -> None:
    """The SDK's "always allow": the callback answers the first Bash call with an allow and
    ``updatedPermissions`` ``addRules`` Bash (session); the model then calls Bash again in
    the same turn, and, as with Claude Code, the callback is not asked again (the bridge
    answers cbc from the rule) and the second call runs."""
    asked: list[tuple[str, Any]] = []

    async def always(
        name: str, inp: dict[str, Any], ctx: ToolPermissionContext
    ) -> PermissionResultAllow:
        asked.append((name, inp.get("command")))
        rule = PermissionRuleValue(tool_name="Bash")
        update = PermissionUpdate(
            type="addRules", rules=[rule], behavior="allow", destination="session"
        )
        return PermissionResultAllow(updated_permissions=[update])

    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, FIRST_BASH, SECOND_BASH, can_use_tool=always) as (
            client,
            server,
            work,
        ):
            messages = await turn(client, "please TRIGGER_TWO_BASH")
    assert asked == [("Bash", "touch first-call.txt && echo NEXT_BASH_PLEASE")]
    assert (work / "first-call.txt").exists()
    assert (work / "second-call.txt").exists()  # the second call ran, never asked about
    assert server.brain.fired[1] == 1  # the model did ask for it
    both_calls_ran_unasked(messages, tmp_path)


@pytest.mark.parametrize("command", ["git init", "touch twice.txt"])
async def test_can_use_tool_suggestions_work_as_always_allow(
    tmp_path: Path, cbc: list[str], command: str
) -> None:
    """cbc's prompt carries Claude's ``permission_suggestions`` (and ``blocked_path``,
    ``display_name``, ``description``), the bridge's as Claude Code 2.1.220 makes them:
    the callback gets them in ``ToolPermissionContext``, answers the first call with them
    as ``updatedPermissions`` (an SDK app's "always allow"), and the identical second call
    of the turn is not asked about and runs."""
    call = {"command": command, "description": "Same call"}
    first = Rule(when="TRIGGER_SAME_TWICE", tool="Bash", input=call, times=1)
    again = Rule(regex=r"[\s\S]", tool="Bash", input=call, times=1)  # after the 1st result
    asked: list[tuple[Any, ToolPermissionContext]] = []

    async def always(
        name: str, inp: dict[str, Any], ctx: ToolPermissionContext
    ) -> PermissionResultAllow:
        asked.append((inp.get("command"), ctx))
        return PermissionResultAllow(updated_permissions=list(ctx.suggestions))

    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, first, again, can_use_tool=always) as (
            client,
            server,
            work,
        ):
            messages = await turn(client, "please TRIGGER_SAME_TWICE")
    assert server.brain.fired[1] == 1  # the model did make the second call
    [(seen, ctx)] = asked  # the second, identical call was answered without the callback
    assert seen == command
    assert (ctx.display_name, ctx.description) == ("Bash", "Same call")
    suggestions = [s.to_dict() for s in ctx.suggestions]
    if command == "git init":
        rule = {"toolName": "Bash", "ruleContent": "git init *"}  # Claude's two-word prefix
        assert suggestions == [
            {
                "type": "addRules",
                "rules": [rule],
                "behavior": "allow",
                "destination": "localSettings",
            }
        ]
        assert ctx.blocked_path is None
    else:
        rule = {"toolName": "Bash", "ruleContent": command}  # no prefix: the exact command
        assert suggestions == [
            {
                "type": "addRules",
                "rules": [rule],
                "behavior": "allow",
                "destination": "localSettings",
            },
            {"type": "addDirectories", "directories": [str(work)], "destination": "session"},
            {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
        ]
        assert ctx.blocked_path == str(work / "twice.txt")
        assert (work / "twice.txt").exists()
    both_calls_ran_unasked(messages, tmp_path)


async def test_can_use_tool_set_mode_reaches_cbc(tmp_path: Path, cbc: list[str]) -> None:
    """An allow's ``updatedPermissions`` ``setMode`` bypassPermissions reaches cbc as the
    bridge's own ``set_permission_mode`` (its reply is not the SDK's): the turn's second
    Bash call is not asked about."""
    asked: list[Any] = []

    async def bypass(
        name: str, inp: dict[str, Any], ctx: ToolPermissionContext
    ) -> PermissionResultAllow:
        asked.append(inp.get("command"))
        update = PermissionUpdate(type="setMode", mode="bypassPermissions", destination="session")
        return PermissionResultAllow(updated_permissions=[update])

    with trio.fail_after(DEADLINE):
        async with session(tmp_path, cbc, FIRST_BASH, SECOND_BASH, can_use_tool=bypass) as (
            client,
            _,
            work,
        ):
            messages = await turn(client, "please TRIGGER_TWO_BASH")
            after = await turn(client, "hello")  # the session goes on
    assert asked == ["touch first-call.txt && echo NEXT_BASH_PLEASE"]
    assert (work / "second-call.txt").exists()
    assert isinstance(messages[-1], ResultMessage)
    assert isinstance(after[-1], ResultMessage)
    assert not after[-1].is_error
    log = (tmp_path / "bridge.log").read_text() if (tmp_path / "bridge.log").exists() else ""
    assert "not applied" not in log
    assert "failed when sent" not in log
