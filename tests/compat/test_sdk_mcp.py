"""``sdk-mcp`` and ``sdk-mcp-reply`` (compat/stages/sdk_mcp.py): cbc's requests to a Claude
SDK's in-process MCP server and their results, as Claude Code 2.1.220 writes them. The
frames are those of a real session of each CLI (the Python SDK's
``create_sdk_mcp_server`` with a tool ``echo`` and a failing ``boom``, the stand-in
model, 2026-12-02), cut to what the rules read."""

from __future__ import annotations

import json
from typing import Any

from compat.engine import Engine
from tests.compat.helpers import engine_for, frames_out, line, result_block, stage_on

SID = "1e864004-fc81-43c5-a606-429124429112"
CLAUDE_INFO = {
    "name": "claude-code",
    "title": "Claude Code",
    "version": "2.1.220",
    "description": "Anthropic's agentic coding tool",
    "websiteUrl": "https://claude.com/claude-code",
}
TOOLS = [
    {"description": "Echo the text back", "inputSchema": {"type": "object"}, "name": "echo"},
    {
        "annotations": {"readOnlyHint": True, "title": "Boom Tool"},
        "description": "Always fails",
        "inputSchema": {"type": "object"},
        "name": "boom",
    },
]


def engine() -> Engine:
    return engine_for(
        "identity",
        up=[stage_on("sdk-mcp-reply"), stage_on("unsupported-control")],
        down=[stage_on("session"), stage_on("sdk-mcp"), stage_on("control-state")],
    )


def mcp_request(rid: str, message: dict[str, Any]) -> dict[str, Any]:
    """cbc's request to the in-process server ``probe``."""
    body = {"subtype": "mcp_message", "server_name": "probe", "message": message}
    return {"type": "control_request", "request_id": rid, "request": body}


def mcp_reply(rid: str, result: dict[str, Any], mid: int) -> dict[str, Any]:
    """The Python SDK's answer."""
    body = {"mcp_response": {"jsonrpc": "2.0", "id": mid, "result": result}}
    resp = {"subtype": "success", "request_id": rid, "response": body}
    return {"type": "control_response", "response": resp}


def tool_call(name: str, args: dict[str, Any], mid: int) -> dict[str, Any]:
    meta = {"traceparent": "00-ef40-01", "baggage": f"codebuddy.session_id={SID}"}
    params = {"name": name, "arguments": args, "_meta": meta}
    return {"method": "tools/call", "params": params, "jsonrpc": "2.0", "id": mid}


def assistant(use_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": use_id, "name": name, "input": args}
    msg = {"id": "m1", "role": "assistant", "content": [block], "model": "default-model"}
    return {"type": "assistant", "session_id": SID, "message": msg, "parent_tool_use_id": None}


def cbc_result(use_id: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    """cbc's tool_result: the content list as JSON in one text block, no is_error."""
    block = result_block(use_id, json.dumps(content, separators=(",", ":")))
    return {
        "type": "user",
        "session_id": SID,
        "message": {"content": [block], "role": "user"},
        "parent_tool_use_id": None,
    }


def down(eng: Engine, obj: dict[str, Any]) -> list[dict[str, Any]]:
    return frames_out(eng.feed("backend", line(obj), 0.0))


def up(eng: Engine, obj: dict[str, Any]) -> list[dict[str, Any]]:
    return frames_out(eng.feed("client", line(obj), 0.0), side="backend")


def called(eng: Engine, use_id: str, name: str, args: dict[str, Any], result: Any) -> Any:
    """The model calls ``mcp__probe__<name>``, cbc asks the server, the client answers;
    what the client then sees of cbc's tool_result."""
    down(eng, assistant(use_id, f"mcp__probe__{name}", args))
    (sent,) = down(eng, mcp_request(f"mcp_{use_id}", tool_call(name, args, 2)))
    assert up(eng, mcp_reply(f"mcp_{use_id}", result, 2))  # passed on unchanged
    content = result["content"]
    cbc_content = [c for c in content if c.get("type") != "text" or c["text"].strip()]
    (out,) = down(eng, cbc_result(use_id, cbc_content))
    return sent, out


def test_initialize_introduces_claude_code_not_the_server() -> None:
    eng = engine()
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1.0.0"},  # cbc's
    }
    msg = {"method": "initialize", "params": params, "jsonrpc": "2.0", "id": 0}
    (out,) = down(eng, mcp_request("mcp_1", msg))
    assert out["request"]["message"]["params"] == {**params, "clientInfo": CLAUDE_INFO}
    assert out["request"]["message"]["id"] == 0
    note = {"method": "notifications/initialized", "jsonrpc": "2.0"}
    assert down(eng, mcp_request("mcp_2", note)) == [mcp_request("mcp_2", note)]


def test_tools_call_names_the_models_call_and_its_result_is_claudes() -> None:
    eng = engine()
    result = {"content": [{"text": "echo: hi there", "type": "text"}], "isError": False}
    sent, out = called(eng, "call_1", "echo", {"text": "hi there"}, result)
    meta = sent["request"]["message"]["params"]["_meta"]
    assert meta["claudecode/toolUseId"] == "call_1"
    assert meta["traceparent"] == "00-ef40-01"  # cbc's own kept
    (block,) = out["message"]["content"]
    assert block == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": [{"type": "text", "text": "echo: hi there"}],
    }
    assert out["tool_use_result"] == [{"type": "text", "text": "echo: hi there"}]
    assert not eng.state.control.sdk_mcp_results  # taken


