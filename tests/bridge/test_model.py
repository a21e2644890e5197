"""The stand-in model answers both dialects the way their clients parse them.

Driven over real sockets with a plain HTTP/1.1 client (trio + h11, as the server), and
the replies reassembled the way the SDKs do: Anthropic events by name, text deltas and
``input_json_delta`` joined; OpenAI chunks until ``[DONE]``, tool-call arguments joined.
"""

from __future__ import annotations

from typing import Any

import h11
import orjson
import pytest
import trio

from harness import model
from harness.brain import Brain, Call, ModelScript, Request, Rule, parse_request
from harness.model import ModelServer

TOOLS_A = [{"name": "Bash", "input_schema": {"type": "object"}}]
TOOLS_O = [{"type": "function", "function": {"name": "Bash", "parameters": {}}}]
BASH_INPUT = {
    "command": "sleep 3; echo bg-done",
    "description": "Sleep then echo",
    "run_in_background": True,
}
SCRIPT = ModelScript(
    rules=(
        Rule(when="TRIGGER_BG_BASH", tool="Bash", input=BASH_INPUT),
        Rule(regex=r"STOP:(\S+)", tool="TaskStop", input={"task_id": "$1"}),
        Rule(when="MOCK_SLOW", agent="sub", text="slow answer", delay=0.3),
        Rule(when="ONCE", text="first", times=1),
    )
)


class Resp:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return orjson.loads(self.body)

    def sse(self) -> list[tuple[str | None, str]]:
        """(event name, data) per SSE event; comments are skipped as clients do."""
        out = []
        for block in self.body.decode().split("\n\n"):
            name, data = None, []
            for line in block.split("\n"):
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
            if data:
                out.append((name, "\n".join(data)))
        return out


