"""The scenario client speaks its client's dialect (``harness.client``): as a cbc SDK
behind ``claude-to-cbc`` it answers ``can_use_tool`` and interrupts in cbc 2.163.0's shapes,
and the bridge turns them into Claude's. Played over the in-memory harness: the scenario
client, a ``bridge.driver.Session`` running the profile, and a scripted Claude
(``MemoryBackend``) that records what it got."""

from __future__ import annotations

import io
import json
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from bridge.driver import Session, SessionConfig
from bridge.log import Logger
from compat import reverse_state
from compat.argv_cbc import claude_session_id, translate_to_claude
from compat.engine import Engine
from compat.profiles import build, parse_rule_settings
from harness import runner
from harness.client import CBC_INITIALIZE, CBC_INTERRUPT_REASON, Client, Recording
from harness.scenario import Scenario, loads

from ..compat.helpers import det_env
from .memory_backend import MemoryBackend

CLIENT_SESSION = "my-daemon-session"  # not a UUID: Claude runs under uuid5 of it
CLAUDE_SESSION = claude_session_id(CLIENT_SESSION)
ARGV = ["--input-format=stream-json", "--output-format=stream-json", "--verbose"]

SCENARIO = """
name = "dialect"
[[steps]]
user = "list the files"
[[steps]]
after = {subtype = "can_use_tool"}
permission = %s
[[steps]]
after = {type = "user", contains = "tool_result"}
control = {subtype = "interrupt"}
[[steps]]
after = {type = "result"}
"""


def out(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


class Claude:
    """Claude Code 2.1.220 as far as this exchange goes: the initialize reply, a turn that
    asks to run Bash, the tool result, then an interrupt that aborts the turn."""

    def __init__(self) -> None:
        self.got: list[dict[str, Any]] = []

    async def __call__(self, b: MemoryBackend) -> int:
        sid = CLAUDE_SESSION
        async for raw in b.lines():
            f = json.loads(raw)
            self.got.append(f)
            req = f.get("request") or {}
            if f["type"] == "control_request" and req.get("subtype") == "initialize":
                reply = {
                    "commands": [],
                    "models": [{"value": "default", "resolvedModel": "claude-x"}],
                    "account": {"apiKeySource": "ANTHROPIC_API_KEY"},
                }
                await b.write(out(_ok(f["request_id"], reply)))
            elif f["type"] == "user":
                await b.write(out({"type": "system", "subtype": "init", "session_id": sid}))
                use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"c": "ls"}}
                await b.write(
                    out(
                        {
                            "type": "assistant",
                            "message": {"role": "assistant", "content": [use]},
                            "session_id": sid,
                        }
                    )
                )
                ask = {
                    "subtype": "can_use_tool",
                    "tool_name": "Bash",
                    "input": {"c": "ls"},
                    "tool_use_id": "toolu_1",
                }
                await b.write(
                    out({"type": "control_request", "request_id": "perm-1", "request": ask})
                )
            elif f["type"] == "control_response":
                res = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"}
                await b.write(
                    out(
                        {
                            "type": "user",
                            "message": {"role": "user", "content": [res]},
                            "session_id": sid,
                        }
                    )
                )
            elif f["type"] == "control_request" and req.get("subtype") == "interrupt":
                await b.write(out(_ok(f["request_id"], {"still_queued": []})))
                await b.write(
                    out(
                        {
                            "type": "result",
                            "subtype": "error_during_execution",
                            "is_error": True,
                            "errors": ["[ede_diagnostic] aborted"],
                            "terminal_reason": "aborted_tools",
                            "session_id": sid,
                        }
                    )
                )
        return 0

    def of(self, kind: str, subtype: str | None = None) -> list[dict[str, Any]]:
        return [
            f
            for f in self.got
            if f["type"] == kind
            and (subtype is None or (f.get("request") or {}).get("subtype") == subtype)
        ]


def _ok(rid: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": rid, "response": body},
    }


def _engine() -> Engine:
    up, down = build("claude-to-cbc", parse_rule_settings([]))
    eng = Engine(up, down, det_env(), strict=True)
    reverse_state.launch(eng.state, translate_to_claude([*ARGV, "--session-id", CLIENT_SESSION]))
    return eng


async def _play(scenario: Scenario, dialect: str) -> tuple[Claude, Recording]:
    claude = Claude()
    rec = Recording([], via=True)
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    with trio.fail_after(20):
        async with trio.open_nursery() as n:
            backend = MemoryBackend(n, claude)
            session = Session(
                SessionConfig(["claude"], eof_grace=5.0),
                _engine(),
                in_recv,
                out_send,
                Logger(io.StringIO()),
                None,
                stderr=lambda _: None,
                backend=backend,
            )
            done = trio.Event()
            n.start_soon(rec.read, out_recv, rec.out_kind, done)
            rec.start()
            client = Client(scenario, in_send, rec, dialect)
            n.start_soon(client.run_steps)
            await session.run()
            await out_send.aclose()
            await done.wait()
    assert client.finished
    return claude, rec


