"""``--target``: the rules write Claude Code 2.1.332's shapes when asked, 2.1.220's by default.

The cbc side of every replay is a real cbc 2.163.0 session: the bridged twins of
``captures/twins/`` (what the client sent, what cbc wrote, in time order). The 2.1.332 side
is checked against what the real Claude Code 2.1.332 wrote for the same scenario
(``captures/twins-2.1.332/*.claude.jsonl``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest

from compat import target as tgt
from compat.capture import parse
from compat.engine import Engine, Write
from compat.profiles import build, parse_rule_settings
from compat.stage import Env

REPO = Path(__file__).resolve().parents[2]
TWINS = REPO / "captures" / "twins"
TWINS_332 = REPO / "captures" / "twins-2.1.332"
TASK_FRAMES = ("task_started", "task_progress", "task_updated", "task_notification")


def env(version: str) -> Env:
    counter = itertools.count(1)
    return Env(
        new_uuid=lambda: f"00000000-0000-4000-8000-{next(counter):012d}",
        epoch_ms=1_796_000_000_000,
        target_version=version,
    )


def out(cmds: Iterable[object]) -> list[dict[str, Any]]:
    data = b"".join(c.data for c in cmds if isinstance(c, Write) and c.side == "client")
    return [json.loads(x) for x in data.splitlines() if x.strip()]


def bridged(name: str, version: str, rules: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The client's view of twin ``name``'s cbc session replayed under ``version``."""
    up, down = build("cbc-to-claude", parse_rule_settings(list(rules)))
    eng = Engine(up, down, env(version), strict=True)
    cap = parse((TWINS / f"{name}.cbc-bridged.jsonl").read_bytes().splitlines())
    events: list[tuple[float, int, Literal["client", "backend", "exit"], bytes]] = []
    for n, r in enumerate(cap.records):
        if r.kind in ("stdout", "client_in"):
            events.append((r.t, n, "backend" if r.kind == "stdout" else "client", r.data))
        elif r.kind == "exit":
            events.append((r.t, n, "exit", b""))
    got: list[dict[str, Any]] = []
    for t, _, side, data in sorted(events):
        deadline = eng.next_deadline()
        while deadline is not None and deadline <= t:
            got += out(eng.advance(deadline))
            deadline = eng.next_deadline()
        if side == "exit":
            got += out(eng.backend_exited(0, t))
        else:
            got += out(eng.feed(side, data + b"\n", t))
    return got


def claude(name: str) -> list[dict[str, Any]]:
    cap = parse((TWINS_332 / f"{name}.claude.jsonl").read_bytes().splitlines())
    return [json.loads(r.data) for r in cap.lines("stdout")]


def kind(f: dict[str, Any]) -> str:
    t = f.get("type")
    return f"{t}/{f.get('subtype')}" if t == "system" else str(t)


def of(frames: list[dict[str, Any]], k: str) -> list[dict[str, Any]]:
    return [f for f in frames if kind(f) == k]


def lifecycle(frames: list[dict[str, Any]]) -> list[str]:
    """The task frames and snapshots in order (progress left out)."""
    keep = ("system/task_started", "system/task_updated", "system/task_notification")
    return [
        kind(f).split("/")[1]
        for f in frames
        if kind(f) in keep or kind(f) == "system/background_tasks_changed"
    ]


def initialize_reply(frames: list[dict[str, Any]]) -> dict[str, Any]:
    for f in frames:
        r = f.get("response")
        if f.get("type") == "control_response" and isinstance(r, dict):
            body = r.get("response")
            if isinstance(body, dict) and "commands" in body:
                return r
    raise AssertionError("no initialize reply")


# -- the setting -----------------------------------------------------------------------------


def test_resolve_names_the_default_the_known_and_refuses_the_rest() -> None:
    assert tgt.resolve(None) is tgt.DEFAULT
    assert tgt.DEFAULT.version == "2.1.220"
    assert tgt.resolve("2.1.332") is tgt.V332
    with pytest.raises(tgt.TargetError, match=r"'2.1.300'.*known: 2.1.220, 2.1.332"):
        tgt.resolve("2.1.300")


