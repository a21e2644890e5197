"""Profile ``claude-to-cbc`` (REVERSE.md): Claude Code 2.1.220's real frames
(``captures/reference/claude-2.1.220``) as the backend side, what cbc 2.163.0's SDKs read
(``captures/reference/cbc-2.163.0``) as the client side; one test (or more) per rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat import controlkit as ck
from compat import reverse_state
from compat.argv_cbc import SESSION_NAMESPACE, claude_session_id, translate_to_claude
from compat.engine import Engine
from compat.env_cbc import translate_env_to_claude
from compat.profiles import ALWAYS_ON, PROFILES, RuleError, build, parse_rule_settings
from compat.stage import REGISTRY

from .helpers import det_env, frames_out, line, written

REF = Path(__file__).resolve().parents[2] / "captures/reference"
CLAUDE = REF / "claude-2.1.220"
CBC = REF / "cbc-2.163.0"
#: what codebuddy-agent-sdk 0.3.274 launches (transport/subprocess.py, read in its source)
PY_SDK_ARGV = [
    "--input-format=stream-json",
    "--output-format=stream-json",
    "--verbose",
    "--setting-sources",
    "none",
]


def transcript(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(stdin|stdout, frame) of a reference transcript, in order."""
    out = []
    for raw in path.read_text().splitlines():
        r = json.loads(raw)
        kind = r.get("kind") or r.get("stream")
        text = r.get("text") or r.get("line") or ""
        if kind in ("stdin", "stdout") and text.startswith("{"):
            out.append((kind, json.loads(text)))
    return out


def engine(rules: list[str] | None = None, argv: list[str] | None = None) -> Engine:
    up, down = build("claude-to-cbc", parse_rule_settings(rules or []))
    eng = Engine(up, down, det_env(), strict=True)
    if argv is not None:
        reverse_state.launch(eng.state, translate_to_claude(argv))
    return eng


class Run:
    def __init__(self, eng: Engine) -> None:
        self.eng = eng
        self.client: list[dict[str, Any]] = []  # what the cbc client got
        self.backend: list[dict[str, Any]] = []  # what Claude got
        self.t = 0.0

    def client_says(self, obj: dict[str, Any]) -> None:
        self._take(self.eng.feed("client", line(obj), self._tick()))

    def claude_says(self, obj: dict[str, Any]) -> None:
        self._take(self.eng.feed("backend", line(obj), self._tick()))

    def _tick(self) -> float:
        self.t += 0.01
        return self.t

    def _take(self, cmds: list[Any]) -> None:
        self.client += frames_out(cmds, "client")
        self.backend += frames_out(cmds, "backend")

    def replay(self, path: Path) -> Run:
        for kind, obj in transcript(path):
            (self.client_says if kind == "stdin" else self.claude_says)(obj)
        return self


def replay(name: str, **kw: Any) -> Run:
    return Run(engine(**kw)).replay(CLAUDE / f"{name}.transcript.jsonl")


# -- rev-argv / rev-env -------------------------------------------------------------------


def test_setting_sources_none_becomes_the_empty_list_and_prompts_go_over_stdio() -> None:
    tr = translate_to_claude(PY_SDK_ARGV)
    assert tr.argv == [
        "--input-format=stream-json",
        "--output-format=stream-json",
        "--verbose",
        "--setting-sources",
        "",
        "--permission-prompt-tool",
        "stdio",
    ]
    assert translate_to_claude(["--setting-sources=user,none"]).argv[:2] == [
        "--setting-sources",
        "user",
    ]
    given = translate_to_claude(["--permission-prompt-tool", "mcp__x__y"]).argv
    assert given == ["--permission-prompt-tool", "mcp__x__y"]


def test_a_session_id_that_is_not_a_uuid_is_mapped_to_a_stable_uuid() -> None:
    tr = translate_to_claude(["--session-id", "my-bot:42"])
    mapped = claude_session_id("my-bot:42")
    assert tr.argv[:2] == ["--session-id", mapped]
    assert tr.session_map == ("my-bot:42", mapped)
    import uuid

    assert mapped == str(uuid.uuid5(SESSION_NAMESPACE, "my-bot:42"))
    # resuming it later finds the same Claude session
    assert translate_to_claude(["--resume", "my-bot:42"]).argv[:2] == ["--resume", mapped]
    real = "6d5bf93c-ad89-4c9d-b3a8-9572090303cd"
    assert translate_to_claude(["--session-id", real]).session_map is None


