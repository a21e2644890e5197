"""``init-shape``, ``result-shape``, ``tool-parent``, ``interrupted-turn`` (PROTOCOL.md §2
"Session, turns and results"): hand-made frames in cbc 2.163.0's shapes, then whole
reference sessions replayed through the profile and judged by the contract checker."""

from __future__ import annotations

import copy
import json
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from compat.engine import Engine
from compat.profiles import make_stage
from compat.stage import Stage
from compat.stages.shape import ZERO_USAGE
from compat.stages.turns import MARK, MARK_TOOL, REJECTED, iso_ms

from ..conftest import params_or_skip, reference_files
from .session_support import drive, full, line, transcript_events
from .tasks_support import SID, det_env, init, out, tool_result, tool_use

SESSION_RULES = ("init-shape", "result-shape", "interrupted-turn", "tool-parent")


def engine(*rules: str, **opts: dict[str, str]) -> Engine:
    stages: list[Stage] = []
    for rule in ("session", *rules):
        st = make_stage(rule, opts.get(rule.replace("-", "_"), {}))
        assert st is not None
        stages.append(st)
    return Engine([], stages, det_env(), strict=True)


def cbc_result(**over: Any) -> dict[str, Any]:
    """A cbc 2.163.0 result (``mockoai_interrupt-during-slow-fg-bash-with-session-id``)."""
    r = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "done.",
        "uuid": "r-1",
        "session_id": SID,
        "duration_ms": 168,
        "duration_api_ms": 3383,
        "num_turns": 5,
        "total_cost_usd": 0,
        "usage": {
            "input_tokens": 24,
            "output_tokens": 6,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": None,
            "server_tool_use": None,
            "service_tier": None,
        },
        "permission_denials": [],
        "modelUsage": {"default-model": {"inputTokens": 24}},
    }
    r.update(over)
    return r


def text(obj: dict[str, Any]) -> str:
    content = obj["message"]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


# -- init-shape ------------------------------------------------------------------------------


def test_init_gets_claudes_keys_and_a_fresh_uuid() -> None:
    cbc = {
        **init(),
        "apiKeySource": "www.codebuddy.ai",
        "slash_commands": ["clear"],
        "mcp_servers": [],
        "permissionMode": "default",
        "output_style": "default",
    }
    [got] = out(engine("init-shape").feed("backend", line(cbc), 0.0))
    assert got["claude_code_version"] == "2.1.220"
    assert got["apiKeySource"] == "none"
    assert got["capabilities"] == ["interrupt_receipt_v1"]
    assert got["agents"] == got["skills"] == got["plugins"] == []
    assert got["uuid"] == "uuid-1" != got["session_id"]
    assert got["tools"] == cbc["tools"]
    assert got["slash_commands"] == ["clear"]


def test_init_shape_options() -> None:
    eng = engine(
        "init-shape", init_shape={"capabilities": "a_v1, b_v1", "api_key_source": "apiKeyHelper"}
    )
    [got] = out(eng.feed("backend", line({**init(), "apiKeySource": "host"}), 0.0))
    assert got["capabilities"] == ["a_v1", "b_v1"]
    assert got["apiKeySource"] == "apiKeyHelper"


@pytest.mark.parametrize(
    "path", params_or_skip(reference_files("claude-2.1.220/mockapi_simple*.jsonl"))
)
def test_claude_frames_pass_untouched(path: Path | None) -> None:
    assert path is not None
    raw = b"".join(
        x + b"\n"
        for x in path.read_bytes().splitlines()
        if b'"subtype":"init"' in x or x.startswith(b'{"is_error"') or b'"type":"user"' in x
    )
    eng = engine(*SESSION_RULES)
    got = b"".join(c.data for c in eng.feed("backend", raw, 0.0) if hasattr(c, "data"))
    assert got == raw


# -- result-shape ----------------------------------------------------------------------------


