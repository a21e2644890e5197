"""``plan-exit-status``: an allowed ``ExitPlanMode`` is followed by Claude's ``system/status``
with the mode the session returns to (twins plan-mode, plan-mode-denied)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compat.playbook import Count, Out, Playbook
from compat.session import ToolUse

from .session_support import drive, full
from .test_deny_interrupt import _twin_events

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"


def _result(call: str, is_error: bool = False, parent: str | None = None) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call, "content": "ok", "is_error": is_error}
    return {"type": "user", "parent_tool_use_id": parent, "message": {"content": [block]}}


def _playbook() -> Playbook:
    uses = {
        "p1": ToolUse("p1", "ExitPlanMode", {}),
        "b1": ToolUse("b1", "Bash", {"command": "true"}),
    }
    return Playbook("plan-exit-status", facts={"tool_uses": uses, "session_id": "s"})


def test_an_allowed_exit_says_the_mode_the_session_returns_to() -> None:
    pb = _playbook()
    init = {"type": "system", "subtype": "init", "permissionMode": "acceptEdits"}
    assert pb.frame(init) == [Out(init)]
    pb.frame({**init, "permissionMode": "plan"})  # (entered plan mode later)
    got = pb.frame(_result("p1"))
    assert got[0] == Count("status")
    status, result = (r.frame for r in got if isinstance(r, Out))
    assert result == _result("p1")
    assert {k: status[k] for k in ("type", "subtype", "status", "permissionMode")} == {
        "type": "system",
        "subtype": "status",
        "status": None,
        "permissionMode": "acceptEdits",
    }
    assert status["session_id"] == "s"


def test_a_denied_exit_another_tool_and_a_sub_agents_result_pass() -> None:
    pb = _playbook()
    for frame in (_result("p1", is_error=True), _result("b1"), _result("p1", parent="a1")):
        assert pb.frame(frame) == [Out(frame)]


def _modes(frames: list[dict[str, Any]]) -> list[Any]:
    return [
        f.get("permissionMode")
        for f in frames
        if f.get("type") == "system" and f.get("subtype") == "status"
    ]


def _twins(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the bridged twin through the profile, a client asking for prompts; Claude's)."""
    eng = full()
    eng.state.stdio_permissions = True
    got = drive(eng, _twin_events(TWINS / f"{name}.cbc-bridged.jsonl")).frames()
    claude = [
        json.loads(json.loads(line)["text"])
        for line in (TWINS / f"{name}.claude.jsonl").read_text().splitlines()[1:]
        if json.loads(line).get("kind") == "stdout"
    ]
    return got, claude


def test_the_twins_say_it_where_claude_does() -> None:
    for name, want in (("plan-mode", ["default"]), ("plan-mode-denied", [])):
        got, claude = _twins(name)
        assert _modes(got) == _modes(claude) == want, name


_REASON = ("permission_suggestions", "decision_reason", "decision_reason_type")


def _write_prompts(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reason fields of each Write prompt."""
    return [
        {k: f["request"][k] for k in _REASON if k in f["request"]}
        for f in frames
        if f.get("type") == "control_request" and f["request"].get("tool_name") == "Write"
    ]


def test_a_prompt_in_plan_mode_is_asked_because_of_the_mode() -> None:
    """permission-routing follows the session's mode: a Write asked in plan mode (the
    denied plan) carries Claude's ``decision_reason_type: mode`` and no suggestions; one
    asked after an allowed exit the default mode's ``acceptEdits`` suggestion."""
    for name in ("plan-mode", "plan-mode-denied"):
        got, claude = _twins(name)
        assert _write_prompts(got) == _write_prompts(claude), name
        assert len(_write_prompts(got)) == 1, name