def test_js_resume_session_drops_the_session_id_and_the_request_timeout() -> None:
    sid = "6d5bf93c-ad89-4c9d-b3a8-9572090303cd"
    tr = translate_to_claude(
        ["--session-id", sid, "--resume", sid, "--request-timeout-ms", "60000", "--model", "sonnet"]
    )
    assert tr.argv == ["--resume", sid, "--model", "sonnet", "--permission-prompt-tool", "stdio"]
    assert len(tr.warnings) == 2
    assert tr.model == "sonnet"
    assert tr.resuming
    forked = translate_to_claude(["--session-id", sid, "--resume", sid, "--fork-session"])
    assert forked.argv.count("--session-id") == 1


def test_bypass_as_root_gets_is_sandbox() -> None:
    argv = ["--permission-mode", "bypassPermissions"]
    assert translate_to_claude(argv, is_root=True).env == {"IS_SANDBOX": "1"}
    assert translate_to_claude(argv, is_root=False).env == {}
    assert translate_to_claude(["--dangerously-skip-permissions"], is_root=True).env


def test_codebuddy_variables_reach_their_claude_twins() -> None:
    env = translate_env_to_claude(
        {
            "CODEBUDDY_CODE_DISABLE_BACKGROUND_TASKS": "1",
            "CODEBUDDY_CODE_ENTRYPOINT": "sdk-py",
            "CODEBUDDY_DISABLE_AUTO_MEMORY": "1",
            "CODEBUDDY_IS_SANDBOX": "1",
            "CLAUDE_CODE_ENTRYPOINT": "mine",
        }
    )
    assert env["CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"] == "1"
    assert env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    assert env["IS_SANDBOX"] == "1"
    assert env["CLAUDE_CODE_ENTRYPOINT"] == "mine"  # the user's own wins


# -- the control protocol -----------------------------------------------------------------

ALLOW = "mockapi_permission-prompt-stdio_can-use-tool_allow"


def _permission_run() -> tuple[Run, str, dict[str, Any]]:
    run = Run(engine())
    [req] = [
        o
        for k, o in transcript(CLAUDE / f"{ALLOW}.transcript.jsonl")
        if k == "stdout" and o.get("type") == "control_request"
    ]
    run.claude_says(req)
    assert run.client == [req]  # Claude's extra fields are a superset: passed as they are
    return run, req["request_id"], req["request"]["input"]


def test_a_cbc_allow_becomes_claudes_allow_with_the_input() -> None:
    run, rid, inp = _permission_run()
    run.client_says(
        ck.success(rid, {"allowed": True, "updatedInput": None, "tool_use_id": "toolu_x"})
    )
    assert run.backend == [ck.success(rid, {"behavior": "allow", "updatedInput": inp})]


def test_an_allow_with_permission_updates_keeps_them() -> None:
    run, rid, _ = _permission_run()
    rules = [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash"}],
            "behavior": "allow",
            "destination": "session",
        }
    ]
    run.client_says(
        ck.success(
            rid, {"allowed": True, "updatedInput": {"command": "ls"}, "updatedPermissions": rules}
        )
    )
    assert run.backend == [
        ck.success(
            rid,
            {"behavior": "allow", "updatedInput": {"command": "ls"}, "updatedPermissions": rules},
        )
    ]


def test_a_cbc_deny_becomes_claudes_deny_with_the_reason() -> None:
    run, rid, _ = _permission_run()
    run.client_says(
        ck.success(
            rid,
            {"allowed": False, "reason": "not today", "interrupt": True, "tool_use_id": "toolu_x"},
        )
    )
    assert run.backend == [
        ck.success(rid, {"behavior": "deny", "message": "not today", "interrupt": True})
    ]


def test_claudes_control_cancel_request_is_not_passed() -> None:
    run = replay("mockapi_permission-prompt-stdio_interrupt_cli-sends-control-cancel-request")
    assert not [f for f in run.client if f.get("type") == "control_cancel_request"]
    assert run.eng.statistics()["rules"]["rev-cancel-request"]["dropped"] >= 1


