"""The semantic diff (analysis/diff.py, analysis/diffside.py): masking, turn and task
alignment, options, output; proven on the reference captures (every capture equals itself;
two Claude 2.1.220 runs of one scenario differing only in ids, clocks and paths are
equivalent; raw cbc against its Claude twin differs exactly where PROTOCOL.md says)."""

from __future__ import annotations

import functools
import json
import random
import re
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from analysis.diff import Difference, DiffOptions, diff, format_text, to_json
from analysis.diffside import load_side, masked_frames
from compat.capture import Capture, encode_header, encode_record, header, parse
from tests.conftest import params_or_skip, reference_files

SID = "b5320f8b-c600-4c53-b018-9f6439899b9b"
CWD = "/home/u/probe/wd-one"
HOME = "/home/u/probe/home-one"
SCRIPT = "export const meta = {name: 'mock-flow', description: 'Mock flow'}\n"


def dump(frames: list[dict[str, Any]]) -> Capture:
    """A plain stdout dump of ``frames``."""
    return parse([orjson.dumps(f) for f in frames])


def sysf(subtype: str, **kw: Any) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": subtype,
        **kw,
        "uuid": str(uuid.uuid4()),
        "session_id": SID,
    }


def init(sid: str = SID, cwd: str = CWD, home: str = HOME) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "init",
        "cwd": cwd,
        "session_id": sid,
        "tools": ["Bash"],
        "model": "claude-opus-5",
        "uuid": str(uuid.uuid4()),
        "memory_paths": {"auto": f"{home}/.claude/projects/x/memory/"},
    }


def assistant(*blocks: dict[str, Any], model: str = "claude-opus-5") -> dict[str, Any]:
    return {
        "type": "assistant",
        "session_id": SID,
        "uuid": str(uuid.uuid4()),
        "parent_tool_use_id": None,
        "timestamp": "2026-11-29T10:34:27.880Z",
        "message": {
            "id": f"msg_{uuid.uuid4().hex[:20]}",
            "role": "assistant",
            "model": model,
            "content": list(blocks),
            "usage": {"input_tokens": 12, "output_tokens": 1},
        },
    }


def result(**kw: Any) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "ok",
        "duration_ms": 220,
        "duration_api_ms": 215,
        "num_turns": 1,
        "total_cost_usd": 0.0007,
        "usage": {"input_tokens": 24},
        "session_id": SID,
        "uuid": str(uuid.uuid4()),
        **kw,
    }


def workflow_run(
    task_id: str,
    tool_id: str,
    *,
    status: str = "completed",
    progress: int = 2,
    agents: tuple[str, str] = ("done", "done"),
    agent_ids: tuple[str, str] = ("ad0df90d4bbcd5494", "acd835c912b420c9c"),
) -> list[dict[str, Any]]:
    """Two turns: a Workflow tool call that starts a task, then its lifecycle and a turn."""
    t0 = 1795948467938
    snap = [
        {"type": "workflow_phase", "index": 1, "title": "Scan"},
        {
            "type": "workflow_agent",
            "index": 1,
            "label": "scanner",
            "phaseIndex": 1,
            "agentId": agent_ids[0],
            "state": "start",
            "startedAt": t0,
        },
    ]
    final = [
        {"type": "workflow_phase", "index": 1, "title": "Scan"},
        {"type": "workflow_phase", "index": 2, "title": "Sum"},
        {
            "type": "workflow_agent",
            "index": 1,
            "label": "scanner",
            "phaseIndex": 1,
            "agentId": agent_ids[0],
            "state": agents[0],
            "startedAt": t0,
        },
        {
            "type": "workflow_agent",
            "index": 2,
            "label": "summer",
            "phaseIndex": 2,
            "agentId": agent_ids[1],
            "state": agents[1],
            "startedAt": t0 + 52,
        },
    ]
    common = {"task_id": task_id, "tool_use_id": tool_id}
    usage = {"total_tokens": 13, "tool_uses": 0, "duration_ms": 47}
    progress_frames = [
        sysf(
            "task_progress",
            **common,
            description="Scan: scanner",
            usage=usage,
            workflow_progress=snap,
        )
    ] * (progress - 1)
    return [
        init(),
        assistant(
            {"type": "tool_use", "id": tool_id, "name": "Workflow", "input": {"script": SCRIPT}}
        ),
        sysf(
            "background_tasks_changed",
            tasks=[{"task_id": task_id, "task_type": "local_workflow", "description": "Mock flow"}],
        ),
        sysf(
            "task_started",
            **common,
            description="Mock flow",
            task_type="local_workflow",
            workflow_name="mock-flow",
            prompt=SCRIPT,
        ),
        {
            "type": "user",
            "session_id": SID,
            "uuid": str(uuid.uuid4()),
            "parent_tool_use_id": None,
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id,
                        "content": f"Task ID: {task_id}\nTranscript dir: {HOME}/.claude/{SID}/",
                    }
                ],
            },
        },
        *progress_frames,
        result(),
        sysf(
            "task_progress",
            **common,
            description="Sum: summer",
            usage=usage,
            workflow_progress=final,
        ),
        sysf("background_tasks_changed", tasks=[]),
        sysf(
            "task_updated",
            task_id=task_id,
            patch={"status": "killed" if status == "stopped" else status, "end_time": t0 + 99},
        ),
        sysf(
            "task_notification",
            **common,
            status=status,
            summary="Dynamic workflow done",
            output_file=f"/tmp/claude-1000/{CWD.replace('/', '-')}/{SID}/tasks/{task_id}.output",
        ),
        init(),
        assistant({"type": "text", "text": "ok"}),
        result(origin={"kind": "task-notification"}),
    ]


