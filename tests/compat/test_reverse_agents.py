"""``claude-to-cbc``: a foreground agent (``rev-foreground-agent``) and a deny with
``interrupt: true`` (``rev-denied-interrupt``) as a cbc client sees them (twins-reverse
subagent-foreground, permission-deny-interrupt: what raw cbc wrote is the expectation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compat.playbook import Count, Out, Playbook

from .session_support import drive
from .test_reverse import engine as reverse_engine

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins-reverse"


def _call(cid: str, background: bool | None) -> dict[str, Any]:
    inp: dict[str, Any] = {"description": "d", "prompt": "go", "subagent_type": "general"}
    if background is not None:
        inp["run_in_background"] = background
    return {
        "type": "assistant",
        "parent_tool_use_id": None,
        "message": {"content": [{"type": "tool_use", "id": cid, "name": "Agent", "input": inp}]},
    }


def _user(parent: str | None, *blocks: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "parent_tool_use_id": parent,
        "message": {"role": "user", "content": list(blocks)},
        **more,
    }


def _task(subtype: str, tid: str, **more: Any) -> dict[str, Any]:
    return {"type": "system", "subtype": subtype, "task_id": tid, **more}


TEXT = {"type": "text", "text": "go"}


def test_a_foreground_agent_loses_its_prompt_and_task_frames_and_gains_its_answer() -> None:
    pb = Playbook("rev-foreground-agent")
    pb.frame(_call("c1", background=False))
    assert pb.frame(_task("task_started", "t1", tool_use_id="c1"))[-1] == Count(
        "task-frame-dropped"
    )
    assert Out(_user("c1", TEXT)) not in pb.frame(_user("c1", TEXT))
    for sub in ("task_progress", "task_updated", "task_notification"):
        assert not [r for r in pb.frame(_task(sub, "t1")) if isinstance(r, Out)]
    sub_result = _user("c1", {"type": "tool_result", "tool_use_id": "s1", "content": "x"})
    assert pb.frame(sub_result) == [Out(sub_result)]
    answer = [{"type": "text", "text": "done it"}, {"type": "text", "text": "agentId: a1"}]
    result = _user(
        None,
        {"type": "tool_result", "tool_use_id": "c1", "content": answer},
        tool_use_result={"status": "completed", "content": answer[:1]},
    )
    reply, then = (r.frame for r in pb.frame(result) if isinstance(r, Out))
    assert then == result
    assert reply["type"] == "assistant"
    assert reply["parent_tool_use_id"] == "c1"
    assert reply["message"]["content"] == answer[:1]


def test_background_agents_and_other_tasks_pass() -> None:
    pb = Playbook("rev-foreground-agent")
    pb.frame(_call("c1", background=True))
    pb.frame(_call("c2", background=None))  # (Claude runs it in the background)
    for frame in (
        _task("task_started", "t1", tool_use_id="c1"),
        _task("task_started", "t2", tool_use_id="c2"),
        _task("task_notification", "t9"),
        _user("c1", TEXT),
        _user(None, {"type": "tool_result", "tool_use_id": "c1", "content": "launched"}),
    ):
        assert pb.frame(frame) == [Out(frame)]


REJECTED = {"type": "tool_result", "tool_use_id": "c1", "is_error": True, "content": "no"}
MARKER = {"type": "text", "text": "[Request interrupted by user for tool use]"}


def _bash(cid: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "parent_tool_use_id": None,
        "message": {"content": [{"type": "tool_use", "id": cid, "name": "Bash", "input": {}}]},
    }


def test_a_deny_that_interrupts_ends_the_turn_as_cbcs() -> None:
    pb = Playbook("rev-denied-interrupt", facts={"rev.denied_interrupts": {"c1": None}})
    pb.frame(_bash("c1"))
    assert pb.frame(_user(None, REJECTED)) == [Count("rejection-dropped")]
    assert pb.frame(_user(None, MARKER)) == [Count("marker-dropped")]
    claude = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "terminal_reason": "aborted_tools",
        "errors": ["[ede_diagnostic] …"],
    }
    [out] = [r.frame for r in pb.frame(claude) if isinstance(r, Out)]
    assert out == {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "errors": ["Permission denied for tool(s): Bash"],
    }
    nxt = {"type": "result", "subtype": "success", "is_error": False}
    assert pb.frame(nxt) == [Out(nxt)]  # the next turn is its own


def test_without_a_denial_rejections_and_markers_pass() -> None:
    pb = Playbook("rev-denied-interrupt")
    for frame in (_user(None, REJECTED), _user(None, MARKER)):
        assert pb.frame(frame) == [Out(frame)]


def _frames(path: Path, kinds: tuple[str, ...]) -> list[tuple[float, str, dict[str, Any]]]:
    recs = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [(r["t"], r["kind"], json.loads(r["text"])) for r in recs if r.get("kind") in kinds]


def _bridged(name: str) -> list[dict[str, Any]]:
    """Claude's side of the reverse twin through the profile, each client answer after the
    prompt it answers (the recorder stamps Claude's line after the bridge passed it)."""
    recs = _frames(TWINS / f"{name}.claude-bridged.jsonl", ("stdout", "client_in"))
    asked = {f.get("request_id"): t for t, k, f in recs if k == "stdout"}
    events = []
    for t, kind, f in recs:
        rid = f.get("response", {}).get("request_id") if kind == "client_in" else None
        at = max(t, asked.get(rid, 0.0) + 0.001)
        events.append(
            (at, "backend" if kind == "stdout" else "client", (json.dumps(f) + "\n").encode())
        )
    return drive(reverse_engine(), sorted(events, key=lambda e: e[0])).frames()


def _shape(frames: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for f in frames:
        if f.get("type") in ("user", "assistant"):
            content = f["message"]["content"]
            first = content[0].get("type") if isinstance(content, list) else "string"
            out.append((f["type"], f.get("parent_tool_use_id") is not None, first))
        elif f.get("type") == "result":
            out.append(("result", f["subtype"], tuple(f.get("errors") or ())))
        elif f.get("subtype", "").startswith("task_"):
            out.append((f["subtype"],))
    return out


def test_the_reverse_twins_are_cbcs() -> None:
    for name in ("subagent-foreground", "permission-deny-interrupt"):
        cbc = [f for _, _, f in _frames(TWINS / f"{name}.cbc.jsonl", ("stdout",))]
        assert _shape(_bridged(name)) == _shape(cbc), name


def test_an_answer_the_backend_wrote_as_a_frame_is_not_written_twice() -> None:
    pb = Playbook("rev-foreground-agent")
    pb.frame(_call("c1", background=False))
    reply = {
        "type": "assistant",
        "parent_tool_use_id": "c1",
        "message": {"content": [{"type": "text", "text": "done it"}]},
    }
    assert pb.frame(reply) == [Out(reply)]
    result = _user(None, {"type": "tool_result", "tool_use_id": "c1", "content": "done it"})
    assert pb.frame(result) == [Out(result)]
