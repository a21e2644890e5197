"""``task-output-records``: TaskOutput and TaskStop results carry Claude's record, built from
cbc's text and the task facts; the text stays cbc's (twins bg-shell-kill; cbc's layouts read
in cbc 2.163.0's binary)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from compat.playbook import Count, Out, Playbook
from compat.session import TaskInfo, ToolUse
from compat.stages.task_output import Read, follow, parse_read, parse_stop

from .helpers import json_values, result_block
from .session_support import drive, full
from .test_deny_interrupt import _twin_events

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"
CMD = "for i in $(seq 1 60); do echo tick-$i; sleep 1; done"


def _hint(tid: str) -> str:
    return (
        '\n\n<system-reminder data-role="tool-hint">\n'
        f"Background Bash {tid} (command: {CMD}) is still running. You will be automatically"
        " notified via a <task-notification> message when it finishes \u2014 do NOT poll"
        " TaskOutput in a loop.\n</system-reminder>"
    )


def _read_text(  # noqa: PLR0913 (cbc's fields)
    tid: str,
    out: str,
    start: int = 0,
    status: str = "running",
    kind: str = "delta",
    err: tuple[int, int, str] = (0, 0, ""),
    extra: str = "",
    command: str = CMD,
) -> str:
    """cbc's TaskOutput text of a shell, laid out as cbc 2.163.0 lays it out."""
    more = "true" if status == "running" else "false"
    end = start + len(out.encode("utf-16-le")) // 2
    none = "(no output)" if kind == "full snapshot" else "(no new output)"
    lines = [
        f"Shell ID: {tid}",
        f"Command: {command}",
        f"Status: {status}",
        "Duration: 2s",
        "Timestamp: 2026-12-05T13:14:12.669Z",
        "",
        f"Stdout ({kind}; chars={start}-{end}; caught_up=true; more_expected={more}{extra}):",
        out or none,
        "",
        f"Stderr ({kind}; chars={err[0]}-{err[1]}; caught_up=true; more_expected={more}):",
        err[2] or none,
    ]
    return "\n".join(lines) + (_hint(tid) if status == "running" else "")


def _assistant(use_id: str, name: str, inp: dict[str, Any], parent: str | None = None) -> Any:
    block = {"type": "tool_use", "id": use_id, "name": name, "input": inp}
    return {"type": "assistant", "parent_tool_use_id": parent, "message": {"content": [block]}}


def _result(use_id: str, text: Any, parent: str | None = None, **more: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "parent_tool_use_id": parent,
        "message": {"role": "user", "content": [{**result_block(use_id, text), **more}]},
    }


def _playbook(*shells: str) -> Playbook:
    """The rule with a background shell per id (b<id> started it), an agent ``a1``."""
    uses = {f"b{t}": ToolUse(f"b{t}", "Bash", {"command": CMD}) for t in shells}
    uses["ag"] = ToolUse("ag", "Agent", {"description": "Look around"})
    tasks = {
        t: TaskInfo(t, task_type="local_bash", tool_use_id=f"b{t}", description=f"Tick {t}")
        for t in shells
    }
    tasks["a1"] = TaskInfo(
        "a1", task_type="local_agent", tool_use_id="ag", description="Look around"
    )
    return Playbook("task-output-records", facts={"tool_uses": uses, "tasks": tasks})


def _record(pb: Playbook, use_id: str, name: str, inp: dict[str, Any], text: str, **kw: Any) -> Any:
    """The record the rule gives the result of that call (None: it passes unchanged)."""
    pb.frame(_assistant(use_id, name, inp, kw.get("parent")))
    frame = _result(use_id, text, **kw)
    out = [o.frame for o in pb.frame(frame) if isinstance(o, Out)]
    assert len(out) == 1
    assert out[0]["message"] == frame["message"]  # the text the model reads stays cbc's
    return out[0].get("tool_use_result")


def _output(pb: Playbook, n: int, text: str, block: bool = False, **kw: Any) -> Any:
    return _record(pb, f"o{n}", "TaskOutput", {"task_id": "x", "block": block}, text, **kw)


def _task(tid: str, status: str, output: str, exit_code: int | None, desc: str = "") -> Any:
    return {
        "task_id": tid,
        "task_type": "local_bash",
        "status": status,
        "description": desc or f"Tick {tid}",
        "output": output,
        "exitCode": exit_code,
    }


