"""Zed's ACP adapter (``@zed-industries/claude-code-acp``, pinned in ``tests/js/package.json``)
driven as Zed drives it, by an ACP client (``acp_client.py``: JSON-RPC 2.0 over the
adapter's stdio), on the real Claude Code 2.1.220 and through ``claude-on-cbc`` on the real
cbc 2.163.0, with the same expectations (what Claude does, 2026-12-05).

The adapter runs the CLI named by ``CLAUDE_CODE_EXECUTABLE`` through its TypeScript SDK
(0.2.44: a stream-json session with ``canUseTool``, an in-process MCP server ``acp`` whose
``mcp__acp__Read/Write/Edit`` replace the built-in file tools when the client advertises
``fs``, and ``PreToolUse``/``PostToolUse`` hooks); without the variable it silently runs the
SDK's bundled Claude, so each case proves from the model's requests which CLI answered
(``client_support.assert_cli_answered``).

Cases (the stand-in model's rules below):
- a plain answer: ``initialize``, ``session/new``, a prompt answered ``ok``;
- a Bash call that needs permission (``touch``), allowed once: the tool runs, its call
  ends ``completed`` with the command's output, the PostToolUse hook reaches the adapter
  (a ``tool_call_update`` carrying ``_meta.claudeCode.toolResponse``); and, separately, the
  output as Claude gives it (the bare stdout);
- an ``mcp__acp__Write`` the client rejects: the call ends ``failed`` with Claude's
  rejection text, nothing is written, the prompt ends (Claude: with the adapter's internal
  error, the model not asked again) and the session takes the next prompt; and,
  separately, the model's next request carries the rejection;
- ``session/cancel`` while the model is answering: ``stopReason: cancelled``, and the
  session takes the next prompt;
- the adapter restarted: ``session/list`` lists the session (its cwd, its first prompt as
  title) and ``session/load`` replays it, and a prompt after the load reaches the model
  with the earlier turn (the CLI resumed it).

Through the bridge every case passes: the rejected write ends ``failed`` (cbc writes no
tool_result for a call denied with ``interrupt: true``; rule ``interrupted-turn`` writes
Claude's), the Bash output is the bare output (rule ``bash-output``), list/load work with
the drop-in's Claude session store (docs/session-store.md). Two things no rule reaches
are asserted as cbc's: what cbc tells its model of the rejection, and its PostToolUse
input without the output. tests/bridge/data/acp/ holds the
recordings of the rejected write and the allowed Bash call on both CLIs, and what differs
(its README). Marked ``real_backend``; skipped with a reason without node, the adapter, or
the CLI.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from harness import runner
from harness.model import ModelScript, ModelServer, Rule

from .acp_client import PACKAGE, AcpClient, AcpError, PermissionPolicy, open_adapter
from .client_support import (
    DROPIN,
    KINDS,
    Cli,
    Kind,
    assert_cli_answered,
    cleanup,
    cli_or_skip,
    keep_dir,
    model_messages,
    new_root,
    node_or_skip,
    open_log,
    package_or_skip,
    recorder_shim,
)

pytestmark = [pytest.mark.real_backend, pytest.mark.client]

ADAPTER_VERSION = "0.16.2"
BASH = {"command": "touch acp-bash-ran && echo acp-42", "description": "Mark and say 42"}
WRITTEN = "should not be written\n"
RULES = (
    Rule(when="TRIGGER_BASH", tool="Bash", input=BASH, times=1),
    # cbc wraps the prompt in <user_query>...</user_query>: the path stops before a "<"
    Rule(
        regex=r"TRIGGER_WRITE ([^\s<]+)",
        tool="mcp__acp__Write",
        input={"file_path": "$1", "content": WRITTEN},
        times=1,
    ),
    Rule(when="TRIGGER_SLOW", text="too late", delay=60, times=1),
)
#: Claude's tool_result for a call the user rejected (the adapter's canUseTool answers
#: deny with interrupt: true)
REJECTED = "The user doesn't want to proceed with this tool use."
CASE_DEADLINE = 90
#: how long a cancelled prompt may take to answer
CANCEL_DEADLINE = 20


@pytest.fixture(params=KINDS)
def cli(request: pytest.FixtureRequest) -> Cli:
    node_or_skip()
    version = package_or_skip(PACKAGE)
    assert version == ADAPTER_VERSION, version
    return cli_or_skip(request.param)


@attrs.define
class Case:
    """One case's world: the stand-in model, a fresh HOME/cwd, the adapter's
    environment; ``adapter()`` starts an adapter (as often as the case restarts it)."""

    cli: Cli
    node: str
    dirs: dict[str, str]
    server: ModelServer
    env: dict[str, str]
    clients: list[AcpClient] = attrs.field(factory=list)
    stderr: list[Path] = attrs.field(factory=list)
    #: the adapters' stderr and the bridge's log, read when the case ended (its dirs are
    #: removed then)
    logs: dict[str, str] = attrs.field(factory=dict)

    def read_logs(self) -> None:
        for p in [*self.stderr, Path(self.dirs["ROOT"], "bridge.log")]:
            if p.exists():
                self.logs[p.name] = p.read_text(errors="replace")

    @property
    def cwd(self) -> str:
        return self.dirs["CWD"]

    @property
    def record(self) -> Path:
        return Path(self.dirs["ROOT"], "record")

    @asynccontextmanager
    async def adapter(self, permission: PermissionPolicy | None = None) -> AsyncIterator[AcpClient]:
        path = Path(self.dirs["ROOT"], f"adapter-{len(self.stderr)}.err")
        self.stderr.append(path)
        with open_log(path) as err:
            async with open_adapter(
                self.node, env=self.env, cwd=self.cwd, stderr=err, permission=permission
            ) as client:
                self.clients.append(client)
                yield client

    def model_requests(self) -> list[dict[str, Any]]:
        return [e for e in self.server.log if e.get("dialect")]

    def describe(self) -> str:
        parts = [f"CLI: {self.cli.kind} ({self.cli.executable})"]
        for i, c in enumerate(self.clients):
            parts.append(f"-- adapter {i}: " + c.describe())
        model = [
            {k: e.get(k) for k in ("n", "agent", "n_messages", "latest", "decision")}
            for e in self.model_requests()
        ]
        parts.append("model requests: " + json.dumps(model)[-3000:])
        if not self.logs:
            self.read_logs()
        parts += [f"{name}: {text[-2000:]}" for name, text in self.logs.items()]
        return "\n".join(parts)


@asynccontextmanager
async def acp_case(cli: Cli, name: str) -> AsyncIterator[Case]:
    """The stand-in model serving ``RULES``, the adapter's environment pointing it at
    ``cli``; on the way out: which CLI answered is checked, the recordings kept (with
    ``CCBRIDGE_CLIENT_KEEP``), every process of the run killed, the dirs removed."""
    node = node_or_skip()
    dirs, mark = new_root()
    server = ModelServer(ModelScript(rules=RULES), keep_bodies=True)
    clients: list[AcpClient] = []
    case: Case | None = None
    try:
        async with trio.open_nursery() as nursery:
            url: str = await nursery.start(server.serve)
            env = runner.backend_env(cli.kind, url, dirs, mark)
            case = Case(cli, node, dirs, server, env, clients)
            if cli.kind == "claude":
                real = cli.executable
                if keep_dir() is not None:
                    real = str(recorder_shim(real, Path(dirs["ROOT"])))
                env["CLAUDE_CODE_EXECUTABLE"] = real
            else:
                env.update(
                    CLAUDE_CODE_EXECUTABLE=str(DROPIN),
                    CCBRIDGE_BACKEND=shlex.join(cli.argv),
                    CCBRIDGE_RECORD=str(case.record) + "/",
                    CCBRIDGE_LOG=str(Path(dirs["ROOT"], "bridge.log")),
                    CCBRIDGE_LOG_LEVEL="warning",
                )
            try:
                with trio.fail_after(CASE_DEADLINE):
                    yield case
            except trio.TooSlowError:
                pytest.fail(f"the case did not end within {CASE_DEADLINE}s\n{case.describe()}")
            finally:
                nursery.cancel_scope.cancel()
        assert_cli_answered(cli, server, case.record)
    finally:
        if case is not None:
            case.read_logs()
        cleanup(
            dirs,
            mark,
            keep=(
                f"{name}-{cli.kind}",
                server.url,
                cli,
                {
                    "acp": [[t, d, f] for c in clients for t, d, f in c.traffic],
                    "model": server.log,
                    "model-messages": model_messages(server),
                },
            ),
        )


async def outcome(client: AcpClient, session_id: str, text: str) -> dict[str, Any] | AcpError:
    """The prompt's result, or the error the adapter answered it with."""
    try:
        return await client.prompt(session_id, text)
    except AcpError as e:
        return e