def _initialize(run: Run, rid: str = "init") -> dict[str, Any]:
    run.client_says(ck.request(rid, {"subtype": "initialize", "hooks": {}, "hasPrompt": True}))
    [(_, reply)] = [
        (k, o)
        for k, o in transcript(CLAUDE / "mockapi_simple-success_then-eof-exit0.transcript.jsonl")
        if k == "stdout" and o.get("type") == "control_response"
    ][:1]
    run.claude_says(reply)
    return run.client[-1]["response"]["response"]  # type: ignore[no-any-return]


def test_initialize_reply_in_cbcs_shape() -> None:
    body = _initialize(Run(engine()))
    cbc = {
        k
        for _, o in transcript(CBC / "mockoai_bg-bash.transcript.jsonl")
        if o.get("type") == "control_response"
        for k in o["response"]["response"]
    }
    assert {"currentModelId", "models", "account", "commands"} <= cbc
    assert body["currentModelId"] == "claude-opus-5[1m]"  # the default's resolved model
    assert body["models"][0]["id"] == "default"
    assert body["models"][0]["name"]
    account = body["account"]
    assert account["userId"]
    assert account["token"] == "ccbridge-claude-credential"
    assert account["apiKeySource"] == "ANTHROPIC_API_KEY"  # Claude's own fields stay
    with_model = _initialize(Run(engine(argv=["--model", "sonnet"])))
    assert with_model["currentModelId"] == "sonnet"


def test_no_credential_no_account_a_cbc_sdk_reads_as_logged_in() -> None:
    run = Run(engine())
    run.client_says(ck.request("i", {"subtype": "initialize"}))
    run.claude_says(
        ck.success("i", {"models": [], "account": {"tokenSource": "none", "apiKeySource": "none"}})
    )
    assert "userId" not in run.client[-1]["response"]["response"]["account"]
    run.client_says(ck.request("a", {"subtype": "authenticate", "methodId": None}))
    subtypes = [f["request"]["subtype"] for f in run.client if f["type"] == "control_request"]
    assert subtypes == ["auth_url_callback", "auth_result_callback"]
    result = run.client[-2 if run.client[-1]["type"] == "control_response" else -1]
    assert any(f.get("request", {}).get("success") is False for f in run.client)
    assert run.backend[-1]["request"]["subtype"] == "initialize"  # nothing reached Claude
    # the SDK's answers to the bridge's callbacks stay with the bridge
    for f in run.client:
        if f["type"] == "control_request":
            run.client_says(ck.success(f["request_id"], {"received": True}))
    assert len(run.backend) == 1
    assert result


def test_authenticate_when_claude_has_a_credential_succeeds_at_once() -> None:
    run = Run(engine())
    _initialize(run)
    run.client_says(ck.request("a", {"subtype": "authenticate"}))
    [done] = [
        f for f in run.client if f.get("request", {}).get("subtype") == "auth_result_callback"
    ]
    assert done["request"]["success"] is True
    assert done["request"]["userinfo"]["userId"]
    assert run.client[-1] == ck.success("a", {})


@pytest.mark.parametrize("sub", ["logout", "get_auth_methods"])
def test_logout_and_auth_methods_are_errors_that_say_why(sub: str) -> None:
    run = Run(engine())
    run.client_says(ck.request("x", {"subtype": sub}))
    assert run.backend == []
    assert run.client[0]["response"]["subtype"] == "error"
    assert "Claude Code" in run.client[0]["response"]["error"]


def test_js_session_controls_answered_locally() -> None:
    run = Run(engine())
    _initialize(run)
    run.client = []
    run.client_says(ck.request("m", {"subtype": "get_available_modes"}))
    modes = run.client[-1]["response"]["response"]["availableModes"]
    assert {m["id"] for m in modes} >= {"default", "acceptEdits", "plan", "bypassPermissions"}
    run.client_says(ck.request("ms", {"subtype": "get_available_models"}))
    models = run.client[-1]["response"]["response"]
    assert models["availableModels"][0] == {
        "modelId": "default",
        "name": "Default (recommended)",
        "description": models["rawModels"][0]["description"],
    }
    run.client_says(ck.request("s", {"subtype": "subscribe", "channel": "commands"}))
    reply, note = run.client[-2:]
    assert reply == ck.success("s", {"subscribed": True, "channel": "commands"})
    assert note["type"] == "control_notification"
    assert note["channel"] == "commands"
    assert note["data"]["commands"][0]["name"] == "/deep-research"
    assert len(run.backend) == 1  # only the initialize went to Claude


