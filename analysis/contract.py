"""The contract: what a client-visible stream must look like to pass for Claude Code 2.1.220.

``check(capture)`` walks the frames a client saw (``Capture.client_view()``: the bridge's
``client_out``, else the backend's ``stdout``; stdin/stderr records of a transcript are
never checked) once, in order, and returns ``Violation``s named by PROTOCOL.md rule ids.
It is the oracle for ``ccbridge check`` and for the golden-capture tests: pure (no I/O),
no knowledge of the stages, so a bug in a stage cannot hide itself here.

What is asserted is only what 2.1.220 reliably does in ``captures/claude-2.1.220/`` (every
file there must pass with zero violations; a genuine frame tripping a check means the
check is wrong). Requirements come from those captures and from what the Python SDK's
``message_parser`` indexes without ``.get`` (a missing one raises ``MessageParseError``).
Where the spec says more than the captures show, the captures win and the check is
looser (see ``RESULT_FIELDS``, ``RESULT_USAGE_FILLED``, ``interrupted-turn``,
``progress-final``).

Requests the client sent (``client_in`` / a transcript's ``stdin``) pair control replies
with their subtype; in a plain stdout dump replies are recognised by shape instead, and
unanswered requests cannot be seen. A capture ended from outside (``exit`` record
``killed:*`` / ``sigterm-by-harness``) is not blamed for tasks, inits or requests it
left open.

One pass, one state object (``_Checker``: ``on_<type>`` / ``sys_<subtype>`` handlers), which
is why this module is longer than the usual 400 lines; split it per rule family if it grows.

Ids beyond PROTOCOL.md: ``framing`` (a line that is not one JSON object with a ``type``),
``frame-fields`` (fields of the other frame types the SDKs index), ``redact`` (a live
credential; PROTOCOL.md's initialize-reply "never forward account.token ... (redact)").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import orjson

from compat import TARGET_CLAUDE_VERSION
from compat.capture import Capture, Record, parse
from compat.redact import REDACTED, SECRET_KEYS
from compat.text import escape, escape_json
from compat.vocabulary import (
    NOTIFICATION_STATUSES,
    SENTINEL_TYPES,
    TASK_STATUSES,
    TASK_TYPES,
    in_vocabulary,
)

TARGET_VERSION = TARGET_CLAUDE_VERSION

#: every rule this checker reports, with what it checks
RULES = {
    "framing": "each line is one JSON object with a string `type` (bad lines reported, skipped)",
    "private-fields": "no cbc private top-level fields (__timestamp, _requestId, _meta, ...)",
    "redact": "no unredacted credential under a credential key, no live sk-ant- key",
    "vocabulary": "only 2.1.220 frame types/system subtypes; never top-level error/end",
    "frame-fields": "fields the SDKs index: message.content, uuid, session_id, request_id, ...",
    "init-shape": "system/init carries claude_code_version, capabilities, agents, skills, "
    "plugins, ... and a uuid distinct from session_id",
    "init-once": "one system/init per turn (turn = up to a result), none that no turn follows",
    "foreign-init": "no system/init of another session",
    "result-shape": "result fields are numbers/lists, usage not null, error_* results carry "
    "errors[] and is_error:true",
    "interrupted-turn": "an interrupted turn ends in '[Request interrupted by user...' + an "
    "error_during_execution result",
    "task-fields": "task_started/progress/notification carry what 2.1.220 always sends",
    "task-type": "task_type is a 2.1.220 value (local_bash, local_agent, local_workflow, ...)",
    "task-status": "patch.status and notification status enums; no top-level status duplicate",
    "task-correlation": "bash/agent/workflow task frames carry tool_use_id",
    "task-noise": "task_started first, once; no non-terminal pending/running patches",
    "late-progress": "no task_progress after the task's notification",
    "terminal-guarantee": "exactly one task_notification per started task, nothing after it",
    "progress-final": "a completed workflow's last snapshot leaves no agent at start/progress",
    "interrupt-terminal": "running agents and workflows are notified before the interrupt receipt",
    "interrupt-reply": "an interrupt succeeds with {still_queued: [...]}",
    "initialize-reply": "initialize succeeds with commands (no '/'), agents, models "
    "({value, displayName}), account, pid, ...",
    "unsupported-control": "every client request answered; Claude's 'Unsupported control "
    "request subtype' wording",
    "tool-parent": "a tool_result's parent_tool_use_id is not its own tool_use_id",
}
EXCERPT = 300  # characters of the offending frame kept in a Violation

PRIVATE_FIELDS = ("__timestamp", "_requestId", "_messageId", "_meta", "errors_info")
#: cbc's raw tool names and what PROTOCOL.md task-type maps them to
CBC_TASK_TYPES = {
    "Agent": "local_agent",
    "Bash": "local_bash",
    "PowerShell": "local_bash",
    "Monitor": "local_bash",
    "Workflow": "local_workflow",
}
#: task types started by a tool call: 2.1.220 always names that call (task-correlation)
TOOL_STARTED = frozenset({"local_bash", "local_agent", "local_workflow"})
#: background tasks an interrupt must end before its receipt (interrupt-terminal)
INTERRUPT_KILLS = frozenset({"local_agent", "local_workflow"})
AGENT_RUNNING = frozenset({"start", "progress"})
INTERRUPT_MARK = "[Request interrupted by user"

# Required keys, one spec per word: "k" present and not null, "k?" present (null allowed),
# "k:type" present, not null, of that JSON type (num, str, list, dict, bool).
FRAME_FIELDS = {
    "assistant": "message:dict parent_tool_use_id? session_id:str uuid:str",
    "user": "message:dict parent_tool_use_id? session_id:str",
    "stream_event": "event:dict session_id:str uuid:str parent_tool_use_id?",
    "rate_limit_event": "rate_limit_info:dict session_id:str uuid:str",
    "conversation_reset": "new_conversation_id:str session_id:str uuid:str",
    "command_lifecycle": "command_uuid:str state:str session_id:str uuid:str",
    "control_request": "request_id:str request:dict",
    "control_response": "response:dict",
    "control_cancel_request": "request_id:str",
    "system": "session_id:str uuid:str",
}
INIT_FIELDS = (
    "cwd:str session_id:str uuid:str model:str tools:list mcp_servers:list permissionMode:str "
    "slash_commands:list apiKeySource:str output_style:str claude_code_version:str "
    "capabilities:list agents:list skills:list plugins:list"
)
TASK_FIELDS = {
    "task_started": "task_id:str description:str uuid:str session_id:str",
    "task_progress": "task_id:str description:str usage:dict uuid:str session_id:str",
    "task_updated": "task_id:str patch:dict uuid:str session_id:str",
    "task_notification": "task_id:str status:str output_file:str summary:str uuid:str "
    "session_id:str",
}
TASK_USAGE = "total_tokens:num tool_uses:num duration_ms:num"
# 2.1.220 sends ``errors`` on every error_* result but NOT on a ``success`` result with
# is_error:true (api_error, not-logged-in: captures dummykey_*, nocreds_*): loosened.
RESULT_FIELDS = (
    "subtype:str is_error:bool duration_ms:num duration_api_ms:num num_turns:num "
    "total_cost_usd:num session_id:str uuid:str usage:dict modelUsage:dict "
    "permission_denials:list"
)
RESULT_USAGE = "input_tokens:num output_tokens:num"
#: result.usage keys 2.1.220 always fills (later versions add nullable ones, e.g. 2.1.285's
#: ``fallback_credit: null``, so "no null anywhere in usage" would be too strict)
RESULT_USAGE_FILLED = (
    "input_tokens output_tokens cache_creation_input_tokens cache_read_input_tokens "
    "cache_creation server_tool_use service_tier"
).split()
INIT_REPLY_FIELDS = (
    "commands:list agents:list output_style:str available_output_styles:list models:list "
    "account:dict pid:num"
)
#: turn content: what shows a turn has begun (Claude's init opens every turn)
_TURN_TYPES = frozenset({"assistant", "user", "stream_event", "tool_progress", "result"})
_TURN_SYSTEM = frozenset({"api_retry", "status", "thinking_tokens", "compact_boundary"})
#: a live Anthropic key anywhere in a line (placeholders such as sk-ant-REDACTED pass)
_LIVE_KEY = re.compile(rb"sk-ant-(?:api|oat|admin|ort)\d\d-[A-Za-z0-9_\-]{16,}")
_PLACEHOLDER = re.compile(r"redact|dummy|placeholder|example|^<[^<>]*>$|^\*+$|^x+$", re.I)


@attrs.frozen
class Violation:
    rule: str  # a PROTOCOL.md rule id (or framing / frame-fields / redact)
    lineno: int  # line in the capture file (Record.lineno); 0: the stream as a whole
    message: str  # may quote backend strings: escape before printing (format_text)
    frame: str = ""  # the offending frame, truncated

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def check(capture: Capture) -> list[Violation]:
    """Every violation of the 2.1.220 contract in what the capture's client saw."""
    out = capture.lines("client_out")
    inputs: list[Record] | None
    if out:
        inputs = capture.lines("client_in")
    else:
        out = capture.lines("stdout")
        inputs = None if capture.flavor == "stdout" else capture.lines("stdin")
    return check_records(out, inputs, ended_from_outside=ended_from_outside(capture))