def by_path(diffs: list[Difference]) -> dict[str, Difference]:
    return {d.path: d for d in diffs}


# -- masking -----------------------------------------------------------------------------


def test_masking_numbers_ids_and_hides_clocks_costs_tokens_and_paths() -> None:
    frames = masked_frames(dump(workflow_run("w5p1dfjfl", "toolu_mock_d1e01b745ee8")))
    started = next(f for f in frames if f.get("subtype") == "task_started")
    assert started["task_id"] == "<task#1>"
    assert started["tool_use_id"] == "<tool_use#1>"
    assert started["session_id"] == "<session#1>"
    assert started["uuid"] == "<uuid>"
    tool = frames[1]["message"]["content"][0]
    assert tool["id"] == "<tool_use#1>"  # the call and the task that names it still agree
    assert frames[1]["message"]["model"] == "<model>"
    assert frames[1]["timestamp"] == "<timestamp>"
    assert frames[1]["message"]["usage"] == {"input_tokens": "<n>", "output_tokens": "<n>"}
    text = frames[4]["message"]["content"][0]["content"]
    assert text == "Task ID: <task#1>\nTranscript dir: {HOME}/.claude/<session#1>/"
    res = frames[-1]
    assert (res["duration_ms"], res["duration_api_ms"], res["total_cost_usd"]) == (
        "<ms>",
        "<ms>",
        "<cost>",
    )
    assert res["num_turns"] == 1  # behaviour, not a clock: compared
    note = next(f for f in frames if f.get("subtype") == "task_notification")
    assert note["output_file"] == "{TMP}/{CWD_SLUG}/<session#1>/tasks/<task#1>.output"
    agents = [e for f in frames for e in f.get("workflow_progress", ()) if "agentId" in e]
    assert {a["agentId"] for a in agents} == {"<agent#1>", "<agent#2>"}
    assert {a["startedAt"] for a in agents} == {"<epoch_ms>"}
    assert frames[0]["cwd"] == "{CWD}"


def test_an_agents_usage_in_a_result_text_is_masked_and_its_tool_count_kept() -> None:
    """Claude's Agent result ends with the agent's usage as text: its tokens and duration
    are run by run, like the fields they mirror; its tool count is the session's."""
    text = "agentId: a1\n<usage>subagent_tokens: 15\ntool_uses: 1\nduration_ms: 141</usage>"
    user = {"type": "user", "message": {"content": [{"type": "text", "text": text}]}}
    [*_, masked] = masked_frames(dump([init(), user]))
    assert masked["message"]["content"][0]["text"] == (
        "agentId: a1\n<usage>subagent_tokens: <n>\ntool_uses: 1\nduration_ms: <n></usage>"
    )


