"""Permission prompts (compat/stages/permissions.py): ``permission-routing``,
``permission-reply``, ``permission-cancel``; cbc 2.163.0's ``mockoai_can-use-tool-*``
against Claude Code 2.1.220's ``mockapi_permission-prompt-stdio_*``."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat import controlkit as ck
from compat.stages.permissions import (
    claude_denial,
    claude_prompt_fields,
    command_prefix,
    glob_matches,
)

from .control_support import engine, label, records, replay, stdout_frame

ALLOW = "mockoai_can-use-tool-allow"
DENY = "mockoai_can-use-tool-deny"
THEN_INTERRUPT = "mockoai_can-use-tool-then-interrupt"
CLAUDE_CANCEL = (
    "claude-2.1.220_mockapi_permission-prompt-stdio_interrupt_cli-sends-control-cancel-request"
)


def can_use_tool(name: str) -> dict[str, Any]:
    return stdout_frame(name, lambda f: f.get("type") == "control_request")


def answer(rid: str, body: dict[str, Any]) -> dict[str, Any]:
    return ck.success(rid, body)


# -- permission-routing -----------------------------------------------------------------------


def test_a_client_that_asked_for_stdio_prompts_gets_them() -> None:
    req = can_use_tool(ALLOW)
    eng = engine(stdio=True)
    run = replay(eng, extra=[(0.0, "backend", req)])
    [got] = run.frames()
    # the working directory is not known (no init frame): Claude's fields need no path
    body = {**req["request"], "display_name": "Bash", "description": "Create a file"}
    assert got == {"type": "control_request", "request_id": req["request_id"], "request": body}
    pending = eng.state.control.permissions[req["request_id"]]
    assert (pending.tool_name, pending.tool_use_id) == ("Bash", "call_mock_723921d27176")


def test_otherwise_the_bridge_denies_the_way_claude_does() -> None:
    eng = engine(stdio=False)
    run = replay(eng, DENY, stdin=False)
    assert not [f for f in run.frames() if f.get("type") == "control_request"]
    [reply] = run.frames("backend")
    rid = can_use_tool(DENY)["request_id"]
    assert reply == answer(
        rid,
        {
            "allowed": False,
            "interrupt": False,
            "tool_use_id": "call_mock_0b1563ff917a",
            "reason": "Claude requested permissions to use Bash, but you haven't granted it yet.",
        },
    )
    [denial] = eng.state.control.permission_denials
    assert denial == {
        "tool_name": "Bash",
        "tool_use_id": "call_mock_0b1563ff917a",
        "tool_input": {"command": "touch perm-probe.txt", "description": "Create a file"},
        "turn": 0,
    }
    # cbc takes it for an SDK deny and lists it in its own result, as Claude would
    [result] = [f for f in run.frames() if f.get("type") == "result"]
    assert result["permission_denials"] == [{k: v for k, v in denial.items() if k != "turn"}]


@pytest.mark.parametrize(
    ("tool", "inp", "words"),
    [
        ("Write", {"file_path": "/w/a.txt", "content": "x"}, "to write to /w/a.txt"),
        ("Edit", {"file_path": "/w/b.py"}, "to write to /w/b.py"),
        ("Read", {"file_path": "/etc/x"}, "to read from /etc/x"),
        ("WebFetch", {"url": "https://x"}, "to use WebFetch"),
    ],
)
def test_claudes_wording(tool: str, inp: dict[str, Any], words: str) -> None:
    assert claude_denial(tool, inp) == (
        f"Claude requested permissions {words}, but you haven't granted it yet."
    )


@pytest.mark.parametrize(("mode", "forwarded"), [("forward", True), ("deny", False)])
def test_modes_force_one_way(mode: str, forwarded: bool) -> None:
    run = replay(
        engine([f"permission-routing={mode}"], stdio=not forwarded),
        extra=[(0.0, "backend", can_use_tool(ALLOW))],
    )
    assert bool(run.frames()) is forwarded
    assert bool(run.frames("backend")) is not forwarded


# -- permission-reply -----------------------------------------------------------------------


def client_answer(name: str) -> dict[str, Any]:
    return next(
        r.obj
        for r in records(name)
        if r.kind == "stdin" and r.obj.get("type") == "control_response"
    )


def test_claudes_allow_becomes_cbcs() -> None:
    """cbc reads a reply without ``allowed`` as a deny
    (``mockoai_can-use-tool-claude-shaped-allow``: "Permission denied by SDK")."""
    name = "mockoai_can-use-tool-claude-shaped-allow"
    req, claude_allow = can_use_tool(name), client_answer(name)
    assert claude_allow["response"]["response"]["behavior"] == "allow"
    run = replay(engine(stdio=True), extra=[(0.0, "backend", req), (0.1, "client", claude_allow)])
    rid = req["request_id"]
    # what cbc's own SDK sends (mockoai_can-use-tool-allow), for this call
    cbc_allow = client_answer(ALLOW)["response"]["response"]
    assert run.frames("backend") == [
        answer(rid, {**cbc_allow, "tool_use_id": req["request"]["tool_use_id"]})
    ]


def test_claudes_deny_becomes_cbcs() -> None:
    req = can_use_tool(DENY)
    rid = req["request_id"]
    run = replay(
        engine(stdio=True),
        extra=[
            (0.0, "backend", req),
            (0.1, "client", answer(rid, {"behavior": "deny", "message": "denied by probe"})),
        ],
    )
    assert run.frames("backend") == [client_answer(DENY)]  # cbc's own deny, field for field


@pytest.mark.parametrize(
    ("tool", "rules", "interrupts"),
    [
        ("ExitPlanMode", [], True),
        ("ExitPlanMode", ["permission-reply.plan_deny_interrupts=false"], False),
        ("Bash", [], False),
    ],
)
def test_a_plain_denial_of_exit_plan_mode_interrupts(
    tool: str, rules: list[str], interrupts: bool
) -> None:
    """cbc stalls after a plain denial of ExitPlanMode (twins plan-mode-denied: no model
    request, no result, the next line never answered); denied with interrupt: true it ends
    the turn and goes on, so that is what it is told, and the turn ends as a denial that
    interrupts does (``denying_interrupts``)."""
    req = can_use_tool(DENY)
    req["request"] = {**req["request"], "tool_name": tool}
    rid = req["request_id"]
    eng = engine(stdio=True, rules=rules)
    run = replay(
        eng,
        extra=[
            (0.0, "backend", req),
            (0.1, "client", answer(rid, {"behavior": "deny", "message": "no"})),
        ],
    )
    [sent] = run.frames("backend")
    assert sent["response"]["response"].get("interrupt", False) is interrupts
    assert bool(eng.state.control.denying_interrupts) is interrupts


def test_an_exit_plan_mode_allow_gives_cbc_back_the_input_it_asked_with() -> None:
    """The client was shown the plan in ExitPlanMode's input (exit-plan-mode) and allows it
    with that input, as the SDKs do; cbc's schema takes no key: it gets its own ``{}``."""
    req = can_use_tool(DENY)
    req["request"] = {**req["request"], "tool_name": "ExitPlanMode", "input": {}}
    rid = req["request_id"]
    shown = {"plan": "# Plan", "planFilePath": "/h/.codebuddy/plans/p.md"}
    run = replay(
        engine(stdio=True),
        extra=[
            (0.0, "backend", req),
            (0.1, "client", answer(rid, {"behavior": "allow", "updatedInput": shown})),
        ],
    )
    [sent] = run.frames("backend")
    assert sent["response"]["response"]["allowed"] is True
    assert sent["response"]["response"]["updatedInput"] == {}