def check_lines(lines: Iterable[bytes]) -> list[Violation]:
    """``check`` of a capture given as lines (any format ``compat.capture`` reads)."""
    return check(parse(lines))


def check_records(
    outputs: Sequence[Record],
    inputs: Sequence[Record] | None = None,
    *,
    ended_from_outside: bool = False,
) -> list[Violation]:
    """``outputs``: the frames the client saw. ``inputs``: what the client sent (``None``
    when unknown: replies are then recognised by shape)."""
    checker = _Checker(inputs)
    for rec in outputs:
        checker.feed(rec)
    checker.finish(ended_from_outside)
    return sorted(checker.violations, key=lambda v: v.lineno)


def ended_from_outside(capture: Capture) -> bool:
    """The run was ended by the harness (reference transcripts: ``killed:-9``,
    ``sigterm-by-harness``). Not for a bridge capture's client view: when the backend is
    killed the bridge must still close what is open (terminal-guarantee)."""
    if capture.lines("client_out"):
        return False
    for r in reversed(capture.records):
        if r.kind == "exit":
            return r.text.strip().startswith(("killed", "sigterm"))
    return False


def counts(violations: Iterable[Violation]) -> dict[str, int]:
    return dict(sorted(Counter(v.rule for v in violations).items()))


# -- output ------------------------------------------------------------------------------