def test_masking_keeps_models_on_request_and_marks_an_init_whose_uuid_is_the_session() -> None:
    cap = dump([{**init(), "uuid": SID}, assistant({"type": "text", "text": "x"})])
    assert masked_frames(cap, keep_model=True)[1]["message"]["model"] == "claude-opus-5"
    first = masked_frames(cap)[0]
    assert first["uuid"] == "<session#1>"  # cbc's init: uuid == session_id stays visible


def test_cbc_agent_ids_and_claude_hex_ids_mask_alike() -> None:
    claude = workflow_run("w1", "toolu_1", agent_ids=("ad0df90d4bbcd5494", "acd835c912b420c9c"))
    cbc = workflow_run("w1", "toolu_1", agent_ids=("v2:" + "a" * 64, "v2:" + "b" * 64))
    assert diff(dump(claude), dump(cbc)).equivalent


# -- alignment ---------------------------------------------------------------------------


def test_a_capture_equals_itself_and_a_rerun_with_other_ids() -> None:
    a = dump(workflow_run("w5p1dfjfl", "toolu_mock_d1e01b745ee8"))
    b = dump(
        workflow_run(
            "bx81kq02z",
            "toolu_mock_5e0c1d2e3f4a",
            progress=5,
            agent_ids=("a11111111111111111", "a22222222222222222"),
        )
    )
    assert diff(a, a).equivalent
    r = diff(a, b)  # other ids, and 4 intermediate progress frames instead of 1
    assert r.equivalent, format_text(r)
    assert r.summary["turns"] == [2, 2]
    assert r.summary["tasks"] == [1, 1]


def test_frames_on_one_side_only_and_changed_fields_have_paths() -> None:
    base = workflow_run("w1", "toolu_1")
    other = [*base[:2], sysf("status", status=None), *base[2:]]
    other[1] = {**other[1], "request_id": "req_1"}
    other[-1] = {**other[-1], "num_turns": 3}
    r = by_path(diff(dump(base), dump(other)).differences)
    assert r["turn 1 / system/status"].kind == "only-b"
    assert r["turn 1 / system/status"].b["subtype"] == "status"
    assert r["turn 1 / assistant / request_id"] == Difference(
        "turn 1 / assistant / request_id", None, "<request#1>", "only-b"
    )
    assert r["turn 2 / result / num_turns"] == Difference(
        "turn 2 / result / num_turns", 1, 3, "changed"
    )
    assert len(r) == 3


def test_turns_pair_by_index_and_what_follows_the_last_result_is_labelled() -> None:
    base = workflow_run("w1", "toolu_1")
    r = by_path(diff(dump(base), dump([*base, init()])).differences)
    assert list(r) == ["after turn 2 / system/init"]
    r = by_path(diff(dump(base), dump([*base, assistant(), result()])).differences)
    assert set(r) == {"turn 3 / assistant", "turn 3 / result"}
    assert {d.kind for d in r.values()} == {"only-b"}


def test_overlapping_turns_are_unfolded_and_pair_with_sequential_ones() -> None:
    """Claude starts a second notification turn before the first one's result (twins
    eof-with-bg-work: init, assistant, init, assistant, result, result): the diff reads two
    turns, each closed by a result in order, so they pair with a side that ran the same two
    turns one after the other."""
    text = {"type": "text", "text": "ok"}
    first = [init(), assistant(text), result()]
    overlapped = [*first, init(), assistant(text), init(), assistant(text), result(), result()]
    sequential = [*first, init(), assistant(text), result(), init(), assistant(text), result()]
    side = load_side(dump(overlapped))
    assert [[f.sig for f in t] for t in side.turns] == [
        ["system/init", "assistant", "result"],
        ["system/init", "assistant", "result"],
        ["system/init", "assistant", "result"],
        [],
    ]
    assert [{f.turn for f in t} for t in side.turns[:3]] == [{1}, {2}, {3}]
    assert side.results == 3
    assert diff(dump(overlapped), dump(sequential)).equivalent
    # three at once (the last one ended before it wrote more than its init)
    three = [*first, init(), assistant(text), init(), assistant(text), init()]
    three += [result(), result(), result()]
    assert [len(t) for t in load_side(dump(three)).turns] == [3, 3, 3, 2, 0]
    # cbc's second init in one turn, and a lone result after a turn with one init, stay
    assert [len(t) for t in load_side(dump([init(), init(), assistant(text), result()])).turns] == [
        4,
        0,
    ]
    assert [len(t) for t in load_side(dump([*first, result()])).turns] == [3, 1, 0]