def test_run_id_has_claudes_shape_and_is_one_per_task() -> None:
    a, b = tgt.run_id("bcc99s0al"), tgt.run_id("other")
    assert a == tgt.run_id("bcc99s0al")
    assert a != b
    head, _, tail = a.partition("-")
    assert len(head) == 9
    assert head.isalnum()
    assert len(tail) == 8
    assert all(c in "0123456789abcdef" for c in tail)


# -- 2.1.220 stays as it was; 2.1.332 writes the newer shapes --------------------------------


@pytest.mark.parametrize("name", ["bg-bash", "bg-agent", "interrupt-midturn-workflow"])
def test_task_frames_carry_run_id_and_the_new_started_keys_only_under_332(name: str) -> None:
    old, new = bridged(name, "2.1.220"), bridged(name, "2.1.332")
    for f in old:
        assert "run_id" not in f
        assert "is_backgrounded" not in f
        assert "spawn_depth" not in f
    runs: dict[str, set[str]] = {}
    for k in TASK_FRAMES:
        for f in of(new, f"system/{k}"):
            assert list(f)[list(f).index("task_id") + 1] == "run_id", f  # after task_id
            runs.setdefault(f["task_id"], set()).add(f["run_id"])
    for snap in of(new, "system/background_tasks_changed"):
        for e in snap["tasks"]:
            runs.setdefault(e["task_id"], set()).add(e["run_id"])
    assert runs
    assert all(len(r) == 1 for r in runs.values())
    started = of(new, "system/task_started")
    # the keys Claude 2.1.332 writes on the same scenario's task_started, in its order
    theirs = of(claude(name), "system/task_started")[0]
    assert started
    for f in started:
        assert f.get("is_backgrounded") is (True if f["task_type"] != "local_workflow" else None)
        assert ("spawn_depth" in f) == (f["task_type"] == "local_agent")
        assert f["task_type"] == theirs["task_type"]
        new_keys = {"run_id", "is_backgrounded", "spawn_depth"}
        assert set(f) & new_keys == set(theirs) & new_keys
        mine = [k for k in f if k in theirs]
        assert mine == [k for k in theirs if k in f]  # in Claude's order


@pytest.mark.parametrize("name", ["bg-bash", "bg-agent", "stop-task-control"])
def test_snapshot_after_a_tasks_end_follows_its_notification_under_332(name: str) -> None:
    old, new = bridged(name, "2.1.220"), bridged(name, "2.1.332")
    end_old = lifecycle(old)[lifecycle(old).index("task_started") + 1 :]
    end_new = lifecycle(new)[lifecycle(new).index("task_started") + 1 :]
    if "task_updated" not in end_old:
        pytest.skip("cbc ended no task in this session")
    # 2.1.220: snapshot, terminal update, notification; 2.1.332: update, notification, snapshot
    i = end_old.index("task_updated")
    before = ["background_tasks_changed", "task_updated", "task_notification"]
    assert end_old[i - 1 : i + 2] == before
    j = end_new.index("task_updated")
    assert end_new[j : j + 3] == ["task_updated", "task_notification", "background_tasks_changed"]
    theirs = lifecycle(claude(name))
    k = theirs.index("task_updated")
    assert theirs[k : k + 3] == end_new[j : j + 3]  # what Claude 2.1.332 wrote
    assert len(of(new, "system/background_tasks_changed")) == len(
        of(old, "system/background_tasks_changed")
    )


def test_agent_snapshot_entries_name_the_subagent_type_under_332() -> None:
    old, new = bridged("bg-agent", "2.1.220"), bridged("bg-agent", "2.1.332")
    first = next(s for s in of(new, "system/background_tasks_changed") if s["tasks"])
    snaps = of(claude("bg-agent"), "system/background_tasks_changed")
    theirs = next(s for s in snaps if s["tasks"])
    assert list(first["tasks"][0]) == list(theirs["tasks"][0])
    assert first["tasks"][0]["subagent_type"] == "general-purpose"
    old_first = next(s for s in of(old, "system/background_tasks_changed") if s["tasks"])
    assert list(old_first["tasks"][0]) == ["task_id", "task_type", "description"]


