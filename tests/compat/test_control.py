"""Control requests and replies (compat/stages/control.py, initialize.py, user_line.py):
``initialize-reply``, ``unsupported-control`` + ``control-reply``, ``stdin-vocabulary``,
``user-line``, ``control-state``; on cbc 2.163.0's real frames (``nomodel_controls-*``,
``nomodel_unknown-stdin-types``, ``mockoai_*``) against Claude Code 2.1.220's
(``nocreds_idle-interrupt_…``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from analysis.contract import check_lines
from compat import controlkit as ck
from compat.engine import Write
from compat.profiles import PROFILES, RuleError, build, parse_rule_settings
from compat.redact import REDACTED, redact_text
from compat.stages.initialize import PROMPT_BOUNDARY, claude_initialize

from . import control_support
from .control_support import cr, engine, label, records, replay, reply_to, stdout_frame, user

SID = "01a226db-6de9-7158-9e55-d5205b00368c"  # nomodel_controls-after-session
CLAUDE_CTL = (
    "claude-2.1.220_nocreds_idle-interrupt_session-id_cancel-queued_unsupported-subtype_"
    "cancel-request_reinit_bad-json-exit1"
)


def violations(frames: list[Any], rules: set[str]) -> list[str]:
    raw = [json.dumps(f).encode() for f in frames]
    return [f"{v.rule}: {v.message}" for v in check_lines(raw) if v.rule in rules]


def init_reply(name: str) -> dict[str, Any]:
    return stdout_frame(
        name,
        lambda f: (
            f.get("type") == "control_response"
            and "commands" in (f["response"].get("response") or {})
        ),
    )


def cbc_init(sid: str = SID, **kw: Any) -> dict[str, Any]:
    return control_support.cbc_init(sid, **kw)


def status(sid: str = SID) -> dict[str, Any]:
    return {"type": "system", "subtype": "status", "status": None, "uuid": "st", "session_id": sid}


# -- the profile ----------------------------------------------------------------------------


def test_control_rules_order_in_the_profile() -> None:
    """Pinned on purpose: see the comments in compat/profiles.py."""
    prof = PROFILES["cbc-to-claude"]
    assert prof["up"] == (
        "stdin-vocabulary",
        "user-line",
        "local-slash-commands",
        "permission-reply",
        "hook-reply",
        "sdk-mcp-reply",
        "initialize-request",
        "resume-replay",
        "interrupt-request",
        "unsupported-control",
        "compact-line",
    )
    down = list(prof["down"])
    control = [
        r
        for r in down
        if r
        in {
            "control-reply",
            "control-state",
            "initialize-reply",
            "interrupt-reply",
            "permission-cancel",
            "interrupt-terminal",
            "permission-routing",
        }
    ]
    assert control == [
        "control-reply",
        "control-state",
        "initialize-reply",
        "interrupt-reply",
        "permission-cancel",
        "interrupt-terminal",
        "permission-routing",
    ]
    # the turn start reaches command-lifecycle before control-state takes the line's uuid
    assert down.index("command-lifecycle") == down.index("control-state") - 1
    assert down.index("vocabulary") < down.index("control-reply")  # after init-once
    for later in ("progress-final", "terminal-guarantee", "tasks-snapshot"):
        assert down.index("interrupt-terminal") < down.index(later)


def test_control_state_cannot_be_switched_off() -> None:
    with pytest.raises(RuleError, match="cannot be switched off"):
        build("cbc-to-claude", parse_rule_settings(["control-state=off"]))


# -- initialize-reply -----------------------------------------------------------------------


def test_initialize_reply_is_claude_shaped() -> None:
    eng = engine()
    run = replay(
        eng,
        extra=[
            (0.0, "client", cr("init", subtype="initialize", hooks={}, capabilities={})),
            (1.0, "backend", reply_to("nomodel_controls-after-session", "init")),
        ],
    )
    [reply] = run.frames()
    body = reply["response"]["response"]
    claude = reply_to(CLAUDE_CTL, "init")["response"]["response"]
    assert (
        list(body)[:7]
        == list(claude)[:7]
        == [
            "commands",
            "agents",
            "output_style",
            "available_output_styles",
            "models",
            "account",
            "pid",
        ]
    )
    assert body["commands"][0] == {
        "name": "add-dir",
        "description": "Add a new working directory",
        "argumentHint": "",
    }  # cbc: "/add-dir"
    assert all(
        set(c) >= {"name", "description", "argumentHint"} and c["name"][0] != "/"
        for c in body["commands"]
    )
    assert body["agents"] == []
    assert body["available_output_styles"][0] == "default"  # cbc: "Default"
    assert body["models"][0] == {
        "value": "default-model",
        "displayName": "Auto",
        "description": "Auto",
    }  # cbc: {id, name}
    assert body["account"] == {"tokenSource": "none", "apiProvider": "firstParty"}  # cbc: null
    assert body["account"] == claude["account"]
    assert body["pid"] == 4242
    assert eng.state.control.default_model == "default-model"  # currentModelId
    assert violations(run.frames(), {"initialize-reply", "redact"}) == []


def test_initialize_fields_of_newer_ts_sdks_reach_cbc_as_it_takes_them() -> None:
    """@anthropic-ai/claude-agent-sdk 0.3.332 (settingsViaInitialize, disallowedTools-,
    mcpServersViaInitialize) sends options inside initialize. cbc 2.163.0 reads only its
    own fields there; the settings its set_config takes follow as the bridge's own
    set_config (its reply not forwarded), the rest is dropped with one warning."""
    settings = '{"model": "fast-model", "alwaysThinkingEnabled": true, "permissions": {}}'
    init_req = cr(
        "init",
        subtype="initialize",
        hooks={},
        systemPrompt=["a", PROMPT_BOUNDARY, "b"],
        settings=settings,
        disallowedTools=["Bash"],
        mcpServers={"x": {"command": "x"}},
        title=None,
        skills=[],
        sdkMcpServers=["mine"],
    )
    eng = engine()
    run = replay(eng, extra=[(0.0, "client", init_req)])
    init, config = run.frames("backend")
    assert init["request"] == {
        "subtype": "initialize",
        "hooks": {},
        "systemPrompt": "a\n\nb",
        "sdkMcpServers": ["mine"],
    }
    assert config["type"] == "control_request"
    assert config["request"] == {
        "subtype": "set_config",
        "config": {"model": "fast-model", "alwaysThinkingEnabled": True},
    }
    [warning] = [g for g in run.logs if g.level == "warning"]
    assert warning.rule == "initialize-request"
    assert "settings.permissions, disallowedTools, mcpServers" in warning.message
    # cbc's reply to the bridge's set_config never reaches the client; no timeout reply
    reply = {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": config["request_id"],
            "response": {"session_id": "", "updated": {"model": "fast-model"}},
        },
    }
    run = replay(eng, extra=[(1.0, "backend", reply)], until=120.0)
    assert run.frames() == []
    # a settings file path: nothing cbc can take at run time
    eng = engine()
    run = replay(
        eng, extra=[(0.0, "client", cr("i", subtype="initialize", settings="/etc/s.json"))]
    )
    assert run.frames("backend") == [cr("i", subtype="initialize")]
    assert "settings" in [g for g in run.logs if g.level == "warning"][0].message
    # what the 0.3.220 SDK sends passes untouched
    plain = cr("i", subtype="initialize", hooks={}, systemPrompt="x")
    assert replay(engine(), extra=[(0.0, "client", plain)]).frames("backend") == [plain]


def test_a_resumed_cbc_is_told_a_prompt_follows_so_it_replays_nothing() -> None:
    """resume-replay: cbc 2.163.0 on --resume replays the old exchange (init, messages, a
    result) unless the first line says a prompt follows (``hasPrompt: true``, or a user
    line); the Claude SDKs never send ``hasPrompt`` and Claude replays nothing. Only a
    resumed launch's initialize changes; a hasPrompt the client sent is kept."""
    sdk = cr("i", subtype="initialize", hooks={}, systemPrompt="x")  # Python SDK's shape

    def sent(resumes: bool, request: dict[str, Any], *rules: str) -> Any:
        eng = engine(rules)
        eng.state.resumes = resumes
        run = replay(eng, extra=[(0.0, "client", request)])
        return run.frames("backend"), run.logs

    (got,), logs = sent(True, sdk)
    assert got == {**sdk, "request": {**sdk["request"], "hasPrompt": True}}
    assert [g.rule for g in logs] == ["resume-replay"]
    # not resumed: nothing to replay, the line passes as it came
    assert sent(False, sdk)[0] == [sdk]
    # the client's own answer wins (codebuddy's SDKs: false asks for the replay)
    for has_prompt in (False, True):
        asked = cr("i", subtype="initialize", hooks={}, hasPrompt=has_prompt)
        assert sent(True, asked)[0] == [asked]
    # the rule switched off
    assert sent(True, sdk, "resume-replay=off")[0] == [sdk]