def test_set_config_model_is_claudes_set_model_and_other_keys_an_error() -> None:
    run = Run(engine())
    run.client_says(ck.request("c", {"subtype": "set_config", "model": "sonnet"}))
    assert run.backend == [ck.request("c", {"subtype": "set_model", "model": "sonnet"})]
    run.claude_says(ck.success("c", {}))
    assert run.client[-1]["response"]["response"]["model"] == "sonnet"
    run.client_says(
        ck.request("j", {"subtype": "set_config", "session_id": "s", "config": {"model": "haiku"}})
    )  # the JS SDK's shape
    assert run.backend[-1] == ck.request("j", {"subtype": "set_model", "model": "haiku"})
    run.client_says(ck.request("d", {"subtype": "set_config", "config": {"theme": "dark"}}))
    assert run.client[-1]["response"]["subtype"] == "error"
    assert "theme" in run.client[-1]["response"]["error"]


def test_mcp_status_gets_the_key_the_sdks_read() -> None:
    run = Run(engine())
    run.client_says(ck.request("q", {"subtype": "mcp_status"}))
    servers = [{"name": "probe", "status": "connected", "scope": "dynamic", "tools": []}]
    run.claude_says(ck.success("q", {"mcpServers": servers}))
    assert run.client[-1]["response"]["response"]["mcp_servers"] == servers
    # another request's reply with that key is not touched
    run.claude_says(ck.success("other", {"mcpServers": servers}))
    assert "mcp_servers" not in run.client[-1]["response"]["response"]


def test_set_model_and_permission_mode_replies_carry_cbcs_bodies() -> None:
    run = Run(engine(argv=["--session-id", "bot-1"]))
    run.claude_says(
        {
            "type": "system",
            "subtype": "init",
            "session_id": claude_session_id("bot-1"),
            "model": "claude-opus-5",
        }
    )
    run.client_says(
        ck.request("p", {"subtype": "set_permission_mode", "mode": "plan", "session_id": "bot-1"})
    )
    assert run.backend[-1]["request"]["session_id"] == claude_session_id("bot-1")
    run.claude_says(ck.success("p", {"mode": "plan"}))
    assert run.client[-1]["response"]["response"] == {
        "mode": "plan",
        "session_id": "bot-1",
        "previous_mode": "default",
    }


# -- the stream ---------------------------------------------------------------------------


def test_an_interrupted_turn_ends_as_cbc_ends_it_and_the_receipt_is_cbcs() -> None:
    run = replay("mockapi_interrupt-during-foreground-bash_aborted-tools")
    first, second = [f for f in run.client if "is_error" in f and "result" in f]
    assert first["subtype"] == "success"
    assert first["is_error"] is False
    assert first["result"] == ""
    assert "errors" not in first
    assert first["terminal_reason"].startswith("aborted")
    assert second["result"] == "done."  # the next turn is untouched
    said = [
        f["message"]["content"][0].get("text")
        for f in run.client
        if f.get("type") in ("user", "assistant")
    ]
    assert "Interrupted by user" in said  # cbc's words, as the assistant
    assert "[Request interrupted by user for tool use]" not in said
    [receipt] = [
        f
        for f in run.client
        if f.get("type") == "control_response" and f["response"]["request_id"] == "stop-1"
    ]
    body = receipt["response"]["response"]
    assert body["interrupted"] is True
    assert body["reason"] == "SDK request"
    assert body["session_id"] == "6d5bf93c-ad89-4c9d-b3a8-9572090303cd"
    assert body["still_queued"]  # Claude's own field stays


def test_an_error_result_without_an_interrupt_stays_an_error() -> None:
    run = Run(engine())
    err = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "errors": ["boom"],
        "result": "",
    }
    run.claude_says(err)
    assert run.client == [err]


