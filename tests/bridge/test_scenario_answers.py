"""A scenario's ``[[answers]]`` (``harness.answers``): the client answers the CLI's own
control requests (an SDK's hook callbacks and in-process MCP servers) as they come, and
``ccbridge scenario from-capture`` writes them from what the recorded client answered."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from compat import capture
from harness import from_capture
from harness.answers import Answer, Answers, fill
from harness.client import Client, Recording
from harness.scenario import ScenarioError, loads

MCP_LIST = {
    "subtype": "mcp_message",
    "server_name": "acp",
    "message": {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
}
HOOK = {"subtype": "hook_callback", "callback_id": "hook_0", "input": {"tool_name": "Bash"}}


def test_a_whole_placeholder_keeps_the_requests_type_and_a_part_becomes_text() -> None:
    assert fill({"id": "${message.id}", "s": "id=${message.id}"}, MCP_LIST) == {
        "id": 7,
        "s": "id=7",
    }
    # a path the request does not have stays as written
    assert fill(["${message.nope}", "x ${nope} y"], MCP_LIST) == ["${message.nope}", "x ${nope} y"]


def test_answers_fit_by_subtype_and_fields_in_order_then_the_last_answers_again() -> None:
    first = Answer("mcp_message", {"message.method": "tools/list"}, {"n": 1}, times=1)
    again = Answer("mcp_message", {"message.method": "tools/list"}, {"n": 2})
    other = Answer("mcp_message", {"message.method": "tools/call"}, {"n": 3})
    answers = Answers((other, first, again))
    picks = [answers.pick(MCP_LIST) for _ in range(3)]
    assert [a.response["n"] for a in picks if a is not None] == [1, 2, 2]
    assert answers.pick(HOOK) is None  # nothing fits: left unanswered
    once = Answers((first,))
    assert [once.pick(MCP_LIST) for _ in range(2)] == [first, first]  # used up: still the last


def test_a_reply_is_a_control_response_with_the_requests_id() -> None:
    ok = Answer("mcp_message", response={"mcp_response": {"id": "${message.id}"}})
    assert ok.reply("r1", MCP_LIST) == {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": "r1",
            "response": {"mcp_response": {"id": 7}},
        },
    }
    err = Answer("hook_callback", error="no hook ${callback_id}")
    assert err.reply("r2", HOOK)["response"] == {
        "subtype": "error",
        "request_id": "r2",
        "error": "no hook hook_0",
    }


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('subtype = "can_use_tool"', "permission"),
        ('subtype = "hook_callback"\nerror = "x"\nresponse = {a = 1}', "not both"),
        ('subtype = "hook_callback"\ntimes = 0', "times"),
        ('subtype = "hook_callback"\nanswer = 1', "answer"),
    ],
)
def test_a_bad_answer_is_refused_with_its_reason(table: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        loads(f'name = "x"\n[[answers]]\n{table}\n')


def _out(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


SCENARIO = """
name = "answers"
initialize = false
[[steps]]
after = { type = "result" }

[[answers]]
subtype = "hook_callback"
match = { callback_id = "hook_0" }
response = { continue = true, hookSpecificOutput = { additionalContext = "from the hook" } }

[[answers]]
subtype = "mcp_message"
match = { server_name = "acp", "message.method" = "tools/list" }
response = { mcp_response = { jsonrpc = "2.0", id = "${message.id}", result = { tools = [] } } }
"""


async def test_the_client_answers_the_clis_requests_as_they_come() -> None:
    """A CLI that asks two things and waits for both answers before its result: the
    client answers each with the request's id (and the MCP message's), leaves a request
    no answer fits alone, and its steps go on meanwhile."""
    rec = Recording([], via=False)
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    got: list[dict[str, Any]] = []

    async def cli() -> None:
        for rid, req in (("a", HOOK), ("b", MCP_LIST), ("c", {"subtype": "elicitation"})):
            await out_send.send_all(
                _out({"type": "control_request", "request_id": rid, "request": req})
            )
        buf = b""
        while buf.count(b"\n") < 2:
            buf += await in_recv.receive_some()
        got.extend(json.loads(x) for x in buf.splitlines())
        await out_send.send_all(_out({"type": "result", "subtype": "success"}))
        await out_send.aclose()

    client = Client(loads(SCENARIO), in_send, rec)
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            rec.start()
            n.start_soon(rec.read, out_recv, rec.out_kind, trio.Event())
            n.start_soon(cli)
            n.start_soon(client.answer_requests)
            await client.run_steps()
            n.cancel_scope.cancel()  # (as the runner does once the CLI exits)
    assert client.finished
    assert [g["response"]["request_id"] for g in got] == ["a", "b"]
    assert got[0]["response"]["response"]["hookSpecificOutput"] == {
        "additionalContext": "from the hook"
    }
    assert got[1]["response"]["response"]["mcp_response"]["id"] == 7


def _capture(records: list[tuple[str, dict[str, Any]]]) -> capture.Capture:
    head = capture.header("ccbridge record", argv=["claude", "--input-format", "stream-json"])
    lines = [capture.encode_header(head)]
    for i, (kind, obj) in enumerate(records):
        lines.append(capture.encode_record(0.1 * i, kind, orjson.dumps(obj)))
    return capture.parse(b"".join(lines).splitlines(keepends=True))


def _req(rid: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("stdout", {"type": "control_request", "request_id": rid, "request": body})


def _resp(rid: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    inner = {"subtype": "success", "request_id": rid, "response": body}
    return ("stdin", {"type": "control_response", "response": inner})


def test_from_capture_writes_the_clients_answers_to_the_clis_requests() -> None:
    list_reply = {"mcp_response": {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}}
    cap = _capture(
        [
            ("stdin", {"type": "user", "message": {"role": "user", "content": "hi"}}),
            _req("h1", HOOK),
            _resp("h1", {"continue": True}),
            _req("m1", MCP_LIST),
            _resp("m1", list_reply),
            _req("h2", HOOK),
            _resp("h2", {"continue": False}),
            ("stdout", {"type": "result", "subtype": "success", "result": "ok"}),
        ]
    )
    conv = from_capture.convert(cap, source="rec.jsonl", name="rec")
    scenario = loads(conv.text())
    # (each at the client's recorded pace: its answer came 0.1 s after the request)
    hook = Answer("hook_callback", {"callback_id": "hook_0"}, {"continue": True}, None, 1, 0.1)
    assert scenario.answers == (
        hook,
        Answer(
            "mcp_message",
            {"server_name": "acp", "message.method": "tools/list"},
            {"mcp_response": {"jsonrpc": "2.0", "id": "${message.id}", "result": {"tools": []}}},
            delay=0.1,
        ),
        Answer("hook_callback", {"callback_id": "hook_0"}, {"continue": False}, delay=0.1),
    )
    assert "left out" not in conv.text()
