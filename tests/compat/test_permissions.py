"""Permission prompts (compat/stages/permissions.py): ``permission-routing``,
``permission-reply``, ``permission-cancel``; cbc 2.163.0's ``mockoai_can-use-tool-*``
against Claude Code 2.1.220's ``mockapi_permission-prompt-stdio_*``."""

from __future__ import annotations

from typing import Any

import pytest

from compat import controlkit as ck
from compat.stages.permissions import claude_denial

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
    assert run.frames() == [{k: v for k, v in req.items() if k != "_meta"}]
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


def test_an_allows_permission_updates_cbc_cannot_take_are_named_in_a_warning() -> None:
    """The SDKs' "always allow" (updatedPermissions on an allow: rules, a mode) has no field
    in cbc's answer: the allow goes through, and one warning per answer names what was not
    applied (an empty list says nothing)."""
    req = can_use_tool(ALLOW)
    rid = req["request_id"]
    updates = [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash"}],
            "behavior": "allow",
            "destination": "session",
        },
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
    ]
    eng = engine(stdio=True)
    run = replay(
        eng,
        extra=[
            (0.0, "backend", req),
            (0.1, "client", answer(rid, {"behavior": "allow", "updatedPermissions": updates})),
        ],
    )
    (reply,) = run.frames("backend")
    assert reply["response"]["response"]["allowed"] is True
    (warning,) = [g for g in run.logs if g.level == "warning"]
    assert warning.rule == "permission-reply"
    assert "addRules, setMode" in warning.message
    counts = eng.statistics()["rules"]["permission-reply"]
    assert counts["permission-updates-unapplied"] == 2
