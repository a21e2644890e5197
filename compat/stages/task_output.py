"""``task-output-records``: a TaskOutput or TaskStop result carries Claude Code 2.1.220's
record of it (``tool_use_result``), built from what the bridge saw; the text the model
reads stays cbc's.

Claude's user frame of each result carries a record (twins bg-shell-kill; read in 2.1.220's
binary); cbc writes none, only its text.

- TaskStop: ``{message: "Successfully stopped task: <id> (<command>)", task_id, task_type,
  command}``, where ``command`` is a shell's command and another task's description.
  cbc's text of a stopped shell (or workflow) is ``Cleanup completed for task "<id>"``,
  ``Command: …``, ``Runtime: …``, ``Status: <status>``; of a cancelled agent ``Successfully
  cancelled task "<id>"``, ``Task: …``, ``Runtime: …``, ``Status: cancelled``. A record is
  written only when the status says the task was running and is stopped now (cbc also
  "cleans up" a task that had ended, where Claude refuses with an error), and the bridge
  knows the task: a shell's command is the one of the Bash call that started it (else
  cbc's ``Command:`` line), an agent's or a workflow's description the one the client was
  given on its ``task_started``.
- TaskOutput of a shell: ``{retrieval_status, task: {task_id, task_type: "local_bash",
  status, description, output, exitCode}}``. ``retrieval_status`` is Claude's choice:
  ``not_ready`` for a running task read with ``block: false``, ``timeout`` for one still
  running when a blocking read gave up, else ``success``. ``status`` is cbc's ``Status:``
  in Claude's words (``cancelled``/``stopped`` are ``killed``), ``description`` the task's
  (the Bash call's ``description``). ``output`` is the task's whole output so far, where
  cbc gives only what is new since the last read (``Stdout (delta; chars=<from>-<next>…``,
  or ``full snapshot`` with ``full: true``): the rule keeps, per task and per reader (the
  main thread, each sub-agent), what it saw of the reads before and appends a delta that
  starts where the last one ended, or takes a snapshot whole. ``exitCode``: ``null`` while
  running and for a killed task (Claude kills a shell without an exit status), ``0`` for a
  completed one (Claude: completed is exit code 0).

Where Claude's record cannot be known, none is written rather than one made up: a read
whose offsets do not follow from the reads the rule saw (one it missed), with ``omitted``
(cbc's buffer dropped output) or ``filtered`` (a ``filter`` regex), a task with anything on
stderr (Claude writes both streams to one file, interleaved; cbc keeps them apart, so the
order cannot be told), text whose length does not match cbc's offsets, a task that
``failed`` (cbc gives no exit code for it, nor does any frame of the wire), a task the
bridge does not know or an agent's or a workflow's TaskOutput (Claude's record of those
holds the agent's transcript and result, which cbc's text does not give), an unknown task
id (cbc's text is a message), an ``is_error`` result, a sub-agent's result (Claude writes
no record there; its reads still count for that sub-agent's later ones).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.session import SessionState, TaskInfo
from compat.stage import Context, Output, Stage, register
from compat.stages.hygiene import one_text
from compat.taskkit import claude_type, remember, starting_call

#: the most calls and reader/task outputs remembered
_MAX_CALLS = 1024
_MAX_OUTPUTS = 1024
_TOOLS = frozenset({"TaskOutput", "TaskStop"})

#: the task type of the tool that started a task
_TYPE_OF_TOOL = {
    "Bash": "local_bash",
    "PowerShell": "local_bash",
    "Agent": "local_agent",
    "Task": "local_agent",
    "Workflow": "local_workflow",
}
#: cbc's shell status -> Claude's
_STATUS = {
    "running": "running",
    "pending": "pending",
    "completed": "completed",
    "failed": "failed",
    "killed": "killed",
    "cancelled": "killed",
    "stopped": "killed",
}
_RUNNING = frozenset({"running", "pending"})
#: Claude's exitCode for a status (a status not here: not known from cbc's wire)
_EXIT_CODE: dict[str, int | None] = {
    "running": None,
    "pending": None,
    "completed": 0,
    "killed": None,
}
#: cbc's statuses of a task that TaskStop stopped
_STOPPED = frozenset({"killed", "cancelled", "stopped"})


# -- cbc's TaskOutput text of a shell ---------------------------------------------------


@attrs.frozen
class Read:
    """What one of cbc's TaskOutput texts of a shell says of its stdout."""

    task_id: str
    status: str  # cbc's word
    full: bool  # a ``full snapshot``, else a ``delta``
    start: int
    end: int
    text: str  # the stdout of the read ("" for none)
    #: nothing that makes the whole output unknowable: no ``omitted``/``filtered``, no stderr
    clean: bool