def test_a_failed_call_is_an_error_result_as_claude_writes_it() -> None:
    eng = engine()
    result = {"content": [{"text": "the boom failed", "type": "text"}], "isError": True}
    _, out = called(eng, "call_4", "boom", {"text": "x"}, result)
    (block,) = out["message"]["content"]
    assert block == {
        "type": "tool_result",
        "tool_use_id": "call_4",
        "content": "the boom failed",
        "is_error": True,
    }
    assert out["tool_use_result"] == "Error: the boom failed"


def test_the_call_matched_is_the_one_with_those_arguments() -> None:
    eng = engine()
    down(eng, assistant("call_a", "mcp__probe__echo", {"text": "a"}))
    down(eng, assistant("call_b", "mcp__probe__echo", {"text": "b"}))
    (first,) = down(eng, mcp_request("r1", tool_call("echo", {"text": "a"}, 2)))
    (second,) = down(eng, mcp_request("r2", tool_call("echo", {"text": "b"}, 3)))
    assert first["request"]["message"]["params"]["_meta"]["claudecode/toolUseId"] == "call_a"
    assert second["request"]["message"]["params"]["_meta"]["claudecode/toolUseId"] == "call_b"


def test_a_call_the_model_did_not_make_and_other_results_pass_unchanged() -> None:
    eng = engine()
    req = mcp_request("r1", tool_call("echo", {"text": "a"}, 2))
    assert down(eng, req) == [req]  # no call to name
    down(eng, assistant("call_x", "Bash", {"command": "ls"}))
    bash = cbc_result("call_x", [{"type": "text", "text": "x"}])
    assert down(eng, bash) == [bash]


def test_a_result_that_is_not_cbcs_copy_passes_unchanged() -> None:
    """cbc wrote something else (it cut or replaced the output): left as it is."""
    eng = engine()
    down(eng, assistant("call_1", "mcp__probe__echo", {"text": "hi"}))
    down(eng, mcp_request("r1", tool_call("echo", {"text": "hi"}, 2)))
    up(eng, mcp_reply("r1", {"content": [{"type": "text", "text": "echo: hi"}]}, 2))
    other = cbc_result("call_1", [{"type": "text", "text": "something else"}])
    assert down(eng, other) == [other]
    assert not eng.state.control.sdk_mcp_results