def test_initialize_reply_never_forwards_the_token() -> None:
    raw = init_reply("mockoai_can-use-tool-allow")
    acc = raw["response"]["response"]["account"]
    acc = {
        **acc,
        "token": "sk-abcdefghijklmnopqrstuvwxyz0123456789",  # a live one
        "uid": "anonymous_23456789",
        "userName": "anonymous_23456789",
    }
    raw = {
        **raw,
        "response": {
            **raw["response"],
            "response": {**raw["response"]["response"], "account": acc},
        },
    }
    for mode in ("redact", "strip"):
        eng = engine([f"initialize-reply={mode}"])
        run = replay(
            eng, extra=[(0.0, "client", cr("init", subtype="initialize")), (1.0, "backend", raw)]
        )
        [reply] = run.frames()
        text = json.dumps(reply)
        assert "abcdefghij" not in text
        assert "23456789" not in text
        account = reply["response"]["response"]["account"]
        assert account["apiKeySource"] == "CODEBUDDY_API_KEY"
        if mode == "redact":
            assert account["token"] == REDACTED
            assert account["uid"] == f"anonymous_{REDACTED}"
        else:
            assert "token" not in account
            assert "uid" not in account
            assert account["type"] == "personal"
        assert violations(run.frames(), {"redact", "initialize-reply"}) == []
        assert eng.statistics()["rules"]["initialize-reply"][f"credentials-{mode}"] == 1