_STDOUT = "\n\nStdout ("
_HEADER = re.compile(
    r"(delta|full snapshot); chars=(\d+)-(\d+); caught_up=true; "
    r"more_expected=(?:true|false)((?:; omitted=\d+)?(?:; filtered)?)\):\n"
)
_STDERR = re.compile(
    r"\n\nStderr \((?:delta|full snapshot); chars=(\d+)-(\d+); caught_up=true; "
    r"more_expected=(?:true|false)((?:; omitted=\d+)?(?:; filtered)?)\):\n"
)
_NONE = ("(no new output)", "(no output)", "(no matching output)")
_HINT = '\n\n<system-reminder data-role="tool-hint">\n'


def _head(text: str) -> tuple[str, str] | None:
    """(task id, status) of the lines before ``Stdout (…``: ``Shell ID``, ``Command`` (of
    any lines), ``Status``, ``Duration``, ``Timestamp``."""
    first = text.split("\n", 1)[0]
    lines = text.rsplit("\n", 3)
    if not first.startswith("Shell ID: ") or len(lines) != 4:
        return None
    status, duration, stamp = lines[1:]
    if not (duration.startswith("Duration: ") and stamp.startswith("Timestamp: ")):
        return None
    if not status.startswith("Status: ") or "\nCommand: " not in lines[0]:
        return None
    return first[len("Shell ID: ") :], status[len("Status: ") :]


def _utf16_prefix(text: str, units: int) -> str | None:
    """The first ``units`` UTF-16 code units of ``text`` (cbc's offsets count those), or
    None when it has fewer or the cut splits a character."""
    data = text[:units].encode("utf-16-le", "surrogatepass")
    if len(data) < 2 * units:
        return None
    try:
        return data[: 2 * units].decode("utf-16-le")
    except UnicodeDecodeError:
        return None


def _body(rest: str, start: int, end: int) -> tuple[str, str] | None:
    """(the stream's text, what follows it) from the text after a header: ``end - start``
    UTF-16 units, or a placeholder when nothing was read."""
    if end == start:
        placeholder = next((p for p in _NONE if rest.startswith(p)), None)
        return None if placeholder is None else ("", rest[len(placeholder) :])
    body = _utf16_prefix(rest, end - start)
    return None if body is None else (body, rest[len(body) :])


def _stderr_clean(rest: str) -> bool | None:
    """Whether the stderr part after stdout says no stderr ever (None: not cbc's layout);
    it ends the text, or cbc's running-task hint does."""
    found = _STDERR.match(rest)
    if found is None:
        return None
    start, end = int(found.group(1)), int(found.group(2))
    body = _body(rest[found.end() :], start, end)
    if body is None or not (body[1] == "" or body[1].startswith(_HINT)):
        return None
    return end == 0 and not found.group(3)


def parse_read(text: str) -> Read | None:
    """cbc's TaskOutput text of a shell, or None when it is not laid out so."""
    at = text.find(_STDOUT)
    head = _head(text[:at]) if at > 0 else None
    found = _HEADER.match(text, at + len(_STDOUT)) if head is not None else None
    if head is None or found is None:
        return None
    start, end = int(found.group(2)), int(found.group(3))
    body = _body(text[found.end() :], start, end)
    clean = _stderr_clean(body[1]) if body is not None else None
    if body is None or clean is None:
        return None
    full = found.group(1) == "full snapshot"
    return Read(head[0], head[1], full, start, end, body[0], clean and not found.group(4))


