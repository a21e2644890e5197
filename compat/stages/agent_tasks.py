"""A foreground sub-agent as the task and the record Claude Code 2.1.220 reports (twins
subagent-foreground: an ``Agent`` call with ``run_in_background: false`` whose agent runs a
Bash call and reports back).

Claude reports a foreground agent as a ``local_agent`` task as well as a background one, and
gives the Agent call's result the agent's record; cbc writes neither for a foreground agent
(its task frames are a background agent's only), but its wire has what they say: the call's
input (description, prompt, subagent_type), the agent's own frames (``parent_tool_use_id``
= the call: its tool calls, their descriptions, each message's usage and model) and the
call's result (the answer, then ``\\n\\n[Agent ID: agent-…]``).

- ``agent-tool-result``: the Agent call's ``tool_use_result`` is the agent's record
  ``{status: completed, prompt, agentId, agentType, content, resolvedModel,
  totalDurationMs, totalTokens, totalToolUseCount, usage, toolStats {readCount,
  searchCount, bashCount, editFileCount, linesAdded, linesRemoved, otherToolCount}}``.
  ``agentId`` is cbc's id (the one cbc's SendMessage takes), ``resolvedModel`` the model of
  the agent's last message, ``content`` the answer without cbc's ``[Agent ID: …]`` line,
  ``totalTokens`` the last message's tokens (input, output and cache), ``usage`` that
  message's usage in Claude's shape, ``totalDurationMs`` from the call to its result.
  ``toolStats`` counts the agent's calls by tool (Read; Grep/Glob; Bash/PowerShell;
  Edit/Write/NotebookEdit; the others) and the lines its successful edits added and
  removed. An error result (a denied or failed agent) gets none. Before ``subagent-answer``,
  which drops the agent's last frame (its usage is the record's).
- ``agent-task-frames``: the agent's task, as Claude writes it: ``task_started
  {tool_use_id, description, subagent_type, task_type: local_agent, prompt}`` before the
  agent's first frame (its prompt frame), a ``task_progress {description: "Running <the
  call's description or tool name>", usage {total_tokens, tool_uses, duration_ms},
  last_tool_name}`` before each frame of a call the agent makes, then ``task_updated
  {status, end_time}`` and ``task_notification {status, output_file, summary: the answer,
  usage}`` before the call's result (``failed`` for an error result, ``killed``/``stopped``
  for an interrupted one). Its id has the form of Claude's agent ids (``a`` and 16 hex
  digits), made from the call's id. A task still running when its turn's ``result`` comes
  (an interrupt, an error) or when cbc exits ends ``killed``/``stopped`` there. After
  ``tasks-snapshot``: Claude writes no ``background_tasks_changed`` for a foreground agent;
  before ``task-fields``, which fills and orders the frames as every task frame
  (``output_file`` ``""``: cbc keeps no transcript of a foreground agent).

A background agent (``run_in_background: true``) is left alone by both: cbc writes its task
frames, and its call's result is the launch. An agent's own Agent calls are not followed.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.stages.shape import ZERO_USAGE
from compat.stages.usage import COUNTS
from compat.taskkit import claude_summary, foreground_calls, remember, system_frame

#: foreground agents followed at once (the oldest forgotten past this)
_MAX = 256
#: cbc's line after an agent's answer in the Agent call's result
_AGENT_ID = re.compile(r"\s*\[Agent ID: ([^\]\s]+)\]\s*\Z")
#: tool name -> the toolStats count it adds to
_STAT_OF = {
    "Read": "readCount",
    "Grep": "searchCount",
    "Glob": "searchCount",
    "Bash": "bashCount",
    "PowerShell": "bashCount",
    "Edit": "editFileCount",
    "Write": "editFileCount",
    "NotebookEdit": "editFileCount",
}
_STATS = ("readCount", "searchCount", "bashCount", "editFileCount")


# -- reading the wire -------------------------------------------------------------------


def _blocks(obj: wire.Assistant | wire.User) -> list[dict[str, Any]]:
    """The frame's content blocks that are objects."""
    return [b for b in wire.blocks(obj) if isinstance(b, dict)]


def _calls(obj: wire.Assistant) -> list[dict[str, Any]]:
    return [b for b in _blocks(obj) if b.get("type") == "tool_use"]


def results(obj: wire.User) -> list[tuple[str, dict[str, Any]]]:
    """(call id, block) of the tool results of a frame."""
    return [
        (b["tool_use_id"], b)
        for b in _blocks(obj)
        if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
    ]