def test_initialize_reply_recognised_by_shape_without_the_request() -> None:
    eng = engine(["unsupported-control=off"])
    run = replay(eng, extra=[(1.0, "backend", reply_to("nomodel_controls-after-session", "init2"))])
    [reply] = run.frames()
    assert reply["response"]["response"]["commands"][0]["name"] == "add-dir"


@pytest.mark.parametrize(
    ("prompt", "sent"),
    [
        ([""], ""),  # what the TypeScript SDK sends for its default (empty) prompt
        (["static", PROMPT_BOUNDARY, "dynamic"], "static\n\ndynamic"),
        ("already a string", "already a string"),
    ],
)
def test_initialize_system_prompt_blocks_become_the_string_cbc_takes(
    prompt: Any, sent: str
) -> None:
    """cbc 2.163.0 ends every turn with "src must be a string or an object describing the
    source" when ``initialize.systemPrompt`` is an array (probed; tests/bridge/test_ts_sdk.py)."""
    run = replay(
        engine(),
        extra=[(0.0, "client", cr("init", subtype="initialize", hooks={}, systemPrompt=prompt))],
    )
    assert run.frames("backend") == [cr("init", subtype="initialize", hooks={}, systemPrompt=sent)]


def test_claude_initialize_keeps_unknown_keys_after_claudes() -> None:
    out = claude_initialize(
        {
            "commands": [{"name": "/x", "argument_hint": "<f>", "tags": ["a"]}],
            "currentModelId": "m",
            "models": [{"id": "m", "name": "M"}],
            "extra": 1,
        },
        7,
    )
    assert out["commands"] == [
        {"name": "x", "description": "", "argumentHint": "<f>", "tags": ["a"]}
    ]
    assert list(out)[-1] == "extra"
    assert "currentModelId" not in out  # no key of Claude's reply (twins *.claude.jsonl)
    assert out["output_style"] == "default"


def test_claude_initialize_ends_with_claudes_feature_flags_off() -> None:
    """Claude 2.1.220's reply (twins simple-success.claude.jsonl): after ``pid`` the flags
    of its remote-control, IDE and fast-mode features, off; cbc has none of them."""
    out = claude_initialize({"commands": [], "currentModelId": "m"}, 7)
    assert list(out)[list(out).index("pid") :] == [
        "pid",
        "remote_control_auto_enable",
        "remote_control_auto_on_by_default",
        "ide_rc_auto_enable_gate",
        "fast_mode_state",
        "fast_mode_disabled_reason",
    ]
    assert (
        out["remote_control_auto_enable"],
        out["remote_control_auto_on_by_default"],
        out["ide_rc_auto_enable_gate"],
    ) == (False, False, False)
    assert (out["fast_mode_state"], out["fast_mode_disabled_reason"]) == (
        "off",
        "sdk_opt_in_required",
    )


# -- unsupported-control / control-reply ----------------------------------------------------