def test_result_usage_nulls_become_claudes_zeros_and_missing_fields_are_filled() -> None:
    eng = engine("result-shape")
    frames = [
        tool_use("t1", "Bash", {"command": "ls"}),
        {**tool_use("t2", "Bash", {}), "parent_tool_use_id": "agent-1"},  # not main
        cbc_result(),
    ]
    frames[0]["message"]["stop_reason"] = "end_turn"
    got = out(eng.feed("backend", b"".join(line(f) for f in frames), 0.0))[-1]
    assert got["usage"]["cache_creation"] == ZERO_USAGE["cache_creation"]
    assert got["usage"]["server_tool_use"] == ZERO_USAGE["server_tool_use"]
    assert got["usage"]["service_tier"] == "standard"
    assert got["usage"]["input_tokens"] == 24
    assert got["terminal_reason"] == "completed"
    assert got["stop_reason"] == "end_turn"
    assert "errors" not in got


def test_result_numbers_and_lists_never_null() -> None:
    eng = engine("result-shape")
    bare = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "session_id": SID,
        "uuid": "r",
        "usage": None,
        "duration_ms": None,
        "permission_denials": None,
    }
    [got] = out(eng.feed("backend", line(bare), 0.0))
    assert got["usage"] == ZERO_USAGE
    assert got["duration_ms"] == got["duration_api_ms"] == 0
    assert got["num_turns"] == 1  # Claude's count of the turn's messages, at least 1
    assert got["total_cost_usd"] == 0
    assert got["permission_denials"] == []
    assert got["modelUsage"] == {}
    assert got["result"] == ""


@pytest.mark.parametrize(("mode", "with_errors"), [("claude", False), ("all-errors", True)])
def test_errors_on_error_results(mode: str, with_errors: bool) -> None:
    eng = engine("result-shape", result_shape={"mode": mode})
    frames = [
        cbc_result(subtype="error_max_turns", is_error=True, result=None),
        cbc_result(
            subtype="error_during_execution", is_error=True, errors=["Authentication required"]
        ),
        cbc_result(subtype="success", is_error=True, result="API Error: 500"),
    ]
    a, b, c = out(eng.feed("backend", b"".join(line(f) for f in frames), 0.0))
    assert a["errors"] == ["error_max_turns"]
    assert a["is_error"] is True
    assert b["errors"] == ["Authentication required"]
    # Claude 2.1.220 sends no errors on a success+is_error result (dummykey_*, nocreds_*)
    assert ("errors" in c) is with_errors
    if with_errors:
        assert c["errors"] == ["API Error: 500"]
    assert "terminal_reason" not in c  # not invented for an error


def test_terminal_reason_is_kept() -> None:
    [got] = out(
        engine("result-shape").feed(
            "backend",
            line(
                cbc_result(
                    subtype="error_during_execution",
                    is_error=True,
                    errors=["x"],
                    terminal_reason="aborted_streaming",
                )
            ),
            0.0,
        )
    )
    assert got["terminal_reason"] == "aborted_streaming"


def test_permission_denials_recorded_by_permission_routing_are_added_once() -> None:
    eng = engine("result-shape")
    control = getattr(eng.state, "control", None)
    if control is None or not hasattr(control, "permission_denials"):
        pytest.skip("the control-protocol state (permission-routing) is not installed")
    listed = {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "x"}}
    control.permission_denials.extend(
        [
            {**listed, "turn": 1},
            {
                "tool_name": "Write",
                "tool_use_id": "t2",
                "tool_input": {"file_path": "/a"},
                "turn": 1,
            },
        ]
    )
    first, second = out(
        eng.feed("backend", line(cbc_result(permission_denials=[listed])) + line(cbc_result()), 0.0)
    )
    assert first["permission_denials"] == [
        listed,
        {"tool_name": "Write", "tool_use_id": "t2", "tool_input": {"file_path": "/a"}},
    ]
    assert second["permission_denials"] == []
    assert isinstance(control.permission_denials, deque)