def test_the_legacy_sdks_answers_become_cbcs_with_the_reason_as_given() -> None:
    """claude-code-sdk 0.0.25 answers ``{allow: false, reason}`` / ``{allow: true, input?}``
    (its query.py); before this rule knew the shape, the reason became "Permission
    denied" and an allow became a deny."""
    req = can_use_tool(DENY)
    rid = req["request_id"]
    run = replay(
        engine(stdio=True),
        extra=[
            (0.0, "backend", req),
            (0.1, "client", answer(rid, {"allow": False, "reason": "no shell for you"})),
        ],
    )
    [reply] = run.frames("backend")
    body = reply["response"]["response"]
    assert body["allowed"] is False
    assert body["reason"] == "no shell for you"
    assert body["interrupt"] is False
    req = can_use_tool(ALLOW)
    rid = req["request_id"]
    run = replay(
        engine(stdio=True),
        extra=[(0.0, "backend", req), (0.1, "client", answer(rid, {"allow": True}))],
    )
    [reply] = run.frames("backend")
    body = reply["response"]["response"]
    assert body["allowed"] is True
    assert body["updatedInput"] == req["request"]["input"]
    run = replay(
        engine(stdio=True),
        extra=[
            (0.0, "backend", req),
            (0.1, "client", answer(rid, {"allow": True, "input": {"command": "ls"}})),
        ],
    )
    assert run.frames("backend")[0]["response"]["response"]["updatedInput"] == {"command": "ls"}


def test_the_denied_calls_tool_result_is_marked_the_way_claude_does() -> None:
    """Claude marks the result of a call the client's answer denied (twins
    permission-deny.claude.jsonl: ``"tool_result_meta":[{"id":"toolu_mock_0002",
    "non_execution_kind":"permission-rule"}]``, after its other keys); cbc does not."""
    req = can_use_tool(DENY)
    rid, use = req["request_id"], req["request"]["tool_use_id"]
    result = stdout_frame(DENY, lambda f: f.get("type") == "user")
    assert result["message"]["content"][0]["tool_use_id"] == use
    assert "tool_result_meta" not in result
    eng = engine(stdio=True)
    run = replay(
        eng,
        extra=[
            (0.0, "backend", req),
            (0.1, "client", answer(rid, {"behavior": "deny", "message": "denied by probe"})),
            (0.2, "backend", result),
            (0.3, "backend", result),
        ],
    )
    first, again = [f for f in run.frames() if f.get("type") == "user"]
    assert first["tool_result_meta"] == [{"id": use, "non_execution_kind": "permission-rule"}]
    assert list(first)[-1] == "tool_result_meta"
    block = result["message"]["content"][0]
    # (tool-errors writes the denial's text as Claude does: one string)
    assert first["message"]["content"] == [{**block, "content": "denied by probe"}]
    assert "tool_result_meta" not in again  # marked once, then forgotten
    assert not eng.state.control.denied_uses