def result_texts(block: dict[str, Any]) -> list[str]:
    """A tool result's texts (a string content is one)."""
    content = block.get("content")
    if isinstance(content, str):
        return [content]
    parts = content if isinstance(content, list) else []
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]


def answer_of(block: dict[str, Any]) -> tuple[list[str], str | None]:
    """The agent's answer (its texts, cbc's ``[Agent ID: …]`` line cut) and cbc's agent id."""
    texts = result_texts(block)
    if not texts:
        return [], None
    m = _AGENT_ID.search(texts[-1])
    if m is None:
        return texts, None
    last = texts[-1][: m.start()]
    return [*texts[:-1], *([last] if last else [])], m.group(1)


def tokens(usage: Any) -> int:
    """A message's tokens: input, output and cache (a count that is no integer is 0)."""
    given = usage if isinstance(usage, dict) else {}
    return sum(v for k in COUNTS for v in [given.get(k)] if type(v) is int and v >= 0)


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def task_id(call: str) -> str:
    """A task id of the form of Claude's agent ids (``a`` and 16 hex digits), from the call."""
    return "a" + hashlib.sha256(call.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# -- agent-tool-result -------------------------------------------------------------------


def _lines(inp: dict[str, Any], name: str) -> tuple[int, int]:
    """(lines added, lines removed) by an edit with this input."""
    if name == "Write":
        return len(_str(inp.get("content")).splitlines()), 0
    if name != "Edit":
        return 0, 0
    diff = difflib.ndiff(
        _str(inp.get("old_string")).splitlines(), _str(inp.get("new_string")).splitlines()
    )
    signs = [d[:1] for d in diff]
    return signs.count("+"), signs.count("-")


@attrs.define
class _Agent:
    """What the record of one foreground agent says, as its frames come."""

    prompt: str
    agent_type: str
    start: float
    model: str | None = None
    usage: dict[str, Any] = attrs.field(factory=dict)
    calls: dict[str, tuple[str, dict[str, Any]]] = attrs.field(factory=dict)
    stats: dict[str, int] = attrs.field(
        factory=lambda: dict.fromkeys((*_STATS, "linesAdded", "linesRemoved", "otherToolCount"), 0)
    )

    def message(self, obj: wire.Assistant) -> None:
        """One of the agent's messages: its model and usage (the last one's count), its calls."""
        message = obj.get("message")
        if isinstance(message, dict):
            self.model = _str(message.get("model")) or self.model
            usage = message.get("usage")
            self.usage = usage if isinstance(usage, dict) else self.usage
        for b in _calls(obj):
            cid, name, inp = b.get("id"), _str(b.get("name")), b.get("input")
            if isinstance(cid, str) and cid not in self.calls:
                self.calls[cid] = (name, inp if isinstance(inp, dict) else {})
                self.stats[_STAT_OF.get(name, "otherToolCount")] += 1

    def result(self, use: str, block: dict[str, Any]) -> None:
        """One of its calls answered: a successful edit's lines count."""
        name, inp = self.calls.get(use, ("", {}))
        if block.get("is_error") is not True:
            added, removed = _lines(inp, name)
            self.stats["linesAdded"] += added
            self.stats["linesRemoved"] += removed

    def record(self, block: dict[str, Any], now: float) -> dict[str, Any]:
        texts, agent_id = answer_of(block)
        out: dict[str, Any] = {"status": "completed", "prompt": self.prompt}
        if agent_id is not None:
            out["agentId"] = agent_id
        out["agentType"] = self.agent_type
        out["content"] = [{"type": "text", "text": t} for t in texts]
        if self.model:
            out["resolvedModel"] = self.model
        out["totalDurationMs"] = max(0, int((now - self.start) * 1000))
        out["totalTokens"] = tokens(self.usage)
        out["totalToolUseCount"] = len(self.calls)
        out["usage"] = _claude_usage(self.usage)
        out["toolStats"] = dict(self.stats)
        return out


def _claude_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """A message's usage in Claude's shape (``result-shape``'s), with its token counts."""
    counts = {k: v for k in COUNTS for v in [usage.get(k)] if type(v) is int and v >= 0}
    return {k: dict(v) if isinstance(v, dict) else v for k, v in {**ZERO_USAGE, **counts}.items()}


@register
@attrs.define
class AgentToolResult(Stage):
    """A foreground Agent call's result carries Claude's record of the agent
    (`tool_use_result`), built from the call, the agent's frames and the result."""

    rule: ClassVar[str] = "agent-tool-result"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "user"})

    _agents: dict[str, _Agent] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.key() == "assistant":
            self._assistant(frame.view(wire.Assistant), ctx)
            return None
        obj = frame.view(wire.User)
        agent = self._agents.get(_str(obj.get("parent_tool_use_id")))
        if agent is not None:
            for use, block in results(obj):
                agent.result(use, block)
            return None
        return self._result(frame, obj, ctx)

    def _assistant(self, obj: wire.Assistant, ctx: Context) -> None:
        agent = self._agents.get(_str(obj.get("parent_tool_use_id")))
        if agent is not None:
            agent.message(obj)
        for cid, inp in foreground_calls(obj):
            agent_type = _str(inp.get("subagent_type"), "general-purpose")
            remember(self._agents, cid, _Agent(_str(inp.get("prompt")), agent_type, ctx.now), _MAX)

    def _result(self, frame: Frame, obj: wire.User, ctx: Context) -> Output:
        """The main thread's result of a followed call: the record, once, on a success."""
        found = [(u, b) for u, b in results(obj) if u in self._agents]
        if not found or obj.get("parent_tool_use_id") is not None:
            return None
        use, block = found[0]
        agent = self._agents.pop(use)
        if len(found) > 1 or "tool_use_result" in obj or block.get("is_error") is True:
            return None
        ctx.count(self.rule, "agent-record")
        record = agent.record(block, ctx.now)
        return (frame.replace({**obj, "tool_use_result": record}),)