def final_status(updates: list[dict[str, Any]]) -> str | None:
    statuses = [u["status"] for u in updates if u.get("status")]
    return statuses[-1] if statuses else None


def update_text(update: dict[str, Any]) -> str:
    """The text a tool call update shows (its content blocks, else its rawOutput)."""
    texts = [
        str(c.get("content", {}).get("text", ""))
        for c in update.get("content") or []
        if isinstance(c, dict) and isinstance(c.get("content"), dict)
    ]
    return "\n".join(texts) if texts else json.dumps(update.get("rawOutput"))


# -- (a) a plain answer -----------------------------------------------------------------
async def test_plain_answer(cli: Cli) -> None:
    async with acp_case(cli, "plain") as case, case.adapter() as client:
        init = await client.initialize()
        assert init["protocolVersion"] == 1, init
        assert init["agentInfo"]["version"] == ADAPTER_VERSION, init
        caps = init["agentCapabilities"]
        assert caps["loadSession"] is True, init
        assert "list" in caps["sessionCapabilities"], init
        sid = await client.new_session(case.cwd)
        result = await outcome(client, sid, "hello")
        assert result == {"stopReason": "end_turn"}, case.describe()
        assert client.text(sid) == "ok", case.describe()
        assert [e["decision"] for e in case.model_requests()] == [["text", "ok"]], case.describe()
        assert client.permission_requests == [], case.describe()


