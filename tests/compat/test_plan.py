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


def test_the_twins_say_it_where_claude_does() -> None:
    for name, want in (("plan-mode", ["default"]), ("plan-mode-denied", [])):
        eng = full()
        eng.state.stdio_permissions = True
        got = drive(eng, _twin_events(TWINS / f"{name}.cbc-bridged.jsonl")).frames()
        claude = [
            json.loads(json.loads(line)["text"])
            for line in (TWINS / f"{name}.claude.jsonl").read_text().splitlines()[1:]
            if json.loads(line).get("kind") == "stdout"
        ]
        assert _modes(got) == _modes(claude) == want, name