def test_an_allowed_calls_tool_result_is_not_marked() -> None:
    req = can_use_tool(DENY)
    rid = req["request_id"]
    result = stdout_frame(DENY, lambda f: f.get("type") == "user")
    run = replay(
        engine(stdio=True),
        extra=[
            (0.0, "backend", req),
            (0.1, "client", answer(rid, {"behavior": "allow"})),
            (0.2, "backend", result),
        ],
    )
    [user] = [f for f in run.frames() if f.get("type") == "user"]
    assert "tool_result_meta" not in user


def test_deny_with_interrupt_and_updated_input() -> None:
    req = can_use_tool(ALLOW)
    rid = req["request_id"]
    eng = engine(stdio=True)
    run = replay(
        eng,
        extra=[
            (0.0, "backend", req),
            (
                0.1,
                "client",
                answer(
                    rid,
                    {
                        "behavior": "allow",
                        "updatedInput": {"command": "true"},
                        "updatedPermissions": [],
                    },
                ),
            ),
            (0.2, "backend", {**req, "request_id": "p2"}),
            (0.3, "client", answer("p2", {"behavior": "deny", "message": "no", "interrupt": True})),
            (0.4, "backend", {**req, "request_id": "p3"}),
            (0.5, "client", ck.error("p3", "canUseTool callback is not provided")),
        ],
    )
    assert [f["response"]["response"] for f in run.frames("backend")] == [
        {
            "allowed": True,
            "updatedInput": {"command": "true"},
            "tool_use_id": "call_mock_723921d27176",
        },
        {
            "allowed": False,
            "reason": "no",
            "interrupt": True,
            "tool_use_id": "call_mock_723921d27176",
        },
        {
            "allowed": False,
            "reason": "canUseTool callback is not provided",
            "interrupt": False,
            "tool_use_id": "call_mock_723921d27176",
        },
    ]
    assert all(f["response"]["subtype"] == "success" for f in run.frames("backend"))
    assert eng.state.control.permissions == {}


def test_other_answers_pass_unchanged() -> None:
    hook = answer("hook-1", {"continue": True})
    cbc_shaped = client_answer(ALLOW)
    run = replay(engine(stdio=True), extra=[(0.0, "client", hook), (0.1, "client", cbc_shaped)])
    assert run.frames("backend") == [hook, cbc_shaped]


# -- permission-cancel ----------------------------------------------------------------------


def test_an_interrupt_withdraws_open_prompts_before_its_receipt() -> None:
    run = replay(engine(stdio=True), THEN_INTERRUPT)
    got = [label(f) for f in run.frames() if label(f).startswith("control")]
    rid = can_use_tool(THEN_INTERRUPT)["request_id"]
    assert got == [
        "control_response:init",
        f"control_request:{rid}",
        f"control_cancel_request:{rid}",
        "control_response:stop-perm",
    ]
    claude = [
        label(r.obj)
        for r in records(CLAUDE_CANCEL)
        if r.kind == "stdout" and r.obj.get("type", "").startswith("control")
    ]
    assert [x.split(":")[0] for x in claude] == [x.split(":")[0] for x in got]


def test_no_cancel_without_open_prompts() -> None:
    run = replay(engine(stdio=False), THEN_INTERRUPT)
    assert not [f for f in run.frames() if f.get("type") == "control_cancel_request"]


# -- updatedPermissions ("always allow") ------------------------------------------------------


def prompt(n: int, command: str = "touch perm-probe.txt", tool: str = "Bash") -> dict[str, Any]:
    """cbc's can_use_tool (mockoai_can-use-tool-allow's) for call ``n``: its own ids."""
    inp: dict[str, Any] = {"command": command} if tool == "Bash" else {"file_path": command}
    return ck.request(
        f"perm_{n}",
        {"subtype": "can_use_tool", "tool_name": tool, "input": inp, "tool_use_id": f"call_{n}"},
    )


def rules_update(
    kind: str, behavior: str, *rules: tuple[str, str | None], destination: str = "session"
) -> dict[str, Any]:
    return {
        "type": kind,
        "rules": [
            {"toolName": t, **({"ruleContent": c} if c is not None else {})} for t, c in rules
        ],
        "behavior": behavior,
        "destination": destination,
    }


def always(
    updates: list[dict[str, Any]], *later: dict[str, Any], cwd: str | None = None
) -> tuple[Any, Any]:
    """cbc asks about call 1, the client allows it with ``updates``; then cbc asks about
    each of ``later``. (engine, run)"""
    eng = engine(stdio=True)
    eng.state.cwd = cwd
    first = prompt(1)
    extra: list[tuple[float, str, Any]] = [
        (0.0, "backend", first),
        (0.1, "client", answer("perm_1", {"behavior": "allow", "updatedPermissions": updates})),
    ]
    extra += [(0.2 + i / 10, "backend", req) for i, req in enumerate(later)]
    return eng, replay(eng, extra=extra)