# -- the twin -------------------------------------------------------------------------------


def _claude_records() -> list[Any]:
    claude = [
        json.loads(json.loads(line)["text"])
        for line in (TWINS / "bg-shell-kill.claude.jsonl").read_text().splitlines()[1:]
        if json.loads(line).get("kind") == "stdout"
    ]
    return [f["tool_use_result"] for f in claude if "tool_use_result" in f]


def test_the_twins_records_are_claudes_but_for_the_task_id() -> None:
    """The bridged twin's TaskOutput and TaskStop results carry Claude's records; only the
    task id (cbc's, Claude's: each named by its launch record) differs."""
    run = drive(full(), _twin_events(TWINS / "bg-shell-kill.cbc-bridged.jsonl"))
    got = [f["tool_use_result"] for f in run.frames() if "tool_use_result" in f]
    claude = _claude_records()
    ids = (claude[0]["backgroundTaskId"], got[0]["backgroundTaskId"])
    want = json.loads(json.dumps(claude).replace(*ids))
    assert len(got) == 3  # the Bash launch's (bash-output), TaskOutput's, TaskStop's
    assert got == want
    texts = [
        b["content"]
        for f in run.frames()
        if f.get("type") == "user" and "tool_use_result" in f
        for b in f["message"]["content"]
    ]
    assert texts[1][0]["text"].startswith(f"Shell ID: {ids[1]}\n")  # cbc's text, kept
    assert texts[2][0]["text"].startswith(f'Cleanup completed for task "{ids[1]}"')


# -- TaskOutput -----------------------------------------------------------------------------


def test_deltas_add_up_to_the_whole_output() -> None:
    pb = _playbook("s1")
    first = _output(pb, 1, _read_text("s1", "tick-1\n"))
    assert first == {
        "retrieval_status": "not_ready",
        "task": _task("s1", "running", "tick-1\n", None),
    }
    assert pb.counts == {"task-record": 1, "rewritten": 1}
    second = _output(pb, 2, _read_text("s1", "tick-2\ntick-3\n", start=7))
    assert second["task"]["output"] == "tick-1\ntick-2\ntick-3\n"
    nothing_new = _output(pb, 3, _read_text("s1", "", start=21))
    assert nothing_new["task"]["output"] == "tick-1\ntick-2\ntick-3\n"


def test_several_shells_are_followed_apart() -> None:
    pb = _playbook("s1", "s2")
    assert _output(pb, 1, _read_text("s1", "a\n"))["task"]["output"] == "a\n"
    assert _output(pb, 2, _read_text("s2", "b\n"))["task"]["output"] == "b\n"
    assert _output(pb, 3, _read_text("s1", "c\n", start=2))["task"]["output"] == "a\nc\n"
    assert _output(pb, 4, _read_text("s2", "d\n", start=2))["task"]["output"] == "b\nd\n"


def test_a_read_that_does_not_follow_gets_no_record_until_a_full_snapshot() -> None:
    pb = _playbook("s1")
    assert _output(pb, 1, _read_text("s1", "late\n", start=40)) is None  # a read missed
    assert _output(pb, 2, _read_text("s1", "more\n", start=45)) is None  # still unknown
    snap = _output(pb, 3, _read_text("s1", "all of it\n", kind="full snapshot"))
    assert snap["task"]["output"] == "all of it\n"
    assert _output(pb, 4, _read_text("s1", "x\n", start=10))["task"]["output"] == "all of it\nx\n"


def test_omitted_filtered_or_stderr_output_is_not_invented() -> None:
    pb = _playbook("s1", "s2", "s3")
    assert _output(pb, 1, _read_text("s1", "tail\n", extra="; omitted=900")) is None
    assert _output(pb, 2, _read_text("s2", "match\n", extra="; filtered")) is None
    assert _output(pb, 3, _read_text("s3", "out\n", err=(0, 4, "err\n"))) is None
    # a later read of the shell with stderr: its stderr offsets still show it had some
    assert _output(pb, 4, _read_text("s3", "", start=4, err=(4, 4, ""))) is None