def test_a_denial_cbc_lists_again_in_a_later_result_is_the_earlier_turns() -> None:
    """cbc lists every denial of the session on each result (twins
    permission-deny-interrupt: the second turn's result repeats the first's Bash); Claude
    lists the turn's."""
    eng = engine("result-shape")
    first = {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "x"}}
    second = {"tool_name": "Write", "tool_use_id": "t2", "tool_input": {"file_path": "/a"}}
    results = out(
        eng.feed(
            "backend",
            line(cbc_result(permission_denials=[first]))
            + line(cbc_result(permission_denials=[first, second]))
            + line(cbc_result(permission_denials=[first, second])),
            0.0,
        )
    )
    assert [r["permission_denials"] for r in results] == [[first], [second], []]


# -- tool-parent -----------------------------------------------------------------------------


def test_a_main_thread_tool_result_never_names_itself_as_parent() -> None:
    eng = engine("tool-parent")
    own = {**tool_result("t1", "ok"), "parent_tool_use_id": "t1"}
    sub_use = {**tool_use("t2", "Read", {}), "parent_tool_use_id": "agent-1"}
    sub_own = {**tool_result("t2", "ok"), "parent_tool_use_id": "t2"}
    right = {**tool_result("t3", "ok"), "parent_tool_use_id": "agent-1"}
    raw = b"".join(line(f) for f in (tool_use("t1", "Bash", {}), own, sub_use, sub_own, right))
    got = out(eng.feed("backend", raw, 0.0))
    assert got[1]["parent_tool_use_id"] is None
    assert got[3]["parent_tool_use_id"] == "agent-1"  # a sub-agent's call: its agent
    assert got[4] == right


# -- interrupted-turn ------------------------------------------------------------------------


def receipt(rid: str = "stop-1") -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": rid,
            "response": {"session_id": SID, "interrupted": True, "reason": "SDK request"},
        },
    }


def notice() -> dict[str, Any]:
    f = tool_use("x", "Bash", {})
    f["message"]["content"] = [{"type": "text", "text": "Interrupted by user"}]
    return f


def test_cbc_interrupted_tool_turn_becomes_claudes() -> None:
    """``mockoai_interrupt-during-slow-fg-bash-with-session-id``: a running Bash, the
    receipt, cbc's notice, and a success result with ``result: ""``."""
    eng = engine("interrupted-turn", "result-shape")
    frames = [
        init(),
        tool_use("t1", "Bash", {"command": "sleep 20"}),
        receipt(),
        notice(),
        cbc_result(result="", terminal_reason="aborted_tools"),
    ]
    got = out(eng.feed("backend", b"".join(line(f) for f in frames), 1.5))
    kinds = [f["type"] for f in got]
    assert kinds == ["system", "assistant", "control_response", "user", "user", "result"]
    rejection, mark, result = got[3:]
    block = rejection["message"]["content"][0]
    assert block == {
        "type": "tool_result",
        "content": REJECTED,
        "is_error": True,
        "tool_use_id": "t1",
    }
    assert rejection["tool_use_result"] == "User rejected tool use"
    # twins interrupt-midturn-workflow.claude.jsonl, the rejection's keys and marker
    assert list(rejection)[-3:] == ["timestamp", "tool_use_result", "tool_result_meta"]
    assert rejection["tool_result_meta"] == [{"id": "t1", "non_execution_kind": "user-rejected"}]
    assert text(mark) == MARK_TOOL
    assert "tool_result_meta" not in mark
    assert mark["timestamp"] == iso_ms(eng.ctx.wall_ms())
    assert mark["parent_tool_use_id"] is None
    assert result["subtype"] == "error_during_execution"
    assert result["is_error"] is True
    assert result["terminal_reason"] == "aborted_tools"
    assert result["stop_reason"] == "tool_use"
    assert result["errors"] == [
        "[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"
    ]
    assert "result" not in result
    # cbc's late result for the rejected call is not shown
    assert out(eng.feed("backend", line(tool_result("t1", "slow-done")), 30.0)) == []


