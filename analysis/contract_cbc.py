"""The cbc contract: what a client of CodeBuddy Code 2.163.0 (its Python and JS SDKs) may rely
on in the stream it reads; the oracle of profile ``claude-to-cbc`` (REVERSE.md).

Written from cbc's own captures (``captures/reference/cbc-2.163.0``: every file there
passes with zero violations) and from what the SDKs read (REVERSE.md "What the cbc SDKs
require of the CLI"). Pure; it knows nothing of the stages. Rule ids are the reverse rules
that make a Claude stream honour each point (``rev-*``), plus ``framing``.

- ``framing``: each line is one JSON object with a string ``type``.
- ``rev-vocabulary``: only the frame types and system subtypes cbc writes
  (``CBC_TYPES``, ``CBC_SYSTEM``): never ``control_cancel_request``, ``command_lifecycle``,
  ``background_tasks_changed``...
- ``rev-task-type``: ``task_type`` is one of cbc's (``Bash``, ``Agent``, ``local_workflow``).
- ``rev-interrupted-turn``: an aborted turn (``terminal_reason: aborted_*``) does not end
  in an error result with ``errors`` (both SDKs raise ``ExecutionError`` on one; cbc ends
  it with a success).
- ``rev-initialize-reply``: the initialize reply has a string ``currentModelId`` and
  models with ``id`` and ``name``.
- ``rev-mcp-status``: an ``mcp_status`` reply has ``mcp_servers`` (a list).
- ``rev-local-command``: no replayed ``<local-command-stdout>`` user frame;
  ``rev-interrupt-marker``: no ``[Request interrupted by user…]`` user message (cbc says
  "Interrupted by user" as the assistant).
- ``rev-background-agent``: no message of a background agent (``parent_tool_use_id`` of an
  Agent call made with ``run_in_background``).
- ``rev-session-id``: when the client gave its session id (``session_id``): the first
  ``system/init`` and every ``result`` carry it (cbc's sub-agents have sessions of their
  own, so other frames may not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from analysis import contract as claude_contract
from analysis.contract import Violation
from compat import TARGET_CLAUDE_VERSION
from compat.capture import Capture, Record
from compat.frames import dict_at, list_at, str_at
from compat.vocabulary import CBC_SYSTEM

CBC_VERSION = "2.163.0"
CBC_TYPES = frozenset(
    {
        "system",
        "assistant",
        "user",
        "result",
        "stream_event",
        "control_request",
        "control_response",
        "control_notification",
        "file-history-snapshot",
        "error",
        "tool_progress",
        "topic",
        "ai-title",
        "image",
    }
)
CBC_TASK_TYPES = frozenset({"Bash", "Agent", "local_workflow", "PowerShell"})
RULES = {
    "framing": "each line is one JSON object with a string `type`",
    "rev-vocabulary": "only the frame types and system subtypes cbc 2.163.0 writes",
    "rev-task-type": "task_type is cbc's (Bash, Agent, local_workflow)",
    "rev-interrupted-turn": "an interrupted turn does not end in an error result with errors",
    "rev-initialize-reply": "initialize reply: currentModelId, models with id and name",
    "rev-mcp-status": "mcp_status reply has mcp_servers",
    "rev-local-command": "no replayed <local-command-stdout> user frame",
    "rev-interrupt-marker": "no [Request interrupted by user...] user message",
    "rev-background-agent": "no message of a background agent",
    "rev-session-id": "the first init and every result carry the session id the client gave",
}


def check(capture: Capture, session_id: str | None = None) -> list[Violation]:
    """Every violation of the cbc contract in what the capture's client saw."""
    out = capture.lines("client_out")
    inputs = capture.lines("client_in") if out else capture.lines("stdin")
    if not out:
        out = capture.lines("stdout")
    return check_records(out, inputs, session_id=session_id)


def check_records(
    outputs: Sequence[Record], inputs: Sequence[Record] = (), *, session_id: str | None = None
) -> list[Violation]:
    """``outputs``: what the client read; ``inputs``: what it sent, in time order."""
    events: list[tuple[float, int, str, Record]] = [(r.t, 0, "in", r) for r in inputs]
    events += [(r.t, 1, "out", r) for r in outputs]
    events.sort(key=lambda e: (e[0], e[1]))
    c = _Checker(session_id)
    for _, _, side, rec in events:
        try:
            obj = orjson.loads(rec.data)
        except orjson.JSONDecodeError:
            obj = None
        if side == "in":
            c.sent(obj)
        else:
            c.read(obj, rec)
    return sorted(c.violations, key=lambda v: v.lineno)