def test_stopped_workflow_agents_end_as_error_in_each_targets_words() -> None:
    def agents(frames: list[dict[str, Any]]) -> list[tuple[str, str]]:
        last = of(frames, "system/task_progress")[-1]
        return [
            (e["state"], e.get("error", ""))
            for e in last["workflow_progress"]
            if e.get("type") == "workflow_agent"
        ]

    old = agents(bridged("interrupt-midturn-workflow", "2.1.220"))
    new = agents(bridged("interrupt-midturn-workflow", "2.1.332"))
    assert old
    assert all(a == ("error", "subagent aborted: workflow was stopped") for a in old)
    assert new == agents(claude("interrupt-midturn-workflow"))  # Claude 2.1.332's own words
    assert all(a == ("error", "Stopped because the workflow was stopped") for a in new)


@pytest.mark.parametrize("name", ["simple-success", "bg-agent", "workflow-inline"])
def test_init_result_and_initialize_reply_get_332s_keys(name: str) -> None:
    old, new, theirs = bridged(name, "2.1.220"), bridged(name, "2.1.332"), claude(name)
    # system/init
    o, n, c = of(old, "system/init")[0], of(new, "system/init")[0], of(theirs, "system/init")[0]
    assert o["capabilities"] == ["interrupt_receipt_v1"]
    assert o["claude_code_version"] == "2.1.220"
    assert n["capabilities"] == c["capabilities"]
    assert len(n["capabilities"]) == 23
    assert n["claude_code_version"] == "2.1.332"
    added = set(n) - set(o)
    assert added
    assert added <= set(c), added - set(c)
    assert n["original_cwd"] == n["cwd"]
    assert n["user_message_uuids"] == [of(new, "result")[0]["user_message_uuid"]]
    # result
    for ro, rn in zip(of(old, "result"), of(new, "result"), strict=True):
        assert set(rn) - set(ro) <= set(of(theirs, "result")[0]) | {"origin"}
        assert "subagent_stats" not in ro
        assert "output_tokens_details" not in ro["usage"]
        assert rn["usage"]["output_tokens_details"] == {"thinking_tokens": 0}
    results = of(new, "result")
    assert [r["result_index"] for r in results] == list(range(len(results)))
    stats = [r["subagent_stats"] for r in results]
    assert stats[-1]["spawned"] == (1 if name == "bg-agent" else 0)
    assert set(stats[0]) == set(of(theirs, "result")[0]["subagent_stats"])
    if name == "bg-agent":  # the agent's end is counted from the result after it
        assert stats[-1]["completed"] == 1
        assert stats[-1]["by_type"] == {"general-purpose": 1}
    for r in results:
        origin = r.get("origin")
        if isinstance(origin, dict) and origin.get("kind") == "task-notification":
            assert origin["producer"] == "session-task"
            assert origin["runId"].count("-") == 1
    # the initialize reply
    io, i_n, ic = initialize_reply(old), initialize_reply(new), initialize_reply(theirs)
    assert "capabilities" not in io["response"]
    assert "pending_permission_requests" not in io
    assert i_n["response"]["capabilities"] == ic["response"]["capabilities"]
    assert i_n["response"]["claude_code_version"] == "2.1.332"
    assert set(i_n) - set(io) == {"pending_permission_requests", "pending_user_dialog_requests"}
    assert set(i_n["response"]) - set(io["response"]) <= set(ic["response"])
    assert all(m["supportsThinkingOff"] is False for m in i_n["response"]["models"])


def test_init_shape_capabilities_option_still_wins_under_332() -> None:
    new = bridged("simple-success", "2.1.332", ("init-shape.capabilities=msg_lifecycle_v1",))
    assert of(new, "system/init")[0]["capabilities"] == ["msg_lifecycle_v1"]


# -- control replies ----------------------------------------------------------------------------

SID = "01a226f1-054d-775d-a993-0bab94fddfcb"


