"""``result-shape``: the ``result`` a Claude client parses, as Claude Code 2.1.220 writes it
(PROTOCOL.md §2 "Session, turns and results"; the other session frames: ``shape.py``).

Strategy: fill the keys Claude writes and cbc leaves out or null, with Claude's values or the
state a cbc session really has (``RESULT_FEATURES``), keep what cbc already wrote right, and
recompute what cbc counts differently (usage, ``num_turns``, the max-turns error); it reads
the shared facts of the turn (``ControlState``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeGuard, cast

import attrs
import orjson

from compat.frames import Frame, str_at
from compat.stage import Context, Output, Stage, register
from compat.stages.shape import ZERO_USAGE, add_defaults, add_missing, content_blocks, is_block
from compat.target import Target, run_id, target_of, values
from compat.taskkit import remember
from compat.wire import (
    Assistant,
    Envelope,
    Message,
    Result,
    ReverseTask,
    TaskFrame,
    TaskStarted,
    User,
    as_dict,
    fill,
)

#: cbc 2.163.0's error for --max-turns (Claude: error_max_turns)
_CBC_MAX_TURNS = re.compile(r"Max turns \((\d+)\) exceeded")


def is_cbc_max_turns(result: Mapping[str, Any]) -> bool:
    """cbc's result at ``--max-turns`` (``error_during_execution``, that one error)."""
    return _cbc_max_turns(result) is not None


def _cbc_max_turns(result: Mapping[str, Any]) -> str | None:
    """The N of cbc's result at ``--max-turns N`` (its one error says it); None for any
    other result."""
    errors = result.get("errors")
    if result.get("subtype") != "error_during_execution" or not isinstance(errors, list):
        return None
    m = _CBC_MAX_TURNS.fullmatch(str(errors[0])) if len(errors) == 1 else None
    return m.group(1) if m else None


#: Claude's error at --max-turns N (``error_max_turns``)
_CLAUDE_MAX_TURNS = re.compile(r"Reached maximum number of turns \((\d+)\)")


def _max_turns_count(result: Mapping[str, Any]) -> int | None:
    """Claude's ``num_turns`` of an ``error_max_turns`` result: N + 1 (its ``turnCount``;
    the Nth message's parallel calls are one turn), whatever the tool results were."""
    errors = result.get("errors")
    if result.get("subtype") != "error_max_turns" or not isinstance(errors, list) or not errors:
        return None
    m = _CLAUDE_MAX_TURNS.fullmatch(str(errors[0]))
    return int(m.group(1)) + 1 if m else None


def is_max_turns_notice(message: Message) -> bool:
    """cbc's own assistant message before its max-turns result: one text block, its words
    (tests/bridge/data/headless/cbc-2.163.0/stream-max-turns.json)."""
    content = message.get("content")
    return (
        isinstance(content, list)
        and len(content) == 1
        and is_block(content[0], "text")
        and _CBC_MAX_TURNS.fullmatch(str(content[0].get("text"))) is not None
    )


#: result keys of Claude-only features, as a cbc session has them
RESULT_FEATURES: dict[str, Any] = {
    "fast_mode_state": "off",
    "fast_mode_disabled_reason": "sdk_opt_in_required",
}


_RESULT_NUMBERS = ("duration_ms", "duration_api_ms", "num_turns", "total_cost_usd")


#: a background agent's end (``task_notification.status``) as subagent_stats counts it
_AGENT_ENDS = {"completed": "completed", "failed": "failed"}


def _filled_usage(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, dict):
        return dict(ZERO_USAGE)
    out = dict(usage)
    for key, zero in ZERO_USAGE.items():
        out[key] = _filled(zero, out.get(key))
    return {key: _null_tokens_zero(key, value) for key, value in out.items()}