def test_num_turns_counts_the_turns_user_messages_as_claude_does() -> None:
    """Claude 2.1.220's num_turns is 1 + the turn's main-thread user messages (every
    reference and twin capture): 3 for a turn interrupted during its tool call
    (mockapi_interrupt-during-foreground-bash_aborted-tools: tool_use, rejection, marker),
    2 for one interrupted while streaming (dummykey_sigint-midturn: the marker only)."""
    eng = engine("interrupted-turn", "result-shape")
    frames = [
        init(),
        tool_use("t1", "Bash", {"command": "sleep 20"}),
        receipt(),
        cbc_result(result="done.", num_turns=6),
    ]
    got = out(eng.feed("backend", b"".join(line(f) for f in frames), 1.5))
    assert got[-1]["num_turns"] == 3
    frames = [init(), receipt(), cbc_result(result="", num_turns=4)]
    eng = engine("interrupted-turn", "result-shape")
    got = out(eng.feed("backend", b"".join(line(f) for f in frames), 1.5))
    assert got[-1]["num_turns"] == 2
    assert got[-1]["stop_reason"] is None  # as Claude's: no message
    # two tool results in one cbc frame are two of Claude's messages; a replay is none
    eng = engine("result-shape")
    both = tool_result("t1", "a")
    both["message"]["content"] = [
        *both["message"]["content"],
        *tool_result("t2", "b")["message"]["content"],
    ]
    replay = {**tool_result("t3", "c"), "isReplay": True}
    frames = [tool_use("t1", "Bash", {}), both, replay, cbc_result(num_turns=9)]
    got = out(eng.feed("backend", b"".join(line(f) for f in frames), 0.0))
    assert got[-1]["num_turns"] == 3


def test_interrupt_while_streaming_without_terminal_reason() -> None:
    """``mockoai_interrupt-midturn-workflow-…``: the result repeats the last text and says
    nothing of the abort; the receipt during the turn is what counts."""
    eng = engine("interrupted-turn")
    streamed = tool_use("s", "Bash", {})
    streamed["message"]["content"] = [{"type": "text", "text": "Working"}]
    frames = [init(), streamed, receipt(), cbc_result(result="done.")]
    got = out(eng.feed("backend", b"".join(line(f) for f in frames), 0.0))
    mark, result = got[-2:]
    assert text(mark) == MARK
    assert result["terminal_reason"] == "aborted_streaming"
    assert result["errors"][0].endswith("stop_reason=null")


def test_model_output_after_the_receipt_is_dropped_but_cbcs_own_rejection_kept() -> None:
    """``mockoai_can-use-tool-then-interrupt``: cbc rejects the tool itself, then the model
    goes on ("done.") inside the same turn; Claude stops at the interrupt."""
    eng = engine("interrupted-turn")
    reject = tool_result("t1", REJECTED)
    reject["message"]["content"][0]["is_error"] = True
    after = tool_use("late", "Bash", {})
    after["message"]["content"] = [{"type": "text", "text": "done."}]
    frames = [
        init(),
        tool_use("t1", "Bash", {}),
        receipt(),
        reject,
        after,
        {
            "type": "stream_event",
            "event": {},
            "session_id": SID,
            "uuid": "e",
            "parent_tool_use_id": None,
        },
        cbc_result(result="done."),
    ]
    got = out(eng.feed("backend", b"".join(line(f) for f in frames), 0.0))
    assert [f["type"] for f in got] == [
        "system",
        "assistant",
        "control_response",
        "user",
        "user",
        "result",
    ]
    assert got[3] == reject  # cbc's own, untouched
    assert text(got[4]) == MARK_TOOL
    assert eng.statistics()["rules"]["interrupted-turn"]["dropped-after-interrupt"] == 2