async def _exchange(
    stream: trio.SocketStream,
    conn: h11.Connection,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> Resp:
    data = orjson.dumps(body) if body is not None else b""
    hdrs = [
        ("host", "127.0.0.1"),
        ("content-length", str(len(data))),
        ("content-type", "application/json"),
        *(headers or {}).items(),
    ]
    await stream.send_all(conn.send(h11.Request(method=method, target=path, headers=hdrs)))
    if data:
        await stream.send_all(conn.send(h11.Data(data=data)))
    await stream.send_all(conn.send(h11.EndOfMessage()))
    status, rh, chunks = 0, {}, bytearray()
    while True:
        ev = conn.next_event()
        if ev is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
        elif isinstance(ev, h11.Response):
            status = ev.status_code
            rh = {k.decode(): v.decode() for k, v in ev.headers}
        elif isinstance(ev, h11.Data):
            chunks += ev.data
        elif isinstance(ev, h11.EndOfMessage):
            return Resp(status, rh, bytes(chunks))
        else:  # pragma: no cover
            raise AssertionError(ev)


async def call(
    url: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> Resp:
    port = int(url.rsplit(":", 1)[1])
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        return await _exchange(stream, h11.Connection(h11.CLIENT), method, path, body, headers)


@pytest.fixture
async def server(nursery: trio.Nursery) -> ModelServer:
    srv = ModelServer(SCRIPT)
    await nursery.start(srv.serve)  # the nursery fixture stops it after the test
    return srv


def anthropic(
    text: str | list[Any],
    *,
    tools: bool = True,
    system: Any = "You are main",
    stream: bool = True,
    extra: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-x",
        "stream": stream,
        "system": system,
        "messages": [{"role": "user", "content": text}, *(extra or [])],
    }
    if tools:
        body["tools"] = TOOLS_A
    return body


def assemble_anthropic(resp: Resp) -> dict[str, Any]:
    events = resp.sse()
    assert [n for n, _ in events if n != "ping"][0] == "message_start"
    assert events[-1][0] == "message_stop"
    blocks: list[dict[str, Any]] = []
    stop = None
    for name, data in events:
        d = orjson.loads(data)
        assert d["type"] == name  # the event name repeats the data's type
        if name == "content_block_start":
            blocks.append(dict(d["content_block"], _json=""))
        elif name == "content_block_delta":
            delta = d["delta"]
            if delta["type"] == "text_delta":
                blocks[d["index"]]["text"] += delta["text"]
            else:
                blocks[d["index"]]["_json"] += delta["partial_json"]
        elif name == "message_delta":
            stop = d["delta"]["stop_reason"]
            assert d["usage"]["output_tokens"] > 0
    for b in blocks:
        if b["type"] == "tool_use":
            b["input"] = orjson.loads(b["_json"])
        del b["_json"]
    return {"content": blocks, "stop_reason": stop}


def assemble_openai(resp: Resp) -> dict[str, Any]:
    events = resp.sse()
    assert events[-1] == (None, "[DONE]")
    text, finish, usage = "", None, None
    calls: dict[int, dict[str, Any]] = {}
    for _, data in events[:-1]:
        chunk = orjson.loads(data)
        assert chunk["object"] == "chat.completion.chunk"
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            text += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                c = calls.setdefault(tc["index"], {"id": None, "name": None, "arguments": ""})
                c["id"] = tc.get("id") or c["id"]
                fn = tc.get("function") or {}
                c["name"] = fn.get("name") or c["name"]
                c["arguments"] += fn.get("arguments") or ""
            finish = choice["finish_reason"] or finish
    return {"text": text, "calls": list(calls.values()), "finish": finish, "usage": usage}


# -- Anthropic ------------------------------------------------------------------------
async def test_head_api_hello(server: ModelServer) -> None:
    r = await call(server.url, "HEAD", "/api/hello")
    assert r.status == 200
    assert r.body == b""
    assert server.log[-1]["path"] == "/api/hello"


async def test_anthropic_text(server: ModelServer) -> None:
    r = await call(server.url, "POST", "/v1/messages?beta=true", anthropic("hello"))
    assert r.status == 200
    assert r.headers["content-type"] == "text/event-stream"
    names = [n for n, _ in r.sse()]
    assert names == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    msg = assemble_anthropic(r)
    assert msg == {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}
    entry = server.log[-1]
    assert entry["dialect"] == "anthropic"
    assert entry["agent"] == "main"
    assert entry["decision"] == ["text", "ok"]


async def test_anthropic_tool_use_with_input_json_delta(server: ModelServer) -> None:
    blocks = [
        {"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
        {"type": "text", "text": "please TRIGGER_BG_BASH"},
    ]
    r = await call(server.url, "POST", "/v1/messages", anthropic(blocks))
    deltas = [orjson.loads(d)["delta"] for n, d in r.sse() if n == "content_block_delta"]
    assert len(deltas) > 1  # the input arrives in pieces
    msg = assemble_anthropic(r)
    assert msg["stop_reason"] == "tool_use"
    (block,) = msg["content"]
    assert block["type"] == "tool_use"
    assert block["name"] == "Bash"
    assert block["input"] == BASH_INPUT
    assert block["id"].startswith("toolu_")


async def test_anthropic_after_tool_result_says_done(server: ModelServer) -> None:
    body = anthropic(
        "please TRIGGER_BG_BASH",
        extra=[
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": BASH_INPUT}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "started"}],
                    }
                ],
            },
        ],
    )
    msg = assemble_anthropic(await call(server.url, "POST", "/v1/messages", body))
    assert msg["content"] == [{"type": "text", "text": "done."}]


async def test_anthropic_mid_turn_system_message_counts(server: ModelServer) -> None:
    # Claude Code 2.1.220 surfaces a user line written mid-turn as a trailing system message
    body = anthropic(
        "first",
        extra=[
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "slow-done"}],
            },
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": "The user sent a new message: TRIGGER_BG_BASH"}
                ],
            },
        ],
    )
    msg = assemble_anthropic(await call(server.url, "POST", "/v1/messages", body))
    assert msg["content"][0]["name"] == "Bash"


async def test_anthropic_title_request_gets_no_tool(server: ModelServer) -> None:
    body = anthropic("please TRIGGER_BG_BASH", tools=False)
    msg = assemble_anthropic(await call(server.url, "POST", "/v1/messages", body))
    assert msg["content"] == [{"type": "text", "text": "Mock title"}]
    assert server.log[-1]["agent"] == "utility"


async def test_anthropic_subagent(server: ModelServer) -> None:
    system = [
        {
            "type": "text",
            "text": "x-anthropic-billing-header: cc_version=2.1.220.101; "
            "cc_entrypoint=sdk-cli; cc_is_subagent=true;",
        }
    ]
    # a main-only trigger in a sub-agent's prompt does not fire
    msg = assemble_anthropic(
        await call(server.url, "POST", "/v1/messages", anthropic("TRIGGER_BG_BASH", system=system))
    )
    assert msg["content"] == [{"type": "text", "text": "ok"}]
    with trio.fail_after(10):
        t0 = trio.current_time()
        msg = assemble_anthropic(
            await call(
                server.url, "POST", "/v1/messages", anthropic("MOCK_SLOW first", system=system)
            )
        )
        waited = trio.current_time() - t0
    assert msg["content"] == [{"type": "text", "text": "slow answer"}]
    assert waited >= 0.3
    assert server.log[-1]["agent"] == "sub"