def prompts_seen(run: Any) -> list[str]:
    return [f["request_id"] for f in run.frames() if f.get("type") == "control_request"]


def answers_to_cbc(run: Any) -> dict[str, dict[str, Any]]:
    return {
        f["response"]["request_id"]: f["response"]["response"]
        for f in run.frames("backend")
        if f.get("type") == "control_response"
    }


def test_an_allow_rule_for_a_tool_answers_its_later_prompts_without_the_client() -> None:
    later = prompt(2, "rm -rf build"), prompt(3, "ls", tool="Bash")
    eng, run = always([rules_update("addRules", "allow", ("Bash", None))], *later)
    assert prompts_seen(run) == ["perm_1"]  # the client is asked once
    got = answers_to_cbc(run)
    assert got["perm_2"] == {
        "allowed": True,
        "updatedInput": {"command": "rm -rf build"},
        "tool_use_id": "call_2",
    }
    assert got["perm_3"]["allowed"] is True
    counts = eng.statistics()["rules"]
    assert counts["permission-routing"]["allowed-by-rule"] == 2
    assert counts["permission-reply"]["permission-updates-applied"] == 1
    assert "permission-updates-unapplied" not in counts["permission-reply"]
    assert not [g for g in run.logs if g.level == "warning"]


def test_a_rule_for_another_tool_still_prompts() -> None:
    _, run = always(
        [rules_update("addRules", "allow", ("Bash", None))], prompt(2, "/w/a.txt", tool="Write")
    )
    assert prompts_seen(run) == ["perm_1", "perm_2"]


def test_a_deny_rule_denies_claude_worded_and_the_call_is_listed() -> None:
    eng, run = always(
        [rules_update("addRules", "deny", ("Bash", "rm:*"))],
        prompt(2, "rm -rf build"),
        prompt(3, "rmdir x"),  # not the rm prefix (a word boundary)
    )
    assert prompts_seen(run) == ["perm_1", "perm_3"]
    assert answers_to_cbc(run)["perm_2"] == {
        "allowed": False,
        "reason": "Permission to use Bash with command rm -rf build has been denied.",
        "interrupt": False,
        "tool_use_id": "call_2",
    }
    [denial] = eng.state.control.permission_denials
    assert denial["tool_use_id"] == "call_2"
    assert eng.state.control.denied_uses == {"call_2": "permission-rule"}
    assert eng.statistics()["rules"]["permission-routing"]["denied-by-rule"] == 1


def test_a_whole_tool_deny_is_worded_for_the_tool() -> None:
    _, run = always([rules_update("addRules", "deny", ("Write", None))], prompt(2, "/w/a", "Write"))
    assert answers_to_cbc(run)["perm_2"]["reason"] == "Permission to use Write has been denied."


def test_deny_comes_before_allow() -> None:
    updates = [
        rules_update("addRules", "allow", ("Bash", None)),
        rules_update("addRules", "deny", ("Bash", "git push *")),
    ]
    _, run = always(updates, prompt(2, "git push origin main"), prompt(3, "git status"))
    got = answers_to_cbc(run)
    assert got["perm_2"]["allowed"] is False
    assert got["perm_3"]["allowed"] is True
    assert prompts_seen(run) == ["perm_1"]


@pytest.mark.parametrize(
    ("content", "command", "allowed"),
    [
        ("npm test:*", "npm test", True),
        ("npm test:*", "npm test -- --watch", True),
        ("npm test:*", "npm testing", False),
        ("npm test:*", "npx npm test", False),
        ("npm run build", "npm run build", True),
        ("npm run build", "npm run build --prod", False),
        ("git *", "git", True),  # a single trailing " *" also covers the bare command
        ("git *", "git log -1", True),
        ("git *", "gitk", False),
        ("git * main", "git push origin main", True),
        ("ls*", "lsof", True),
        ("*", "anything at all", True),
    ],
)
def test_a_prefix_or_wildcard_allow_matches_bash_commands_like_claude(
    content: str, command: str, allowed: bool
) -> None:
    _, run = always([rules_update("addRules", "allow", ("Bash", content))], prompt(2, command))
    assert ("perm_2" in answers_to_cbc(run)) is allowed
    assert ("perm_2" in prompts_seen(run)) is not allowed


@pytest.mark.parametrize(
    "command", ["npm test && rm -rf /", "npm test; curl x", "npm test | sh", "npm test > out"]
)
def test_a_compound_command_is_asked_about_with_a_debug_line(command: str) -> None:
    """Claude checks each part of a compound command; the bridge parses no shell: a rule
    with content never answers one (the client decides), and says why."""
    _, run = always([rules_update("addRules", "allow", ("Bash", "npm test:*"))], prompt(2, command))
    assert prompts_seen(run) == ["perm_1", "perm_2"]
    [line] = [g for g in run.logs if g.rule == "permission-routing" and "despite" in g.message]
    assert line.level == "debug"
    assert "cannot match" in line.message