#: a reader's knowledge of a task's stdout: (all of it so far, or None: unknown; its end)
Known = tuple[str | None, int]


def follow(known: Known | None, read: Read) -> Known:
    """What is known of the task's stdout after ``read``."""
    if not read.clean:
        return None, read.end
    if read.full:
        return (read.text if read.start == 0 else None), read.end
    text, end = known if known is not None else ("", 0)
    if text is None or read.start != end:
        return None, read.end
    return text + read.text, read.end


# -- the task as the bridge knows it ----------------------------------------------------


def _task(state: SessionState, task_id: str) -> TaskInfo | None:
    return state.tasks.get(task_id)


def task_type(state: SessionState, info: TaskInfo) -> str | None:
    """Claude's type of the task, from the call that started it (else the task's facts)."""
    call = starting_call(state, info.tool_use_id)
    if call is not None:
        return _TYPE_OF_TOOL.get(call[0])
    kind = claude_type(info.task_type)
    return kind if kind in _TYPE_OF_TOOL.values() else None


def _retrieval(status: str, blocking: bool) -> str:
    if status not in _RUNNING:
        return "success"
    return "timeout" if blocking else "not_ready"


def output_record(
    read: Read, output: str | None, info: TaskInfo | None, call: dict[str, Any]
) -> dict[str, Any] | None:
    """Claude's record of a shell's TaskOutput (None: not known)."""
    status = _STATUS.get(read.status, "")
    if output is None or info is None or status not in _EXIT_CODE:
        return None
    return {
        "retrieval_status": _retrieval(status, call.get("block") is not False),
        "task": {
            "task_id": read.task_id,
            "task_type": "local_bash",
            "status": status,
            "description": info.description,
            "output": output,
            "exitCode": _EXIT_CODE[status],
        },
    }


# -- cbc's TaskStop text -----------------------------------------------------------------

_CLEANED = re.compile(r'Cleanup completed for task "([^"\n]*)"\nCommand: ')
_CANCELLED = re.compile(r'Successfully cancelled task "([^"\n]*)"\nTask: ')


def parse_stop(text: str) -> tuple[str, str, str | None] | None:
    """(task id, shell or agent, cbc's ``Command:``) of cbc's text of a task it stopped, or
    None (another text, or a task that was not running)."""
    lines = text.rsplit("\n", 2)
    if len(lines) != 3 or not lines[1].startswith("Runtime: "):
        return None
    if not lines[2].startswith("Status: ") or lines[2][len("Status: ") :] not in _STOPPED:
        return None
    shell = _CLEANED.match(lines[0])
    if shell is not None:
        return shell.group(1), "shell", lines[0][shell.end() :]
    agent = _CANCELLED.match(lines[0])
    return (agent.group(1), "agent", None) if agent is not None else None


def _stopped_command(state: SessionState, info: TaskInfo, kind: str, shown: str | None) -> Any:
    """What Claude calls the stopped task: a shell's command, another task's description."""
    if kind == "local_bash":
        call = starting_call(state, info.tool_use_id)
        command = call[1].get("command") if call is not None else None
        return command if isinstance(command, str) else shown
    return info.description or None


def stop_record(state: SessionState, text: str) -> dict[str, Any] | None:
    """Claude's record of a TaskStop, from cbc's text and the task's facts (None: not
    known)."""
    stopped = parse_stop(text)
    info = _task(state, stopped[0]) if stopped is not None else None
    if stopped is None or info is None:
        return None
    tid, said, shown = stopped
    kind = task_type(state, info)
    if kind is None or (said == "agent") != (kind == "local_agent"):
        return None
    command = _stopped_command(state, info, kind, shown)
    if command is None:
        return None
    return {
        "message": f"Successfully stopped task: {tid} ({command})",
        "task_id": tid,
        "task_type": kind,
        "command": command,
    }


