"""task-correlation, task-type, task-noise, task-status, task-fields (PROTOCOL.md §2)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.engine import Write
from tests.compat.tasks_support import (
    SID,
    capture_frames,
    engine,
    init,
    line,
    lines,
    logs,
    notification,
    out,
    pick,
    progress,
    started,
    tags,
    tool_use,
    updated,
)

# cbc-2.163.0/mockoai_bg-agent: the frames around one background Agent, verbatim
BG = capture_frames("mockoai_bg-agent-then-user-turn")
BG_TASK = "agent-42486abc-7cf2-4ab7-b7f7-ac05764a23fe"
BG_CALL = "call_mock_c22a94538e1e"
BG_ASSISTANT = next(f for f in BG if f["type"] == "assistant" and "tool_use" in str(f))
BG_RESULT = next(f for f in BG if f["type"] == "user")
BG_INIT = pick(BG, "init")


def bg_launch() -> list[dict[str, Any]]:
    """init, the Agent call, pending, progress, task_started, running, the tool result."""
    i = BG.index(BG_ASSISTANT)
    return [BG_INIT, *BG[i : BG.index(BG_RESULT) + 1]]


# -- task-correlation ----------------------------------------------------------------------


def test_correlation_holds_agent_start_until_its_tool_result() -> None:
    eng = engine("task-correlation")
    frames = bg_launch()
    assert [tags([f])[0] for f in frames[2:6]] == [
        "task_updated:pending",
        "task_progress",
        "task_started:Agent",
        "task_updated:running",
    ]
    got = out(eng.feed("backend", lines(*frames[:-1]), 6.46))
    # the pending update and the progress pass; task_started and later frames wait
    assert tags(got, BG_TASK) == ["task_updated:pending", "task_progress"]
    got = out(eng.feed("backend", line(frames[-1]), 6.47))
    assert tags(got) == ["task_started:Agent", "task_updated:running", "user"]
    assert got[0]["tool_use_id"] == BG_CALL
    assert list(got[0])[:4] == ["type", "subtype", "task_id", "tool_use_id"]
    assert eng.state.tasks[BG_TASK].tool_use_id == BG_CALL
    # later frames of the task get the id where Claude writes it
    done = pick(BG, "task_notification")
    assert "tool_use_id" not in done
    got = out(eng.feed("backend", line(done), 25.0))
    assert got[0]["tool_use_id"] == BG_CALL
    assert eng.next_deadline() is None  # the wait timer was cancelled


def test_correlation_falls_back_to_description_after_wait() -> None:
    eng = engine(("task-correlation", {"wait": "2.5"}))
    eng.feed(
        "backend",
        lines(
            init(),
            tool_use("call_other", "Agent", {"description": "other"}),
            tool_use("call_x", "Agent", {"description": "Scan it"}),
        ),
        0.0,
    )
    assert out(eng.feed("backend", line(started("agent-1", "Agent", "Scan it")), 1.0)) == []
    assert out(eng.feed("backend", line(updated("agent-1", "running")), 1.1)) == []
    assert eng.next_deadline() == 3.5
    assert out(eng.advance(3.4999)) == []
    got = out(eng.advance(3.5))
    assert tags(got) == ["task_started:Agent", "task_updated:running"]
    assert got[0]["tool_use_id"] == "call_x"


def test_correlation_releases_without_id_when_nothing_matches() -> None:
    eng = engine("task-correlation")
    eng.feed("backend", lines(init(), tool_use("call_x", "Agent", {"description": "other"})), 0)
    eng.feed("backend", line(started("agent-1", "Agent", "mine")), 0.0)
    cmds = eng.advance(2.0)
    got = out(cmds)
    assert tags(got) == ["task_started:Agent"]
    assert "tool_use_id" not in got[0]
    assert any("without tool_use_id" in lg.message for lg in logs(cmds))


def test_correlation_does_not_wait_without_a_candidate_call() -> None:
    eng = engine("task-correlation")
    raw = line(started("agent-1", "Agent", "mine"))
    cmds = eng.feed("backend", line(init()) + raw, 0.0)
    assert [c.data for c in cmds if isinstance(c, Write)][0].endswith(raw)
    assert eng.next_deadline() is None


def test_correlation_keeps_the_deferexecutetool_call_id() -> None:
    # mockoai_workflow-by-path-via-deferexecutetool: the task carries the wrapper's id,
    # which is the tool call the client saw
    eng = engine("task-correlation")
    call = tool_use(
        "call_d",
        "DeferExecuteTool",
        {"toolName": "Workflow", "params": {"scriptPath": "flows/f.js"}},
    )
    raw = line(started("wf-1", "local_workflow", "path:f.js", "call_d"))
    got = eng.feed("backend", lines(init(), call) + raw, 0.0)
    assert b"".join(c.data for c in got if isinstance(c, Write)).endswith(raw)
    assert eng.state.tasks["wf-1"].tool_use_id == "call_d"


# -- task-type ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cbc", "claude"),
    [
        ("Agent", "local_agent"),
        ("Bash", "local_bash"),
        ("PowerShell", "local_bash"),
        ("Monitor", "local_bash"),
        ("local_workflow", "local_workflow"),
    ],
)
def test_task_type_mapping(cbc: str, claude: str) -> None:
    eng = engine("task-type")
    got = out(eng.feed("backend", line(started("t", cbc, "d", "c")), 0.0))
    assert got[0]["task_type"] == claude
    assert eng.state.tasks["t"].task_type == claude


def test_task_type_unknown_passes_and_is_logged_once() -> None:
    eng = engine("task-type")
    raw = line(started("t1", "Teleport", "d", "c")) + line(started("t2", "Teleport", "d", "c"))
    cmds = eng.feed("backend", raw, 0.0)
    assert b"".join(c.data for c in cmds if isinstance(c, Write)) == raw
    assert len([lg for lg in logs(cmds) if "Teleport" in lg.message]) == 1


# -- task-noise ---------------------------------------------------------------------------


def test_noise_real_agent_frames_start_first_and_no_pending_running() -> None:
    eng = engine("task-correlation", "task-noise")
    pre = pick(BG, "task_progress")
    assert BG.index(pre) < BG.index(pick(BG, "task_started"))
    assert pre["usage"]["total_tokens"] == 0
    assert pre["usage"]["tool_uses"] == 0
    got = out(eng.feed("backend", lines(*bg_launch()), 6.47))
    # cbc's zero-usage progress before the start is dropped: Claude sends no progress until
    # the agent has done something (twins bg-agent.claude.jsonl: task_started, then the end)
    assert tags(got, BG_TASK) == ["task_started:Agent"]
    assert [f["type"] for f in got][-1] == "user"
    # the terminal update passes
    got = out(eng.feed("backend", line(pick(BG, "task_updated", status="completed")), 25.0))
    assert tags(got) == ["task_updated:completed"]
    stats = eng.statistics()["rules"]["task-noise"]
    # (the held zero progress leaves the hold dropped: released + dropped, so the totals add up)
    assert stats == {"dropped": 3, "held": 1, "released": 1}


def test_noise_progress_with_usage_before_the_start_is_released_after_it() -> None:
    eng = engine("task-noise")
    busy = progress("t")
    busy["usage"] = {"total_tokens": 12, "tool_uses": 1, "duration_ms": 40}
    assert out(eng.feed("backend", lines(progress("t"), busy), 0.0)) == []
    got = out(eng.feed("backend", line(started("t", "Agent", "d", "c")), 0.0))
    assert tags(got) == ["task_started:Agent", "task_progress"]
    assert got[1]["usage"]["total_tokens"] == 12


def test_noise_keeps_other_patch_fields() -> None:
    eng = engine("task-noise")
    eng.feed("backend", line(started("t", "Bash", "d", "c")), 0.0)
    f = updated("t", "running")
    f["patch"]["description"] = "renamed"
    got = out(eng.feed("backend", line(f), 0.0))
    assert got[0]["patch"] == {"description": "renamed"}
    assert "status" not in got[0]


def test_noise_running_after_paused_is_a_real_transition() -> None:
    eng = engine("task-noise")
    got = out(
        eng.feed(
            "backend",
            lines(
                started("t", "Bash", "d", "c"),
                updated("t", "running"),
                updated("t", "paused"),
                updated("t", "running"),
                updated("t", "running"),
            ),
            0.0,
        )
    )
    assert tags(got) == ["task_started:Bash", "task_updated:paused", "task_updated:running"]


def test_noise_task_never_started_is_released_with_its_notification() -> None:
    eng = engine("task-noise")
    assert out(eng.feed("backend", line(progress("t")), 0.0)) == []
    assert out(eng.feed("backend", line(updated("t", "failed", 5)), 0.0)) == []
    got = out(eng.feed("backend", line(notification("t", "failed", "x")), 0.0))
    assert tags(got) == ["task_progress", "task_updated:failed", "task_notification:failed"]


# -- task-status --------------------------------------------------------------------------


def test_status_cancelled_and_duplicate_top_level_status() -> None:
    eng = engine("task-status")
    stream = lines(updated("t", "cancelled", 7), updated("u", "completed"))
    got = out(eng.feed("backend", stream, 0))
    assert got[0]["patch"] == {"status": "killed", "end_time": 7}
    assert "status" not in got[0]
    assert got[1]["patch"] == {"status": "completed"}
    assert "status" not in got[1]


@pytest.mark.parametrize(
    ("cbc", "claude"),
    [
        ("killed", "stopped"),
        ("cancelled", "stopped"),
        ("completed", "completed"),
        ("failed", "failed"),
    ],
)
def test_status_in_notifications(cbc: str, claude: str) -> None:
    eng = engine("task-status")
    assert out(eng.feed("backend", line(notification("t", cbc, "s")), 0))[0]["status"] == claude


def test_status_unknown_values_pass_and_log() -> None:
    eng = engine("task-status")
    cmds = eng.feed(
        "backend",
        line(
            {
                "type": "system",
                "subtype": "task_updated",
                "task_id": "t",
                "patch": {"status": "zombie"},
            }
        ),
        0,
    )
    assert out(cmds)[0]["patch"] == {"status": "zombie"}
    assert any("zombie" in lg.message for lg in logs(cmds))


# -- task-fields --------------------------------------------------------------------------


def test_fields_real_agent_notification_gets_what_the_sdk_requires() -> None:
    eng = engine("task-correlation", "task-type", "task-fields")
    eng.feed("backend", lines(*bg_launch()), 6.47)
    done = pick(BG, "task_notification")
    assert "output_file" not in done  # cbc 2.163.0 leaves it out: the Python SDK raises
    got = out(eng.feed("backend", line(done), 25.04))[0]
    # Claude's key order (mockapi_background-agent_local-agent-frames), cbc extras after
    assert list(got)[:8] == [
        "type",
        "subtype",
        "task_id",
        "tool_use_id",
        "status",
        "output_file",
        "summary",
        "usage",
    ]
    assert list(got)[-2:] == ["uuid", "session_id"]
    assert got["output_file"] == ""
    assert got["tool_use_id"] == BG_CALL
    assert got["summary"] == 'Background agent "Mock subagent" completed'
    assert got["uuid"] == done["uuid"]
    assert got["session_id"] == done["session_id"]


def test_fields_fill_missing_uuid_session_usage_and_summary() -> None:
    eng = engine("task-fields")
    eng.feed("backend", line(init()), 0)
    bare = [
        {
            "type": "system",
            "subtype": "task_started",
            "task_id": "b1",
            "task_type": "local_bash",
            "description": "Sleep",
        },
        {
            "type": "system",
            "subtype": "task_progress",
            "task_id": "b1",
            "usage": {"total_tokens": 3},
        },
        {"type": "system", "subtype": "task_notification", "task_id": "b1", "status": "completed"},
    ]
    got = out(eng.feed("backend", lines(*bare), 0))
    for f in got:
        assert f["uuid"].startswith("uuid-")
        assert f["session_id"] == SID
    assert got[1]["usage"] == {"total_tokens": 3, "tool_uses": 0, "duration_ms": 0}
    assert got[1]["description"] == "Sleep"
    assert got[2]["output_file"] == ""
    assert got[2]["summary"] == 'Background command "Sleep" completed'


@pytest.mark.parametrize(
    ("cbc_summary", "status", "claude_summary"),
    [
        # mockoai_bg-bash -> mockapi_background-bash_task-started-updated-notification
        (
            'Background command "sleep 3; echo bg-done" completed',
            "completed",
            'Background command "Sleep then echo" completed',
        ),
        # mockoai_taskstop-bg-bash -> mockapi_taskstop-background-bash_killed-stopped
        ('Background command "sleep 3; echo bg-done" was stopped', "stopped", "Sleep then echo"),
        ("something else entirely", "completed", "something else entirely"),
    ],
)
def test_fields_summary_in_claude_wording(
    cbc_summary: str, status: str, claude_summary: str
) -> None:
    eng = engine("task-fields")
    got = out(
        eng.feed(
            "backend",
            lines(
                started("b1", "local_bash", "Sleep then echo", "c1"),
                notification("b1", status, cbc_summary, "c1", output_file="/o"),
            ),
            0,
        )
    )
    assert got[1]["summary"] == claude_summary


# twins workflow-inline, verbatim: Claude 2.1.220's notification of the workflow (its usage
# is its last task_progress's: {26, 0, 189}) and cbc 2.163.0's (no usage; cbc-raw)
CLAUDE_WF_LAST_USAGE = {"total_tokens": 26, "tool_uses": 0, "duration_ms": 189}
CLAUDE_WF_NOTE = json.loads(
    '{"type":"system","subtype":"task_notification","task_id":"wh3w5r4p6","tool_use_id":'
    '"toolu_mock_0002","status":"completed","output_file":"{TMP}/claude-0/{CWD_SLUG}/aca3bcc6'
    '-b883-4028-85c7-f6bf6236a493/tasks/wh3w5r4p6.output","summary":"Dynamic workflow \\"Mock'
    ' two-phase workflow\\" completed","usage":{"total_tokens":26,"tool_uses":0,"duration_ms"'
    ':189},"uuid":"5c8b4572-0e17-405a-8ac1-431c40d21bad","session_id":"aca3bcc6-b883-4028-85c7'
    '-f6bf6236a493"}'
)
CBC_WF_NOTE = json.loads(
    '{"type":"system","subtype":"task_notification","task_id":"477201c4-d796-4a55-a02e-33ecbbf'
    'cd93f","tool_use_id":"call_mock_0002","status":"completed","summary":"Dynamic workflow \\"'
    'inline-7d0e95\\" completed","output_file":"{TMP}/codebuddy-0/{CWD_SLUG}/agent-tasks/47720'
    '1c4-d796-4a55-a02e-33ecbbfcd93f.output","uuid":"01a22760-da88-7ef4-a3c0-3d30b151e181","se'
    'ssion_id":"01a22760-d417-7396-95cd-ef5e44609dc8","__timestamp":"2026-11-29T12:56:28.554Z"'
    ',"_requestId":"01a22760da7f7cca8efb481150ae708e"}'
)


def test_fields_completed_workflow_notification_gets_the_last_progress_usage() -> None:
    assert CLAUDE_WF_NOTE["usage"] == CLAUDE_WF_LAST_USAGE
    tid = CBC_WF_NOTE["task_id"]
    eng = engine("task-fields")
    last = progress(tid, [], "call_mock_0002", "Scan: scanner")
    last["usage"] = {"total_tokens": 0, "tool_uses": 0, "duration_ms": 1042}
    eng.feed(
        "backend",
        lines(started(tid, "local_workflow", "Mock two-phase workflow", "call_mock_0002"), last),
        4.0,
    )
    got = out(eng.feed("backend", line(CBC_WF_NOTE), 4.0))[0]
    assert got["usage"] == {"total_tokens": 0, "tool_uses": 0, "duration_ms": 1042}
    assert list(got)[:8] == list(CLAUDE_WF_NOTE)[:8]


def test_fields_no_usage_on_a_stopped_workflow_or_a_shell() -> None:
    # twins interrupt-idle-workflow.claude.jsonl / bg-bash.claude.jsonl: no usage
    eng = engine("task-fields")
    eng.feed(
        "backend",
        lines(
            started("w", "local_workflow", "Two slow agents", "c1"),
            progress("w", []),
            started("b", "local_bash", "Sleep", "c2"),
            progress("b"),
        ),
        0.0,
    )
    got = out(
        eng.feed(
            "backend",
            lines(
                notification("w", "stopped", "s", "c1"), notification("b", "completed", "s", "c2")
            ),
            1.0,
        )
    )
    assert "usage" not in got[0]
    assert "usage" not in got[1]


def test_fields_leave_a_complete_frame_byte_identical() -> None:
    eng = engine("task-fields")
    raw = line(
        {
            "type": "system",
            "subtype": "task_updated",
            "task_id": "t",
            "patch": {"status": "completed", "end_time": 1},
            "uuid": "u",
            "session_id": SID,
        }
    )
    cmds = eng.feed("backend", raw, 0)
    assert [c.data for c in cmds if isinstance(c, Write)] == [raw]


#: what task-correlation read a tool result's task ids with before (``^\s*``: quadratic)
_OLD_TASK_ID = re.compile(r"(?m)^\s*task_id:\s*([A-Za-z0-9][A-Za-z0-9_.:@\-]{0,200})\s*$")


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(
        st.sampled_from(["task_id:", " ", "\n", "\n\n", "\t", "\r", "a", "b1", "x-", ":"]),
        max_size=16,
    ).map("".join)
)
def test_a_tool_results_task_ids_are_read_as_before(text: str) -> None:
    from compat.stages.tasks import _RESULT_TASK_ID

    assert [m[1] for m in _RESULT_TASK_ID.finditer(text)] == [
        m[1] for m in _OLD_TASK_ID.finditer(text)
    ]


def test_a_long_blank_tool_result_is_read_at_once() -> None:
    """A tool's output with a long run of blank lines before its ``task_id:`` (the old
    pattern took 1.8 s on 40 KB of them, growing with the square)."""
    from compat.stages.tasks import _RESULT_TASK_ID

    text = " \n" * 500_000 + "task_id: abc\n"
    assert [m[1] for m in _RESULT_TASK_ID.finditer(text)] == ["abc"]