def test_a_deny_rule_the_bridge_cannot_match_keeps_an_allow_from_answering() -> None:
    """deny before allow: an unmatchable deny (compound command) could be Claude's answer,
    so the broader allow does not answer; the client is asked."""
    updates = [
        rules_update("addRules", "allow", ("Bash", None)),
        rules_update("addRules", "deny", ("Bash", "rm:*")),
    ]
    _, run = always(updates, prompt(2, "cd x && rm -rf y"), prompt(3, "cd x"))
    assert prompts_seen(run) == ["perm_1", "perm_2"]
    assert answers_to_cbc(run)["perm_3"]["allowed"] is True


def test_a_rule_content_the_bridge_cannot_match_is_kept_and_said_at_info() -> None:
    eng, run = always(
        [rules_update("addRules", "allow", ("Edit", "/src/**"))], prompt(2, "/src/a.py", "Edit")
    )
    assert prompts_seen(run) == ["perm_1", "perm_2"]
    [info] = [g for g in run.logs if g.rule == "permission-reply" and g.level == "info"]
    assert "Edit(/src/**)" in info.message
    assert len(eng.state.control.permission_rules) == 1


def test_an_ask_rule_keeps_prompting_before_an_allow() -> None:
    updates = [
        rules_update("addRules", "allow", ("Bash", None)),
        rules_update("addRules", "ask", ("Bash", "git push:*")),
    ]
    _, run = always(updates, prompt(2, "git push"), prompt(3, "git pull"))
    assert prompts_seen(run) == ["perm_1", "perm_2"]


def test_mcp_server_rules_cover_its_tools() -> None:
    _, run = always(
        [rules_update("addRules", "allow", ("mcp__files", None))],
        prompt(2, "x", "mcp__files__read"),
        prompt(3, "x", "mcp__filesystem__read"),
    )
    assert prompts_seen(run) == ["perm_1", "perm_3"]


def test_remove_rules_brings_the_prompt_back() -> None:
    """removeRules (in a later answer) forgets the rule: the next call is asked about."""
    eng = engine(stdio=True)
    add = [rules_update("addRules", "allow", ("Bash", "npm test:*"), ("Bash", "ls"))]
    remove = [rules_update("removeRules", "allow", ("Bash", "npm test:*"))]
    run = replay(
        eng,
        extra=[
            (0.0, "backend", prompt(1)),
            (0.1, "client", answer("perm_1", {"behavior": "allow", "updatedPermissions": add})),
            (0.2, "backend", prompt(2, "npm test")),  # answered by the rule
            (0.3, "backend", prompt(3, "touch x")),
            (0.4, "client", answer("perm_3", {"behavior": "allow", "updatedPermissions": remove})),
            (0.5, "backend", prompt(4, "npm test")),  # asked again
            (0.6, "backend", prompt(5, "ls")),  # the other rule stays
        ],
    )
    assert prompts_seen(run) == ["perm_1", "perm_3", "perm_4"]
    assert set(answers_to_cbc(run)) == {"perm_1", "perm_2", "perm_3", "perm_5"}
    [kept] = eng.state.control.permission_rules
    assert (kept.tool_name, kept.rule_content) == ("Bash", "ls")


def test_replace_rules_replaces_those_of_its_behavior_and_destination() -> None:
    updates = [
        rules_update("addRules", "allow", ("Bash", "ls")),
        rules_update("addRules", "deny", ("Bash", "rm:*")),
        rules_update("addRules", "allow", ("Bash", "pwd"), destination="localSettings"),
        rules_update("replaceRules", "allow", ("Bash", "git status")),
    ]
    eng, run = always(updates)
    got = {(r.behavior, r.destination, r.rule_content) for r in eng.state.control.permission_rules}
    assert got == {
        ("deny", "session", "rm:*"),
        ("allow", "localSettings", "pwd"),
        ("allow", "session", "git status"),
    }
    # another destination is kept for the session only, and said so
    assert any(
        g.level == "info" and "localSettings" in g.message and "this session only" in g.message
        for g in run.logs
    )


def test_set_mode_reaches_cbc_as_the_bridges_own_request_whose_reply_the_client_never_sees() -> (
    None
):
    eng, run = always([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}])
    [mode_req] = [f for f in run.frames("backend") if f.get("type") == "control_request"]
    assert mode_req["request"] == {"subtype": "set_permission_mode", "mode": "acceptEdits"}
    rid = mode_req["request_id"]
    assert eng.state.control.own == {rid: "set_permission_mode"}
    # the allow itself still reaches cbc
    assert answers_to_cbc(run)["perm_1"]["allowed"] is True
    # cbc's reply to the bridge's request is swallowed
    reply = ck.success(rid, {"mode": "acceptEdits", "previous_mode": "default"})
    out = replay(eng, extra=[(1.0, "backend", reply)])
    assert out.frames() == []
    assert eng.state.control.own == {}
    assert eng.statistics()["rules"]["permission-reply"]["permission-updates-applied"] == 1


def test_set_mode_maps_claudes_mode_to_cbcs() -> None:
    _, run = always([{"type": "setMode", "mode": "manual", "destination": "session"}])
    [mode_req] = [f for f in run.frames("backend") if f.get("type") == "control_request"]
    assert mode_req["request"]["mode"] == "default"