# -- (b) a Bash call allowed once -------------------------------------------------------
@attrs.frozen
class BashRun:
    case: Case
    client: AcpClient
    session_id: str
    result: dict[str, Any] | AcpError
    ran: bool  # the command's file exists

    @property
    def calls(self) -> dict[str, list[dict[str, Any]]]:
        return self.client.tool_calls(self.session_id)


_BASH_RUNS: dict[Kind, BashRun] = {}


async def bash_allowed(cli: Cli) -> BashRun:
    """One session per CLI, shared by the two Bash tests."""
    if cli.kind not in _BASH_RUNS:
        async with acp_case(cli, "bash-allowed") as case, case.adapter(lambda _r: "allow") as c:
            await c.initialize()
            sid = await c.new_session(case.cwd)
            result = await outcome(c, sid, "TRIGGER_BASH please")
            ran = await trio.Path(case.cwd, "acp-bash-ran").exists()
            _BASH_RUNS[cli.kind] = BashRun(case, c, sid, result, ran)
    return _BASH_RUNS[cli.kind]


async def test_bash_permission_allowed(cli: Cli) -> None:
    run = await bash_allowed(cli)
    case, client, sid = run.case, run.client, run.session_id
    assert run.result == {"stopReason": "end_turn"}, case.describe()
    [ask] = client.permission_requests
    [(call_id, updates)] = run.calls.items()
    assert ask["toolCall"]["toolCallId"] == call_id, case.describe()
    assert ask["toolCall"]["rawInput"] == BASH, case.describe()
    assert {o["optionId"]: o["kind"] for o in ask["options"]} == {
        "allow_always": "allow_always",
        "allow": "allow_once",
        "reject": "reject_once",
    }, case.describe()
    assert run.ran, "the allowed command did not run\n" + case.describe()
    assert updates[0]["sessionUpdate"] == "tool_call", case.describe()
    assert updates[0]["status"] == "pending", case.describe()
    assert updates[0]["_meta"]["claudeCode"]["toolName"] == "Bash", case.describe()
    assert final_status(updates) == "completed", case.describe()
    done = [u for u in updates if u.get("status") == "completed"]
    assert "acp-42" in update_text(done[-1]), case.describe()
    # the PostToolUse hook (a hook_callback of the SDK) reached the adapter, for this call
    hooked = [u for u in updates if "toolResponse" in u.get("_meta", {}).get("claudeCode", {})]
    assert len(hooked) == 1, case.describe()
    assert client.text(sid) == "done.", case.describe()
    assert [e["decision"] for e in case.model_requests()] == [
        ["tool_use", "Bash"],
        ["text", "done."],
    ], case.describe()
    assert "acp-42" in case.model_requests()[-1]["latest"], case.describe()