def controls(version: str, cbc_reply: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The client's reply to ``request`` when cbc answers ``cbc_reply`` (after a session)."""
    up, down = build("cbc-to-claude", {})
    eng = Engine(up, down, env(version), strict=True)
    init = {"type": "system", "subtype": "init", "session_id": SID, "cwd": "/w", "tools": ["Bash"]}
    init["model"] = "glm"
    eng.feed("backend", json.dumps(init).encode() + b"\n", 0.0)
    msg = {"type": "control_request", "request_id": "r1", "request": request}
    got = out(eng.feed("client", json.dumps(msg).encode() + b"\n", 1.0))
    reply = {"type": "control_response", "response": {"request_id": "r1", **cbc_reply}}
    got += out(eng.feed("backend", json.dumps(reply).encode() + b"\n", 2.0))
    (answer,) = [f for f in got if f.get("type") == "control_response"]
    return dict(answer["response"])


def test_an_unsupported_request_error_gets_332s_error_code() -> None:
    cbc = {"subtype": "error", "error": "Unknown control request subtype: no_such_subtype"}
    old = controls("2.1.220", cbc, {"subtype": "no_such_subtype"})
    new = controls("2.1.332", cbc, {"subtype": "no_such_subtype"})
    wording = "Unsupported control request subtype: no_such_subtype"
    assert old == {"subtype": "error", "request_id": "r1", "error": wording}
    # claude-2.1.332/nocreds_idle-interrupt_…: the same words and error_code
    assert new == {**old, "error_code": "unsupported_request"}
    other = {"subtype": "error", "error": "Model is required"}
    assert "error_code" not in controls("2.1.332", other, {"subtype": "set_model"})


def test_set_model_is_answered_with_the_model_under_332() -> None:
    cbc = {"subtype": "success", "response": {"session_id": SID, "model": "kimi"}}
    req = {"subtype": "set_model", "model": "kimi"}
    assert "response" not in controls("2.1.220", cbc, req)  # Claude 2.1.220: no body
    assert controls("2.1.332", cbc, req)["response"] == {"model": "kimi"}


def test_set_model_answered_before_the_session_has_the_model_under_332() -> None:
    for version, body in (("2.1.220", None), ("2.1.332", {"model": "kimi"})):
        up, down = build("cbc-to-claude", {})
        eng = Engine(up, down, env(version), strict=True)
        request = {"subtype": "set_model", "model": "kimi"}
        msg = {"type": "control_request", "request_id": "r1", "request": request}
        got = out(eng.feed("client", json.dumps(msg).encode() + b"\n", 0.0))
        assert got[0]["response"].get("response") == body


def test_an_unknown_env_target_falls_back_to_the_default_stage_side() -> None:
    e = attrs.evolve(env("2.1.220"), target_version="nope")

    class Ctx:
        def __init__(self) -> None:
            self.env = e

    assert tgt.target_of(Ctx()) is tgt.DEFAULT  # type: ignore[arg-type]


def test_an_interrupted_turns_result_keeps_its_line_under_332() -> None:
    def interrupted(frames: list[dict[str, Any]]) -> dict[str, Any]:
        return next(r for r in of(frames, "result") if r["subtype"] == "error_during_execution")

    old = interrupted(bridged("interrupt-midturn-workflow", "2.1.220"))
    new = interrupted(bridged("interrupt-midturn-workflow", "2.1.332"))
    theirs = interrupted(claude("interrupt-midturn-workflow"))
    assert "user_message_uuid" not in old
    assert {"user_message_uuid", "user_message_uuids"} <= set(theirs)
    assert new["user_message_uuids"] == [new["user_message_uuid"]]


def test_a_stopped_workflows_final_snapshot_is_332s() -> None:
    def final(frames: list[dict[str, Any]]) -> dict[str, Any]:
        return of(frames, "system/task_progress")[-1]

    old = final(bridged("interrupt-midturn-workflow", "2.1.220"))
    new = final(bridged("interrupt-midturn-workflow", "2.1.332"))
    theirs = final(claude("interrupt-midturn-workflow"))
    assert old["description"] == "Fan: slow-b"
    assert "last_tool_name" in old
    # the workflow's own description, as task_started gave it (Claude: its meta.description)
    mine = of(bridged("interrupt-midturn-workflow", "2.1.332"), "system/task_started")[0]
    assert new["description"] == mine["description"]
    claudes = of(claude("interrupt-midturn-workflow"), "system/task_started")[0]
    assert theirs["description"] == claudes["description"]
    assert "last_tool_name" not in new
    assert "last_tool_name" not in theirs
    ended = [
        e.get("endedWithRun") for e in new["workflow_progress"] if e["type"] == "workflow_agent"
    ]
    assert ended == ["stopped", "stopped"]
    assert all("endedWithRun" not in e for e in old["workflow_progress"])