def test_background_agent_frames() -> None:
    run = replay("mockapi_background-agent_local-agent-frames")
    types = [(f.get("type"), f.get("subtype")) for f in run.client]
    assert ("system", "background_tasks_changed") not in types
    [started] = [f for f in run.client if f.get("subtype") == "task_started"]
    assert started["task_type"] == "Agent"
    texts = [
        (f.get("parent_tool_use_id"), f["message"]["content"][0].get("text"))
        for f in run.client
        if f.get("type") == "assistant" and f["message"]["content"][0]["type"] == "text"
    ]
    assert texts == [(None, "done."), (None, "ok")]  # the agent's own "ok" is not shown
    [note] = [f for f in run.client if f.get("subtype") == "task_notification"]
    assert note["summary"] == 'Background agent "Mock subagent" completed'
    stats = run.eng.statistics()["rules"]
    assert stats["rev-background-agent"]["dropped"] == 1
    assert stats["rev-tasks-snapshot"]["dropped"] == 2


def test_a_foreground_agents_frames_pass() -> None:
    run = Run(engine())
    run.claude_says(
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_fg",
                        "name": "Agent",
                        "input": {"description": "d", "prompt": "p"},
                    }
                ]
            },
            "parent_tool_use_id": None,
        }
    )
    child = {
        "type": "assistant",
        "message": {"content": [{"type": "text", "text": "hi"}]},
        "parent_tool_use_id": "toolu_fg",
    }
    run.claude_says(child)
    assert run.client[-1] == child


def test_background_bash_task_type_and_status() -> None:
    run = replay("mockapi_background-bash_task-started-updated-notification")
    assert {f["task_type"] for f in run.client if "task_type" in f} == {"Bash"}
    updated = [f for f in run.client if f.get("subtype") == "task_updated"]
    assert updated
    assert all(f["status"] == f["patch"]["status"] for f in updated)  # cbc's top-level copy


@pytest.mark.parametrize(
    ("name", "command", "summary"),
    [
        (
            "mockapi_background-bash_task-started-updated-notification",
            "sleep 3; echo bg-done",
            'Background command "sleep 3; echo bg-done" completed',
        ),
        (
            "mockapi_stop-task-control-request_bg-bash-killed_unknown-id-also-success",
            "sleep 20; echo slow-bg-done",
            'Background command "sleep 20; echo slow-bg-done" was stopped',
        ),
    ],
)
def test_a_background_shell_is_named_by_its_command_as_cbc_names_it(
    name: str, command: str, summary: str
) -> None:
    """cbc's words (captures/reference/cbc-2.163.0 mockoai_bg-bash, stop-task): the task's
    description is the command, the summary names it; Claude uses the call's description
    and adds the exit code."""
    run = replay(name)
    [started] = [f for f in run.client if f.get("subtype") == "task_started"]
    [note] = [f for f in run.client if f.get("subtype") == "task_notification"]
    assert started["description"] == command
    assert note["summary"] == summary
    off = replay(name, rules=["rev-task-words=off"])
    [started] = [f for f in off.client if f.get("subtype") == "task_started"]
    assert started["description"] != command


def test_a_stopped_workflow_is_summarised_as_cbc_does() -> None:
    """cbc: `Dynamic workflow "<name>" was stopped` (twins-reverse interrupt-idle-workflow);
    Claude writes the bare description."""
    name = "mockapi_idle-interrupt-kills-bg-workflow-keeps-bg-bash"
    summaries = [
        f["summary"] for f in replay(name).client if f.get("subtype") == "task_notification"
    ]
    assert 'Dynamic workflow "Slow mock workflow" was stopped' in summaries
    off = replay(name, rules=["rev-task-words=off"]).client
    assert "Slow mock workflow" in [
        f["summary"] for f in off if f.get("subtype") == "task_notification"
    ]


def test_a_tool_result_says_is_error_false_as_cbcs_do() -> None:
    """cbc writes ``is_error`` on every tool result (twins-reverse *.cbc.jsonl), Claude only
    when true."""
    ok = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"}
    failed = {**ok, "tool_use_id": "toolu_2", "is_error": True}
    frame = {
        "type": "user",
        "message": {"role": "user", "content": [ok, failed, {"type": "text", "text": "x"}]},
        "session_id": "s",
    }
    run = Run(engine())
    run.claude_says(frame)
    blocks = run.client[-1]["message"]["content"]
    assert [b.get("is_error") for b in blocks] == [False, True, None]
    off = Run(engine(["rev-tool-result=off"]))
    off.claude_says(frame)
    assert off.client[-1] == frame