def session(eng: Any, t: float = 1.0) -> list[tuple[float, str, Any]]:
    """Frames that give the engine a session (an init, a status, a finished turn)."""
    return [
        (t, "client", user("hi", "u-1")),
        (t, "backend", cbc_init(mcp_servers=[{"name": "files", "status": "connected"}])),
        (t, "backend", status()),
        (
            t,
            "backend",
            {
                "type": "assistant",
                "session_id": SID,
                "uuid": "a",
                "message": {"content": [], "model": "m"},
            },
        ),
        (
            t,
            "backend",
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "session_id": SID,
                "uuid": "r",
                "result": "",
                "usage": {"input_tokens": 1200, "output_tokens": 34},
                "modelUsage": {"default-model": {"contextWindow": 176000}},
            },
        ),
    ]


def test_subtypes_cbc_lacks_are_answered_locally_the_claude_way() -> None:
    eng = engine()
    run = replay(
        eng,
        extra=[
            *session(eng),
            (2.0, "client", cr("mcp", subtype="mcp_status")),
            (2.0, "client", cr("ctx", subtype="get_context_usage")),
            (2.0, "client", cr("mtt", subtype="set_max_thinking_tokens", max_thinking_tokens=1000)),
            (2.0, "client", cr("stop", subtype="stop_task", task_id="nope")),
        ],
    )
    replies = {
        f["response"]["request_id"]: f["response"]
        for f in run.frames()
        if f.get("type") == "control_response"
    }
    assert replies["mcp"]["response"] == {"mcpServers": [{"name": "files", "status": "connected"}]}
    usage = replies["ctx"]["response"]
    assert usage["totalTokens"] == 1200  # the context: input tokens (output is not in it)
    assert usage["maxTokens"] == 176000
    assert usage["percentage"] == 1
    assert usage["model"] == "default-model"
    assert {
        "categories",
        "rawMaxTokens",
        "isAutoCompactEnabled",
        "memoryFiles",
        "mcpTools",
        "agents",
        "gridRows",
    } <= set(usage)
    assert replies["mtt"] == {"subtype": "success", "request_id": "mtt"}  # Claude: no body
    # Claude: an unknown task id also succeeds (mockapi_stop-task-control-request_…)
    assert replies["stop"]["response"] == {}
    # what cbc can take of set_max_thinking_tokens, as the bridge's own request
    sent = [f["request"] for f in run.frames("backend") if f.get("type") == "control_request"]
    assert sent == [{"subtype": "set_config", "config": {"alwaysThinkingEnabled": True}}]


def test_unknown_subtype_error_reworded_like_claude() -> None:
    name = "nomodel_controls-before-session-then-eof"
    eng = engine()
    run = replay(
        eng,
        extra=[
            (4.0, "client", cr("unk", subtype="foo_bar_unknown")),
            (6.7, "backend", reply_to(name, "unk")),
        ],
    )
    [reply] = run.frames()
    assert reply["response"] == {
        "subtype": "error",
        "request_id": "unk",
        "error": "Unsupported control request subtype: foo_bar_unknown",
    }
    claude = reply_to(CLAUDE_CTL, "bogus-1")["response"]["error"]
    assert claude == ck.UNSUPPORTED + "no_such_subtype"  # the same wording
    assert violations(run.frames(), {"unsupported-control"}) == []


def test_a_request_cbc_never_answers_gets_an_error_at_the_deadline() -> None:
    eng = engine()
    run = replay(
        eng,
        extra=[
            *session(eng),
            (2.0, "client", cr("x", subtype="get_settings")),
            (
                40.0,
                "backend",
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": "x", "response": {}},
                },
            ),
        ],
    )
    late = [(t, f) for t, f in run.client if f.get("type") == "control_response"]
    assert [(t, f["response"]["subtype"]) for t, f in late] == [(32.0, "error")]  # 2 + 30 s
    assert "get_settings" in late[0][1]["response"]["error"]
    # cbc's reply after that is dropped: the client gets one reply per request
    assert eng.statistics()["rules"]["control-reply"]["dropped"] == 1


def test_initialize_waits_longer_and_timeouts_are_options() -> None:
    eng = engine(["unsupported-control.initialize_timeout=10", "unsupported-control.timeout=3"])
    run = replay(
        eng,
        extra=[
            (0.0, "client", cr("init", subtype="initialize")),
            (0.0, "client", cr("m", subtype="get_available_models")),
            (20.0, "client", user("x")),
        ],
    )
    assert [(t, f["response"]["request_id"]) for t, f in run.client] == [(3.0, "m"), (10.0, "init")]