def format_text(violations: Sequence[Violation]) -> str:
    """A human report; every string that came from the stream is escaped."""
    lines = []
    for v in violations:
        where = f"line {v.lineno}" if v.lineno else "end of stream"
        lines.append(f"{where}: [{escape(v.rule)}] {escape(v.message)}")
        if v.frame:
            lines.append(f"    {escape(v.frame)}")
    c = counts(violations)
    if c:
        total = ", ".join(f"{escape(k)}: {n}" for k, n in c.items())
        lines.append(
            f"{len(violations)} violation(s) of the Claude Code {TARGET_VERSION} contract ({total})"
        )
    else:
        lines.append(f"no violations of the Claude Code {TARGET_VERSION} contract")
    return "\n".join(lines) + "\n"


def to_json(violations: Sequence[Violation]) -> str:
    """``{"target", "ok", "counts", "violations": [{rule, lineno, message, frame}]}``."""
    doc = {
        "target": TARGET_VERSION,
        "ok": not violations,
        "counts": counts(violations),
        "violations": [v.to_dict() for v in violations],
    }
    return escape_json(orjson.dumps(doc).decode())


# -- helpers -----------------------------------------------------------------------------


def _missing(obj: dict[str, Any], specs: str) -> list[str]:
    """The specs (see FRAME_FIELDS) ``obj`` does not satisfy, as readable problems."""
    bad = []
    for spec in specs.split():
        name, _, kind = spec.partition(":")
        optional = name.endswith("?")
        name = name.rstrip("?")
        if name not in obj:
            bad.append(f"no {name}")
            continue
        v = obj[name]
        if v is None:
            if not optional:
                bad.append(f"{name} is null")
            continue
        ok = {
            "num": isinstance(v, (int, float)) and not isinstance(v, bool),
            "str": isinstance(v, str),
            "list": isinstance(v, list),
            "dict": isinstance(v, dict),
            "bool": isinstance(v, bool),
            "": True,
        }[kind]
        if not ok:
            bad.append(f"{name} is not a {kind} ({type(v).__name__})")
    return bad