async def test_slow_reply_sends_pings(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model, "PING_EVERY", 0.1)
    system = "cc_is_subagent=true"
    r = await call(server.url, "POST", "/v1/messages", anthropic("MOCK_SLOW", system=system))
    names = [n for n, _ in r.sse()]
    assert names[0] == "message_start"
    assert names.count("ping") >= 2
    assert assemble_anthropic(r)["content"][0]["text"] == "slow answer"


async def test_client_hanging_up_mid_delay_is_quiet(server: ModelServer) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    conn = h11.Connection(h11.CLIENT)
    data = orjson.dumps(anthropic("MOCK_SLOW", system="cc_is_subagent=true"))
    await stream.send_all(
        conn.send(
            h11.Request(
                method="POST",
                target="/v1/messages",
                headers=[("host", "x"), ("content-length", str(len(data)))],
            )
        )
    )
    await stream.send_all(conn.send(h11.Data(data=data)) + conn.send(h11.EndOfMessage()))
    await stream.receive_some(100)  # the headers came
    await stream.aclose()  # an interrupt aborts the request
    r = await call(server.url, "POST", "/v1/messages", anthropic("hello"))
    assert assemble_anthropic(r)["content"][0]["text"] == "ok"


async def test_keep_alive_two_requests_one_connection(server: ModelServer) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    conn = h11.Connection(h11.CLIENT)
    async with stream:
        r1 = await _exchange(stream, conn, "POST", "/v1/messages", anthropic("hello"))
        conn.start_next_cycle()
        r2 = await _exchange(stream, conn, "HEAD", "/api/hello")
    assert (r1.status, r2.status) == (200, 200)


async def test_regex_groups_and_times(server: ModelServer) -> None:
    msg = assemble_anthropic(
        await call(server.url, "POST", "/v1/messages", anthropic("TRIGGER_TASKSTOP STOP:b12ab"))
    )
    assert msg["content"][0]["input"] == {"task_id": "b12ab"}
    texts = []
    for _ in range(2):
        m = assemble_anthropic(
            await call(server.url, "POST", "/v1/messages", anthropic("ONCE please"))
        )
        texts.append(m["content"][0]["text"])
    assert texts == ["first", "ok"]


async def test_non_streaming_anthropic(server: ModelServer) -> None:
    r = await call(server.url, "POST", "/v1/messages", anthropic("TRIGGER_BG_BASH", stream=False))
    d = r.json()
    assert d["type"] == "message"
    assert d["stop_reason"] == "tool_use"
    assert d["content"][0]["input"] == BASH_INPUT


async def test_other_endpoints(server: ModelServer) -> None:
    r = await call(server.url, "POST", "/v1/messages/count_tokens", anthropic("hi"))
    assert r.status == 200
    assert r.json()["input_tokens"] > 0
    r = await call(server.url, "GET", "/v1/models")
    assert r.json()["data"][0]["type"] == "model"
    r = await call(server.url, "GET", "/nowhere")
    assert r.status == 404
    assert r.json()["error"]["type"] == "not_found_error"
    r = await call(server.url, "POST", "/v1/messages", "not an object")
    assert r.status == 400
    assert [e.get("status") for e in server.log[-2:]] == [404, 400]


# -- OpenAI ---------------------------------------------------------------------------
def openai(*messages: dict[str, Any], tools: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "default-model",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": "You are CodeBuddy"}, *messages],
    }
    if tools:
        body["tools"] = TOOLS_O
    return body


def user_query(text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": f"<user_query>{text}</user_query>"}],
    }