def test_tasks_match_by_type_and_name_not_by_id_or_arrival_order() -> None:
    def bash(tid: str, desc: str) -> list[dict[str, Any]]:
        return [
            sysf(
                "task_started",
                task_id=tid,
                tool_use_id=f"toolu_{tid}",
                description=desc,
                task_type="local_bash",
            ),
            sysf(
                "task_notification",
                task_id=tid,
                tool_use_id=f"toolu_{tid}",
                status="completed",
                output_file="",
                summary=desc,
            ),
        ]

    a = [init(), *bash("b1", "one"), *bash("b2", "two"), result()]
    b = [init(), *bash("zz", "two"), *bash("yy", "one"), result()]
    r = diff(dump(a), dump(b))
    # matched by description; task ids renumbered to the match; tool-call ids are numbered
    # by first appearance on each side, and the calls did start in the other order
    assert {d.path.rsplit(".", 1)[-1] for d in r.differences} == {"tool_use_id"}
    b[-2] = {**b[-2], "status": "failed"}
    r2 = by_path(diff(dump(a), dump(b)).differences)
    d = r2['turn 1 / task local_bash "one" / task_notification.status']
    assert (d.a, d.b) == ("completed", "failed")


def test_task_lifecycle_final_snapshot_and_notification_are_compared() -> None:
    a = dump(workflow_run("w1", "toolu_1", status="stopped", agents=("done", "start")))
    b_frames = workflow_run("w2", "toolu_2", status="completed")
    b_frames.pop(next(i for i, f in enumerate(b_frames) if f.get("tasks") == []))
    r = by_path(diff(a, dump(b_frames)).differences)
    name = 'task local_workflow "mock-flow"'
    note = r[f"turn 2 / {name} / task_notification.status"]
    assert (note.a, note.b) == ("stopped", "completed")
    assert r[f"turn 2 / {name} / task_updated.patch.status"].b == "completed"
    state = r[
        f'turn 2 / {name} / task_progress (final) / workflow_progress agent "summer" '
        f"(phase 2).state"
    ]
    assert (state.a, state.b) == ("start", "done")
    shape = r[f"turn 1 / {name} / lifecycle"]
    assert shape.a.endswith("snapshot → updated(killed) → notification(stopped)")
    assert shape.b.endswith("progress → updated(completed) → notification(completed)")


def test_a_task_on_one_side_only() -> None:
    base = workflow_run("w1", "toolu_1")
    no_task = [f for f in base if not str(f.get("subtype", "")).startswith(("task_", "backg"))]
    r = diff(dump(base), dump(no_task)).differences
    task = [d for d in r if d.path == 'turn 1 / task local_workflow "mock-flow"']
    assert task
    assert task[0].kind == "only-a"
    assert task[0].a.startswith("snapshot → started")


# -- options -----------------------------------------------------------------------------


def test_default_opaque_keys_ignore_and_strict() -> None:
    a = [init(), result()]
    b = [{**init(), "tools": ["Bash", "Read"], "model": "gpt-x"}, result(usage={"x": 1})]
    assert diff(dump(a), dump(b)).equivalent  # inventories, token usage, models
    strict = by_path(diff(dump(a), dump(b), DiffOptions(strict=True)).differences)
    assert {
        "turn 1 / system/init / model",
        "turn 1 / system/init / tools[1]",
        "turn 1 / result / usage.input_tokens",
    } <= set(strict)
    assert "turn 1 / system/init / model" in by_path(
        diff(dump(a), dump(b), DiffOptions(keep_model=True)).differences
    )
    c = [{**init(), "extra": 1}, result(num_turns=9)]
    assert not diff(dump(a), dump(c)).equivalent
    assert diff(dump(a), dump(c), DiffOptions(ignore={"extra", "result.num_turns"})).equivalent
    assert not diff(dump(a), dump(c), DiffOptions(ignore={"extra"})).equivalent
    d = [a[0], sysf("status"), a[1]]
    assert diff(dump(a), dump(d), DiffOptions(ignore={"system/status"})).equivalent