def test_setters_before_the_session_succeed_at_once_and_reach_cbc_when_it_exists() -> None:
    """cbc answers them ``Session not found: current`` until its first turn, even with
    ``--session-id`` (nomodel_controls-before-session-then-eof)."""
    eng = engine()
    run = replay(
        eng,
        extra=[
            (0.0, "client", cr("perm", subtype="set_permission_mode", mode="acceptEdits")),
            (0.1, "client", cr("model", subtype="set_model", model="fast-model")),
            (0.2, "client", user("hi", "u-1")),
            (3.0, "backend", cbc_init()),
            (3.1, "backend", status()),
            (
                3.2,
                "backend",
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": "ccbridge-held-1",
                        "response": {
                            "session_id": SID,
                            "mode": "acceptEdits",
                            "previous_mode": "default",
                        },
                    },
                },
            ),
        ],
    )
    replies = [(t, f) for t, f in run.client if f.get("type") == "control_response"]
    assert [(t, label(f)) for t, f in replies] == [
        (0.0, "control_response:perm"),
        (0.1, "control_response:model"),
    ]
    assert all(f["response"]["subtype"] == "success" for _, f in replies)
    sent = [
        (t, f["request_id"], f["request"])
        for t, f in run.backend
        if f.get("type") == "control_request"
    ]
    assert sent == [
        (3.1, "ccbridge-held-1", {"subtype": "set_permission_mode", "mode": "acceptEdits"}),
        (3.1, "ccbridge-held-2", {"subtype": "set_model", "model": "fast-model"}),
    ]


def test_a_late_session_not_found_for_a_setter_becomes_success_and_is_sent_again() -> None:
    eng = engine()
    eng.state.session_id = "resumed"  # e.g. --resume: the bridge thinks a session exists
    run = replay(
        eng,
        extra=[
            (0.0, "client", cr("perm", subtype="set_permission_mode", mode="plan")),
            (1.0, "backend", reply_to("nomodel_controls-before-session-then-eof", "perm")),
            # cbc's next turn start (vocabulary drops the null status; init-once releases the
            # init on it, and the init is the session's sign for control-reply)
            (2.0, "backend", cbc_init("resumed")),
            (2.0, "backend", status("resumed")),
        ],
    )
    assert run.frames()[0]["response"] == {
        "subtype": "success",
        "request_id": "perm",
        "response": {"mode": "plan"},
    }
    assert run.frames()[1]["permissionMode"] == "plan"  # Claude's system/status
    assert run.frames("backend")[-1] == cr(
        "ccbridge-held-1", subtype="set_permission_mode", mode="plan"
    )


def test_set_model_null_means_cbcs_default_model() -> None:
    eng = engine()
    eng.state.control.default_model = "default-model"
    eng.state.session_id = SID
    run = replay(eng, extra=[(0.0, "client", cr("m", subtype="set_model", model=None))])
    assert run.frames("backend") == [cr("m", subtype="set_model", model="default-model")]


def test_setters_after_the_session_pass_with_cbcs_replies() -> None:
    name = "nomodel_controls-after-session"
    eng = engine()
    run = replay(eng, name)
    replies = {
        f["response"]["request_id"]: f["response"]
        for f in run.frames()
        if f.get("type") == "control_response"
    }
    assert replies["perm_nosid"]["subtype"] == "success"
    assert replies["perm_nosid"]["response"] == {"mode": "bypassPermissions"}
    assert replies["model_sid"] == {"subtype": "success", "request_id": "model_sid"}
    assert replies["mcp"]["response"] == {"mcpServers": []}  # answered locally
    assert "response" not in replies["mtt"]
    assert replies["int_nosid"]["response"] == {"still_queued": []}
    # every request answered exactly once, none with cbc's wording
    asked = [
        r.obj["request_id"]
        for r in records(name)
        if r.kind == "stdin" and r.obj.get("type") == "control_request"
    ]
    got = [f["response"]["request_id"] for f in run.frames() if f.get("type") == "control_response"]
    assert sorted(got) == sorted(asked)
    assert (
        violations(run.frames(), {"unsupported-control", "interrupt-reply", "initialize-reply"})
        == []
    )


def test_backend_exit_answers_what_is_still_open() -> None:
    eng = engine()
    run = replay(eng, extra=[*session(eng), (2.0, "client", cr("x", subtype="get_settings"))])
    run.take(eng.backend_exited(1, 3.0), 3.0)
    [reply] = [f for f in run.frames() if f.get("type") == "control_response"]
    assert reply["response"]["subtype"] == "error"
    assert "exited (status 1)" in reply["response"]["error"]
    run.take(eng.advance(100.0), 100.0)  # and the timer does not answer it again
    assert len([f for f in run.frames() if f.get("type") == "control_response"]) == 1