async def test_bash_output_like_claude(cli: Cli) -> None:
    """What Zed shows of the call, as Claude gives it: the tool result is the command's
    stdout (``rawOutput: "acp-42"``), and the PostToolUse hook's ``tool_response`` is
    Bash's output record (``stdout``, ``stderr``, ``interrupted``...)."""
    run = await bash_allowed(cli)
    [(_, updates)] = run.calls.items()
    done = [u for u in updates if u.get("status") == "completed"]
    assert done, run.case.describe()
    assert done[-1].get("rawOutput") == "acp-42", run.case.describe()
    assert update_text(done[-1]) == "acp-42", run.case.describe()
    [hook] = [u for u in updates if "toolResponse" in u.get("_meta", {}).get("claudeCode", {})]
    response = hook["_meta"]["claudeCode"]["toolResponse"]
    if cli.kind == "cbc":
        # cbc's PostToolUse input gives Bash's exit record without the output (its
        # tool_response has no stdout): docs/clients.md, "What differs"
        assert "stdout" not in response, run.case.describe()
        return
    assert response.get("stdout") == "acp-42", run.case.describe()
    assert response.get("stderr") == "", run.case.describe()
    assert response.get("interrupted") is False, run.case.describe()


# -- (c) a write the client rejects -----------------------------------------------------
@attrs.frozen
class RejectRun:
    case: Case
    client: AcpClient
    session_id: str
    target: Path
    result: dict[str, Any] | AcpError
    #: model requests made by the end of the rejected prompt
    n_asked: int
    calls: dict[str, list[dict[str, Any]]]
    #: the next prompt's result
    again: dict[str, Any] | AcpError


_REJECT_RUNS: dict[Kind, RejectRun] = {}


async def write_rejected(cli: Cli) -> RejectRun:
    """One session per CLI, shared by the two rejection tests: the rejected write, then
    the next prompt (``hello``)."""
    if cli.kind not in _REJECT_RUNS:
        async with acp_case(cli, "write-rejected") as case, case.adapter(lambda _r: "reject") as c:
            await c.initialize()
            sid = await c.new_session(case.cwd)
            target = Path(case.cwd, "rejected.txt")
            result = await outcome(c, sid, f"TRIGGER_WRITE {target}")
            n_asked = len(case.model_requests())
            calls = c.tool_calls(sid)
            again = await outcome(c, sid, "hello")
            _REJECT_RUNS[cli.kind] = RejectRun(case, c, sid, target, result, n_asked, calls, again)
    return _REJECT_RUNS[cli.kind]


async def test_write_rejected_ends_failed(cli: Cli) -> None:
    """What the client sees: the call ends ``failed`` (not left pending) with Claude's
    rejection text, nothing is written, the turn ends at the rejection (Claude: the model
    is not asked again, the adapter answers the prompt with its internal error), and the
    next prompt is answered."""
    run = await write_rejected(cli)
    case, c = run.case, run.client
    [ask] = c.permission_requests
    [(call_id, updates)] = run.calls.items()
    assert ask["toolCall"]["toolCallId"] == call_id, case.describe()
    assert ask["toolCall"]["rawInput"]["file_path"] == str(run.target), case.describe()
    assert not run.target.exists(), case.describe()
    assert [m for m, _ in c.fs_requests] == [], case.describe()
    assert final_status(updates) == "failed", case.describe()
    failed = [u for u in updates if u.get("status") == "failed"]
    assert REJECTED in update_text(failed[-1]), case.describe()
    decisions = [e["decision"] for e in case.model_requests()]
    assert decisions[: run.n_asked] == [["tool_use", "mcp__acp__Write"]], case.describe()
    assert isinstance(run.result, AcpError), case.describe()
    assert run.result.code == -32603, case.describe()
    assert run.again == {"stopReason": "end_turn"}, case.describe()


