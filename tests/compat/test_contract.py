"""The contract checker (analysis/contract.py): silent on real Claude Code 2.1.220, loud on
raw cbc 2.163.0 where PROTOCOL.md predicts, and each check proven by a hand-made frame."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from analysis.contract import (
    RULES,
    Violation,
    check,
    check_lines,
    check_records,
    counts,
    format_text,
    to_json,
)
from compat.capture import Record, encode_header, encode_record, header, parse
from compat.text import escape
from tests.conftest import params_or_skip, reference_files

# -- reference captures ------------------------------------------------------------------

CLAUDE_220 = [
    p for p in reference_files("claude-2.1.220/*.jsonl") if p.name != "model-requests.jsonl"
]
# the nomodel_* transcripts use another record layout ({"t","stream","line"}) that
# compat.capture does not read yet; their .stdout.jsonl twins are checked instead
CBC_163 = [
    p
    for p in reference_files("cbc-2.163.0/*.jsonl")
    if not p.name.endswith("mock-requests.jsonl")
    and not (p.name.startswith("nomodel_") and p.name.endswith(".transcript.jsonl"))
]
UNTETHER = reference_files("third-party/untether/*.jsonl")


def check_file(path: Path) -> list[Violation]:
    with path.open("rb") as f:
        return check(parse(f))


@pytest.mark.parametrize("path", params_or_skip(CLAUDE_220))
def test_real_claude_2_1_220_has_no_violations(path: Path) -> None:
    vs = check_file(path)
    assert not vs, format_text(vs)


#: what PROTOCOL.md predicts for raw cbc 2.163.0 (must be found) and what would be a
#: false alarm there (must not be)
CBC_EXPECT: dict[str, tuple[set[str], set[str]]] = {
    "mockoai_workflow-inline": (
        {
            "private-fields",
            "init-once",
            "foreign-init",
            "init-shape",
            "initialize-reply",
            "task-status",
            "task-noise",
            "progress-final",
            "result-shape",
        },
        {"task-type", "late-progress", "task-correlation", "framing", "redact"},
    ),
    "mockoai_bg-agent": (
        {
            "task-type",
            "task-noise",
            "task-correlation",
            "task-status",
            "foreign-init",
            "terminal-guarantee",
        },
        {"framing", "redact", "progress-final"},
    ),
    "mockoai_bg-agent-then-user-turn": (
        {"task-type", "task-noise", "task-correlation", "task-fields"},
        {"framing"},
    ),
    "mockoai_bg-bash": ({"task-type", "task-status", "task-noise"}, {"task-correlation"}),
    "mockoai_interrupt-idle-workflow-2-running-agents": (
        {"interrupt-reply", "interrupt-terminal", "task-status", "task-noise"},
        {"interrupted-turn", "task-type"},
    ),
    "mockoai_interrupt-midturn-workflow-2-running-agents": (
        {"interrupt-reply", "interrupt-terminal", "interrupted-turn", "init-once"},
        set(),
    ),
    "mockoai_interrupt-idle-with-bg-workflow-and-bash": (
        {"interrupt-reply", "interrupt-terminal", "init-once"},
        {"interrupted-turn"},
    ),
    "mockoai_stop-task-control-request": ({"unsupported-control", "task-type"}, set()),
    "mockoai_workflow-by-path-progress-during-live-turn": ({"vocabulary"}, set()),
    "nomodel_controls-after-session": (
        {"vocabulary", "unsupported-control", "interrupt-reply"},
        {"framing"},
    ),
    "nomodel_unknown-stdin-types": ({"init-once", "result-shape"}, set()),
}


def _stem(path: Path) -> str:
    return path.name.split(".")[0]


@pytest.mark.parametrize("path", params_or_skip(CBC_163))
def test_raw_cbc_2_163_is_flagged_where_the_protocol_predicts(path: Path) -> None:
    vs = check_file(path)
    found = set(counts(vs))
    # every cbc stream breaks the contract; none has a live credential or broken framing
    assert vs, f"{path.name}: raw cbc passed the 2.1.220 contract"
    assert not found & {"framing", "redact"}, format_text(vs)
    if path.name.startswith(("mockoai_", "logsrv_")):  # full sessions after an initialize
        assert {"initialize-reply", "init-shape", "private-fields", "result-shape"} <= found
    must, must_not = CBC_EXPECT.get(_stem(path), (set(), set()))
    assert must <= found, f"missing {sorted(must - found)}\n{format_text(vs)}"
    assert not (must_not & found), f"unexpected {sorted(must_not & found)}\n{format_text(vs)}"


@pytest.mark.parametrize("path", params_or_skip(UNTETHER))
def test_third_party_claude_2_1_285_is_reported_not_judged(path: Path) -> None:
    """Claude Code 2.1.285 is newer than the target: report, never assert zero."""
    vs = check_file(path)
    print(f"{path.name}: {counts(vs) or 'no violations'}")
    assert not any(v.rule == "framing" for v in vs)  # they are plain stream-json dumps


# -- hand-made frames --------------------------------------------------------------------

SID = "8c49f5e8-7594-4553-bf91-731035346fd3"
_n = iter(range(1, 1_000_000))


def uid() -> str:
    return f"00000000-0000-4000-8000-{next(_n):012d}"


def sysf(subtype: str, **kw: Any) -> dict[str, Any]:
    return {"type": "system", "subtype": subtype, **kw, "uuid": uid(), "session_id": SID}


def init_frame() -> dict[str, Any]:
    return sysf(
        "init",
        cwd="/w",
        tools=["Bash"],
        mcp_servers=[],
        model="claude-opus-5",
        permissionMode="default",
        slash_commands=[],
        apiKeySource="none",
        output_style="default",
        claude_code_version="2.1.220",
        agents=[],
        skills=[],
        plugins=[],
        capabilities=["interrupt_receipt_v1"],
    )


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "model": "claude-opus-5",
            "role": "assistant",
            "content": list(blocks) or [{"type": "text", "text": "ok"}],
        },
        "parent_tool_use_id": None,
        "session_id": SID,
        "uuid": uid(),
    }


def user(content: Any, parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": parent,
        "session_id": SID,
        "uuid": uid(),
    }


def result(**kw: Any) -> dict[str, Any]:
    r = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "done.",
        "duration_ms": 10,
        "duration_api_ms": 9,
        "num_turns": 1,
        "total_cost_usd": 0.0,
        "usage": {
            "input_tokens": 1,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        },
        "modelUsage": {},
        "permission_denials": [],
        "stop_reason": "end_turn",
        "terminal_reason": "completed",
        "session_id": SID,
        "uuid": uid(),
    }
    r.update(kw)
    return r


def init_reply(rid: str = "init") -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": rid,
            "response": {
                "commands": [{"name": "review", "description": "d", "argumentHint": ""}],
                "agents": [],
                "output_style": "default",
                "available_output_styles": ["default"],
                "models": [{"value": "default", "displayName": "Default", "description": "d"}],
                "account": {"tokenSource": "none"},
                "pid": 42,
            },
        },
    }


def interrupt_reply(rid: str = "stop-1", body: Any = None) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": rid,
            "response": {"still_queued": []} if body is None else body,
        },
    }


def task_started(tid: str = "b1", ttype: str = "local_bash", **kw: Any) -> dict[str, Any]:
    return sysf(
        "task_started",
        task_id=tid,
        tool_use_id="toolu_1",
        description="Sleep",
        task_type=ttype,
        **kw,
    )


def task_progress(tid: str = "b1", **kw: Any) -> dict[str, Any]:
    return sysf(
        "task_progress",
        task_id=tid,
        tool_use_id="toolu_1",
        description="Sleep",
        usage={"total_tokens": 0, "tool_uses": 0, "duration_ms": 5},
        **kw,
    )


def task_updated(tid: str = "b1", status: str = "completed") -> dict[str, Any]:
    return sysf("task_updated", task_id=tid, patch={"status": status, "end_time": 1})


def task_notification(tid: str = "b1", status: str = "completed") -> dict[str, Any]:
    return sysf(
        "task_notification",
        task_id=tid,
        tool_use_id="toolu_1",
        status=status,
        output_file="",
        summary='Background command "Sleep" completed',
    )


def session() -> list[dict[str, Any]]:
    """A Claude-shaped session: a turn that starts a background task, its end, a next turn."""
    return [
        init_reply(),
        init_frame(),
        assistant(
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "sleep 1"}}
        ),
        sysf("background_tasks_changed", tasks=[]),
        task_started(),
        user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "started"}]),
        assistant(),
        result(),
        task_updated(),
        task_notification(),
        init_frame(),
        assistant(),
        result(),
    ]


def run(
    frames: list[Any], inputs: list[Any] | None = None, from_outside: bool = False
) -> list[Violation]:
    def rec(i: int, x: Any, kind: str) -> Record:
        data = x if isinstance(x, bytes) else json.dumps(x).encode()
        return Record(0.0, kind, data, lineno=i)

    outs = [rec(i, x, "stdout") for i, x in enumerate(frames, 1)]
    ins = None if inputs is None else [rec(i, x, "stdin") for i, x in enumerate(inputs, 1)]
    return check_records(outs, ins, ended_from_outside=from_outside)


def rules(vs: list[Violation]) -> set[str]:
    return {v.rule for v in vs}


def test_the_baseline_session_is_clean() -> None:
    vs = run(session())
    assert vs == [], format_text(vs)


def mutated(index: int, **changes: Any) -> list[dict[str, Any]]:
    frames = copy.deepcopy(session())
    for k, v in changes.items():
        if v is ...:
            frames[index].pop(k)
        else:
            frames[index][k] = v
    return frames


# (name, frames, the rule that must fire)
CASES: list[tuple[str, Any, str]] = [
    ("not json", lambda: [*session()[:3], b"{not json", *session()[3:]], "framing"),
    ("json array", lambda: [[1, 2]], "framing"),
    ("no type", lambda: [{"subtype": "x"}], "framing"),
    ("private field", lambda: mutated(6, _requestId="r1"), "private-fields"),
    ("__timestamp", lambda: mutated(2, __timestamp="t"), "private-fields"),
    ("type error", lambda: [{"type": "error", "error": "boom"}], "vocabulary"),
    ("type end", lambda: [{"type": "end"}], "vocabulary"),
    ("unknown type", lambda: [{"type": "file-history-snapshot"}], "vocabulary"),
    ("unknown system", lambda: [sysf("keepalive")], "vocabulary"),
    (
        "token",
        lambda: [
            dict(
                init_reply(),
                response={
                    "subtype": "success",
                    "request_id": "x",
                    "response": {"account": {"token": "eyJhbGciOi.live"}},
                },
            )
        ],
        "redact",
    ),
    ("live key", lambda: [user("key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA")], "redact"),
    ("assistant content", lambda: [{**assistant(), "message": {"model": "m"}}], "frame-fields"),
    ("tool_use block", lambda: [assistant({"type": "tool_use", "id": "t"})], "frame-fields"),
    (
        "stream_event uuid",
        lambda: [{"type": "stream_event", "event": {}, "session_id": SID}],
        "frame-fields",
    ),
    (
        "can_use_tool",
        lambda: [
            {
                "type": "control_request",
                "request_id": "r",
                "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": {}},
            }
        ],
        "frame-fields",
    ),
    ("init missing version", lambda: mutated(1, claude_code_version=...), "init-shape"),
    ("init uuid == sid", lambda: mutated(1, uuid=SID), "init-shape"),
    ("two inits", lambda: [init_frame(), assistant(), init_frame(), result()], "init-once"),
    ("trailing init", lambda: [*session(), init_frame()], "init-once"),
    (
        "foreign init",
        lambda: [init_frame(), assistant(), {**init_frame(), "session_id": "s2"}, result()],
        "foreign-init",
    ),
    (
        "usage null",
        lambda: mutated(7, usage={"input_tokens": 1, "output_tokens": 1, "server_tool_use": None}),
        "result-shape",
    ),
    ("cost null", lambda: mutated(7, total_cost_usd=None), "result-shape"),
    ("no modelUsage", lambda: mutated(7, modelUsage=...), "result-shape"),
    (
        "error without errors",
        lambda: mutated(7, subtype="error_during_execution", is_error=True, result=...),
        "result-shape",
    ),
    (
        "error not is_error",
        lambda: mutated(7, subtype="error_max_turns", errors=["x"]),
        "result-shape",
    ),
    (
        "aborted success",
        lambda: mutated(7, terminal_reason="aborted_streaming"),
        "interrupted-turn",
    ),
    ("task_type Agent", lambda: mutated(4, task_type="Agent"), "task-type"),
    ("task_type missing", lambda: mutated(4, task_type=...), "task-type"),
    ("started no description", lambda: mutated(4, description=...), "task-fields"),
    ("notification no output_file", lambda: mutated(9, output_file=...), "task-fields"),
    ("notification no summary", lambda: mutated(9, summary=...), "task-fields"),
    (
        "progress usage",
        lambda: [
            init_frame(),
            task_started(),
            {**task_progress(), "usage": {"total_tokens": 1}},
            task_updated(),
            task_notification(),
        ],
        "task-fields",
    ),
    ("no tool_use_id", lambda: mutated(4, tool_use_id=...), "task-correlation"),
    ("notification no tool_use_id", lambda: mutated(9, tool_use_id=...), "task-correlation"),
    ("patch cancelled", lambda: mutated(8, patch={"status": "cancelled"}), "task-status"),
    ("top-level status", lambda: mutated(8, status="completed"), "task-status"),
    ("notification killed", lambda: mutated(9, status="killed"), "task-status"),
    (
        "update before start",
        lambda: [
            init_frame(),
            task_updated(status="pending"),
            task_started(),
            task_updated(),
            task_notification(),
        ],
        "task-noise",
    ),
    (
        "progress before start",
        lambda: [
            init_frame(),
            task_progress(),
            task_started(),
            task_updated(),
            task_notification(),
        ],
        "task-noise",
    ),
    (
        "running patch",
        lambda: [
            init_frame(),
            task_started(),
            task_updated(status="running"),
            task_updated(),
            task_notification(),
        ],
        "task-noise",
    ),
    (
        "second started",
        lambda: [init_frame(), task_started(), task_started(), task_updated(), task_notification()],
        "task-noise",
    ),
    ("late progress", lambda: [*session(), task_progress()], "late-progress"),
    ("second notification", lambda: [*session(), task_notification()], "terminal-guarantee"),
    (
        "update after notification",
        lambda: [*session(), task_updated(status="killed")],
        "terminal-guarantee",
    ),
    (
        "never notified",
        lambda: [init_frame(), task_started(), assistant(), result()],
        "terminal-guarantee",
    ),
    (
        "workflow stale",
        lambda: [
            init_frame(),
            task_started("w1", "local_workflow"),
            task_progress(
                "w1",
                workflow_progress=[
                    {"type": "workflow_agent", "index": 1, "phaseIndex": 1, "state": "start"}
                ],
            ),
            task_updated("w1"),
            task_notification("w1"),
        ],
        "progress-final",
    ),
    (
        "tool-parent",
        lambda: [
            user(
                [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}],
                parent="toolu_9",
            )
        ],
        "tool-parent",
    ),
    (
        "unknown wording",
        lambda: [
            {
                "type": "control_response",
                "response": {
                    "subtype": "error",
                    "request_id": "q",
                    "error": "Unknown control request subtype: x",
                },
            }
        ],
        "unsupported-control",
    ),
    (
        "init reply shape",
        lambda: [
            {
                "type": "control_response",
                "response": {
                    "subtype": "success",
                    "request_id": "init",
                    "response": {
                        "commands": [{"name": "/x", "description": "d"}],
                        "output_style": "default",
                        "models": [{"id": "m", "name": "M"}],
                        "account": {},
                    },
                },
            }
        ],
        "initialize-reply",
    ),
    (
        "agent open at receipt",
        lambda: [init_frame(), task_started("a1", "local_agent"), interrupt_reply()],
        "interrupt-terminal",
    ),
    (
        "cbc interrupt reply",
        lambda: [interrupt_reply(body={"session_id": SID, "interrupted": True})],
        "interrupt-reply",
    ),
]


@pytest.mark.parametrize(("frames", "rule"), [pytest.param(f, r, id=n) for n, f, r in CASES])
def test_each_check_fires(frames: Any, rule: str) -> None:
    vs = run(frames())
    assert rule in rules(vs), format_text(vs)
    assert rules(vs) <= set(RULES)


def test_every_rule_is_documented_and_has_a_case() -> None:
    assert {r for _, _, r in CASES} == set(RULES)


def test_framing_keeps_checking_after_a_bad_line() -> None:
    vs = run([b"garbage", {"type": "error"}])
    assert [(v.rule, v.lineno) for v in vs] == [("framing", 1), ("vocabulary", 2)]


def test_placeholders_are_not_credentials() -> None:
    for value in ("<redacted>", "<DUMMY_KEY>", "sk-ant-REDACTED", "<REDACTED>", ""):
        frame = {
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": "x",
                "response": {"account": {"token": value}},
            },
        }
        assert "redact" not in rules(run([frame])), value


# -- control replies paired with the client's requests ----------------------------------


def req(rid: str, subtype: str, **kw: Any) -> dict[str, Any]:
    return {"type": "control_request", "request_id": rid, "request": {"subtype": subtype, **kw}}


def test_replies_are_judged_by_the_request_they_answer() -> None:
    inputs = [req("init", "initialize"), req("stop-1", "interrupt")]
    assert run([init_reply(), interrupt_reply()], inputs) == []
    # an interrupt that fails (cbc before the first turn) is not Claude's idle success
    err = {
        "type": "control_response",
        "response": {
            "subtype": "error",
            "request_id": "stop-1",
            "error": "Session not found: current",
        },
    }
    assert "interrupt-reply" in rules(run([init_reply(), err], inputs))
    # with the requests known, a reply is not mistaken by shape: stop_task answers {}
    assert run([interrupt_reply("t", {})], [req("t", "stop_task")]) == []


def test_unanswered_requests_unless_cancelled_or_cut_short() -> None:
    inputs = [req("init", "initialize"), req("m", "mcp_status")]
    vs = run([init_reply()], inputs)
    assert [(v.rule, v.lineno) for v in vs] == [("unsupported-control", 2)]
    cancel = {"type": "control_cancel_request", "request_id": "m"}
    assert run([init_reply()], [*inputs, cancel]) == []
    assert run([init_reply()], inputs, from_outside=True) == []


def test_interrupt_terminal_needs_agents_and_workflows_closed_before_the_receipt() -> None:
    head = [
        init_frame(),
        task_started("a1", "local_agent"),
        task_started("b2", "local_bash"),
        assistant(),
        result(),
    ]
    open_at_receipt = run(
        [*head, interrupt_reply(), task_updated("a1", "killed"), task_notification("a1", "stopped")]
    )
    assert [v.rule for v in open_at_receipt].count("interrupt-terminal") == 1  # not the shell
    closed = run(
        [*head, task_updated("a1", "killed"), task_notification("a1", "stopped"), interrupt_reply()]
    )
    assert "interrupt-terminal" not in rules(closed)


def test_interrupted_turn_is_claudes_error_form() -> None:
    mid = [init_frame(), assistant(), interrupt_reply()]
    cbc = run([*mid, result(result="", terminal_reason="aborted_streaming")])
    assert [v.rule for v in cbc].count("interrupted-turn") == 2  # wrong form, no marker
    # an idle interrupt (after the result) says nothing about the next turn
    idle = run(
        [
            init_frame(),
            assistant(),
            result(),
            interrupt_reply(),
            init_frame(),
            assistant(),
            result(),
        ]
    )
    assert "interrupted-turn" not in rules(idle)


def test_claude_interrupted_turn_exactly() -> None:
    r = result(
        subtype="error_during_execution",
        is_error=True,
        errors=["x"],
        terminal_reason="aborted_streaming",
    )
    del r["result"]
    vs = run(
        [
            init_frame(),
            assistant(),
            interrupt_reply(),
            user([{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
            r,
        ]
    )
    assert vs == [], format_text(vs)


def test_open_tasks_are_excused_when_the_run_was_ended_from_outside() -> None:
    frames = [init_frame(), task_started(), assistant(), result(), init_frame()]
    assert rules(run(frames)) == {"terminal-guarantee", "init-once"}
    assert run(frames, from_outside=True) == []


# -- capture formats ---------------------------------------------------------------------


def _transcript(exit_text: str) -> list[bytes]:
    recs = [
        {"t": 0, "kind": "meta", "text": "{}"},
        {"t": 0.1, "kind": "stdin", "text": json.dumps(req("init", "initialize"))},
        {"t": 0.2, "kind": "stdout", "text": json.dumps(init_reply())},
        {"t": 0.3, "kind": "stderr", "text": "\x1b[31mnot a frame"},
        {"t": 0.4, "kind": "stdout", "text": json.dumps(init_frame())},
        {"t": 0.5, "kind": "stdout", "text": json.dumps(task_started())},
        {"t": 0.6, "kind": "stdout", "text": json.dumps(assistant())},
        {"t": 0.7, "kind": "exit", "text": exit_text},
    ]
    return [json.dumps(r).encode() + b"\n" for r in recs]


def test_transcripts_check_stdout_only_with_capture_line_numbers() -> None:
    vs = check_lines(_transcript("0"))
    assert [(v.rule, v.lineno) for v in vs] == [("terminal-guarantee", 6)]
    assert check_lines(_transcript("killed:-9")) == []
    assert check_lines(_transcript("sigterm-by-harness:0")) == []


def test_bridge_captures_check_client_out_and_pair_client_in() -> None:
    lines = [
        encode_header(header("test")),
        encode_record(0.1, "client_in", json.dumps(req("s", "interrupt")).encode()),
        encode_record(0.2, "stdout", b'{"type":"error","_meta":1}'),  # backend side
        encode_record(0.3, "client_out", json.dumps(interrupt_reply("s", {})).encode()),
        encode_record(0.4, "exit", b"killed:-9"),
    ]
    vs = check_lines(lines)
    assert [(v.rule, v.lineno) for v in vs] == [("interrupt-reply", 4)]


# -- output ------------------------------------------------------------------------------


def test_format_text_escapes_what_the_stream_sent() -> None:
    nasty = sysf("\x1b]0;pwned\x07\x1b[2J", note="\u202e")
    text = format_text(run([nasty]))
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "\u202e" not in text
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in text
    assert "\\u202e" in text
    assert text.endswith("(vocabulary: 1)\n")
    assert escape("tab\there\nnl") == "tab\\there\\nnl"
    assert format_text([]).startswith("no violations")


def test_to_json_round_trips() -> None:
    vs = run([b"x" * 1000, {"type": "end"}])
    doc = json.loads(to_json(vs))
    assert doc["ok"] is False
    assert doc["target"] == "2.1.220"
    assert doc["counts"] == {"framing": 1, "vocabulary": 1}
    assert doc["violations"][0]["lineno"] == 1
    assert doc["violations"][0]["frame"].endswith("(700 more characters)")
    assert json.loads(to_json([])) == {
        "target": "2.1.220",
        "ok": True,
        "counts": {},
        "violations": [],
    }