class _Checker:
    def __init__(self, session_id: str | None) -> None:
        self.violations: list[Violation] = []
        self.requests: dict[str, str] = {}
        self.interrupted = False
        self.session_id = session_id
        self.background: set[str] = set()
        self.first_init = True

    def bad(self, rule: str, rec: Record, message: str) -> None:
        self.violations.append(Violation(rule, rec.lineno, message, rec.text[:300]))

    def sent(self, obj: Any) -> None:
        if str_at(obj, "type") != "control_request":
            return
        rid, sub = str_at(obj, "request_id"), str_at(dict_at(obj, "request"), "subtype")
        if rid and sub:
            self.requests[rid] = sub
            if sub == "interrupt":
                self.interrupted = True

    def read(self, obj: Any, rec: Record) -> None:
        t = str_at(obj, "type")
        if t is None:
            self.bad("framing", rec, "not a JSON object with a string type")
            return
        sub = str_at(obj, "subtype")
        if t not in CBC_TYPES or (t == "system" and sub not in CBC_SYSTEM):
            self.bad("rev-vocabulary", rec, f"{t}{'/' + sub if sub else ''} is not cbc's")
        tt = obj.get("task_type")
        if tt is not None and tt not in CBC_TASK_TYPES:
            self.bad("rev-task-type", rec, f"task_type {tt!r} is not cbc's")
        sid = str_at(obj, "session_id")
        # cbc's sub-agents have sessions of their own: only a client-given id is checked,
        # on the main session's first init and on every result
        first = (t, sub) == ("system", "init") and self.first_init
        if first:
            self.first_init = False
        if self.session_id and sid and (first or t == "result") and sid != self.session_id:
            self.bad("rev-session-id", rec, f"session id {sid!r}, not {self.session_id!r}")
        getattr(self, f"on_{t.replace('-', '_')}", lambda o, r: None)(obj, rec)

    def on_result(self, obj: dict[str, Any], rec: Record) -> None:
        # cbc ends an interrupted turn with a success; an error result after an interrupt
        # is a genuine error (cbc: not logged in), but never an aborted turn
        self.interrupted = False
        aborted = (str_at(obj, "terminal_reason") or "").startswith("aborted")
        if aborted and obj.get("is_error") and list_at(obj, "errors"):
            self.bad(
                "rev-interrupted-turn",
                rec,
                "an interrupted turn ends in an error "
                "result with errors (ExecutionError in both SDKs)",
            )

    def on_assistant(self, obj: dict[str, Any], rec: Record) -> None:
        parent = str_at(obj, "parent_tool_use_id")
        if parent is not None and parent in self.background:
            self.bad("rev-background-agent", rec, "a background agent's own message")
        for block in list_at(dict_at(obj, "message"), "content"):
            inp = dict_at(block, "input")
            if (
                str_at(block, "type") == "tool_use"
                and inp is not None
                and inp.get("run_in_background") is True
                and str_at(block, "name") in ("Agent", "Task")
            ):
                self.background.add(str(block.get("id")))

    def on_user(self, obj: dict[str, Any], rec: Record) -> None:
        parent = str_at(obj, "parent_tool_use_id")
        if parent is not None and parent in self.background:
            self.bad("rev-background-agent", rec, "a background agent's own message")
        content = (dict_at(obj, "message") or {}).get("content")
        texts = (
            [content]
            if isinstance(content, str)
            else [
                str(b.get("text"))
                for b in list_at(dict_at(obj, "message"), "content")
                if isinstance(b, dict) and b.get("type") == "text"
            ]
        )
        if parent is None and any(t.startswith("[Request interrupted by user") for t in texts):
            self.bad(
                "rev-interrupt-marker",
                rec,
                "Claude's interrupted-turn user message "
                "(cbc: an assistant message 'Interrupted by user')",
            )
        if (
            obj.get("isReplay") is True
            and isinstance(content, str)
            and "<local-command-stdout>" in content
        ):
            self.bad("rev-local-command", rec, "a replayed local command's output")

    def on_control_response(self, obj: dict[str, Any], rec: Record) -> None:
        resp = dict_at(obj, "response") or {}
        sub = self.requests.get(str_at(resp, "request_id") or "")
        if str_at(resp, "subtype") != "success":
            return
        body = dict_at(resp, "response") or {}
        if sub == "initialize":
            models = list_at(body, "models")
            if not isinstance(body.get("currentModelId"), str):
                self.bad("rev-initialize-reply", rec, "no currentModelId")
            if any(not (isinstance(m, dict) and "id" in m and "name" in m) for m in models):
                self.bad("rev-initialize-reply", rec, "a model without id/name")
        elif sub == "mcp_status" and not isinstance(body.get("mcp_servers"), list):
            self.bad("rev-mcp-status", rec, "no mcp_servers list")


def format_text(violations: Sequence[Violation]) -> str:
    """``analysis.contract.format_text``'s report (every stream string escaped), naming cbc's
    contract."""
    text = claude_contract.format_text(violations)
    return text.replace(
        f"the Claude Code {TARGET_CLAUDE_VERSION} contract", f"the cbc {CBC_VERSION} contract"
    )