def test_keep_output_mode_and_turns_that_were_not_interrupted() -> None:
    eng = engine("interrupted-turn", interrupted_turn={"mode": "keep-output"})
    frames = [init(), tool_use("t1", "Bash", {}), receipt(), notice(), cbc_result(result="")]
    got = out(eng.feed("backend", b"".join(line(f) for f in frames), 0.0))
    assert [f["type"] for f in got].count("assistant") == 2
    # an idle receipt (no turn running) leaves the next turn alone
    later = [
        receipt("stop-2"),
        init(),
        tool_use("t9", "Read", {}),
        tool_result("t9", "x"),
        cbc_result(),
    ]
    got = out(eng.feed("backend", b"".join(line(f) for f in later), 5.0))
    assert got[-1]["subtype"] == "success"
    assert [f["type"] for f in got].count("user") == 1


def test_an_aborted_result_is_rewritten_even_without_a_receipt() -> None:
    eng = engine("interrupted-turn")
    frames = [init(), cbc_result(result="", terminal_reason="aborted_streaming")]
    got = out(eng.feed("backend", b"".join(line(f) for f in frames), 0.0))
    assert text(got[-2]) == MARK
    assert got[-1]["subtype"] == "error_during_execution"


# -- whole sessions --------------------------------------------------------------------------

CBC_SESSIONS = [
    p
    for p in reference_files("cbc-2.163.0/mockoai_*.transcript.jsonl")
    + reference_files("cbc-2.163.0/nomodel_*.transcript.jsonl")
]


@pytest.mark.parametrize("path", params_or_skip(CBC_SESSIONS))
def test_replayed_cbc_sessions_keep_the_session_contract(path: Path | None) -> None:
    assert path is not None
    run = drive(full(), transcript_events(path), until=1e6)
    bad = [v for v in run.violations() if v.rule in SESSION_RULES]
    assert bad == [], [(v.rule, v.message) for v in bad]


INTERRUPTED = [
    "mockoai_interrupt-during-slow-fg-bash-with-session-id",
    "mockoai_interrupt-midturn-workflow-2-running-agents",
    "mockoai_can-use-tool-then-interrupt",
]


@pytest.mark.parametrize("name", INTERRUPTED)
def test_interrupted_cbc_sessions_end_their_turn_claudes_way(name: str) -> None:
    paths = reference_files(f"cbc-2.163.0/{name}.transcript.jsonl")
    if not paths:
        pytest.skip("reference captures not found (set CCBRIDGE_SHARED)")
    run = drive(full(), transcript_events(paths[0]), until=1e6)
    fs = run.frames()
    i = next(
        k
        for k, f in enumerate(fs)
        if f.get("type") == "control_response"
        and f["response"].get("request_id", "").startswith("stop")
    )
    j = next(k for k in range(i, len(fs)) if fs[k]["type"] == "result")
    between = fs[i + 1 : j]
    assert between, "no marker before the result"
    assert text(between[-1]).startswith("[Request interrupted by user")
    assert not any(f["type"] == "assistant" for f in between)
    assert fs[j]["subtype"] == "error_during_execution"
    assert fs[j]["errors"]


def test_claudes_own_interrupted_turn_is_not_touched() -> None:
    paths = reference_files(
        "claude-2.1.220/mockapi_interrupt-during-foreground-bash_aborted-tools.transcript.jsonl"
    )
    if not paths:
        pytest.skip("reference captures not found (set CCBRIDGE_SHARED)")
    events = [e for e in transcript_events(paths[0]) if e[1] == "backend"]
    eng = engine(*SESSION_RULES)
    run = drive(eng, events)
    want = [json.loads(d) for _, _, d in events]
    got = run.frames()
    # the init's capabilities/version are already Claude's; nothing is rewritten
    assert got == want
    assert copy.deepcopy(got) == want