def _sent(rec: Recording) -> list[dict[str, Any]]:
    return [json.loads(d) for _, k, d, _ in rec.records if k == rec.in_kind]


async def test_a_cbc_client_allows_in_cbcs_shape_and_claude_gets_its_own() -> None:
    claude, rec = await _play(loads(SCENARIO % '{behavior = "allow"}'), "cbc")
    sent = _sent(rec)
    assert sent[0]["request"] == CBC_INITIALIZE
    [answer] = [f["response"]["response"] for f in sent if f["type"] == "control_response"]
    assert answer == {"allowed": True, "updatedInput": {"c": "ls"}, "tool_use_id": "toolu_1"}
    [got] = claude.of("control_response")
    assert got["response"]["response"]["behavior"] == "allow"
    assert got["response"]["response"]["updatedInput"] == {"c": "ls"}
    # the user line: no uuid, the session id read so far
    [line] = [f for f in sent if f["type"] == "user"]
    assert "uuid" not in line
    [user] = claude.of("user")
    assert user["session_id"] == ""  # none read yet, as the SDKs send it
    # the interrupt in the JS SDK's shape, with the client's session id ...
    [intr] = [f for f in sent if f["type"] == "control_request" and f["request_id"] != "init"]
    assert intr["request"] == {
        "subtype": "interrupt",
        "session_id": CLIENT_SESSION,
        "reason": CBC_INTERRUPT_REASON,
    }
    # ... reaches Claude with Claude's session id, and the aborted turn ends as cbc's
    [got_intr] = claude.of("control_request", "interrupt")
    assert got_intr["request"]["session_id"] == CLAUDE_SESSION
    [result] = [f for f in rec.frames if f.get("type") == "result"]
    assert result["subtype"] == "success"
    assert result["is_error"] is False
    assert "errors" not in result
    assert result["session_id"] == CLIENT_SESSION


async def test_a_cbc_client_denies_with_reason_and_claude_gets_the_message() -> None:
    scenario = loads(SCENARIO % '{behavior = "deny", message = "not today"}')
    claude, rec = await _play(scenario, "cbc")
    [answer] = [f["response"]["response"] for f in _sent(rec) if f["type"] == "control_response"]
    assert answer == {
        "allowed": False,
        "reason": "not today",
        "interrupt": False,
        "tool_use_id": "toolu_1",
    }
    [got] = claude.of("control_response")
    body = got["response"]["response"]
    assert body["behavior"] == "deny"
    assert body["message"] == "not today"


async def test_a_claude_client_still_writes_claudes_shapes() -> None:
    """The forward dialect is unchanged: with the same profile in between (a Claude client
    on a cbc-speaking bridge is the wrong pairing) Claude would reject a cbc answer, so
    what the client wrote is checked, not what the bridge made of it."""
    _, rec = await _play(loads(SCENARIO % '{behavior = "allow"}'), "claude")
    sent = _sent(rec)
    # (no hasPrompt: the Claude Agent SDKs never send it)
    assert sent[0]["request"] == {"subtype": "initialize", "hooks": {}, "capabilities": {}}
    [answer] = [f["response"]["response"] for f in sent if f["type"] == "control_response"]
    assert answer == {"behavior": "allow", "updatedInput": {"c": "ls"}}
    [line] = [f for f in sent if f["type"] == "user"]
    assert line["session_id"] == ""
    assert line["uuid"]
    [intr] = [f for f in sent if f["type"] == "control_request" and f["request_id"] != "init"]
    assert intr["request"] == {"subtype": "interrupt"}


@pytest.mark.parametrize(
    ("kind", "via", "dialect"),
    [
        ("claude", None, "claude"),
        ("cbc", None, "cbc"),
        ("claude", "claude-to-cbc", "cbc"),
        ("cbc", "cbc-to-claude", "claude"),
        ("other", None, "claude"),
        ("cbc", "identity", "cbc"),
    ],
)
def test_the_dialect_is_the_served_clients(kind: str, via: str | None, dialect: str) -> None:
    assert runner.client_dialect(kind, via) == dialect


def test_an_unknown_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="dialect"):
        Client(
            loads('name = "x"'),
            trio.testing.memory_stream_one_way_pair()[0],
            Recording([], False),
            "js",
        )
