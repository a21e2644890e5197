"""``task-tool-results``: the Task tools' results carry Claude's task record, read from
cbc's private ``_meta.rawResponse`` (twins todo-tools: the records Claude wrote for the same
calls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from compat.capture import parse
from compat.playbook import Out, Playbook
from compat.session import ToolUse

from .session_support import drive, full

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"


def _records(path: Path, kind: str) -> list[tuple[float, dict[str, Any]]]:
    cap = parse(path.read_bytes().splitlines())
    return [(r.t, json.loads(r.data)) for r in cap.records if r.kind == kind]


def _line(frame: dict[str, Any]) -> bytes:
    return (json.dumps(frame) + "\n").encode()


def test_the_task_tools_records_are_claudes() -> None:
    raw = TWINS / "todo-tools.cbc-raw.jsonl"
    events = [(t, "backend", _line(f)) for t, f in _records(raw, "stdout")]
    events += [(t, "client", _line(f)) for t, f in _records(raw, "stdin")]
    out = drive(full(), sorted(events, key=lambda e: e[0])).frames()
    claude = [f for _, f in _records(TWINS / "todo-tools.claude.jsonl", "stdout")]
    got = [f["tool_use_result"] for f in out if isinstance(f.get("tool_use_result"), dict)]
    want = [f["tool_use_result"] for f in claude if isinstance(f.get("tool_use_result"), dict)]
    assert got == want
    assert len(got) == 5  # TaskCreate, TaskUpdate, TaskList, TaskGet, TaskUpdate


def _result(use_id: str, raw: Any) -> dict[str, Any]:
    block = {
        "type": "tool_result",
        "tool_use_id": use_id,
        "content": "ok",
        "_meta": {"rawResponse": raw},
    }
    return {
        "type": "user",
        "parent_tool_use_id": None,
        "message": {"role": "user", "content": [block]},
    }


def test_an_update_of_a_task_never_seen_has_no_status_change() -> None:
    uses = {"u1": ToolUse("u1", "TaskUpdate", {"taskId": "7", "status": "completed"})}
    pb = Playbook("task-tool-results", facts={"tool_uses": uses})
    out = pb.frame(_result("u1", {"task": {"id": "7", "status": "completed"}}))
    [done] = [o for o in out if isinstance(o, Out)]
    assert done.frame["tool_use_result"] == {
        "success": True,
        "taskId": "7",
        "updatedFields": ["status"],
    }


@given(
    st.recursive(
        st.none() | st.booleans() | st.text(max_size=4) | st.integers(),
        lambda c: (
            st.lists(c, max_size=3)
            | st.dictionaries(
                st.sampled_from(["task", "tasks", "id", "status", "subject"]), c, max_size=4
            )
        ),
        max_leaves=10,
    )
)
def test_any_raw_response_is_taken_without_error(raw: Any) -> None:
    uses = {
        n: ToolUse(n, n, {"taskId": "1", "status": "x"})
        for n in ("TaskCreate", "TaskUpdate", "TaskList", "TaskGet")
    }
    pb = Playbook("task-tool-results", facts={"tool_uses": uses})
    for name in uses:
        assert pb.frame(_result(name, raw))