def test_replayed_local_command_output_is_dropped_unless_asked_for() -> None:
    frame = {
        "type": "user",
        "message": {
            "role": "user",
            "content": (
                "<local-command-stdout>Set model to claude-sonnet-4-5</local-command-stdout>"
            ),
        },
        "session_id": "s",
        "isReplay": True,
    }
    run = Run(engine())
    run.claude_says(frame)
    assert run.client == []
    kept = Run(engine(argv=["--replay-user-messages"]))
    kept.claude_says(frame)
    assert kept.client == [frame]


def test_session_ids_are_the_clients_own_in_every_frame() -> None:
    run = Run(engine(argv=["--session-id", "bot-1"]))
    uid = claude_session_id("bot-1")
    frame = {
        "type": "system",
        "subtype": "init",
        "session_id": uid,
        "cwd": "/w",
        "transcript_path": f"/h/.claude/projects/-w/{uid}.jsonl",
    }
    run.claude_says(frame)
    assert run.client == [{**frame, "session_id": "bot-1"}]  # the path is a real file
    run.client_says(
        {"type": "user", "message": {"role": "user", "content": "hi"}, "session_id": "bot-1"}
    )
    assert run.backend[-1]["session_id"] == uid


def test_frames_no_rule_touches_leave_byte_identical() -> None:
    eng = engine()
    raw = b'{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]} }\n'
    assert written(eng.feed("backend", raw, 0.1)) == raw


def test_signal_exit_and_exit_1_after_a_session_are_cbcs_zero() -> None:
    eng = engine()
    eng.backend_exited(143, 1.0)
    assert eng.exit_status() == 0
    refused = engine()  # e.g. Claude refused an option: nothing ran
    refused.backend_exited(1, 1.0)
    assert refused.exit_status() is None
    ran = Run(engine())
    ran.claude_says({"type": "result", "subtype": "error_max_turns", "is_error": True})
    ran.eng.backend_exited(1, 2.0)
    assert ran.eng.exit_status() == 0


def test_rules_are_switchable_and_bookkeeping_is_not() -> None:
    up, down = build("claude-to-cbc", parse_rule_settings(["rev-interrupted-turn=off"]))
    assert "rev-interrupted-turn" not in [s.rule for s in down]
    with pytest.raises(RuleError):
        build("claude-to-cbc", parse_rule_settings(["rev-track=off"]))


# -- rev-resume-replay ----------------------------------------------------------------------

HISTORY: list[dict[str, Any]] = [
    {"type": "queue-operation", "operation": "enqueue", "content": "first question"},
    {
        "type": "user",
        "isSidechain": False,
        "uuid": "u1",
        "message": {"role": "user", "content": "first question"},
    },
    {"type": "attachment", "attachment": {"type": "skill_listing"}},
    {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "sub"}},
    {
        "type": "assistant",
        "isSidechain": False,
        "uuid": "a1",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    },
]


def _resumed(has_prompt: bool) -> Run:
    eng = engine()
    reverse_state.launch(eng.state, translate_to_claude(["--resume", "bot:2"]), HISTORY, "/w")
    run = Run(eng)
    run.client_says(ck.request("init", {"subtype": "initialize", "hasPrompt": has_prompt}))
    run.claude_says(ck.success("init", {"models": [], "account": {}}))
    return run


def test_resume_without_a_prompt_replays_the_history_as_cbc_does() -> None:
    run = _resumed(False)
    kinds = [(f["type"], f.get("subtype")) for f in run.client]
    assert kinds == [
        ("control_response", None),
        ("system", "init"),
        ("user", None),
        ("assistant", None),
        ("result", "success"),
    ]
    assert {f["session_id"] for f in run.client[1:]} == {"bot:2"}  # the client's own id
    assert run.client[2]["message"]["content"] == "first question"
    assert run.client[2]["isReplay"] is True
    assert run.client[-1]["result"] == "ok"
    assert run.client[-1]["is_error"] is False


def test_with_a_prompt_nothing_is_replayed() -> None:
    assert len(_resumed(True).client) == 1