def test_the_mode_a_status_frame_says_is_followed() -> None:
    pb = Playbook("permission-routing", facts={"stdio_permissions": True, "cwd": "/w"})
    pb.frame({"type": "system", "subtype": "init", "permissionMode": "plan"})
    ask = {
        "type": "control_request",
        "request_id": "r1",
        "request": {
            "subtype": "can_use_tool",
            "tool_name": "Edit",
            "input": {"file_path": "/w/a", "old_string": "x", "new_string": "y"},
            "tool_use_id": "t1",
        },
    }
    [planned] = [r.frame for r in pb.frame(ask) if isinstance(r, Out)]
    assert planned["request"]["decision_reason_type"] == "mode"
    assert "permission_suggestions" not in planned["request"]
    pb.frame({"type": "system", "subtype": "status", "status": None, "permissionMode": "default"})
    [default] = [r.frame for r in pb.frame({**ask, "request_id": "r2"}) if isinstance(r, Out)]
    assert "decision_reason_type" not in default["request"]
    assert default["request"]["permission_suggestions"][0]["mode"] == "acceptEdits"
    pb.frame({"type": "system", "subtype": "status", "status": "requesting"})  # no mode: kept
    [still] = [r.frame for r in pb.frame({**ask, "request_id": "r3"}) if isinstance(r, Out)]
    assert "decision_reason_type" not in still["request"]


# -- exit-plan-mode ----------------------------------------------------------------------------

PLAN_PATH = "/home/u/.codebuddy/plans/brave-plan-x1.md"


def _call(name: str, cid: str, **inp: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "parent_tool_use_id": None,
        "message": {"content": [{"type": "tool_use", "id": cid, "name": name, "input": inp}]},
    }


def _prompt(**inp: Any) -> dict[str, Any]:
    request = {"subtype": "can_use_tool", "tool_name": "ExitPlanMode", "input": inp}
    return {
        "type": "control_request",
        "request_id": "p1",
        "request": {**request, "tool_use_id": "e1"},
    }


def _exits() -> Playbook:
    return Playbook(
        "exit-plan-mode", facts={"tool_uses": {"e1": ToolUse("e1", "ExitPlanMode", {})}}
    )


def test_the_plan_the_session_wrote_is_in_the_prompt_the_call_and_the_record() -> None:
    pb = _exits()
    pb.frame(_call("Write", "w1", file_path=PLAN_PATH, content="# Plan\n\n1. a\n"))
    pb.frame(_call("Edit", "w2", file_path=PLAN_PATH, old_string="1. a", new_string="1. b"))
    want = {"plan": "# Plan\n\n1. b\n", "planFilePath": PLAN_PATH}
    [prompt] = [r.frame for r in pb.frame(_prompt()) if isinstance(r, Out)]
    assert prompt["request"]["input"] == want
    assert prompt["request"]["requires_user_interaction"] is True
    [call] = [r.frame for r in pb.frame(_call("ExitPlanMode", "e1")) if isinstance(r, Out)]
    assert call["message"]["content"][0]["input"] == want
    meta = {"rawResponse": {"planFilePath": PLAN_PATH, "plan": "# Plan\n\n1. b\n"}}
    block = {"type": "tool_result", "tool_use_id": "e1", "content": "ok", "_meta": meta}
    result = {"type": "user", "parent_tool_use_id": None, "message": {"content": [block]}}
    [got] = [r.frame for r in pb.frame(result) if isinstance(r, Out)]
    assert got["tool_use_result"] == {
        "plan": "# Plan\n\n1. b\n",
        "isAgent": False,
        "filePath": PLAN_PATH,
    }


def test_no_plan_written_leaves_the_input_and_other_writes_are_not_plans() -> None:
    pb = _exits()
    pb.frame(_call("Write", "w1", file_path="/w/notes.md", content="x"))
    [prompt] = [r.frame for r in pb.frame(_prompt()) if isinstance(r, Out)]
    assert prompt["request"]["input"] == {}
    assert prompt["request"]["requires_user_interaction"] is True
    assert pb.frame(_call("ExitPlanMode", "e2")) == [Out(_call("ExitPlanMode", "e2"))]


def test_cbc_is_given_back_the_input_it_asked_with() -> None:
    """cbc's ExitPlanMode takes no key (additionalProperties: false): the allow the client
    sends with the input it was shown goes to cbc without the plan."""
    eng = full()
    eng.state.stdio_permissions = True
    events = _twin_events(TWINS / "plan-mode.cbc-bridged.jsonl")
    run = drive(eng, events)
    sent = [f for f in run.to_backend() if f.get("response", {}).get("response", {}).get("allowed")]
    assert sent[0]["response"]["response"]["updatedInput"] == {}
    shown = [f for f in run.frames() if f.get("type") == "control_request"]
    assert set(shown[0]["request"]["input"]) == {"plan", "planFilePath"}