async def test_write_rejection_reaches_the_model(cli: Cli) -> None:
    """What the model is told: the next request carries the rejection (Claude: the
    call's tool_result with the rejection text, then "[Request interrupted by user for
    tool use]", then the next prompt)."""
    run = await write_rejected(cli)
    follow = run.case.model_requests()[-1]["latest"]
    assert "hello" in follow, run.case.describe()
    if cli.kind == "cbc":
        # cbc 2.163.0 keeps the denied call in its history as an empty tool message
        # (``skipRun``): no rule of the bridge's reaches what cbc tells its model
        # (docs/clients.md, "What differs"). Checked, so a cbc that starts telling it fails
        assert REJECTED not in follow, run.case.describe()
        return
    assert REJECTED in follow, run.case.describe()


# -- (d) cancel mid-turn ----------------------------------------------------------------
async def test_cancel_mid_turn(cli: Cli) -> None:
    async with acp_case(cli, "cancel") as case, case.adapter() as c:
        await c.initialize()
        sid = await c.new_session(case.cwd)
        got: list[dict[str, Any] | AcpError] = []
        asked, answered = trio.Event(), trio.Event()

        def on_request(entry: dict[str, Any], _req: object) -> None:
            if "TRIGGER_SLOW" in str(entry.get("latest")):
                asked.set()

        case.server.on_request = on_request

        async def prompt() -> None:
            got.append(await outcome(c, sid, "TRIGGER_SLOW now"))
            answered.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(prompt)
            # the model has the request (it answers in 60 s): the turn is under way
            await asked.wait()
            await trio.sleep(0.3)
            await c.cancel(sid)
            with trio.move_on_after(CANCEL_DEADLINE) as scope:
                await answered.wait()
            if scope.cancelled_caught:
                pytest.fail(f"no answer {CANCEL_DEADLINE}s after session/cancel\n{case.describe()}")
        assert got == [{"stopReason": "cancelled"}], case.describe()
        assert "too late" not in c.text(sid), case.describe()
        again = await outcome(c, sid, "hello")
        assert again == {"stopReason": "end_turn"}, case.describe()
        assert c.text(sid).endswith("ok"), case.describe()


# -- (e) session/list and session/load after a restart ----------------------------------
async def test_list_and_load_after_restart(cli: Cli) -> None:
    first = "remember the word kumquat"
    async with acp_case(cli, "list-load") as case:
        async with case.adapter() as c:
            await c.initialize()
            sid = await c.new_session(case.cwd)
            assert await outcome(c, sid, first) == {"stopReason": "end_turn"}, case.describe()
        async with case.adapter() as c2:
            await c2.initialize()
            listed = await c2.request("session/list", {"cwd": case.cwd})
            sessions = listed.get("sessions")
            assert [(s["sessionId"], s["cwd"], s["title"]) for s in sessions or []] == [
                (sid, case.cwd, first)
            ], f"session/list answered {listed}\n{case.describe()}"
            try:
                loaded = await c2.request(
                    "session/load", {"sessionId": sid, "cwd": case.cwd, "mcpServers": []}
                )
            except AcpError as e:
                pytest.fail(f"session/load: {e}\n{case.describe()}")
            assert "modes" in loaded, case.describe()
            replayed = [
                (u["sessionUpdate"], u["content"].get("text"))
                for u in c2.session_updates(sid)
                if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
            ]
            assert replayed == [
                ("user_message_chunk", first),
                ("agent_message_chunk", "ok"),
            ], case.describe()
            n_before = len(case.server.bodies)
            assert await outcome(c2, sid, "what was the word?") == {"stopReason": "end_turn"}
            # the CLI resumed the session: the model sees the first turn
            bodies = [json.dumps(b) for _, _, b in case.server.bodies[n_before:]]
            assert bodies, case.describe()
            assert all("kumquat" in b for b in bodies), case.describe()