# -- output ------------------------------------------------------------------------------


def test_output_escapes_stream_strings_and_colours_only_on_request() -> None:
    a = workflow_run("w1", "toolu_1")
    evil = json.dumps("evil\x1b[2J\u009b31m\u202e")[1:-1]  # JSON-escaped in the stream
    b = json.loads(json.dumps(a).replace("mock-flow", evil))
    r = diff(dump(a), dump(b))
    plain = format_text(r)
    assert not re.search("[\x1b\x9b\u202e]", plain)
    assert "\\x9b" in plain
    assert "\\u202e" in plain
    assert 'task_started.workflow_name: A "mock-flow", B "evil' in plain
    coloured = format_text(r, color=True)
    assert "\x1b[31m" in coloured
    assert "\x9b" not in coloured
    assert "\x1b[2J" not in coloured
    doc = json.loads(to_json(r))
    assert doc["equivalent"] is False
    assert len(doc["differences"]) == len(r.differences)
    assert not re.search("[\x9b\u202e]", to_json(r))
    assert "equivalent" in format_text(diff(dump(a), dump(a))).splitlines()[-1]


# -- reference captures ------------------------------------------------------------------

WORKFLOW_CLAUDE = "claude-2.1.220/mockapi_workflow_local-workflow-task-progress.jsonl"
WORKFLOW_CBC = "cbc-2.163.0/mockoai_workflow-inline.jsonl"
ALL = [
    p
    for p in reference_files("claude-2.1.220/*.jsonl") + reference_files("cbc-2.163.0/*.jsonl")
    if "requests" not in p.name
    and not (p.name.startswith("nomodel_") and p.name.endswith(".transcript.jsonl"))
]
CLAUDE_RUNS = [
    p
    for p in reference_files("claude-2.1.220/mockapi_*.jsonl")
    if not p.name.endswith(".transcript.jsonl")
]


def load(path: Path) -> Capture:
    return parse(path.read_bytes().split(b"\n"))


@pytest.mark.parametrize("path", params_or_skip(ALL))
def test_every_reference_capture_equals_itself(path: Path) -> None:
    cap = load(path)
    assert diff(cap, cap).equivalent


def rerun(text: str, seed: int = 7) -> str:
    """The same session as another run would print it: new session/task/tool/agent/message
    ids, other clocks, durations, costs, token counts, working directory, HOME and tmp."""
    rnd = random.Random(seed)
    ids = set(re.findall(r'"(?:task_id|agentId)":"([^"]+)"', text))
    for v in sorted(ids, key=len, reverse=True):
        if not re.fullmatch(r"[0-9a-f-]{36}", v):
            text = text.replace(
                v, "".join(rnd.choice("abcdefghijkmnpqrstuvwxyz0123456789") for _ in v)
            )
    seen: dict[str, str] = {}

    def fresh(m: re.Match[str], make: Any) -> str:
        return seen.setdefault(m.group(), make(m.group()))

    hexits = "0123456789abcdef"
    subs = [
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            lambda v: str(uuid.UUID(int=rnd.getrandbits(128), version=4)),
        ),
        (
            r"(?:toolu|msg|req)_mock_[0-9a-f]+",
            lambda v: v[: v.index("_mock_") + 6] + "".join(rnd.choice(hexits) for _ in v[-12:]),
        ),
        (r"wf_[0-9a-f]{8}-[0-9a-f]{3}", lambda v: f"wf_{rnd.getrandbits(32):08x}-abc"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", lambda v: "2027-03-04T05:06:07.089Z"),
        (r"\b1[789]\d{11}\b", lambda v: str(int(v) + 98_765)),
    ]
    for pattern, make in subs:
        text = re.sub(pattern, functools.partial(fresh, make=make), text)
    text = re.sub(
        r'"(duration_ms|duration_api_ms|ttft_ms|durationMs|input_tokens|'
        r'output_tokens|total_tokens|tokens|inputTokens|pid)":(\d+)',
        lambda m: f'"{m.group(1)}":{int(m.group(2)) + 7}',
        text,
    )
    text = re.sub(r'"(total_cost_usd|costUSD)":[\d.]+', r'"\1":0.5', text)
    text = re.sub(r"wd-v220-[a-z-]+", "wd-second-run", text)
    return text.replace("home-probe-v220", "home-2nd").replace("/tmp/claude-1000", "/tmp/c-7")