def _is_placeholder(value: str) -> bool:
    return value == REDACTED or bool(_PLACEHOLDER.search(value))


def _secrets(obj: Any, path: str = "") -> Iterable[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{path}.{k}" if path else str(k)
            if k in SECRET_KEYS and isinstance(v, str) and v and not _is_placeholder(v):
                yield p
            else:
                yield from _secrets(v, p)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _secrets(v, f"{path}[{i}]")


def _text_of(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "")
            for b in content
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return ""


@attrs.define
class _Task:
    lineno: int
    type: str = ""
    started: bool = False
    notified: bool = False
    paused: bool = False
    #: (phaseIndex, index) -> last state of each workflow agent (progress-final)
    agents: dict[tuple[Any, Any], str] = attrs.Factory(dict)


class _Checker:
    def __init__(self, inputs: Sequence[Record] | None) -> None:
        self.violations: list[Violation] = []
        self.lineno = 0
        self.raw = ""
        self.shape_only = inputs is None  # replies recognised by shape, not by request
        self.requests: dict[str, tuple[str, int]] = {}  # request_id -> (subtype, lineno)
        self.cancelled: set[str] = set()
        for r in inputs or ():
            try:
                o = orjson.loads(r.data)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(o, dict):
                continue
            rid = o.get("request_id")
            if o.get("type") == "control_request" and isinstance(o.get("request"), dict):
                self.requests[str(rid)] = (str(o["request"].get("subtype")), r.lineno)
            elif o.get("type") == "control_cancel_request":
                self.cancelled.add(str(rid))
        self.answered: set[str] = set()
        self.session: str | None = None
        self.turn_inits = 0  # own inits since the last result
        self.turn_active = False  # turn content since the last result
        self.idle_init: int | None = None  # an own init no turn content followed yet
        self.interrupted: int | None = None  # lineno of an interrupt receipt mid-turn
        self.marked = False  # the "[Request interrupted by user" frame of this turn
        self.tasks: dict[str, _Task] = {}

    def v(self, rule: str, message: str) -> None:
        frame = (
            self.raw
            if len(self.raw) <= EXCERPT
            else (f"{self.raw[:EXCERPT]}… ({len(self.raw) - EXCERPT} more characters)")
        )
        self.violations.append(Violation(rule, self.lineno, message, frame))

    def fields(self, rule: str, what: str, obj: dict[str, Any], specs: str) -> None:
        bad = _missing(obj, specs)
        if bad:
            self.v(rule, f"{what}: {', '.join(bad)}")

    # -- per line ----------------------------------------------------------------------

    def feed(self, rec: Record) -> None:
        self.lineno, self.raw = rec.lineno, rec.text
        obj = self._frame(rec)
        if obj is None:
            return
        t, st = obj["type"], obj.get("subtype")
        self._hygiene(rec, obj)
        if not self._vocabulary(t, st):
            return
        self.fields(
            "frame-fields", t if t != "system" else f"system/{st}", obj, FRAME_FIELDS.get(t, "")
        )
        if t in _TURN_TYPES or (t == "system" and st in _TURN_SYSTEM):
            self.turn_active = True
            self.idle_init = None
        handler = getattr(self, f"on_{t}" if t != "system" else f"sys_{st}", None)
        if handler is not None:
            handler(obj)

    def _frame(self, rec: Record) -> dict[str, Any] | None:
        """The line as a frame (a JSON object with a string ``type``), or None (framing)."""
        if rec.partial:
            self.v("framing", "the stream ended inside this line (no newline)")
        try:
            rec.data.decode("utf-8")
            obj = orjson.loads(rec.data)
        except (UnicodeDecodeError, orjson.JSONDecodeError):
            self.v("framing", "not a JSON line (skipped; checking goes on)")
            return None
        if not isinstance(obj, dict):
            self.v("framing", f"a JSON {type(obj).__name__}, not an object")
            return None
        t = obj.get("type")
        if not isinstance(t, str) or not t:
            self.v("framing", "no string `type`")
            return None
        return obj

    def _hygiene(self, rec: Record, obj: dict[str, Any]) -> None:
        """private-fields and redact: what a frame must never carry."""
        bad = [k for k in PRIVATE_FIELDS if k in obj]
        if bad:
            self.v("private-fields", f"private field(s) {', '.join(bad)}")
        for path in _secrets(obj):
            self.v("redact", f"a credential is forwarded unredacted at {path}")
        if _LIVE_KEY.search(rec.data):
            self.v("redact", "a live-looking Anthropic API key is in the frame")

    def _vocabulary(self, t: str, st: Any) -> bool:
        """Whether the frame's type (and subtype) is in the output vocabulary."""
        if t in SENTINEL_TYPES:
            self.v("vocabulary", f"top-level type {t!r} is a Python SDK sentinel: never sent")
            return False
        if not in_vocabulary(t, st if isinstance(st, str) else None):
            label = f"system/{st}" if t == "system" else t
            self.v("vocabulary", f"{label!r} is not in the {TARGET_VERSION} output vocabulary")
            return False
        return True

    def finish(self, from_outside: bool) -> None:
        self.lineno, self.raw = 0, ""
        if from_outside:
            return  # the run was cut short: open tasks/turns/requests are not the CLI's fault
        if self.idle_init is not None:
            self.lineno = self.idle_init
            self.v("init-once", "a system/init that no turn followed (cbc's trailing copy)")
        for task_id, task in self.tasks.items():
            if task.started and not task.notified:
                self.lineno = task.lineno
                self.v("terminal-guarantee", f"task {task_id!r} never got a task_notification")
        for rid, (subtype, lineno) in self.requests.items():
            if rid not in self.answered and rid not in self.cancelled:
                self.lineno = lineno
                self.v(
                    "unsupported-control", f"control_request {rid!r} ({subtype}) was never answered"
                )

    # -- frame types -------------------------------------------------------------------

    def on_assistant(self, obj: dict[str, Any]) -> None:
        msg = obj.get("message")
        if isinstance(msg, dict):
            self.fields("frame-fields", "assistant.message", msg, "content:list model:str")
            self._blocks(msg.get("content"))

    def on_user(self, obj: dict[str, Any]) -> None:
        msg = obj.get("message")
        if not isinstance(msg, dict):
            return
        content = msg.get("content")
        if not isinstance(content, (str, list)):
            self.v("frame-fields", "user.message: content is neither a string nor a list")
        self._blocks(content)
        if _text_of(msg).startswith(INTERRUPT_MARK):
            self.marked = True
        parent = obj.get("parent_tool_use_id")
        if parent is not None and isinstance(content, list):
            for b in content:
                if (
                    isinstance(b, dict)
                    and b.get("type") == "tool_result"
                    and b.get("tool_use_id") == parent
                ):
                    self.v(
                        "tool-parent",
                        f"a tool_result names its own tool_use {parent!r} "
                        "as parent_tool_use_id (null on the main thread)",
                    )

    def _blocks(self, content: Any) -> None:
        need = {
            "text": "text:str",
            "tool_use": "id:str name:str input:dict",
            "tool_result": "tool_use_id:str",
            "thinking": "thinking:str signature:str",
        }
        for b in content if isinstance(content, list) else ():
            if not isinstance(b, dict) or not isinstance(b.get("type"), str):
                self.v("frame-fields", "a content block that is not an object with a type")
            else:
                self.fields("frame-fields", f"{b['type']} block", b, need.get(b["type"], ""))

    def on_rate_limit_event(self, obj: dict[str, Any]) -> None:
        info = obj.get("rate_limit_info")
        if isinstance(info, dict):
            self.fields("frame-fields", "rate_limit_info", info, "status:str")

    def on_control_request(self, obj: dict[str, Any]) -> None:
        req = obj.get("request")
        if isinstance(req, dict):
            self.fields("frame-fields", "control_request.request", req, "subtype:str")
            if req.get("subtype") == "can_use_tool":
                self.fields(
                    "frame-fields",
                    "can_use_tool",
                    req,
                    "tool_name:str input:dict tool_use_id:str",
                )

    def on_control_response(self, obj: dict[str, Any]) -> None:
        resp = obj.get("response")
        if not isinstance(resp, dict):
            return
        sub, rid = resp.get("subtype"), resp.get("request_id")
        if sub not in ("success", "error"):
            self.v("frame-fields", f"control_response subtype {sub!r} (success|error)")
        self.fields("frame-fields", "control_response.response", resp, "request_id:str")
        if sub == "error":
            self.fields("frame-fields", "error reply", resp, "error:str")
        err = resp.get("error")
        if isinstance(err, str) and err.startswith("Unknown control request subtype"):
            self.v(
                "unsupported-control",
                "cbc's wording; Claude answers 'Unsupported control request subtype: <x>'",
            )
        self.answered.add(str(rid))
        body = resp.get("response")
        body = body if isinstance(body, dict) else {}
        if self.shape_only:
            kind = (
                "initialize"
                if {"commands", "output_style"} <= body.keys()
                else "interrupt"
                if "still_queued" in body or "interrupted" in body
                else ""
            )
        else:
            kind = self.requests.get(str(rid), ("", 0))[0]
        if kind == "initialize":
            self.initialize_reply(sub, body)
        elif kind == "interrupt":
            self.interrupt_reply(sub, body)

    def initialize_reply(self, sub: Any, body: dict[str, Any]) -> None:
        if sub != "success":
            self.v("initialize-reply", "initialize failed; 2.1.220 always succeeds")
            return
        self.fields("initialize-reply", "initialize reply", body, INIT_REPLY_FIELDS)
        for c in body.get("commands") or ():
            if (
                not isinstance(c, dict)
                or not isinstance(c.get("name"), str)
                or c["name"].startswith("/")
            ):
                self.v(
                    "initialize-reply",
                    "commands[] entries are {name (no '/'), description, argumentHint}",
                )
                break
        for m in body.get("models") or ():
            if not isinstance(m, dict) or _missing(m, "value:str displayName:str"):
                self.v(
                    "initialize-reply",
                    "models[] entries are {value, displayName, ...}, not cbc's {id, name}",
                )
                break

    def interrupt_reply(self, sub: Any, body: dict[str, Any]) -> None:
        if sub != "success":
            self.v(
                "interrupt-reply",
                "interrupt failed; 2.1.220 answers {still_queued: [...]} "
                "(an idle interrupt succeeds)",
            )
        elif not isinstance(body.get("still_queued"), list):
            self.v("interrupt-reply", f"interrupt reply {sorted(body)} has no still_queued list")
        for task_id, task in self.tasks.items():
            if task.started and not task.notified and task.type in INTERRUPT_KILLS:
                self.v(
                    "interrupt-terminal",
                    f"{task.type} task {task_id!r} is still open at the interrupt receipt",
                )
        if self.turn_active:
            self.interrupted = self.lineno

    def on_result(self, obj: dict[str, Any]) -> None:
        self.fields("result-shape", "result", obj, RESULT_FIELDS)
        sub, is_error = obj.get("subtype"), obj.get("is_error")
        if sub == "success":
            self.fields("result-shape", "success result", obj, "result:str")
        elif isinstance(sub, str):
            if not isinstance(obj.get("errors"), list):
                self.v("result-shape", f"{sub} result without an errors list")
            if is_error is not True:
                self.v("result-shape", f"{sub} result with is_error {is_error!r}")
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self._result_usage(usage)
        self._interrupted_result(obj.get("terminal_reason"), sub, is_error)
        self.turn_inits, self.turn_active, self.idle_init = 0, False, None
        self.interrupted, self.marked = None, False

    def _result_usage(self, usage: dict[str, Any]) -> None:
        self.fields("result-shape", "result.usage", usage, RESULT_USAGE)
        # the TS SDK types result.usage as NonNullableUsage; 2.1.220 fills these (later
        # versions add keys that may be null, e.g. 2.1.285's fallback_credit: not checked)
        nulls = [k for k in RESULT_USAGE_FILLED if k in usage and usage[k] is None]
        if nulls:
            self.v("result-shape", f"result.usage {', '.join(nulls)} null")

    def _interrupted_result(self, reason: Any, sub: Any, is_error: Any) -> None:
        """interrupted-turn: an aborted turn, or one an interrupt answered, ends in an
        error_during_execution result after the interrupt marker."""
        aborted = isinstance(reason, str) and reason.startswith("aborted")
        if not aborted and self.interrupted is None:
            return
        why = (
            f"terminal_reason {reason!r}"
            if aborted
            else f"the interrupt answered at line {self.interrupted}"
        )
        if sub != "error_during_execution" or is_error is not True:
            self.v(
                "interrupted-turn",
                f"after {why} the result is {sub!r}/is_error "
                f"{is_error!r}, not error_during_execution/true",
            )
        if not self.marked:
            self.v(
                "interrupted-turn",
                f"after {why} no user frame '{INTERRUPT_MARK}]' precedes the result",
            )

    def on_conversation_reset(self, obj: dict[str, Any]) -> None:
        if isinstance(obj.get("new_conversation_id"), str):
            self.session = obj["new_conversation_id"]

    def sys_init(self, obj: dict[str, Any]) -> None:
        sid = obj.get("session_id")
        if self.session is None:
            self.session = sid if isinstance(sid, str) else None
        elif sid != self.session:
            self.v(
                "foreign-init",
                f"system/init of another session {sid!r} (this session is {self.session!r})",
            )
            return
        self.fields("init-shape", "system/init", obj, INIT_FIELDS)
        if obj.get("uuid") is not None and obj.get("uuid") == sid:
            self.v("init-shape", "system/init uuid equals session_id (a fresh uuid expected)")
        self.turn_inits += 1
        if self.turn_inits > 1:
            self.v("init-once", f"system/init #{self.turn_inits} in one turn")
        # not turn_active: cbc's trailing copy comes *after* the result (init-once)
        self.idle_init = self.lineno

    # -- the task lifecycle ------------------------------------------------------------

    def _task(self, sub: str, obj: dict[str, Any]) -> _Task | None:
        self.fields("task-fields", sub, obj, TASK_FIELDS[sub])
        tid = obj.get("task_id")
        if not isinstance(tid, str):
            return None
        task = self.tasks.get(tid)
        if task is None:
            task = self.tasks[tid] = _Task(self.lineno)
        if sub != "task_started" and not task.started:
            self.v("task-noise", f"{sub} of task {tid!r} before its task_started")
        if task.notified:
            rule = "late-progress" if sub == "task_progress" else "terminal-guarantee"
            self.v(rule, f"{sub} of task {tid!r} after its task_notification")
        if sub != "task_updated" and task.type in TOOL_STARTED and not obj.get("tool_use_id"):
            self.v("task-correlation", f"{sub} of a {task.type} task without tool_use_id")
        return task

    def sys_task_started(self, obj: dict[str, Any]) -> None:
        tt = obj.get("task_type")
        tid = obj.get("task_id")
        known = self.tasks.get(tid) if isinstance(tid, str) else None
        if known is not None and known.started:
            self.v("task-noise", f"a second task_started for task {tid!r}")
        if not isinstance(tt, str):
            self.v("task-type", "task_started without a task_type")
        elif tt not in TASK_TYPES:
            hint = (
                f" (PROTOCOL.md maps it to {CBC_TASK_TYPES[tt]!r})" if tt in CBC_TASK_TYPES else ""
            )
            self.v("task-type", f"task_type {tt!r} is not a {TARGET_VERSION} value{hint}")
        task = self._task("task_started", obj)
        if task is not None and not task.started:
            task.started, task.lineno = True, self.lineno
            task.type = CBC_TASK_TYPES.get(tt, tt) if isinstance(tt, str) else ""
            if task.type in TOOL_STARTED and not obj.get("tool_use_id"):
                self.v(
                    "task-correlation", f"task_started of a {task.type} task without tool_use_id"
                )

    def sys_task_progress(self, obj: dict[str, Any]) -> None:
        task = self._task("task_progress", obj)
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self.fields("task-fields", "task_progress.usage", usage, TASK_USAGE)
        if task is None or not isinstance(obj.get("workflow_progress"), list):
            return
        for e in obj["workflow_progress"]:
            if isinstance(e, dict) and e.get("type") == "workflow_agent":
                key = (e.get("phaseIndex"), e.get("index", e.get("agentId")))
                if isinstance(e.get("state"), str):
                    task.agents[key] = e["state"]

    def sys_task_updated(self, obj: dict[str, Any]) -> None:
        task = self._task("task_updated", obj)
        if "status" in obj:
            self.v("task-status", "task_updated has a top-level status (only patch.status)")
        patch = obj.get("patch")
        status = patch.get("status") if isinstance(patch, dict) else None
        if status is None:
            return
        if status not in TASK_STATUSES:
            self.v(
                "task-status",
                f"patch.status {status!r} is not one of {', '.join(sorted(TASK_STATUSES))}",
            )
        if task is None:
            return
        if status in ("pending", "running") and not task.paused and task.started:
            self.v("task-noise", f"a non-terminal task_updated {status!r} (no real transition)")
        task.paused = status == "paused"

    def sys_task_notification(self, obj: dict[str, Any]) -> None:
        tid = obj.get("task_id")
        task = self._task("task_notification", obj)
        status = obj.get("status")
        if isinstance(status, str) and status not in NOTIFICATION_STATUSES:
            self.v(
                "task-status",
                f"notification status {status!r} is not one of "
                f"{', '.join(sorted(NOTIFICATION_STATUSES))}",
            )
        if task is None:
            return
        if task.notified:
            self.v("terminal-guarantee", f"a second task_notification for task {tid!r}")
        task.notified = True
        if task.type == "local_workflow" and status == "completed":
            stale = sorted(str(k[1]) for k, s in task.agents.items() if s in AGENT_RUNNING)
            if stale:
                self.v(
                    "progress-final",
                    f"workflow {tid!r} completed but its last progress "
                    f"leaves agent(s) {', '.join(stale)} unfinished",
                )