async def test_openai_text(server: ModelServer) -> None:
    r = await call(
        server.url,
        "POST",
        "/chat/completions",
        openai(user_query("hello")),
        {"X-Agent-Type": "main"},
    )
    out = assemble_openai(r)
    assert out["text"] == "ok"
    assert out["finish"] == "stop"
    assert out["calls"] == []
    assert out["usage"] == {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    assert server.log[-1]["dialect"] == "openai"


async def test_openai_tool_calls(server: ModelServer) -> None:
    r = await call(
        server.url, "POST", "/chat/completions", openai(user_query("please TRIGGER_BG_BASH"))
    )
    out = assemble_openai(r)
    assert out["finish"] == "tool_calls"
    (c,) = out["calls"]
    assert c["name"] == "Bash"
    assert c["id"].startswith("call_")
    assert orjson.loads(c["arguments"]) == BASH_INPUT


async def test_openai_after_tool_and_subagents(server: ModelServer) -> None:
    after = openai(
        user_query("please TRIGGER_BG_BASH"),
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Running in background"},
    )
    out = assemble_openai(await call(server.url, "POST", "/chat/completions", after))
    assert out["text"] == "done."
    for kind in ("subagent", "team"):
        out = assemble_openai(
            await call(
                server.url,
                "POST",
                "/chat/completions",
                openai(user_query("MOCK_SLOW second")),
                {"X-Agent-Type": kind},
            )
        )
        assert out["text"] == "slow answer"
        assert server.log[-1]["agent"] == "sub"


async def test_openai_non_streaming(server: ModelServer) -> None:
    body = openai(user_query("TRIGGER_BG_BASH"))
    body["stream"] = False
    d = (await call(server.url, "POST", "/v1/chat/completions", body)).json()
    assert d["choices"][0]["finish_reason"] == "tool_calls"
    call_ = d["choices"][0]["message"]["tool_calls"][0]
    assert orjson.loads(call_["function"]["arguments"]) == BASH_INPUT


# -- pure -----------------------------------------------------------------------------
def test_parse_request_openai_parallel_tool_results() -> None:
    body = openai(
        user_query("x"),
        {"role": "assistant", "tool_calls": []},
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "b", "content": "two STOP:zz"},
    )
    r = parse_request("openai", {"x-agent-type": "main"}, body)
    assert (r.latest, r.after_tool, r.agent, r.tools) == (
        "one\ntwo STOP:zz",
        True,
        "main",
        ("Bash",),
    )
    assert Brain(SCRIPT).decide(r).input == {"task_id": "zz"}


def test_rules_validate() -> None:
    with pytest.raises(ValueError, match="not both"):
        Rule(when="a", regex="b")
    with pytest.raises(ValueError, match="needs `tool`"):
        Rule(input={"a": 1})
    with pytest.raises(ValueError, match="regex"):
        Rule(regex="(")
    r = Request("anthropic", "main", "m", True, 1, ("Bash",), "hello", False)
    assert Brain(ModelScript(default_text="hi")).decide(r).text == "hi"


# -- the capabilities that script real sessions ----------------------------------------
RICH = ModelScript(
    rules=(
        Rule(
            when="PARALLEL",
            calls=(Call("Read", {"file_path": "a.txt"}), Call("Bash", {"command": "echo $1"})),
        ),
        Rule(when="THINK", thinking="Let me think about this carefully.", text="thought"),
        Rule(when="LONG", text="truncated answer", stop="max_tokens"),
        Rule(when="REFUSE", text="I can't help with that.", stop="refusal"),
        Rule(when="BUSY", status=529, times=2),
        Rule(when="LIMIT", status=429, retry_after=2, message="slow down", times=1),
        Rule(when="BROKEN", status=500, times=1),
        Rule(when="CUT", text="a reply that is cut in the middle of it", cut=True),
        Rule(when="STALL", text="a reply that waits in the middle of it", stall=0.3),
        Rule(when="LOOK", image=True, text="I see an image"),
        Rule(when="LOOK", image=False, text="no image here"),
    )
)


@pytest.fixture
async def rich(nursery: trio.Nursery) -> ModelServer:
    srv = ModelServer(RICH)
    await nursery.start(srv.serve)
    return srv


def _thinking_assembled(resp: Resp) -> dict[str, Any]:
    events = [(n, orjson.loads(d)) for n, d in resp.sse() if n == "content_block_delta"]
    thinking = "".join(d["delta"].get("thinking", "") for _, d in events)
    sigs = [d["delta"]["signature"] for _, d in events if d["delta"]["type"] == "signature_delta"]
    return {"thinking": thinking, "signatures": sigs}


async def test_anthropic_parallel_tool_calls(rich: ModelServer) -> None:
    msg = assemble_anthropic(
        await call(rich.url, "POST", "/v1/messages", anthropic("PARALLEL please"))
    )
    assert msg["stop_reason"] == "tool_use"
    assert [(b["name"], b["input"]) for b in msg["content"]] == [
        ("Read", {"file_path": "a.txt"}),
        ("Bash", {"command": "echo $1"}),
    ]
    assert len({b["id"] for b in msg["content"]}) == 2
    assert rich.log[-1]["decision"] == ["tool_use", "Read", "Bash"]