def test_an_ended_task_is_read_with_claudes_status_and_exit_code() -> None:
    pb = _playbook("s1", "s2", "s3")
    done = _output(pb, 1, _read_text("s1", "ok\n", status="completed"))
    assert done == {"retrieval_status": "success", "task": _task("s1", "completed", "ok\n", 0)}
    killed = _output(pb, 2, _read_text("s2", "t\n", status="killed"), block=True)
    assert killed == {"retrieval_status": "success", "task": _task("s2", "killed", "t\n", None)}
    # a failed shell's exit code is nowhere on cbc's wire: no record
    assert _output(pb, 3, _read_text("s3", "bad\n", status="failed")) is None


def test_a_blocking_read_of_a_task_still_running_timed_out() -> None:
    pb = _playbook("s1")
    got = _output(pb, 1, _read_text("s1", "tick-1\n"), block=True)
    assert got["retrieval_status"] == "timeout"
    pb2 = _playbook("s1")
    default = _record(pb2, "o1", "TaskOutput", {"task_id": "s1"}, _read_text("s1", "t\n"))
    assert default["retrieval_status"] == "timeout"  # (block is true unless false)


def test_unknown_tasks_errors_and_agents_get_no_record() -> None:
    pb = _playbook("s1")
    assert _output(pb, 1, _read_text("zz", "x\n")) is None  # a task the bridge never saw
    missing = "No task found with ID: zz. Use /tasks to list them."
    assert _output(pb, 2, missing) is None
    assert _output(pb, 3, _read_text("s1", "x\n"), is_error=True) is None
    agent_text = "Task ID: a1\nStatus: running\n--- RESULT ---\n(no new progress since last check)"
    assert _output(pb, 4, agent_text) is None
    assert pb.counts == {}


def test_a_sub_agents_read_gets_no_record_and_counts_for_that_sub_agent() -> None:
    pb = _playbook("s1")
    assert _output(pb, 1, _read_text("s1", "a\n"), parent="ag") is None
    sub = _output(pb, 2, _read_text("s1", "b\n", start=2), parent="ag")
    assert sub is None  # (Claude writes none on a sub-agent's result)
    main = _output(pb, 3, _read_text("s1", "a\nb\n"))  # the main thread's cursor is its own
    assert main["task"]["output"] == "a\nb\n"


def test_text_that_disagrees_with_cbcs_offsets_gets_no_record() -> None:
    pb = _playbook("s1")
    text = _read_text("s1", "abc\n").replace("chars=0-4", "chars=0-9")
    assert _output(pb, 1, text) is None
    astral = _read_text("s1", "\U0001f600!\n")  # 2 UTF-16 units for the emoji: chars=0-4
    assert "chars=0-4" in astral
    assert parse_read(astral) == Read("s1", "running", False, 0, 4, "\U0001f600!\n", True)


def test_a_command_of_several_lines_and_output_that_looks_like_cbcs_layout() -> None:
    tricky = (
        "x\n\nStderr (delta; chars=0-0; caught_up=true; more_expected=true):\n(no new output)\n"
    )
    read = parse_read(_read_text("s1", tricky, command="echo a\necho b"))
    assert read is not None
    assert (read.text, read.clean) == (tricky, True)


def test_follow() -> None:
    read = Read("t", "running", False, 0, 2, "a\n", True)
    assert follow(None, read) == ("a\n", 2)
    assert follow(("x", 2), Read("t", "running", False, 2, 3, "y", True)) == ("xy", 3)
    assert follow((None, 2), Read("t", "running", False, 2, 3, "y", True)) == (None, 3)
    assert follow(("x", 1), Read("t", "running", True, 0, 3, "abc", True)) == ("abc", 3)
    assert follow(("x", 1), Read("t", "running", False, 1, 3, "bc", False)) == (None, 3)


# -- TaskStop -------------------------------------------------------------------------------


def _stop_text(tid: str, status: str = "killed", command: str = CMD) -> str:
    return f'Cleanup completed for task "{tid}"\nCommand: {command}\nRuntime: 3s\nStatus: {status}'


def _stop(pb: Playbook, n: int, text: str, **kw: Any) -> Any:
    return _record(pb, f"k{n}", "TaskStop", {"task_id": "x"}, text, **kw)