def test_updates_cbc_cannot_take_stay_a_warning() -> None:
    """addDirectories (cbc has no control request for its directories), an unknown type,
    a mode cbc lacks, a malformed rule: the allow goes through, one warning names them."""
    updates: list[dict[str, Any]] = [
        {"type": "addDirectories", "directories": ["/tmp/x"], "destination": "session"},
        {"type": "grantEverything", "destination": "session"},
        {"type": "setMode", "mode": "yolo", "destination": "session"},
        {"type": "addRules", "rules": [{"ruleContent": "ls"}], "behavior": "allow"},
        rules_update("addRules", "allow", ("Bash", "ls")),
    ]
    eng, run = always(updates)
    assert answers_to_cbc(run)["perm_1"]["allowed"] is True
    (warning,) = [g for g in run.logs if g.level == "warning"]
    assert warning.rule == "permission-reply"
    assert "addDirectories, addRules, grantEverything, setMode" in warning.message
    counts = eng.statistics()["rules"]["permission-reply"]
    assert counts["permission-updates-unapplied"] == 4
    assert counts["permission-updates-applied"] == 1
    assert not [f for f in run.frames("backend") if f.get("type") == "control_request"]


def test_directories_inside_the_working_directory_need_nothing() -> None:
    """What permission-routing suggests for a write in cbc's working directory (Claude's
    addDirectories of it) is applied by doing nothing; one outside is still a warning."""
    inside = {"type": "addDirectories", "directories": ["/w", "/w/sub/"], "destination": "session"}
    eng, run = always([inside], cwd="/w")
    assert not [g for g in run.logs if g.level == "warning"]
    assert eng.statistics()["rules"]["permission-reply"]["permission-updates-applied"] == 1
    for dirs in (["/w2"], ["/w", "/other"], [], [3], "/w"):
        _, run = always([{**inside, "directories": dirs}], cwd="/w")
        assert [g.level for g in run.logs if g.level == "warning"] == ["warning"]


def test_an_empty_update_list_says_nothing() -> None:
    eng, run = always([])
    assert not [g for g in run.logs if g.level in ("warning", "info")]
    assert eng.state.control.permission_rules == []


_GLOB_TEXT = st.text(alphabet="ab *\n", max_size=12)