def _filled(zero: Any, value: Any) -> Any:
    """A usage key as Claude fills it: a dict with its zeros (and nulls as 0), a null
    number as its zero."""
    if not isinstance(zero, dict):
        return zero if value is None else value
    if not isinstance(value, dict):
        return dict(zero)
    return {**zero, **{k: (v if v is not None else 0) for k, v in value.items()}}


def _null_tokens_zero(key: str, value: Any) -> Any:
    """A null token count is 0."""
    return 0 if value is None and key.endswith("_tokens") else value


@register
@attrs.define
class ResultShape(Stage):
    """Claude's `result`: usage without nulls, `errors` on error results, terminal_reason,
    stop_reason, num_turns, origin, fast-mode keys, api_error_status, permission_denials.

    ``usage``: cbc's has ``cache_creation``, ``server_tool_use`` and ``service_tier`` null
    (every cbc capture); Claude fills them (``{ephemeral_1h…: 0}``, ``{web_search_requests: 0,
    …}``, ``"standard"``) and the TS SDK types ``usage`` as non-nullable. Null or missing
    numbers become 0.

    ``errors``: 2.1.220 sends it on every ``error_*`` result and *not* on a ``success`` result
    with ``is_error:true`` (api errors, "Not logged in": ``dummykey_*``, ``nocreds_*``; the TS
    SDK reads ``result`` there and ``errors`` otherwise), so mode ``claude`` adds it to
    ``error_*`` results only and ``all-errors`` to every ``is_error`` result (PROTOCOL.md's
    wording).

    ``terminal_reason`` is kept; a plain success gets ``completed`` and ``stop_reason`` is
    filled from the last main-thread assistant message, as Claude always sends both.
    ``permission_denials`` gains the denials ``permission-routing`` recorded
    (``ControlState.permission_denials``) that cbc's own list lacks, and loses those an
    earlier result listed: cbc lists every denial of the session, Claude the turn's (twins
    permission-deny-interrupt, plan-mode-denied: the next turn's result repeats it).
    Claude 2.1.220 also writes (twins ``*.claude.jsonl``) ``fast_mode_state: "off"`` and
    ``fast_mode_disabled_reason: "sdk_opt_in_required"`` on every result
    (``RESULT_FEATURES``; cbc has no fast mode) and ``api_error_status: null`` on a plain
    success (not on ``error_*`` results; an API error's status is unknown here, so an
    ``is_error`` success gets none).

    ``num_turns``: a result whose wire frame has no ``stop_reason`` is cbc's (Claude always
    writes one; ``interrupted-turn`` may have added one since); for it ``num_turns`` is
    recomputed Claude's way: 1 (the line or notification that started the turn) plus the
    main-thread user messages of the turn as the client saw them (tool results, one per
    ``tool_result`` block; the interrupt's rejections and marker; not ``isReplay`` echoes).
    That is Claude's count in every reference and twin capture: 1 for a text answer, 2 for
    tool call + answer, 3 for a turn interrupted during its tool call (rejection + marker), 2
    for one interrupted while streaming (marker); cbc counts across the session, 2 per model
    call.

    ``stop_reason`` (unless a rule set it) is the last main-thread message's as cbc sent it
    (read from the wire frame: ``frame-fields`` nulls it on the frames the client sees, as
    Claude does), or, where cbc leaves it null, ``tool_use`` for a message with a tool call
    and ``end_turn`` otherwise (Claude's result says ``end_turn`` after a text answer).

    ``origin``: a turn ``control-state`` did not start from a client user line
    (``ControlState.turn_from_client``: cbc answering a task notification by itself) gets
    Claude's ``origin: {kind: "task-notification"}``.
    """

    rule: ClassVar[str] = "result-shape"
    reads: ClassVar[frozenset[str]] = frozenset(
        {"control.permission_denials", "control.turn_from_client"}
    )
    modes: ClassVar[tuple[str, ...]] = ("claude", "all-errors")
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"result", "assistant", "user", "system/task_started", "system/task_notification"}
    )

    #: the last main-thread message of the turn: seen at all, its id, the stop_reason cbc
    #: gave it (None: none), whether it made a tool call
    _message: bool = attrs.field(default=False, init=False)
    _message_id: Any = attrs.field(default=None, init=False)
    _wire_stop: Any = attrs.field(default=None, init=False)
    _tool_call: bool = attrs.field(default=False, init=False)
    #: the turn's main-thread user messages so far (Claude's num_turns - 1)
    _user_messages: int = attrs.field(default=0, init=False)
    _reported: dict[str, None] = attrs.field(factory=dict, init=False)
    #: cbc's "Max turns (N) exceeded" assistant notice, held until the result says whether
    #: it was cbc's (then dropped: Claude writes no such message) or the model's own text
    _notice: Frame | None = attrs.field(default=None, init=False)
    #: for a target with ``subagent_stats`` (compat.target): background agents started /
    #: ended, by type and outcome; the results so far; the last task notified
    _agents: dict[str, dict[str, int]] = attrs.field(factory=dict, init=False)
    _results: int = attrs.field(default=0, init=False)
    _last_notified: str | None = attrs.field(default=None, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t = frame.view(Envelope).get("type")
        if t == "system":  # a task frame (task_started, task_notification)
            self._system(frame.view(ReverseTask), ctx)
            return None
        if t == "result":
            return self._on_result(frame, frame.view(Result), ctx)
        if t == "assistant":
            return self._on_assistant(frame, frame.view(Assistant), ctx)
        if t == "user":
            self._on_user(frame.view(User))
        return self._release_notice(frame)

    def _system(self, obj: ReverseTask, ctx: Context) -> None:
        """A task frame: what the target's newer result keys count."""
        if target_of(ctx).result_keys or target_of(ctx).origin_run:
            self._task_frame(obj)

    def _on_result(self, frame: Frame, result: Result, ctx: Context) -> Output:
        """The turn's result; a held notice before it was cbc's when the result is cbc's
        max-turns one (dropped), else the model's text (released before it)."""
        if self._notice is None:
            return self._result(frame, result, ctx)
        if is_cbc_max_turns(result):
            self._drop_notice(ctx)
            return self._result(frame, result, ctx)
        released = self._release_notice(frame)  # the model's own words, in order
        out = self._result(frame, result, ctx)
        return (*(released or ())[:-1], *_passing(out, frame))

    def _drop_notice(self, ctx: Context) -> None:
        self._notice = None
        ctx.drop_held(self.rule)
        ctx.log(
            self.rule,
            "dropped cbc's 'Max turns (N) exceeded' assistant notice "
            "(Claude ends with error_max_turns alone)",
            "debug",
        )

    def _on_assistant(self, frame: Frame, obj: Assistant, ctx: Context) -> Output:
        """A main-thread message is the turn's last so far; cbc's max-turns notice is held
        until the result tells whose it was."""
        message = obj.get("message")
        if obj.get("parent_tool_use_id") is not None or not isinstance(message, dict):
            return self._release_notice(frame)
        if self._notice is None and is_max_turns_notice(message):
            self._notice = frame
            ctx.hold()
            return ()
        self._assistant(frame, message)
        return self._release_notice(frame)

    def _on_user(self, obj: User) -> None:
        """A main-thread user frame the client sees counts in ``num_turns``."""
        if obj.get("parent_tool_use_id") is None and obj.get("isReplay") is not True:
            self._user_messages += _user_messages(obj.get("message"))

    def _release_notice(self, frame: Frame) -> Output:
        """A held notice that no result followed at once: it was the model's text."""
        notice, self._notice = self._notice, None
        if notice is None:
            return None
        message = notice.view(Assistant).get("message")
        if isinstance(message, dict):
            self._assistant(notice, message)
        return (notice, frame)

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        notice, self._notice = self._notice, None
        return (notice,) if notice is not None else None

    def _result(self, frame: Frame, obj: Result, ctx: Context) -> Output:
        new = cast(Result, dict(obj))
        raw = as_dict(new)  # the same dict, for the keys the tables name
        cbc = _is_cbcs(frame, obj)
        new["usage"] = _filled_usage(obj.get("usage"))
        _zero_numbers(raw)
        fill(raw, (("modelUsage", dict, dict),))
        sub, is_error = self._outcome(raw)
        if cbc:
            self._cbc_turn(new, obj, ctx)
        add_missing(raw, RESULT_FEATURES)
        if sub == "success" and not is_error:
            new.setdefault("api_error_status", None)
        self._new_turn()
        new["permission_denials"] = self._denials(new.get("permission_denials"), ctx)
        self._target_keys(raw, ctx)
        return None if new == obj else (frame.replace(raw),)

    def _cbc_turn(self, new: Result, obj: Result, ctx: Context) -> None:
        """cbc's result: ``num_turns`` counted Claude's way, the last message's
        ``stop_reason``, the ``origin`` of a turn no client line started."""
        new["num_turns"] = _max_turns_count(new) or 1 + self._user_messages
        if "stop_reason" not in obj:
            new["stop_reason"] = self._stop_reason()
        if not ctx.state.control.turn_from_client and "origin" not in new:
            new["origin"] = {"kind": "task-notification"}

    def _new_turn(self) -> None:
        """The turn's result went: the next turn's messages are counted afresh."""
        self._message, self._message_id, self._wire_stop = False, None, None
        self._tool_call, self._user_messages = False, 0

    # -- the target's newer result keys (compat.target) ---------------------------------
    def _task_frame(self, obj: ReverseTask) -> None:
        tid = obj.get("task_id")
        if not isinstance(tid, str):
            return
        sub = obj.get("subtype")
        if sub == "task_started":
            self._task_started(obj, tid)
        elif sub == "task_notification":
            self._task_notified(obj, tid)

    def _task_started(self, obj: TaskStarted, tid: str) -> None:
        """A background agent starts: counted by type."""
        if obj.get("task_type") != "local_agent":
            return
        sub = obj.get("subagent_type")
        key = sub if isinstance(sub, str) and sub else "general-purpose"
        _bump(self._agents.setdefault("by_type", {}), key)
        self._agents.setdefault("ids", {})[tid] = 1

    def _task_notified(self, obj: TaskFrame, tid: str) -> None:
        """A task ends: the last notified; a background agent's end counted by outcome."""
        self._last_notified = tid
        if tid not in self._agents.get("ids", {}):
            return
        del self._agents["ids"][tid]
        outcome = _AGENT_ENDS.get(str_at(obj, "status") or "", "killed")
        _bump(self._agents.setdefault("ended", {}), outcome)

    def _subagent_stats(self) -> dict[str, Any]:
        n = sum(self._agents.get("by_type", {}).values())
        ended = self._agents.get("ended", {})
        return {
            "spawned": n,
            "requested": {"background": n, "foreground": 0, "unset": 0},
            "started_in_background": n,
            "max_depth": 1 if n else 0,
            "spawned_by_subagents": 0,
            "completed": ended.get("completed", 0),
            "failed": ended.get("failed", 0),
            "killed": {"parent": 0, "user": ended.get("killed", 0), "system": 0},
            "refused": {"depth_limit": 0, "concurrency_limit": 0, "budget": 0},
            "by_type": dict(self._agents.get("by_type", {})),
        }

    def _target_keys(self, new: dict[str, Any], ctx: Context) -> None:
        target = target_of(ctx)
        if target.origin_run:
            self._origin_run(new)
        if target.usage_keys and isinstance(new.get("usage"), dict):
            usage = dict(new["usage"])
            add_defaults(usage, values(target.usage_keys, {}))
            new["usage"] = usage
        if target.result_keys:
            self._result_keys(new, target)

    def _origin_run(self, new: dict[str, Any]) -> None:
        """A task notification's turn names the run of the task last notified."""
        origin = new.get("origin")
        tid = self._last_notified
        if tid is not None and _unnamed_task_origin(origin):
            new["origin"] = {**origin, "producer": "session-task", "runId": run_id(tid)}

    def _result_keys(self, new: dict[str, Any], target: Target) -> None:
        facts: dict[str, Any] = {
            "subagent_stats": self._subagent_stats(),
            "result_index": self._results,
        }
        line = new.get("user_message_uuid")
        if isinstance(line, str):
            facts["result_line_uuids"] = [line]
        self._results += 1
        add_defaults(new, values(target.result_keys, facts))

    def _outcome(self, new: dict[str, Any]) -> tuple[Any, bool]:
        """``subtype``, ``is_error``, ``result``, ``terminal_reason`` and ``errors`` as
        Claude writes them together; (subtype, is_error)."""
        sub = self._headless_result(new, new.get("subtype"))
        is_error = _is_error(new, sub)
        if sub == "success":
            fill(new, (("result", str, str),))
            if not is_error:
                new.setdefault("terminal_reason", "completed")
        if is_error and self._lists_errors(new, sub):
            new["errors"] = _errors(new, sub)
        return sub, is_error

    def _lists_errors(self, new: dict[str, Any], sub: Any) -> bool:
        """An error result gets ``errors`` (mode ``claude``: an ``error_*`` one only)."""
        listed = isinstance(new.get("errors"), list)
        return not listed and (sub != "success" or self.mode == "all-errors")

    def _headless_result(self, new: dict[str, Any], sub: Any) -> Any:
        """cbc's ``error_during_execution`` "Max turns (N) exceeded" is Claude's
        ``error_max_turns`` (its errors text, ``terminal_reason: max_turns``, the stop
        reason of the tool call that wanted one more turn); a ``--json-schema`` success
        with an empty ``result`` gets the structured output as compact JSON, as Claude's
        (probes ``arg-max-turns``, ``arg-json-schema`` in tests/bridge/data/headless)."""
        limit = _cbc_max_turns(new)
        if limit is not None:
            sub = self._max_turns_result(new, limit)
        if sub == "success" and not new.get("result") and new.get("structured_output") is not None:
            new["result"] = orjson.dumps(new["structured_output"]).decode()
        return sub

    def _max_turns_result(self, new: dict[str, Any], limit: str) -> str:
        """cbc's max-turns result as Claude's ``error_max_turns``; its subtype."""
        new["subtype"] = sub = "error_max_turns"
        new["errors"] = [f"Reached maximum number of turns ({limit})"]
        new.setdefault("terminal_reason", "max_turns")
        if self._tool_call:
            new["stop_reason"] = "tool_use"
        return sub

    def _assistant(self, frame: Frame, message: Message) -> None:
        mid = message.get("id")
        if self._is_new_message(mid):
            self._wire_stop, self._tool_call = None, False
        self._message, self._message_id = True, mid
        reason = _stop_reason_of(frame, message)
        if reason is not None:
            self._wire_stop = reason
        if any(is_block(b, "tool_use") for b in content_blocks(message)):
            self._tool_call = True

    def _is_new_message(self, mid: Any) -> bool:
        """A message other than the last one seen (one without an id is always new)."""
        return not self._message or mid is None or mid != self._message_id

    def _stop_reason(self) -> Any:
        """The last main-thread message's stop_reason; where cbc leaves it null, what
        Claude's result says: ``tool_use`` after a tool call, ``end_turn`` after an answer."""
        if not self._message:
            return None
        if self._wire_stop is not None:
            return self._wire_stop
        return "tool_use" if self._tool_call else "end_turn"

    def _denials(self, listed: Any, ctx: Context) -> list[Any]:
        """The turn's denials: cbc's own list without those an earlier result reported
        (cbc's list holds the session's), then the ones the bridge recorded."""
        given = list(listed) if isinstance(listed, list) else []
        out = [d for d in given if self._first_report(_tool_use_id(d), d)]
        recorded = ctx.state.control.permission_denials
        if not recorded:
            return out
        known = {_tool_use_id(d) for d in given if isinstance(d, dict)}
        for d in list(recorded):
            use = _tool_use_id(d)
            if self._first_report(use, d) and use not in known:
                out.append(_without_turn(d))
        return out

    def _first_report(self, use: Any, denial: Any) -> bool:
        """The denial is not in an earlier result (the last 1024 reported are kept)."""
        key = str(use) if use else str(id(denial))
        if key in self._reported:
            return False
        remember(self._reported, key, None, 1024)
        return True


def _passing(out: Output, frame: Frame) -> Sequence[Frame]:
    """What a call gave for ``frame``: ``out``, or the frame itself when it passes."""
    return out if out is not None else (frame,)


def _is_cbcs(frame: Frame, obj: Result) -> bool:
    """A result cbc wrote (its wire frame has no ``stop_reason``: Claude writes one on
    every result; a rule may have added one since)."""
    root = frame.lineage
    wire = root.obj if root is not frame else obj
    return not isinstance(wire, dict) or "stop_reason" not in wire


def _zero_numbers(new: dict[str, Any]) -> None:
    """The result's numbers that are missing or not numbers are 0 (a bool is no number
    here, though an int to Python)."""
    for key in _RESULT_NUMBERS:
        value = new.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            new[key] = 0


def _is_error(new: dict[str, Any], sub: Any) -> bool:
    """``is_error`` as Claude writes it (set in ``new``): what cbc said, or that the
    result is no success; true for every ``error_*`` subtype."""
    is_error = new.get("is_error")
    if not isinstance(is_error, bool):
        new["is_error"] = is_error = sub != "success"
    if sub != "success" and isinstance(sub, str):
        new["is_error"] = is_error = True
    return is_error


def _errors(new: dict[str, Any], sub: Any) -> list[str]:
    """An error result's ``errors``: its text, else its subtype."""
    text = new.get("result")
    return [text] if isinstance(text, str) and text else [str(sub)]


def _unnamed_task_origin(origin: Any) -> TypeGuard[dict[str, Any]]:
    """A task notification's ``origin`` without its ``runId``."""
    return (
        isinstance(origin, dict)
        and origin.get("kind") == "task-notification"
        and "runId" not in origin
    )


def _tool_use_id(denial: Any) -> Any:
    return denial.get("tool_use_id") if isinstance(denial, dict) else None


def _without_turn(denial: dict[str, Any]) -> dict[str, Any]:
    """A recorded denial as the result lists it (``permission-routing``'s ``turn`` off)."""
    return {k: v for k, v in denial.items() if k != "turn"}


def _bump(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _stop_reason_of(frame: Frame, message: Message) -> Any:
    """A message's stop_reason, or its wire frame's (``frame-fields`` nulls it)."""
    reason = message.get("stop_reason")
    if reason is None and frame.root is not None:
        return _wire_stop_reason(frame.root)
    return reason


def _wire_stop_reason(root: Frame) -> Any:
    """The stop_reason of the wire frame an assistant frame descends from (``frame-fields``
    nulls it on what the client sees); parsed only when it has a non-null one."""
    if root.raw and root.raw.find(b'"stop_reason":"') < 0:  # (find: compat.pipeline)
        return None
    obj = root.obj
    message = cast(Assistant, obj).get("message") if isinstance(obj, dict) else None
    return message.get("stop_reason") if isinstance(message, dict) else None


def _user_messages(message: Any) -> int:
    """How many user messages Claude writes for this main-thread user frame: one per
    ``tool_result`` block (one message per tool result), else one."""
    return max(sum(1 for b in content_blocks(message) if is_block(b, "tool_result")), 1)