def test_mcp_status_lists_an_in_process_servers_tools_as_claude() -> None:
    eng = engine()
    init = {
        "type": "system",
        "subtype": "init",
        "session_id": SID,
        "mcp_servers": [{"name": "probe", "status": "connected"}],
    }
    down(eng, init)
    down(eng, mcp_request("r1", {"method": "tools/list", "jsonrpc": "2.0", "id": 1}))
    up(eng, mcp_reply("r1", {"tools": TOOLS}, 1))
    ask = {"type": "control_request", "request_id": "req_3", "request": {"subtype": "mcp_status"}}
    (reply,) = frames_out(eng.feed("client", line(ask), 1.0))
    assert reply["response"]["response"] == {
        "mcpServers": [
            {
                "name": "probe",
                "status": "connected",
                "scope": "dynamic",
                "tools": [
                    {"name": "echo", "annotations": {}},
                    {"name": "boom", "annotations": {"readOnly": True}},
                ],
            }
        ]
    }


def test_a_call_of_an_in_process_tool_gets_claudes_tool_use_meta() -> None:
    """Claude 2.1.220: ``[{id, display_name: "Echo", server_display_name: "probe"}]``, the
    title when the tool has one (``Boom Tool``); none on a call of any other tool."""
    eng = engine()
    down(eng, mcp_request("r0", {"method": "initialize", "params": {}, "jsonrpc": "2.0", "id": 0}))
    server_info = {"name": "probe-server", "version": "1.0.0"}
    up(eng, mcp_reply("r0", {"capabilities": {}, "serverInfo": server_info}, 0))
    down(eng, mcp_request("r1", {"method": "tools/list", "jsonrpc": "2.0", "id": 1}))
    up(eng, mcp_reply("r1", {"tools": TOOLS}, 1))
    (echo,) = down(eng, assistant("call_1", "mcp__probe__echo", {"text": "hi"}))
    assert echo["tool_use_meta"] == [
        {"id": "call_1", "display_name": "Echo", "server_display_name": "probe-server"}
    ]
    (boom,) = down(eng, assistant("call_2", "mcp__probe__boom", {"text": "x"}))
    assert boom["tool_use_meta"][0]["display_name"] == "Boom Tool"
    bash = assistant("call_3", "Bash", {"command": "ls"})
    assert down(eng, bash) == [bash]
    other = assistant("call_4", "mcp__stdio__lookup", {})  # not an in-process server
    assert down(eng, other) == [other]


def test_claudes_label_of_a_tool_without_a_title() -> None:
    from compat.controlkit import tool_display_name

    assert tool_display_name("mcp__probe__echo") == "Echo"
    assert tool_display_name("mcp__probe__get_weather_now") == "Get Weather Now"
    assert tool_display_name("mcp__my_server__fooBar") == "FooBar"


def test_an_image_result_is_claudes_image_block() -> None:
    """cbc copies an MCP image as ``{type: image, image: <data>}`` (its mimeType lost);
    Claude writes an Anthropic image block with a base64 source."""
    eng = engine()
    png = "iVBORw0KGgo="
    content = [
        {"type": "image", "data": png, "mimeType": "image/png"},
        {"type": "text", "text": "a pic"},
    ]
    down(eng, assistant("call_6", "mcp__probe__pic", {"text": "y"}))
    down(eng, mcp_request("r6", tool_call("pic", {"text": "y"}, 4)))
    up(eng, mcp_reply("r6", {"content": content}, 4))
    cbc_copy = [{"type": "image", "image": png}, {"type": "text", "text": "a pic"}]
    (out,) = down(eng, cbc_result("call_6", cbc_copy))
    claude = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        {"type": "text", "text": "a pic"},
    ]
    assert out["message"]["content"][0]["content"] == claude
    assert out["tool_use_result"] == claude


def test_a_long_session_names_every_call_right() -> None:
    """Past the first few hundred calls the oldest call not yet sent is still the one."""
    eng = engine()
    for i in range(600):
        down(eng, assistant(f"call_{i}", "mcp__probe__echo", {"text": "same"}))
        (sent,) = down(eng, mcp_request(f"r{i}", tool_call("echo", {"text": "same"}, i)))
        assert sent["request"]["message"]["params"]["_meta"]["claudecode/toolUseId"] == f"call_{i}"