# -- agent-task-frames -------------------------------------------------------------------


@attrs.define
class _Task:
    """A foreground agent's task, as the client has been told of it."""

    task_id: str
    call: str
    description: str
    subagent_type: str
    prompt: str
    start: float
    started: bool = False
    tool_uses: dict[str, None] = attrs.field(factory=dict)
    tokens: int = 0

    def usage(self, now: float) -> dict[str, int]:
        return {
            "total_tokens": self.tokens,
            "tool_uses": len(self.tool_uses),
            "duration_ms": max(0, int((now - self.start) * 1000)),
        }


def _record_usage(obj: wire.User) -> dict[str, int] | None:
    """The usage of the agent's record on its call's result (``agent-tool-result``'s)."""
    record = obj.get("tool_use_result")
    if not isinstance(record, dict):
        return None
    keys = ("totalTokens", "totalToolUseCount", "totalDurationMs")
    values = [v for k in keys for v in [record.get(k)] if type(v) is int]
    if len(values) != len(keys):
        return None
    return dict(zip(("total_tokens", "tool_uses", "duration_ms"), values, strict=True))


def _end_of(block: dict[str, Any]) -> tuple[str, str]:
    """(patch status, notification status) of an agent its call's result ends."""
    if block.get("is_error") is not True:
        return "completed", "completed"
    if any("interrupt" in t.lower() for t in result_texts(block)):
        return "killed", "stopped"
    return "failed", "failed"