@pytest.mark.parametrize("path", sorted(CLAUDE.glob("*.transcript.jsonl")), ids=lambda p: p.stem)
def test_every_claude_capture_passes_the_profile_and_the_counts_add_up(path: Path) -> None:
    """No rule fails (the engine is strict) on any real Claude session, and frames in +
    synthesized = frames out + dropped + held - released, over both directions."""
    run = Run(engine()).replay(path)
    stats = run.eng.statistics()
    frames, rules = stats["frames"], stats["rules"]
    f_in = frames["up"].get("in", 0) + frames["down"].get("in", 0)
    f_out = frames["up"].get("out", 0) + frames["down"].get("out", 0)
    total = {
        w: sum(c.get(w, 0) for c in rules.values())
        for w in ("synthesized", "dropped", "held", "released")
    }
    assert (
        f_in + total["synthesized"] == f_out + total["dropped"] + total["held"] - total["released"]
    ), (frames, rules)
    assert f_out == len(run.client) + len(run.backend)
    assert not any(c.get("errors") for c in rules.values())


def test_command_lifecycle_receipts_are_not_passed() -> None:
    run = replay("mockapi_simple-success_then-eof-exit0")
    assert not [f for f in run.client if f.get("type") == "command_lifecycle"]
    assert run.eng.statistics()["rules"]["rev-command-lifecycle"]["dropped"] >= 2


@pytest.mark.parametrize(
    "rule", [r for d in ("up", "down") for r in PROFILES["claude-to-cbc"][d] if r not in ALWAYS_ON]
)
def test_every_reverse_rule_switches_off(rule: str) -> None:
    up, down = build("claude-to-cbc", parse_rule_settings([f"{rule}=off"]))
    assert rule not in [s.rule for s in [*up, *down]]
    assert REGISTRY[rule].__doc__  # `ccbridge rules` says what it does


# -- over the reverse twins' raw Claude runs (captures/twins-reverse/*.claude-raw.jsonl) ----

TWINS = Path(__file__).resolve().parents[2] / "captures/twins-reverse"


def twin(name: str, **kw: Any) -> Run:
    return Run(engine(**kw)).replay(TWINS / f"{name}.claude-raw.jsonl")


def _subtypes(frames: list[dict[str, Any]]) -> set[str]:
    return {str(f.get("subtype")) for f in frames if f.get("type") == "system"}


@pytest.mark.parametrize(
    ("name", "claudes"),
    [
        ("api-retry-overloaded", {"api_retry"}),
        ("thinking", {"thinking_tokens"}),
        ("hooks-pre-tool-use", {"hook_started"}),
        ("stop-refusal", {"model_refusal_no_fallback"}),
    ],
)
def test_system_frames_cbc_never_writes_are_not_passed(name: str, claudes: set[str]) -> None:
    """cbc 2.163.0 writes only the subtypes of its contract (CBC_SYSTEM; twins *.cbc.jsonl
    have none of Claude's retry, thinking-estimate, hook-start or refusal frames)."""
    from compat.vocabulary import CBC_SYSTEM

    run = twin(name)
    assert _subtypes(run.client) <= CBC_SYSTEM
    assert "init" in _subtypes(run.client)
    assert run.eng.statistics()["rules"]["rev-vocabulary"]["dropped"] >= 1
    assert claudes <= _subtypes(twin(name, rules=["rev-vocabulary=off"]).client)


def test_claudes_hook_response_is_cbcs_own_subtype_and_passes() -> None:
    run = Run(engine())
    frame = {"type": "system", "subtype": "hook_response", "hook_id": "h", "session_id": "s"}
    run.claude_says(frame)
    assert run.client == [frame]


def _results(run: Run) -> list[dict[str, Any]]:
    return [f for f in run.client if f.get("type") == "result"]


def test_an_api_error_ends_the_turn_as_cbcs_failed_turn() -> None:
    """cbc ends a turn whose model request failed ``error_during_execution`` with the
    message in ``errors`` (twins-reverse api-error-exhausted.cbc.jsonl), which both SDKs raise
    as ExecutionError; Claude ends it ``success`` with ``is_error`` and the message as
    ``result``, which the SDKs would hand over as an answer."""
    [res] = _results(twin("api-error-exhausted"))
    assert res["subtype"] == "error_during_execution"
    assert res["is_error"] is True
    assert "result" not in res
    [err] = res["errors"]
    assert err.startswith("API Error: 500")
    [off] = _results(twin("api-error-exhausted", rules=["rev-error-result=off"]))
    assert off["subtype"] == "success"
    assert off["result"] == err