@settings(max_examples=500, deadline=None)
@given(_GLOB_TEXT, st.text(alphabet="ab \n", max_size=14))
def test_a_rules_wildcards_match_as_a_regex_of_them_would(pattern: str, text: str) -> None:
    """``*`` is any characters (newlines too) and nothing else is special: the same answer
    as the regex the pattern stands for."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    assert glob_matches(pattern, text) == (re.fullmatch(regex, text, re.DOTALL) is not None)


def test_a_rule_with_many_wildcards_against_a_long_command_is_answered_at_once() -> None:
    """The command is the model's: a backtracking regex took 3.5 s for ``a*a*a*a*a*b`` on
    200 characters (exponential in the stars); the match is linear, so this returns."""
    assert not glob_matches("a*a*a*a*a*a*a*a*b", "a" * 100_000)
    assert glob_matches("a*a*a*a*a*a*a*a*b", "a" * 100_000 + "b")


# -- permission-routing: Claude's fields of a prompt ---------------------------------------------

CWD = "/home/user/w"


def cbc_prompt(tool: str, inp: Any, **extra: Any) -> dict[str, Any]:
    body = {"subtype": "can_use_tool", "tool_name": tool, "input": inp, "tool_use_id": "call_1"}
    return {"type": "control_request", "request_id": "perm_1", "request": body | extra}


def forwarded(req: dict[str, Any], cwd: str | None = CWD) -> dict[str, Any]:
    eng = engine(stdio=True)
    eng.state.cwd = cwd
    [got] = replay(eng, extra=[(0.0, "backend", req)]).frames()
    assert isinstance(got, dict)
    return got


def test_claudes_own_prompt_is_what_the_bridge_makes_of_cbcs() -> None:
    claude = stdout_frame(CLAUDE_CANCEL, lambda f: f.get("type") == "control_request")
    cwd = claude["request"]["blocked_path"].rsplit("/", 1)[0]
    cbc = can_use_tool(ALLOW)
    got = forwarded(cbc, cwd)["request"]
    want = {**claude["request"], "tool_use_id": cbc["request"]["tool_use_id"]}
    assert got == want
    assert list(got) == list(want)  # Claude's order of the fields


SUGGEST_MODE = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}


def rule(content: str | None, tool: str = "Bash") -> dict[str, Any]:
    r: dict[str, Any] = {"toolName": tool}
    if content is not None:
        r["ruleContent"] = content
    return {"type": "addRules", "rules": [r], "behavior": "allow", "destination": "localSettings"}


def dirs(d: str) -> dict[str, Any]:
    return {"type": "addDirectories", "directories": [d], "destination": "session"}


@pytest.mark.parametrize(
    ("command", "suggestions", "blocked"),
    [
        # a path command writing: the path's directory, acceptEdits, the exact command first
        ("touch a.txt", [rule("touch a.txt"), dirs(CWD), SUGGEST_MODE], f"{CWD}/a.txt"),
        (
            "mkdir -p sub/new",
            [rule("mkdir -p sub/new"), dirs(f"{CWD}/sub"), SUGGEST_MODE],
            f"{CWD}/sub/new",
        ),
        ("rm /tmp/x/y", [rule("rm /tmp/x/y"), dirs("/tmp/x"), SUGGEST_MODE], "/tmp/x/y"),
        ("rm --force a", [rule("rm --force a"), dirs(CWD), SUGGEST_MODE], f"{CWD}/a"),
        ("rmdir old", [rule("rmdir old *"), dirs(f"{CWD}/old"), SUGGEST_MODE], f"{CWD}/old"),
        # two words that make a prefix: Claude's ``prefix *`` rule
        ("git push origin main", [rule("git push *")], None),
        ("npm run build", [rule("npm run *")], None),
        ("NODE_ENV=test npm test", [rule("npm test *")], None),
        # no prefix: one word, a wrapper, an untrusted assignment, a non-subcommand word
        ("make", [rule("make")], None),
        ("sudo apt-get update", [rule("sudo apt-get update")], None),
        ("FOO=1 npm test", [rule("FOO=1 npm test")], None),
        ("python3 script.py", [rule("python3 script.py")], None),
        ("  ls  ", [rule("ls")], None),
        ("cat notes.txt", [rule("cat notes.txt")], None),
    ],
)
def test_bash_suggestions_are_claudes(
    command: str, suggestions: list[Any], blocked: str | None
) -> None:
    got = claude_prompt_fields("Bash", {"command": command}, CWD)
    assert got.get("permission_suggestions") == suggestions
    assert got.get("blocked_path") == blocked
    assert got["display_name"] == "Bash"
    # Claude names its reason when no path check asked (real Claude 2.1.220, git init)
    reason = {"decision_reason": "This command requires approval", "decision_reason_type": "other"}
    assert ({k: got[k] for k in reason if k in got} == reason) is (blocked is None)


def test_claudes_git_init_prompt() -> None:
    """What real Claude 2.1.220 sent for ``git init`` (a probe scenario run with
    ``ccbridge scenario run --backend claude``, 2026-12-02)."""
    claude = {
        "subtype": "can_use_tool",
        "tool_name": "Bash",
        "display_name": "Bash",
        "input": {"command": "git init", "description": "Init"},
        "description": "Init",
        "permission_suggestions": [rule("git init *")],
        "decision_reason": "This command requires approval",
        "decision_reason_type": "other",
        "tool_use_id": "call_1",
    }
    got = forwarded(cbc_prompt("Bash", {"command": "git init", "description": "Init"}))
    assert got["request"] == claude
    assert list(got["request"]) == list(claude)


@pytest.mark.parametrize(
    "command",
    [
        "ls && touch x",  # compound: Claude checks each part
        "echo hi > out.txt",  # a redirection
        "echo $(id)",
        "touch 'a b'",  # quotes, expansions, globs: the bridge does not resolve paths
        "rm *.log",
        "touch ~/x",
        "cat /etc/passwd",  # a read outside: Claude suggests a Read rule of the directory
        "sed -i s/a/b/ f",
        "cp -r a b",
        "rm -rf build",  # a directory or a file: Claude stats it
        "rm --recursive build",
        "",
        "   ",
    ],
)
def test_bash_commands_the_bridge_cannot_suggest_for_get_none(command: str) -> None:
    got = claude_prompt_fields("Bash", {"command": command}, CWD)
    assert "permission_suggestions" not in got
    assert "blocked_path" not in got


def test_a_path_command_needs_the_working_directory() -> None:
    assert "permission_suggestions" not in claude_prompt_fields(
        "Bash", {"command": "touch x"}, None
    )
    got = claude_prompt_fields("Bash", {"command": "git push origin"}, None)
    assert got["permission_suggestions"] == [rule("git push *")]


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("git status --short", "git status"),
        ("docker compose up -d", "docker compose"),
        ("git", None),
        ("env FOO=1 ls", None),
        ("/usr/bin/sudo make install", None),
        ("git Status", None),
        ("git push-all now", "git push-all"),
        ("LANG=C git log", "git log"),
    ],
)
def test_command_prefix_is_claudes(command: str, prefix: str | None) -> None:
    assert command_prefix(command) == prefix


def test_bash_description_is_the_calls_else_the_command_cut_to_50() -> None:
    assert (
        claude_prompt_fields("Bash", {"command": "ls", "description": "List"}, CWD)["description"]
        == "List"
    )
    long = "echo " + "x" * 60
    got = claude_prompt_fields("Bash", {"command": long, "description": ""}, CWD)
    assert got["description"] == long[:49] + "\u2026"
    assert claude_prompt_fields("Bash", {"command": "ls"}, CWD)["description"] == "ls"


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit"])
def test_file_tools_suggest_accept_edits_and_an_outside_directory(tool: str) -> None:
    inside = claude_prompt_fields(tool, {"file_path": f"{CWD}/src/a.py"}, CWD)
    assert inside == {
        "display_name": tool,
        "description": "src/a.py",
        "permission_suggestions": [SUGGEST_MODE],
    }
    outside = claude_prompt_fields(tool, {"file_path": "/etc/app/conf"}, CWD)
    assert outside["permission_suggestions"] == [SUGGEST_MODE, dirs("/etc/app")]
    assert outside["decision_reason"] == "Path is outside allowed working directories"
    assert outside["decision_reason_type"] == "workingDir"
    assert outside["description"] == "/etc/app/conf"
    assert "blocked_path" not in outside  # Claude's file tools name no blocked path


def test_claudes_write_prompts() -> None:
    """What real Claude 2.1.220 sent for Write inside and outside the working directory
    (a probe scenario run with ``ccbridge scenario run --backend claude``, 2026-12-02)."""
    inside = {
        "subtype": "can_use_tool",
        "tool_name": "Write",
        "display_name": "Write",
        "input": {"file_path": f"{CWD}/src/new.txt", "content": "hello\n"},
        "description": "src/new.txt",
        "permission_suggestions": [SUGGEST_MODE],
        "tool_use_id": "call_1",
    }
    got = forwarded(cbc_prompt("Write", inside["input"]))["request"]
    assert got == inside
    assert list(got) == list(inside)
    outside = {
        **inside,
        "input": {"file_path": "/tmp/out/x.txt", "content": "hi\n"},
        "description": "/tmp/out/x.txt",
        "permission_suggestions": [SUGGEST_MODE, dirs("/tmp/out")],
        "decision_reason": "Path is outside allowed working directories",
        "decision_reason_type": "workingDir",
    }
    outside["tool_use_id"] = outside.pop("tool_use_id")
    got = forwarded(cbc_prompt("Write", outside["input"]))["request"]
    assert got == outside
    assert list(got) == list(outside)


def test_notebook_edit_uses_its_notebook_path() -> None:
    got = claude_prompt_fields("NotebookEdit", {"notebook_path": "n.ipynb"}, CWD)
    assert got == {"display_name": "NotebookEdit", "permission_suggestions": [SUGGEST_MODE]}


def test_mcp_and_web_search_suggest_a_rule_for_the_whole_tool() -> None:
    got = claude_prompt_fields("mcp__probe__get_weather", {"city": "Paris"}, CWD)
    assert got == {
        "display_name": "Get Weather",
        "permission_suggestions": [rule(None, "mcp__probe__get_weather")],
    }
    got = claude_prompt_fields("WebSearch", {"query": "x"}, None)
    assert got["permission_suggestions"] == [rule(None, "WebSearch")]
    assert got["display_name"] == "WebSearch"


def test_other_tools_get_only_a_display_name() -> None:
    assert claude_prompt_fields("Read", {"file_path": "/etc/x"}, CWD) == {
        "display_name": "Read",
        "description": "/etc/x",
    }
    assert claude_prompt_fields("WebFetch", {"url": "https://a"}, CWD) == {
        "display_name": "WebFetch"
    }
    assert claude_prompt_fields("Glob", {"pattern": "**/*.py"}, CWD)["description"] == "**/*.py"


def test_a_field_cbc_sent_is_kept() -> None:
    req = cbc_prompt(
        "Bash", {"command": "touch x"}, display_name="Shell", permission_suggestions=[]
    )
    got = forwarded(req)["request"]
    assert got["display_name"] == "Shell"
    assert got["permission_suggestions"] == []
    assert got["blocked_path"] == f"{CWD}/x"
    assert got["description"] == "touch x"


@pytest.mark.parametrize(
    "inp",
    [
        None,
        "touch x",
        3,
        [],
        {"command": 7},
        {"command": None},
        {"command": ["touch", "x"]},
        {"file_path": 3},
        {},
    ],
)
@pytest.mark.parametrize("tool", ["Bash", "Write", "Edit", "NotebookEdit", "mcp__s__t", "Read"])
def test_odd_inputs_never_crash_and_get_no_suggestions(tool: str, inp: Any) -> None:
    got = forwarded(cbc_prompt(tool, inp))
    body = got["request"]
    assert body["input"] == inp
    assert "blocked_path" not in body
    if not tool.startswith("mcp__"):
        assert "permission_suggestions" not in body


@pytest.mark.parametrize("tool", [None, 3, ""])
def test_no_tool_name_passes_the_frame_unchanged(tool: Any) -> None:
    req = cbc_prompt("x", {"command": "touch x"})
    req["request"]["tool_name"] = tool
    assert forwarded(req) == req


@given(st.text(max_size=40), st.one_of(st.none(), st.text(max_size=20)))
@settings(max_examples=200, deadline=None)
def test_any_command_gives_claude_shaped_fields(command: str, cwd: str | None) -> None:
    got = claude_prompt_fields("Bash", {"command": command}, cwd)
    for s in got.get("permission_suggestions", []):
        assert s["type"] in ("addRules", "addDirectories", "setMode")
    if "blocked_path" in got:
        assert isinstance(got["blocked_path"], str)
