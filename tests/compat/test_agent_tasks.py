"""``agent-tool-result`` and ``agent-task-frames``: a foreground sub-agent as the record and
the task Claude Code 2.1.220 reports (twins subagent-foreground)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given

from compat.playbook import Count, Out, Playbook
from compat.stages.agent_tasks import task_id

from .helpers import json_values
from .session_support import drive, full, line

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"
SID = "s-1"


def _call(cid: str, background: bool | None = False, **inp: Any) -> dict[str, Any]:
    given_inp: dict[str, Any] = {
        "description": f"agent {cid}",
        "prompt": f"do {cid}",
        "subagent_type": "general-purpose",
        **inp,
    }
    if background is not None:
        given_inp["run_in_background"] = background
    return {"type": "tool_use", "id": cid, "name": "Agent", "input": given_inp}


def _use(cid: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": inp}


def _assistant(
    *blocks: dict[str, Any], parent: str | None = None, usage: Any = None, model: str = "m-1"
) -> dict[str, Any]:
    message: dict[str, Any] = {"id": "m", "role": "assistant", "model": model}
    message["content"] = list(blocks)
    message["usage"] = usage or {"input_tokens": 10, "output_tokens": 2}
    return {"type": "assistant", "parent_tool_use_id": parent, "message": message}


def _result(call: str, text: str, parent: str | None = None, error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": call,
        "content": [{"type": "text", "text": text}],
    }
    if error:
        block["is_error"] = True
    return {"type": "user", "parent_tool_use_id": parent, "message": {"content": [block]}}


def _prompt(call: str) -> dict[str, Any]:
    content = [{"type": "text", "text": f"do {call}"}]
    return {"type": "user", "parent_tool_use_id": call, "message": {"content": content}}


def _outs(got: list[Any]) -> list[dict[str, Any]]:
    return [r.frame for r in got if isinstance(r, Out)]


def _subtypes(frames: list[dict[str, Any]]) -> list[str]:
    return [f.get("subtype") or f["type"] for f in frames]


# -- agent-tool-result ---------------------------------------------------------------------


def test_the_calls_result_carries_the_agents_record() -> None:
    pb = Playbook("agent-tool-result")
    pb.frame(_assistant(_call("c1")), at=1.0)
    pb.frame(_assistant(_use("t1", "Bash", command="ls"), _use("t2", "Read"), parent="c1"))
    pb.frame(_result("t1", "ok", parent="c1"))
    edit = _use("t3", "Edit", old_string="a\nb", new_string="a\nc\nd")
    pb.frame(_assistant(edit, _use("t4", "Grep"), _use("t5", "WebFetch"), parent="c1"))
    pb.frame(_result("t3", "edited", parent="c1"))
    usage = {"input_tokens": 20, "output_tokens": 5, "cache_read_input_tokens": 3}
    pb.frame(_assistant({"type": "text", "text": "found"}, parent="c1", usage=usage, model="m-2"))
    result = _result("c1", "found\n\n[Agent ID: agent-1234]")
    got = pb.frame(result, at=2.5)
    assert got[0] == Count("agent-record")
    [out] = _outs(got)
    record = out["tool_use_result"]
    assert list(record) == [
        "status",
        "prompt",
        "agentId",
        "agentType",
        "content",
        "resolvedModel",
        "totalDurationMs",
        "totalTokens",
        "totalToolUseCount",
        "usage",
        "toolStats",
    ]
    assert record["status"] == "completed"
    assert (record["prompt"], record["agentId"], record["agentType"]) == (
        "do c1",
        "agent-1234",
        "general-purpose",
    )
    assert record["content"] == [{"type": "text", "text": "found"}]
    assert record["resolvedModel"] == "m-2"
    assert (record["totalDurationMs"], record["totalTokens"], record["totalToolUseCount"]) == (
        1500,
        28,
        5,
    )
    assert record["usage"]["input_tokens"] == 20
    assert record["usage"]["cache_read_input_tokens"] == 3
    assert record["usage"]["service_tier"] == "standard"
    assert record["toolStats"] == {
        "readCount": 1,
        "searchCount": 1,
        "bashCount": 1,
        "editFileCount": 1,
        "linesAdded": 2,
        "linesRemoved": 1,
        "otherToolCount": 1,
    }
    assert out["message"] == result["message"]  # the text the model reads is cbc's


def test_no_record_for_an_error_a_background_agent_or_a_result_that_has_one() -> None:
    pb = Playbook("agent-tool-result")
    pb.frame(_assistant(_call("c1"), _call("c2", background=True), _call("c3")))
    for frame in (
        _result("c1", "denied", error=True),
        _result("c2", "Spawned successfully. agent_id: agent-9"),
        {**_result("c3", "x"), "tool_use_result": "given"},
        _result("c1", "again"),  # (forgotten at its first result)
    ):
        assert pb.frame(frame) == [Out(frame)]
    assert pb.counts == {}


def test_an_agent_that_wrote_nothing_and_a_result_without_cbcs_id() -> None:
    pb = Playbook("agent-tool-result")
    pb.frame(_assistant(_call("c1", subagent_type=7)))
    [out] = _outs(pb.frame(_result("c1", "plain answer")))
    record = out["tool_use_result"]
    assert "agentId" not in record
    assert "resolvedModel" not in record
    assert record["agentType"] == "general-purpose"
    assert record["content"] == [{"type": "text", "text": "plain answer"}]
    assert (record["totalTokens"], record["totalToolUseCount"]) == (0, 0)


# -- agent-task-frames ---------------------------------------------------------------------


def _tasks() -> Playbook:
    return Playbook("agent-task-frames", facts={"session_id": SID})


def test_a_foreground_agent_is_a_local_agent_task_as_claude_writes_it() -> None:
    pb = _tasks()
    call = _assistant(_call("c1"))
    assert pb.frame(call, at=1.0) == [Out(call)]
    prompt = _prompt("c1")
    started, first = _outs(pb.frame(prompt, at=1.1))
    tid = task_id("c1")
    assert re.fullmatch(r"a[0-9a-f]{16}", tid)
    assert started == {
        "type": "system",
        "subtype": "task_started",
        "task_id": tid,
        "tool_use_id": "c1",
        "description": "agent c1",
        "subagent_type": "general-purpose",
        "task_type": "local_agent",
        "prompt": "do c1",
        "uuid": started["uuid"],
        "session_id": SID,
    }
    assert first == prompt
    work = _assistant(_use("t1", "Bash", description="List files"), _use("t2", "Read"), parent="c1")
    p1, p2, frame = _outs(pb.frame(work, at=1.5))
    assert frame == work
    # (Claude's keys; task-fields, after this rule, puts them in Claude's order)
    assert [set(p) for p in (p1, p2)] == [
        {
            "type",
            "subtype",
            "task_id",
            "tool_use_id",
            "description",
            "subagent_type",
            "usage",
            "last_tool_name",
            "uuid",
            "session_id",
        }
    ] * 2
    assert (p1["description"], p1["last_tool_name"], p1["usage"]) == (
        "Running List files",
        "Bash",
        {"total_tokens": 12, "tool_uses": 1, "duration_ms": 500},
    )
    assert (p2["description"], p2["usage"]["tool_uses"]) == ("Running Read", 2)
    assert _outs(pb.frame(work)) == [work]  # (a call reported once)
    result = _result("c1", "all done\n\n[Agent ID: agent-1]")
    result["tool_use_result"] = {"totalTokens": 40, "totalToolUseCount": 2, "totalDurationMs": 900}
    updated, note, out = _outs(pb.frame(result, at=2.0))
    assert out == result
    assert updated["patch"] == {"status": "completed", "end_time": pb.ctx.wall_ms()}
    assert {k: note[k] for k in ("task_id", "tool_use_id", "status", "output_file")} == {
        "task_id": tid,
        "tool_use_id": "c1",
        "status": "completed",
        "output_file": "",
    }
    assert note["summary"] == "all done"
    assert note["usage"] == {"total_tokens": 40, "tool_uses": 2, "duration_ms": 900}
    assert pb.frame(_result("c1", "late")) == [Out(_result("c1", "late"))]


def test_an_agent_with_no_frame_of_its_own_starts_and_ends_at_its_result() -> None:
    pb = _tasks()
    pb.frame(_assistant(_call("c1")), at=0.0)
    got = _outs(pb.frame(_result("c1", "quick"), at=0.25))
    assert _subtypes(got) == ["task_started", "task_updated", "task_notification", "user"]
    assert got[2]["usage"] == {"total_tokens": 0, "tool_uses": 0, "duration_ms": 250}


def test_errors_interrupts_and_denials() -> None:
    pb = _tasks()
    pb.frame(_assistant(_call("c1"), _call("c2"), _call("c3")))
    pb.frame(_prompt("c1"))
    pb.frame(_prompt("c2"))
    failed = _outs(pb.frame(_result("c1", "API error", error=True)))
    assert [failed[0]["patch"]["status"], failed[1]["status"], failed[1]["summary"]] == [
        "failed",
        "failed",
        "API error",
    ]
    stopped = _outs(
        pb.frame(_result("c2", "[Request interrupted by user for tool use]", error=True))
    )
    assert [stopped[0]["patch"]["status"], stopped[1]["status"], stopped[1]["summary"]] == [
        "killed",
        "stopped",
        "agent c2",
    ]
    denied = _result("c3", "Permission denied", error=True)  # its agent never ran
    assert pb.frame(denied) == [Out(denied)]


def test_a_turn_or_the_backend_ending_with_an_agent_running_stops_it() -> None:
    pb = _tasks()
    pb.frame(_assistant(_call("c1"), _call("c2")))
    pb.frame(_prompt("c1"))  # c2's agent never started: no task to end
    end = {"type": "result", "subtype": "error_during_execution"}
    got = _outs(pb.frame(end))
    assert _subtypes(got) == ["task_updated", "task_notification", "error_during_execution"]
    assert (got[0]["patch"]["status"], got[1]["status"]) == ("killed", "stopped")
    assert pb.frame(end) == [Out(end)]  # once
    pb.frame(_assistant(_call("c3")))
    pb.frame(_prompt("c3"))
    assert _subtypes(_outs(pb.backend_exit(1))) == ["task_updated", "task_notification"]
    assert _outs(pb.backend_exit(1)) == []


def test_parallel_agents_are_tasks_of_their_own() -> None:
    pb = _tasks()
    pb.frame(_assistant(_call("c1"), _call("c2")))
    a = _outs(pb.frame(_prompt("c1")))[0]
    b = _outs(pb.frame(_prompt("c2")))[0]
    assert a["task_id"] != b["task_id"]
    p = _outs(pb.frame(_assistant(_use("t1", "Bash"), parent="c2")))[0]
    assert (p["task_id"], p["tool_use_id"]) == (b["task_id"], "c2")
    got = _outs(pb.frame(_result("c1", "one")))
    assert got[1]["task_id"] == a["task_id"]
    assert _outs(pb.frame(_result("c2", "two")))[1]["task_id"] == b["task_id"]


def test_background_agents_nested_calls_and_agents_the_cli_reports_are_left_alone() -> None:
    pb = _tasks()
    frames = [
        _assistant(_call("c1", background=True)),
        _assistant(_call("c2"), parent="c0"),  # a sub-agent's own agent call
        _assistant(_call("c3")),
        {"type": "system", "subtype": "task_started", "task_id": "t3", "tool_use_id": "c3"},
        _prompt("c1"),
        _prompt("c2"),
        _prompt("c3"),
        _result("c1", "Spawned successfully."),
        _result("c3", "done"),
    ]
    for frame in frames:
        assert pb.frame(frame) == [Out(frame)]
    assert pb.counts == {}


@given(json_values(text=4))
def test_any_content_is_taken_without_error(content: Any) -> None:
    """A frame of any content (ids and inputs of any JSON type) is taken, never raised on."""
    for rule in ("agent-tool-result", "agent-task-frames"):
        pb = Playbook(rule, facts={"session_id": SID})
        pb.frame(_assistant(_call("c1"), {"type": "tool_use", "id": content, "input": content}))
        pb.frame(_assistant({"type": "tool_use", "name": "Agent", "id": "c2", "input": content}))
        odd = {"type": "tool_result", "tool_use_id": "c1", "content": content, "is_error": content}
        for frame in (
            {"type": "assistant", "parent_tool_use_id": "c1", "message": {"content": content}},
            {"type": "assistant", "parent_tool_use_id": "c1", "message": content},
            _assistant(
                {"type": "tool_use", "id": "t", "input": content}, parent="c1", usage=content
            ),
            {"type": "user", "parent_tool_use_id": "c1", "message": {"content": [odd]}},
            {"type": "user", "parent_tool_use_id": content, "message": {"content": content}},
            {
                "type": "user",
                "parent_tool_use_id": None,
                "tool_use_result": content,
                "message": {"content": [odd]},
            },
            {"type": "system", "subtype": "task_started", "tool_use_id": content},
            {"type": "result", "subtype": "success", "usage": content},
        ):
            pb.frame(frame)
        pb.backend_exit(0)


# -- through the profile: the twins ---------------------------------------------------------


def _frames(path: Path, kind: str) -> list[tuple[float, dict[str, Any]]]:
    recs = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    return [(r["t"], json.loads(r["text"])) for r in recs if r.get("kind") == kind]


def _twin_run(until_exit: bool = True) -> list[dict[str, Any]]:
    raw = TWINS / "subagent-foreground.cbc-raw.jsonl"
    events = [(t, "backend", line(f)) for t, f in _frames(raw, "stdout")]
    events += [(t, "client", line(f)) for t, f in _frames(raw, "stdin")]
    return drive(full(), sorted(events, key=lambda e: e[0])).frames()


def _task_frames(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        f
        for f in frames
        if f.get("type") == "system" and str(f.get("subtype")).startswith(("task_", "background"))
    ]


def _claude() -> list[dict[str, Any]]:
    return [f for _, f in _frames(TWINS / "subagent-foreground.claude.jsonl", "stdout")]


def _around(frames: list[dict[str, Any]]) -> list[str]:
    """The sequence of the turn's frames: task frames by subtype, messages by type and thread."""
    out = []
    for f in frames:
        if f.get("type") == "system" and str(f.get("subtype")).startswith("task_"):
            out.append(f["subtype"])
        elif f.get("type") in ("user", "assistant"):
            out.append(f"{f['type']}{'-sub' if f.get('parent_tool_use_id') else ''}")
    return out