def test_a_stopped_shell_is_named_by_its_command() -> None:
    pb = _playbook("s1")
    assert _stop(pb, 1, _stop_text("s1")) == {
        "message": f"Successfully stopped task: s1 ({CMD})",
        "task_id": "s1",
        "task_type": "local_bash",
        "command": CMD,
    }
    assert pb.counts == {"task-record": 1, "rewritten": 1}


def test_a_stopped_agent_is_named_by_its_description() -> None:
    pb = _playbook()
    text = 'Successfully cancelled task "a1"\nTask: Look around\nRuntime: 4s\nStatus: cancelled'
    assert _stop(pb, 1, text) == {
        "message": "Successfully stopped task: a1 (Look around)",
        "task_id": "a1",
        "task_type": "local_agent",
        "command": "Look around",
    }


def test_a_stopped_workflow_is_named_by_its_description() -> None:
    pb = _playbook()
    uses = {"wf": ToolUse("wf", "Workflow", {"script": "x"})}
    info = TaskInfo("w1", task_type="local_workflow", tool_use_id="wf", description="Scan")
    pb.set_facts({"tool_uses": uses, "tasks": {"w1": info}})
    got = _stop(pb, 1, _stop_text("w1", command="inline-1"))
    assert got == {
        "message": "Successfully stopped task: w1 (Scan)",
        "task_id": "w1",
        "task_type": "local_workflow",
        "command": "Scan",
    }


def test_a_stop_claude_would_refuse_or_cannot_name_gets_no_record() -> None:
    pb = _playbook("s1")
    assert _stop(pb, 1, _stop_text("s1", status="completed")) is None  # it had ended
    assert _stop(pb, 2, _stop_text("zz")) is None  # a task the bridge does not know
    assert _stop(pb, 3, 'Failed to stop task "s1". The task may have already completed.') is None
    assert _stop(pb, 4, _stop_text("s1"), is_error=True) is None
    assert _stop(pb, 5, _stop_text("s1"), parent="ag") is None  # a sub-agent's
    agent_as_shell = 'Successfully cancelled task "s1"\nTask: t\nRuntime: 1s\nStatus: cancelled'
    assert _stop(pb, 6, agent_as_shell) is None
    assert pb.counts == {}


def test_a_shell_whose_call_was_forgotten_is_named_by_cbcs_command_line() -> None:
    pb = _playbook("s1")
    pb.set_facts({"tool_uses": {}})
    got = _stop(pb, 1, _stop_text("s1", command="echo a\necho b"))
    assert got is not None
    assert got["command"] == "echo a\necho b"
    assert parse_stop(_stop_text("s1")) == ("s1", "shell", CMD)


def test_the_other_tools_results_pass() -> None:
    pb = _playbook("s1")
    pb.frame(_assistant("r1", "Read", {"file_path": "/x"}))
    frame = _result("r1", _read_text("s1", "x\n"))
    assert pb.frame(frame) == [Out(frame)]
    assert Count("task-record") not in pb.frame(_result("unseen", _stop_text("s1")))


@given(json_values(text=6))
def test_any_content_is_taken_without_error(content: Any) -> None:
    pb = _playbook("s1")
    for use_id, name in (("o", "TaskOutput"), ("k", "TaskStop")):
        pb.frame(_assistant(use_id, name, {"task_id": content, "block": content}))
        for frame in (
            {
                "type": "user",
                "message": {
                    "content": [{"type": "tool_result", "tool_use_id": use_id, "content": content}]
                },
            },
            {"type": "user", "message": {"content": content}},
            {"type": "user", "parent_tool_use_id": content, "message": content},
            {
                "type": "assistant",
                "message": {
                    "content": [{"type": "tool_use", "id": content, "name": name, "input": content}]
                },
            },
            {"type": "assistant", "message": {"content": content}},
            _assistant("n", content, {}),
            _assistant("d", "DeferExecuteTool", {"toolName": content, "params": content}),
        ):
            assert pb.frame(frame)


@given(st.text(alphabet="ab\n():;=-0123456789SdtoueSrhllIDCmaneTsp", max_size=120))
def test_any_text_is_parsed_without_error(text: str) -> None:
    parse_read(text)
    parse_stop(text)
    parse_read(_read_text("s1", text))