async def test_openai_parallel_tool_calls(rich: ModelServer) -> None:
    out = assemble_openai(
        await call(rich.url, "POST", "/chat/completions", openai(user_query("PARALLEL")))
    )
    assert out["finish"] == "tool_calls"
    assert [(c["name"], orjson.loads(c["arguments"])) for c in out["calls"]] == [
        ("Read", {"file_path": "a.txt"}),
        ("Bash", {"command": "echo $1"}),
    ]
    assert len({c["id"] for c in out["calls"]}) == 2


async def test_anthropic_thinking_block(rich: ModelServer) -> None:
    r = await call(rich.url, "POST", "/v1/messages", anthropic("THINK"))
    starts = [orjson.loads(d)["content_block"] for n, d in r.sse() if n == "content_block_start"]
    assert [b["type"] for b in starts] == ["thinking", "text"]
    got = _thinking_assembled(r)
    assert got["thinking"] == "Let me think about this carefully."
    assert len(got["signatures"]) == 1
    assert got["signatures"][0]
    whole = await call(rich.url, "POST", "/v1/messages", anthropic("THINK", stream=False))
    content = whole.json()["content"]
    assert [b["type"] for b in content] == ["thinking", "text"]
    assert content[0]["signature"] == got["signatures"][0]


async def test_openai_reasoning_content(rich: ModelServer) -> None:
    r = await call(rich.url, "POST", "/chat/completions", openai(user_query("THINK")))
    chunks = [orjson.loads(d) for _, d in r.sse()[:-1]]
    reasoning = "".join(
        c["choices"][0]["delta"].get("reasoning_content", "") for c in chunks if c["choices"]
    )
    assert reasoning == "Let me think about this carefully."
    assert assemble_openai(r)["text"] == "thought"


@pytest.mark.parametrize(
    ("trigger", "anthropic_stop", "openai_finish"),
    [("LONG", "max_tokens", "length"), ("REFUSE", "refusal", "content_filter")],
)
async def test_stop_reasons(
    rich: ModelServer, trigger: str, anthropic_stop: str, openai_finish: str
) -> None:
    msg = assemble_anthropic(await call(rich.url, "POST", "/v1/messages", anthropic(trigger)))
    assert msg["stop_reason"] == anthropic_stop
    out = assemble_openai(
        await call(rich.url, "POST", "/chat/completions", openai(user_query(trigger)))
    )
    assert out["finish"] == openai_finish
    whole = await call(rich.url, "POST", "/v1/messages", anthropic(trigger, stream=False))
    assert whole.json()["stop_reason"] == anthropic_stop


async def test_http_errors_then_the_retry_succeeds(rich: ModelServer) -> None:
    statuses = []
    for _ in range(3):
        r = await call(rich.url, "POST", "/v1/messages", anthropic("BUSY"))
        statuses.append(r.status)
    assert statuses == [529, 529, 200]
    assert rich.log[-2]["decision"] == ["error", 529]
    assert rich.log[-2]["status"] == 529
    r = await call(rich.url, "POST", "/v1/messages", anthropic("LIMIT"))
    assert (r.status, r.headers["retry-after"]) == (429, "2")
    assert r.json() == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }
    r = await call(rich.url, "POST", "/chat/completions", openai(user_query("BROKEN")))
    assert r.status == 500
    assert "retry-after" not in r.headers
    assert r.json()["error"]["type"] == "api_error"
    assert r.json()["error"]["code"] == "500"
    r = await call(rich.url, "POST", "/chat/completions", openai(user_query("BROKEN")))
    assert assemble_openai(r)["text"] == "ok"  # `times = 1`: the retry is answered


async def _raw_until_close(url: str, body: Any, path: str) -> bytes:
    port = int(url.rsplit(":", 1)[1])
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    data = orjson.dumps(body)
    req = (
        f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {len(data)}\r\n\r\n"
    ).encode() + data
    got = bytearray()
    async with stream:
        await stream.send_all(req)
        with trio.fail_after(10):
            while chunk := await stream.receive_some(65536):
                got += chunk
    return bytes(got)


