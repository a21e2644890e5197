"""A denied call of a Claude SDK's in-process MCP tool, without ``interrupt``, through
``claude-on-cbc`` to the real cbc 2.163.0: Claude 2.1.220 gives the model the deny message
as the call's error result and the turn goes on (twins permission-deny: the same for a
built-in tool); the client sees that tool_result, the model's next reply and a success
result. Skipped, with the way to get it, when cbc is not installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from harness.model import Rule

from .sdk_support import (
    SDK_GC_WARNINGS,
    AssistantMessage,
    PermissionResultDeny,
    ResultMessage,
    TextBlock,
    ToolResultBlock,
    UserMessage,
    cbc_behind_dropin,
    create_sdk_mcp_server,
    session,
    tool,
    turn,
)

pytestmark = [pytest.mark.client, pytest.mark.real_backend, *SDK_GC_WARNINGS]
RULES = (
    Rule(when="TRIGGER_MCP", tool="mcp__probe__echo", input={"text": "hi"}),
    Rule(when="not this one", text="understood"),
)


@pytest.fixture
def cbc() -> list[str]:
    return cbc_behind_dropin()


async def test_a_denied_mcp_call_gets_its_error_result_and_the_turn_goes_on(
    tmp_path: Path, cbc: list[str]
) -> None:
    ran: list[Any] = []

    @tool("echo", "Echo the text back", {"text": str})
    async def echo(args: dict[str, Any]) -> dict[str, Any]:
        ran.append(args)
        return {"content": [{"type": "text", "text": "echo"}]}

    async def deny(name: str, data: dict[str, Any], ctx: Any) -> Any:
        return PermissionResultDeny(message="not this one", interrupt=False)

    server = create_sdk_mcp_server(name="probe", tools=[echo])
    with trio.fail_after(120):
        async with session(
            tmp_path, cbc, *RULES, mcp_servers={"probe": server}, can_use_tool=deny
        ) as (client, model, _):
            messages = await turn(client, "TRIGGER_MCP please")
    assert not ran
    denied = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert len(denied) == 1
    assert denied[0].is_error is True
    assert "not this one" in str(denied[0].content)
    texts = [
        b.text
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, TextBlock)
    ]
    assert texts[-1:] == ["understood"]
    [result] = [m for m in messages if isinstance(m, ResultMessage)]
    assert result.subtype == "success"
    assert result.is_error is False