def test_max_turns_ends_in_cbcs_words() -> None:
    """cbc: ``error_during_execution``, ``errors: ["Max turns (1) exceeded"]`` (twins-reverse
    max-turns.cbc.jsonl); Claude: ``error_max_turns``, ``Reached maximum number of turns (1)``."""
    [res] = _results(twin("max-turns"))
    assert res["subtype"] == "error_during_execution"
    assert res["errors"] == ["Max turns (1) exceeded"]
    run = Run(engine())
    odd = {"type": "result", "subtype": "error_max_turns", "is_error": True, "errors": ["x"]}
    run.claude_says(odd)
    assert run.client == [{**odd, "subtype": "error_during_execution"}]


def test_a_successful_turn_is_no_error() -> None:
    run = Run(engine())
    ok = {"type": "result", "subtype": "success", "is_error": False, "result": "hi"}
    run.claude_says(ok)
    assert run.client == [ok]


def test_a_failed_background_shell_is_summarised_as_cbc_does() -> None:
    """cbc: `Background command "<command>" failed` (twins-reverse bg-task-failed-turn.cbc);
    Claude: the call's description and the exit code."""
    cmd = "sleep 2; echo bad; exit 4"
    notes = [
        f["summary"]
        for f in twin("bg-task-failed-turn").client
        if f.get("subtype") == "task_notification"
    ]
    assert notes == [f'Background command "{cmd}" failed']


def _background_call(use_id: str) -> bytes:
    block: dict[str, Any] = {"type": "tool_use", "id": use_id, "name": "Agent"}
    block["input"] = {"prompt": "p", "run_in_background": True}
    msg = {"id": f"m-{use_id}", "role": "assistant", "content": [block]}
    return line(
        {"type": "assistant", "parent_tool_use_id": None, "session_id": "s", "message": msg}
    )


def _agent_message(parent: str | None, text: str, escape: bool) -> bytes:
    msg = {"id": "m", "role": "assistant", "content": [{"type": "text", "text": text}]}
    raw = line(
        {"type": "assistant", "parent_tool_use_id": parent, "session_id": "s", "message": msg}
    )
    if escape and parent:  # the parent's first character as a \u escape
        raw = raw.replace(
            json.dumps(parent).encode(), f'"\\u{ord(parent[0]):04x}{parent[1:]}"'.encode(), 1
        )
    return raw


_IDS = st.sampled_from(["toolu_a", "toolu_ab", "b", "toolu_c"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_IDS, min_size=1, max_size=3),
    st.none() | _IDS,
    st.lists(_IDS | st.sampled_from(["x", " ", "toolu_"]), max_size=4).map("".join),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_a_background_agents_messages_are_dropped_as_before(
    calls: list[str], parent: str | None, text: str, big: bool, escape: bool, crowd: bool
) -> None:
    """rev-background-agent drops a message whose parent is a background call, as when
    each call's id was looked for in every frame; a big frame, or any frame once there are
    many calls, is parsed instead, and a frame with an escape too (the search missed an id
    spelled with one: that frame of a background agent reached the client)."""
    eng = engine()
    if crowd:
        calls = [*(f"toolu_other{i}" for i in range(9)), *calls]
    for use_id in calls:
        eng.feed("backend", _background_call(use_id), 0)
    raw = _agent_message(parent, text + "y" * (400_000 if big else 0), escape)
    dropped = written(eng.feed("backend", raw, 0)) == b""
    was = parent in calls and any(c.encode() in raw for c in calls)
    if b"\\u" in raw:
        was = parent in calls
    assert dropped == was


def test_a_big_message_with_many_background_calls_is_read_once() -> None:
    """1,024 background calls' ids were each looked for in every frame: 0.7 s for a 1 MB
    message (seconds for 10 MB, on each frame); a big frame is parsed instead. These
    return, the main thread's message passed and the background agent's dropped."""
    eng = engine()
    for k in range(1024):
        eng.feed("backend", _background_call(f"toolu_{k:024d}"), 0)
    text = "y" * 5_000_000
    for _ in range(8):
        assert written(eng.feed("backend", _agent_message(None, text, False), 0))
    assert written(eng.feed("backend", _agent_message(f"toolu_{5:024d}", text, False), 0)) == b""