def test_the_twins_foreground_agent_is_claudes_task() -> None:
    got, claude = _twin_run(), _claude()
    assert _around(got) == _around(claude)
    mine, theirs = _task_frames(got), _task_frames(claude)
    assert [f["subtype"] for f in mine] == [f["subtype"] for f in theirs]
    for a, b in zip(mine, theirs, strict=True):
        assert set(a) == set(b), a["subtype"]
    same = ("description", "subagent_type", "task_type", "prompt", "last_tool_name", "status")
    for a, b in zip(mine, theirs, strict=True):
        assert {k: a[k] for k in same if k in b} == {k: b[k] for k in same if k in b}
    assert mine[-1]["summary"] == theirs[-1]["summary"]
    assert re.fullmatch(r"a[0-9a-f]{16}", mine[0]["task_id"])
    assert len({f["task_id"] for f in mine}) == 1


def test_the_twins_agent_result_carries_claudes_record() -> None:
    def record(frames: list[dict[str, Any]]) -> dict[str, Any]:
        return next(f["tool_use_result"] for f in frames if f.get("tool_use_result"))

    mine, theirs = record(_twin_run()), record(_claude())
    assert list(mine) == list(theirs)
    assert list(mine["toolStats"]) == list(theirs["toolStats"])
    for key in ("status", "prompt", "agentType", "content", "totalToolUseCount", "toolStats"):
        assert mine[key] == theirs[key], key
    assert mine["agentId"].startswith("agent-")  # cbc's: the one its SendMessage takes