def test_control_cancel_request_is_absorbed_and_cancels_the_safety_reply() -> None:
    eng = engine()
    run = replay(
        eng,
        extra=[
            *session(eng),
            (2.0, "client", cr("x", subtype="get_settings")),
            (3.0, "client", {"type": "control_cancel_request", "request_id": "x"}),
            (60.0, "client", user("later")),
        ],
    )
    assert not [f for f in run.frames() if f.get("type") == "control_response"]
    assert not [f for f in run.frames("backend") if f.get("type") == "control_cancel_request"]


def test_malformed_control_request_answered() -> None:
    eng = engine()
    run = replay(
        eng, extra=[(0.0, "client", {"type": "control_request", "request_id": "b", "request": {}})]
    )
    assert run.frames()[0]["response"]["error"] == ck.UNSUPPORTED + "None"
    assert run.frames("backend") == []


# -- stdin-vocabulary / user-line / control-state --------------------------------------------


def test_input_cbc_would_turn_into_an_empty_turn_is_absorbed() -> None:
    """nomodel_unknown-stdin-types: ``bogus_type`` and ``keep_alive`` each cost an empty
    turn; so would update_environment_variables and any non-JSON line."""
    eng = engine()
    stdin = [
        r.text.encode() + b"\n" for r in records("nomodel_unknown-stdin-types") if r.kind == "stdin"
    ]
    odd = [
        b'{"type":"update_environment_variables","variables":{"A":"1"}}\n',
        b"not json\n",
        b"\n",
        b"[1,2]\n",
        b'{"no_type":1}\n',
        b'{"type":"user","broken":\n',
    ]
    cmds = [c for raw in [*stdin, *odd] for c in eng.feed("client", raw, 0.0)]
    sent = b"".join(c.data for c in cmds if isinstance(c, Write) and c.side == "backend")
    assert sent == stdin[0]  # only the initialize request, byte for byte
    counts = eng.statistics()["rules"]["stdin-vocabulary"]
    assert counts["absorbed:bogus_type"] == counts["absorbed:keep_alive"] == 1
    assert counts["absorbed:update_environment_variables"] == 1
    assert counts["absorbed:non-json"] == 5
    assert eng.statistics()["rules"].get("framing") is None  # nothing invalid reached cbc


def test_user_lines_pass_unchanged_and_mark_a_client_turn() -> None:
    eng = engine()
    lines = [
        user("a", "u-1"),
        {
            **user("b"),
            "message": {"role": "user", "content": [{"type": "text", "text": "b"}]},
            "session_id": "default",
        },
    ]
    run = replay(eng, extra=[(0.0, "client", f) for f in lines])
    # the second line waits for the first one's turn to end (user-line's queue)
    assert run.frames("backend") == lines[:1]
    control = eng.state.control
    assert len(control.queued_lines) == 1
    assert control.queued_lines[0].obj == lines[1]
    assert list(control.pending_user) == ["u-1", None]
    assert control.user_lines == 2
    replay(
        eng,
        extra=[
            (1.0, "backend", cbc_init()),
            (
                1.0,
                "backend",
                {"type": "assistant", "session_id": SID, "uuid": "a", "message": {"content": []}},
            ),
        ],
    )
    assert control.turn_active
    assert control.turn_from_client
    assert control.turns == 1
    assert list(control.pending_user) == [None]


def test_a_line_right_after_a_result_waits_out_cbcs_blind_spot() -> None:
    """cbc 2.163.0 loses a user line that reaches it as it starts its drain poll, right after
    its first result: a line within ``user-line.settle`` (0.2 s) of that result waits for
    cbc's answer to the bridge's readiness probe (``get_available_modes``), here never given,
    so until then; what the client sends after it waits behind it, in order; a line later
    than that passes at once."""
    eng = engine()
    run = replay(
        eng,
        extra=[
            *session(eng),
            (1.001, "client", user("next", "u-2")),
            (1.002, "client", cr("i-1", subtype="interrupt")),
            (1.5, "client", user("later", "u-3")),  # queued: "next" has not ended its turn
        ],
    )
    sent = [
        (t, f.get("message", {}).get("content") or f["request"]["subtype"])
        for t, f in run.backend
        if f["type"] in ("user", "control_request")
    ]
    assert sent == [
        (1.0, "hi"),
        (1.001, "get_available_modes"),
        (pytest.approx(1.2), "next"),
        (pytest.approx(1.2), "interrupt"),
    ]
    counts = eng.statistics()["rules"]["user-line"]
    # (synthesized: the probe, the two later lines' command_lifecycle "queued" echoes)
    assert counts == {
        "held-after-result": 1,
        "queued-during-turn": 1,
        "held": 3,
        "released": 2,
        "synthesized": 3,
    }
    # Claude's "queued" echo is not held: the client sees it as the line is read
    queued = [
        t
        for t, f in run.client
        if f.get("type") == "command_lifecycle"
        and f["command_uuid"] == "u-2"
        and f["state"] == "queued"
    ]
    assert queued == [1.001]