@register
@attrs.define
class AgentTaskFrames(Stage):
    """A foreground sub-agent is a `local_agent` task, as Claude reports it: task_started,
    a task_progress per call it makes, task_updated and task_notification at its end."""

    rule: ClassVar[str] = "agent-task-frames"
    reads: ClassVar[frozenset[str]] = frozenset({"session_id"})
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"assistant", "user", "result", "system/task_started"}
    )

    _tasks: dict[str, _Task] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        kind = frame.key()
        if kind == "system/task_started":
            self._tasks.pop(_str(frame.view(wire.TaskStarted).get("tool_use_id")), None)
            return None  # (the CLI reports the agent itself)
        if kind == "result":
            return self._turn_end(frame, ctx)
        obj = frame.view(wire.Assistant) if kind == "assistant" else frame.view(wire.User)
        task = self._tasks.get(_str(obj.get("parent_tool_use_id")))
        if task is not None:
            return self._agent_frame(frame, task, ctx)
        if kind == "assistant":
            self._calls(frame.view(wire.Assistant), ctx)
            return None
        return self._result(frame, frame.view(wire.User), ctx)

    def _calls(self, obj: wire.Assistant, ctx: Context) -> None:
        for cid, inp in foreground_calls(obj):
            task = _Task(
                task_id(cid),
                cid,
                _str(inp.get("description")),
                _str(inp.get("subagent_type"), "general-purpose"),
                _str(inp.get("prompt")),
                ctx.now,
            )
            remember(self._tasks, cid, task, _MAX)

    def _agent_frame(self, frame: Frame, task: _Task, ctx: Context) -> Output:
        """A frame of the agent: its task starts before the first; a progress goes before
        each of its calls."""
        out = [] if task.started else [self._started(task, ctx)]
        if frame.key() == "assistant":
            out += self._progress(frame.view(wire.Assistant), task, ctx)
        return (*out, frame) if out else None

    def _started(self, task: _Task, ctx: Context) -> Frame:
        task.started = True
        ctx.count(self.rule, "task-started")
        fields = {
            "task_id": task.task_id,
            "tool_use_id": task.call,
            "description": task.description,
            "subagent_type": task.subagent_type,
            "task_type": "local_agent",
            "prompt": task.prompt,
        }
        return Frame.synth(system_frame(ctx, "task_started", fields), self.rule)

    def _progress(self, obj: wire.Assistant, task: _Task, ctx: Context) -> list[Frame]:
        message = obj.get("message")
        if isinstance(message, dict) and isinstance(message.get("usage"), dict):
            task.tokens = tokens(message.get("usage"))
        out = []
        for b in _calls(obj):
            cid, name, inp = b.get("id"), _str(b.get("name")), b.get("input")
            if not isinstance(cid, str) or cid in task.tool_uses:
                continue
            task.tool_uses[cid] = None
            said = inp.get("description") if isinstance(inp, dict) else None
            fields = {
                "task_id": task.task_id,
                "tool_use_id": task.call,
                "description": f"Running {_str(said) or name}",
                "subagent_type": task.subagent_type,
                "usage": task.usage(ctx.now),
                "last_tool_name": name,
            }
            out.append(Frame.synth(system_frame(ctx, "task_progress", fields), self.rule))
        return out

    def _result(self, frame: Frame, obj: wire.User, ctx: Context) -> Output:
        """The main thread's result of an agent's call: the task ends before it."""
        if obj.get("parent_tool_use_id") is not None:
            return None
        out: list[Frame] = []
        for use, block in results(obj):
            task = self._tasks.pop(use, None)
            if task is None or (not task.started and block.get("is_error") is True):
                continue  # (a call denied or failed before its agent ran: no task)
            if not task.started:
                out.append(self._started(task, ctx))
            out += self._ended(task, block, _record_usage(obj), ctx)
        return (*out, frame) if out else None

    def _ended(
        self, task: _Task, block: dict[str, Any], usage: dict[str, int] | None, ctx: Context
    ) -> list[Frame]:
        patch, status = _end_of(block)
        texts, _ = answer_of(block)
        summary = "\n".join(texts) if status != "stopped" else ""
        return self._end(task, patch, status, summary, usage or task.usage(ctx.now), ctx)

    def _end(
        self,
        task: _Task,
        patch: str,
        status: str,
        summary: str,
        usage: dict[str, int],
        ctx: Context,
    ) -> list[Frame]:
        ctx.count(self.rule, f"task-{patch}")
        updated = {"task_id": task.task_id, "patch": {"status": patch, "end_time": ctx.wall_ms()}}
        note = {
            "task_id": task.task_id,
            "tool_use_id": task.call,
            "status": status,
            "output_file": "",
            "summary": summary or claude_summary("local_agent", status, task.description),
            "usage": usage,
        }
        return [
            Frame.synth(system_frame(ctx, "task_updated", updated), self.rule),
            Frame.synth(system_frame(ctx, "task_notification", note), self.rule),
        ]

    def _stop_all(self, ctx: Context) -> list[Frame]:
        """Every started task ends ``killed``/``stopped``; the others are forgotten."""
        tasks = [t for t in self._tasks.values() if t.started]
        self._tasks.clear()
        out: list[Frame] = []
        for task in tasks:
            out += self._end(task, "killed", "stopped", "", task.usage(ctx.now), ctx)
        return out

    def _turn_end(self, frame: Frame, ctx: Context) -> Output:
        """The turn ended with agents running (an interrupt, an error): they are stopped."""
        out = self._stop_all(ctx)
        return (*out, frame) if out else None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        return self._stop_all(ctx) or None


__all__ = ["AgentTaskFrames", "AgentToolResult", "answer_of", "task_id"]