# -- the rule -----------------------------------------------------------------------------


def _task_calls(obj: wire.Assistant) -> list[tuple[str, str, dict[str, Any]]]:
    """(id, tool, input) of the message's calls of TaskOutput and TaskStop (a
    ``DeferExecuteTool`` call unwrapped)."""
    out = []
    for block in wire.blocks(obj):
        call = _call(block)
        if call is not None:
            out.append(call)
    return out


def _call(block: Any) -> tuple[str, str, dict[str, Any]] | None:
    if not isinstance(block, dict) or block.get("type") != "tool_use":
        return None
    use_id, name, inp = block.get("id"), block.get("name"), block.get("input")
    if name == "DeferExecuteTool" and isinstance(inp, dict):
        name, inp = inp.get("toolName"), inp.get("params")
    if not isinstance(use_id, str) or not isinstance(name, str) or not isinstance(inp, dict):
        return None
    if name not in _TOOLS:
        return None
    return use_id, name, {k: v for k, v in inp.items() if k in ("task_id", "block", "full")}


@register
@attrs.define
class TaskOutputRecords(Stage):
    """A TaskOutput or TaskStop result carries Claude's record (`tool_use_result`): a
    shell's whole output so far rebuilt from cbc's deltas, its status and exit code; the
    stopped task and its command. None where the bridge cannot know it."""

    rule: ClassVar[str] = "task-output-records"
    reads: ClassVar[frozenset[str]] = frozenset(
        {"tasks", "task.task_type", "task.tool_use_id", "task.description", "tool_uses"}
    )
    #: the task's facts as its earlier frames left them (the task rules come later)
    reads_earlier: ClassVar[frozenset[str]] = frozenset(
        {"tasks", "task.task_type", "task.tool_use_id", "task.description"}
    )
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "user"})

    #: call id -> (tool, the input fields read)
    _calls: dict[str, tuple[str, dict[str, Any]]] = attrs.field(factory=dict, init=False)
    #: "<reader: the sub-agent's call, "" for the main thread>\n<task id>" -> what that
    #: reader knows of the task's stdout
    _known: dict[str, Known] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.type == "assistant":
            for use_id, name, inp in _task_calls(frame.view(wire.Assistant)):
                remember(self._calls, use_id, (name, inp), cap=_MAX_CALLS)
            return None
        obj = frame.view(wire.User)
        results = wire.blocks_of(obj, "tool_result")
        records = [self._record(b, obj.get("parent_tool_use_id"), ctx) for b in results]
        if len(records) != 1 or records[0] is None or "tool_use_result" in obj:
            return None
        if obj.get("parent_tool_use_id") is not None:
            return None  # (Claude writes no record on a sub-agent's result)
        ctx.count(self.rule, "task-record")
        return (frame.replace({**obj, "tool_use_result": records[0]}),)

    def _record(self, block: dict[str, Any], reader: Any, ctx: Context) -> dict[str, Any] | None:
        """Claude's record of one result (None: none), what a read says learned."""
        use_id = block.get("tool_use_id")
        call = self._calls.pop(use_id, None) if isinstance(use_id, str) else None
        text = one_text(block.get("content"))
        if call is None or text is None or block.get("is_error") is True:
            return None
        name, inp = call
        if name == "TaskStop":
            return stop_record(ctx.state, text)
        return self._output(text, reader if isinstance(reader, str) else None, inp, ctx)

    def _output(
        self, text: str, reader: str | None, inp: dict[str, Any], ctx: Context
    ) -> dict[str, Any] | None:
        read = parse_read(text)
        if read is None:
            return None
        key = f"{reader or ''}\n{read.task_id}"
        known = follow(self._known.get(key), read)
        remember(self._known, key, known, cap=_MAX_OUTPUTS)
        info = _task(ctx.state, read.task_id)
        if info is None or task_type(ctx.state, info) != "local_bash":
            return None
        return output_record(read, known[0], info, inp)