def test_the_clients_eof_releases_a_held_line_before_cbcs_stdin_closes() -> None:
    eng = engine()
    run = replay(eng, extra=[*session(eng), (1.05, "client", user("last"))])
    assert [f["message"]["content"] for f in run.frames("backend") if f["type"] == "user"] == ["hi"]
    cmds = eng.eof("client", 1.06)  # (eof-wind-down closes cbc's stdin after its turn)
    assert b'"last"' in next(c.data for c in cmds if isinstance(c, Write) and c.side == "backend")
    assert "settle" not in {key for _, key in eng._timers}


def test_settle_zero_forwards_every_line_at_once() -> None:
    eng = engine(["user-line.settle=0"])
    run = replay(eng, extra=[*session(eng), (1.0, "client", user("next"))])
    assert [(t, f["message"]["content"]) for t, f in run.backend if f["type"] == "user"] == [
        (1.0, "hi"),
        (1.0, "next"),
    ]


# -- command-lifecycle (compat/stages/lifecycle_cmd.py) ---------------------------------------


def lifecycle_view(run: Any) -> list[str]:
    """command_lifecycle states, inits and results (with user_message_uuid) as the client
    gets them."""
    out: list[str] = []
    for f in run.frames():
        if not isinstance(f, dict):
            continue
        if f.get("type") == "command_lifecycle":
            assert list(f) == ["type", "command_uuid", "state", "uuid", "session_id"]
            assert f["uuid"] != f["command_uuid"]
            out.append(f"{f['state']} {f['command_uuid'][:8]}")
        elif f.get("subtype") == "init":
            out.append("init")
        elif f.get("type") == "result":
            out.append(f"result {str(f.get('user_message_uuid'))[:8]}")
    return out


def test_each_user_line_is_echoed_around_its_turn_the_way_claude_does() -> None:
    """cbc 2.163.0 (mockoai_bg-agent-then-user-turn, two lines with uuids) against Claude
    2.1.220's twin of the same scenario (captures/twins/bg-agent.claude.jsonl): queued,
    started, the turn, the result naming the line (user_message_uuid), completed; a second
    line read while the session is idle is queued at once."""
    eng = engine()
    run = replay(eng, "mockoai_bg-agent-then-user-turn")
    assert lifecycle_view(run) == [
        "queued 77777777",
        "started 77777777",
        "init",
        "result 77777777",
        "completed 77777777",
        "queued 77777777",
        "started 77777777",
        "init",
        "result 77777777",
        "completed 77777777",
    ]
    cmds = [f for f in run.frames() if f.get("type") == "command_lifecycle"]
    assert [c["command_uuid"] for c in cmds[3:]] == ["77777777-0000-4777-8777-777777777777"] * 3
    sid = next(f for f in run.frames() if f.get("subtype") == "init")["session_id"]
    assert {c["session_id"] for c in cmds} == {sid}
    # the second line's "queued" is written as it is read, before cbc answers it
    [(t_line, _)] = [(t, f) for t, f in run.backend if f.get("type") == "user"][1:]
    [(t_queued, _)] = [
        (t, f)
        for t, f in run.client
        if f.get("type") == "command_lifecycle" and f["state"] == "queued"
    ][1:]
    assert t_queued == t_line
    assert eng.statistics()["rules"]["command-lifecycle"]["synthesized"] == 5