@pytest.mark.parametrize(
    ("path", "body", "end"),
    [
        ("/v1/messages", anthropic("CUT"), b"message_stop"),
        ("/chat/completions", openai(user_query("CUT")), b"[DONE]"),
    ],
)
async def test_stream_cut_mid_reply(
    rich: ModelServer, path: str, body: dict[str, Any], end: bytes
) -> None:
    raw = await _raw_until_close(rich.url, body, path)
    assert b"a reply" in raw  # the first half went out
    assert b"middle of it" not in raw  # the second half never did
    assert end not in raw
    assert not raw.endswith(b"0\r\n\r\n")  # no last chunk: the body is unterminated
    assert "cut" in rich.log[-1]["decision"]
    # the server still serves the next request
    r = await call(rich.url, "POST", "/v1/messages", anthropic("hello"))
    assert assemble_anthropic(r)["content"][0]["text"] == "ok"


async def test_stall_mid_stream_with_pings(
    rich: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model, "PING_EVERY", 0.1)
    t0 = trio.current_time()
    r = await call(rich.url, "POST", "/v1/messages", anthropic("STALL"))
    assert trio.current_time() - t0 >= 0.3
    names = [n for n, _ in r.sse()]
    first_ping = names.index("ping")
    # the pings come after some text went out, and before the rest of it
    assert "content_block_delta" in names[:first_ping]
    assert "content_block_delta" in names[first_ping:]
    assert assemble_anthropic(r)["content"][0]["text"] == "a reply that waits in the middle of it"
    r = await call(rich.url, "POST", "/chat/completions", openai(user_query("STALL")))
    assert b": ping" in r.body
    assert assemble_openai(r)["text"] == "a reply that waits in the middle of it"


PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


async def test_images_in_requests(rich: ModelServer) -> None:
    blocks = [{"type": "image", "source": PNG}, {"type": "text", "text": "LOOK at this"}]
    msg = assemble_anthropic(await call(rich.url, "POST", "/v1/messages", anthropic(blocks)))
    assert msg["content"][0]["text"] == "I see an image"
    assert rich.log[-1]["images"] == 1
    msg = assemble_anthropic(await call(rich.url, "POST", "/v1/messages", anthropic("LOOK")))
    assert msg["content"][0]["text"] == "no image here"
    assert "images" not in rich.log[-1]
    oai = {
        "role": "user",
        "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "text", "text": "LOOK"},
        ],
    }
    out = assemble_openai(await call(rich.url, "POST", "/chat/completions", openai(oai)))
    assert out["text"] == "I see an image"
    # an image a tool returned (Read of a picture) counts too
    tool_img = anthropic(
        "x",
        extra=[
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [
                            {"type": "image", "source": PNG},
                            {"type": "text", "text": "LOOK"},
                        ],
                    }
                ],
            },
        ],
    )
    msg = assemble_anthropic(await call(rich.url, "POST", "/v1/messages", tool_img))
    assert msg["content"][0]["text"] == "I see an image"


def test_new_rule_options_validate() -> None:
    with pytest.raises(ValueError, match="`tool` or `calls`"):
        Rule(tool="Bash", calls=(Call("Read"),))
    with pytest.raises(ValueError, match="`stop` must be one of"):
        Rule(stop="pause_turn")
    with pytest.raises(ValueError, match="HTTP error"):
        Rule(status=200)
    with pytest.raises(ValueError, match="no text"):
        Rule(status=529, text="x")
    with pytest.raises(ValueError, match="go with `status`"):
        Rule(retry_after=1)
    with pytest.raises(ValueError, match="`cut` or `stall`"):
        Rule(cut=True, stall=1)


def test_a_scripted_tool_input_is_fitted_to_the_schema_the_request_offers() -> None:
    """cbc 2.163.0 offers StructuredOutput flat on some runs and with the answer under a
    required ``data`` on others (it then rejects a flat call: 'missing required
    parameter(s): data'); the stand-in answers as a model reading the schema would."""
    from harness.brain import fit_input

    answer = {"answer": "forty-two"}
    wrapped = {"type": "object", "required": ["data"], "properties": {"data": {"type": "object"}}}
    flat = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}
    assert fit_input(answer, wrapped) == {"data": answer}
    assert fit_input(answer, flat) == answer
    assert fit_input(answer, None) == answer
    assert fit_input(
        {"command": "ls"}, {"required": ["command", "description"], "properties": {}}
    ) == {"command": "ls"}
    assert fit_input(answer, {"required": ["n"], "properties": {"n": {"type": "string"}}}) == answer