@pytest.mark.parametrize("path", params_or_skip(CLAUDE_RUNS))
def test_two_claude_runs_of_one_scenario_are_equivalent(path: Path) -> None:
    text = path.read_text()
    again = rerun(text)
    assert again != text
    r = diff(load(path), parse(again.encode().split(b"\n")))
    assert r.equivalent, format_text(r)


def test_raw_cbc_differs_from_its_claude_twin_where_the_protocol_says(reference: Path) -> None:
    claude, cbc = load(reference / WORKFLOW_CLAUDE), load(reference / WORKFLOW_CBC)
    r = diff(claude, cbc)
    assert not r.equivalent
    assert r.summary["tasks"] == [1, 1]
    assert r.summary["turns"] == [2, 2]
    d = by_path(r.differences)
    task = 'task local_workflow "mock-flow"'  # paired although every id and name differs
    expected = {
        # workflow-name / workflow-prompt
        f"turn 1 / {task} / task_started.workflow_name": ("mock-flow", "inline-7d0e95"),
        f"turn 1 / {task} / task_started.description": ("Mock two-phase workflow", "inline-7d0e95"),
        f"turn 2 / {task} / task_notification.summary": (
            'Dynamic workflow "Mock two-phase workflow" completed',
            'Dynamic workflow "inline-7d0e95" completed',
        ),
        # progress-final: the stale last snapshot
        f'turn 2 / {task} / task_progress (final) / workflow_progress agent "scanner" '
        "(phase 1).state": ("done", "start"),
        # init-shape
        "turn 1 / system/init / claude_code_version": ("2.1.220", None),
        "turn 1 / system/init / uuid": ("<uuid>", "<session#1>"),
    }
    for path, (a, b) in expected.items():
        assert (d[path].a, d[path].b) == (a, b), path
    one_sided = {
        f"turn 1 / {task} / task_started.prompt": "only-a",
        f"turn 2 / {task} / task_updated.status": "only-b",  # task-status duplicate
        f"turn 2 / {task} / task_progress (final) / workflow_progress phase 2": "only-a",
        f'turn 2 / {task} / task_progress (final) / workflow_progress agent "summer" '
        "(phase 2)": "only-a",
        "turn 2 / system/init (other session)": "only-b",  # foreign-init
        "after turn 2 / system/init": "only-b",  # init-once: cbc's trailing copy
        "turn 1 / assistant #1 / __timestamp": "only-b",  # private-fields
    }
    for path, kind in one_sided.items():
        assert d[path].kind == kind, path
    lifecycle = d[f"turn 1 / {task} / lifecycle"]  # tasks-snapshot, task-noise, late-progress
    assert lifecycle.a == (
        "snapshot → started → progress → snapshot → updated(completed) → notification(completed)"
    )
    assert lifecycle.b == (
        "started → updated(running) → progress → updated(completed) → "
        "progress → notification(completed)"
    )
    # the tool call, the task and its notification agree on each side: no id noise
    assert not [x for x in r.differences if "tool_use_id" in x.path or "task_id" in x.path]


def test_a_bridge_capture_is_compared_through_its_client_view(reference: Path) -> None:
    claude = (reference / WORKFLOW_CLAUDE).read_bytes().split(b"\n")
    head = encode_header(header("test", env={"HOME": "/nowhere"}))
    recs = [encode_record(0.0, "stdout", b'{"type":"system","subtype":"status"}')]
    recs += [encode_record(0.1, "client_out", ln) for ln in claude if ln.strip()]
    bridged = parse(b"".join([head, *recs]).split(b"\n"))
    assert diff(load(reference / WORKFLOW_CLAUDE), bridged).equivalent
    assert load_side(bridged).frames == len([ln for ln in claude if ln.strip()])