def _stopped_twin(cut: str) -> list[dict[str, Any]]:
    """The twin's raw cbc, cut before its first frame holding ``cut``, then cbc exits."""
    raw = TWINS / "subagent-foreground.cbc-raw.jsonl"
    out = _frames(raw, "stdout")
    stop = next(i for i, (_, f) in enumerate(out) if cut in json.dumps(f))
    events = [(t, "backend", line(f)) for t, f in out[:stop]]
    events += [(t, "client", line(f)) for t, f in _frames(raw, "stdin")]
    events.append((out[stop][0], "exit", b"1"))
    return drive(full(), sorted(events, key=lambda e: e[0]), until=100.0).frames()


def test_cbc_exiting_mid_agent_ends_its_task_once() -> None:
    got = _task_frames(_stopped_twin("sub-agent report"))
    assert [f["subtype"] for f in got] == [
        "task_started",
        "task_progress",
        "task_updated",
        "task_notification",
    ]
    assert (got[2]["patch"]["status"], got[3]["status"]) == ("killed", "stopped")
    assert got[3]["summary"] == "Foreground agent"
    assert got[3]["output_file"] == ""


def test_an_interrupted_turn_ends_the_agents_task_before_its_result() -> None:
    raw = TWINS / "subagent-foreground.cbc-raw.jsonl"
    out = _frames(raw, "stdout")
    stop = next(i for i, (_, f) in enumerate(out) if "sub-agent report" in json.dumps(f))
    t = out[stop][0]
    sid = out[stop][1]["session_id"]
    end = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "session_id": sid,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    events = [(tt, "backend", line(f)) for tt, f in out[:stop]]
    events += [(tt, "client", line(f)) for tt, f in _frames(raw, "stdin")]
    events.append((t, "backend", line(end)))
    frames = drive(full(), sorted(events, key=lambda e: e[0])).frames()
    kinds = [f.get("subtype") or f["type"] for f in frames]
    at = kinds.index("task_updated")
    assert kinds[at : at + 2] == ["task_updated", "task_notification"]
    assert "error_during_execution" in kinds[at + 2 :]
    assert kinds.count("task_notification") == 1