def test_an_interrupted_line_is_cancelled_and_its_result_names_no_line() -> None:
    """Claude 2.1.220 (mockapi_interrupt-during-foreground-bash_aborted-tools, twins
    interrupt-midturn-workflow.claude.jsonl): the interrupted turn's result has no
    user_message_uuid and the line ends ``cancelled``; the next line's turn is as usual."""
    a, b = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
    call = {
        "type": "assistant",
        "session_id": SID,
        "uuid": "a1",
        "parent_tool_use_id": None,
        "message": {
            "id": "m1",
            "content": [{"type": "tool_use", "id": "c1", "name": "Bash", "input": {}}],
        },
    }
    receipt = {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": "stop-1",
            "response": {"session_id": SID, "interrupted": True, "reason": "User interrupt"},
        },
    }
    done = {
        "type": "result",
        "subtype": "success",
        "session_id": SID,
        "uuid": "r",
        "result": "done.",
    }
    interrupt = {
        "type": "control_request",
        "request_id": "stop-1",
        "request": {"subtype": "interrupt"},
    }
    eng = engine()
    run = replay(
        eng,
        extra=[
            (0.0, "client", user("first", a)),
            (1.0, "backend", cbc_init()),
            (1.1, "backend", call),
            (2.0, "client", interrupt),
            (2.1, "backend", receipt),
            (2.2, "backend", done),
            (3.0, "client", user("second", b)),
            (3.1, "backend", cbc_init()),
            (3.2, "backend", {**done, "uuid": "r2"}),
        ],
    )
    assert lifecycle_view(run) == [
        "queued aaaaaaaa",
        "started aaaaaaaa",
        "init",
        "result None",
        "cancelled aaaaaaaa",
        "queued bbbbbbbb",
        "started bbbbbbbb",
        "init",
        "result bbbbbbbb",
        "completed bbbbbbbb",
    ]
    results = [f for f in run.frames() if f.get("type") == "result"]
    assert "user_message_uuid" not in results[0]
    assert results[0]["subtype"] == "error_during_execution"
    assert eng.statistics()["rules"]["command-lifecycle"]["cancelled"] == 1


def test_the_interrupted_twin_ends_its_line_as_claude_does() -> None:
    from .test_fields import bridged, claude

    def view(frames: list[dict[str, Any]]) -> list[str]:
        return [
            f"lifecycle {f['state']}"
            if f["type"] == "command_lifecycle"
            else f"result {'user_message_uuid' in f}"
            for f in frames
            if f.get("type") in ("command_lifecycle", "result")
        ]

    got, _ = bridged("interrupt-midturn-workflow")
    want = claude("interrupt-midturn-workflow")
    assert view(got) == view(want)
    assert view(got)[-2:] == ["result False", "lifecycle cancelled"]


def test_a_turn_no_line_started_and_a_line_without_uuid_get_no_echo() -> None:
    """mockoai_bg-bash: the shell's notification turn (Claude: no lifecycle, no
    user_message_uuid; twins bg-bash.claude.jsonl); a line without uuid (Claude 2.1.220:
    none either, claude-2.1.220/dummykey_init-then-user_*)."""
    run = replay(engine(), "mockoai_bg-bash")
    view = lifecycle_view(run)
    assert view[-2:] == ["init", "result None"]
    eng = engine()
    run = replay(
        eng,
        extra=[
            (0.0, "client", user("hi")),
            (1.0, "backend", cbc_init()),
            (
                1.1,
                "backend",
                {"type": "result", "subtype": "success", "session_id": SID, "uuid": "r"},
            ),
        ],
    )
    assert lifecycle_view(run) == ["init", "result None"]
    assert not eng.state.control.unsent_queued


def test_a_turn_nobody_asked_for_is_not_a_client_turn() -> None:
    eng = engine()
    replay(
        eng,
        extra=[
            (1.0, "backend", cbc_init()),
            (
                1.0,
                "backend",
                {"type": "result", "subtype": "success", "session_id": SID, "uuid": "r"},
            ),
        ],
    )
    control = eng.state.control
    assert not control.turn_active
    assert not control.turn_from_client
    assert control.turns == 1
    assert control.client_turns == 0


def test_log_messages_never_carry_credentials() -> None:
    text = redact_text(
        'launch: cbc --settings {"apiKey":"sk-ant-api03-abcdefghijklmnop"} '
        "CODEBUDDY_API_KEY=secret123 Authorization: Bearer abcdefghijkl "
        "token=eyJhbGciOiJIUzI1.eyJzdWIiOiIx.sig"
    )
    for secret in ("abcdefghijklmnop", "secret123", "abcdefghijkl", "eyJhbGci"):
        assert secret not in text
    assert redact_text("usage: total_tokens=5, 3 tokens") == "usage: total_tokens=5, 3 tokens"
