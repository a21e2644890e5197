"""What the rules know about the session, shared by the stages of one engine.

The ``session`` stage (first downstream) keeps ``session_id``, ``cwd`` and the tool calls
seen so far; the task stages keep ``tasks``. Stages read each other's facts only through
this object, never through each other, so each stays testable alone: a test builds a
``SessionState`` by hand and feeds frames.

Memory stays bounded by the caps whatever the stream's length, and a remembered tool call
keeps only the input fields some rule reads (``TOOL_INPUT_KEYS``: an Agent call's
description/prompt/subagent_type, a Workflow call's script/scriptPath, a Bash command,
what a DeferExecuteTool call wraps), not e.g. a Write call's file contents.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any

import attrs

from compat.states import Phased, transitions

if TYPE_CHECKING:
    from compat.taskkit import LiveTask

#: tool calls remembered for correlation (task-correlation, workflow-name); oldest dropped.
#: A task's starting call is looked up when the task starts, a few frames after the call.
MAX_TOOL_USES = 1024
#: tasks remembered; finished ones (notified) are forgotten first, oldest first, and only
#: then the oldest running one (a long session starts many shells, few run at once)
#: finished tasks remembered (for their late frames), oldest forgotten first
MAX_FINISHED = 256
#: requests the bridge sent the backend itself and still awaits a reply to
#: (``ControlState.own``); a backend that never replies cannot grow it past this
MAX_OWN = 1024
MAX_TASKS = 16_384  # (as many as the task rules' registries: compat.taskkit.MAX_LIVE_TASKS)
#: the tool-call input fields rules read (compat.taskkit.starting_call / resolve_workflow,
#: task-correlation, workflow-prompt; bash-output: a Bash ``command``, which Claude's
#: noOutputExpected is read from, and its ``timeout`` (a backgrounded call's record);
#: task-tool-results: what a TaskUpdate changes, for its updatedFields); ``params``
#: (DeferExecuteTool) is trimmed the same way
TOOL_INPUT_KEYS = frozenset(
    {
        "description",
        "prompt",
        "subagent_type",
        "run_in_background",
        "script",
        "scriptPath",
        "toolName",
        "params",
    }
    | {"command", "timeout"}
    | {"taskId", "subject", "status", "activeForm", "owner", "addBlocks", "addBlockedBy"}
)


def trim_input(inp: dict[str, Any]) -> dict[str, Any]:
    """``inp`` without the fields no rule reads (the same dict when nothing is cut)."""
    if inp.keys() <= TOOL_INPUT_KEYS and not isinstance(inp.get("params"), dict):
        return inp
    out = {k: v for k, v in inp.items() if k in TOOL_INPUT_KEYS}
    params = out.get("params")
    if isinstance(params, dict):
        out["params"] = {k: v for k, v in params.items() if k in TOOL_INPUT_KEYS}
    return out


@attrs.define
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]
    parent_tool_use_id: str | None = None


class TaskPhase(Phased):
    """A task's lifecycle as the client has seen it ([terminal-guarantee]); ``to`` allows
    only the transitions of its table (an illegal one raises: a bug in the rule)."""

    NEW = "new"  # known (a frame named it), not shown as started
    RUNNING = "running"  # task_started forwarded
    ENDED = "ended"  # a terminal task_updated forwarded
    NOTIFIED = "notified"  # the one task_notification forwarded


transitions(
    TaskPhase,
    "task lifecycle",
    {
        # a notification for a task whose start the client never saw passes as it is
        TaskPhase.NEW: {TaskPhase.RUNNING, TaskPhase.NOTIFIED},
        TaskPhase.RUNNING: {TaskPhase.ENDED},
        TaskPhase.ENDED: {TaskPhase.NOTIFIED},
        TaskPhase.NOTIFIED: set(),
    },
)


#: the phases of a task shown as started and not notified yet (``SessionState.open_tasks``)
_OPEN = frozenset({TaskPhase.RUNNING, TaskPhase.ENDED})
#: the metadata of a field that is no fact of its own (``compat.facts``) but an index the
#: state keeps of one (the open tasks' ids: ``task.phase``), so its readers and writers are
#: that fact's
NOT_A_FACT = {"fact": False}
#: ``TaskInfo.seq``: the next task made (``SessionState.task``)
_TASK_SEQ = itertools.count()


@attrs.define
class TaskInfo:
    """What the task rules learned about one background task. Each field has one writer
    (the rule in brackets); the others only read it, so a rule switched off leaves its
    fields at their defaults and the readers fall back to the frame's own values."""

    task_id: str
    task_type: str = ""  # [task-type] the Claude task type
    tool_use_id: str | None = None  # [task-correlation] the call that started the task
    description: str = ""  # [workflow-prompt] the Claude description on task_started
    backend_description: str | None = None  # [workflow-prompt] cbc's own description
    workflow_name: str | None = None  # [workflow-name] the name the client was given
    prompt: str | None = None  # [workflow-prompt] script text / the Agent call's prompt
    #: [compat.taskkit.resolve_workflow] the workflow script and its parsed ``meta``
    #: (name, description, phases), when known; ``source_resolved``: looked up already
    script: str | None = None
    meta: dict[str, Any] | None = None
    source_resolved: bool = False
    # [terminal-guarantee] the lifecycle as forwarded past that rule (``phase``)
    _phase: TaskPhase = attrs.field(default=TaskPhase.NEW, alias="phase")
    #: [terminal-guarantee] the task as its forwarded ``task_started`` showed it (Claude's
    #: type, description, call): what a rule that ends the task itself says of it
    #: (``compat.taskkit.LiveTask``; None until shown)
    shown: LiveTask | None = None
    status: str = "running"  # last status forwarded (Claude vocabulary)
    end_time: int | None = None
    last_progress: dict[str, Any] | None = None  # [progress-final] last task_progress
    usage: dict[str, Any] | None = None
    #: the order ``SessionState.task`` made it in (``tasks``' order: it is inserted there
    #: only then; a count of all sessions', so no fact of one)
    seq: int = attrs.field(default=0, eq=False, repr=False)
    #: the ids of its session's open tasks (``SessionState._open``), which a change of
    #: ``phase`` keeps; None for a task no session keeps (made alone, or forgotten)
    _open_ids: dict[str, None] | None = attrs.field(
        default=None, eq=False, repr=False, metadata=NOT_A_FACT
    )

    @property
    def phase(self) -> TaskPhase:
        return self._phase

    @phase.setter
    def phase(self, new: TaskPhase) -> None:
        self._phase = new
        open_ids = self._open_ids
        if open_ids is not None:
            if new in _OPEN:
                open_ids[self.task_id] = None
            else:
                open_ids.pop(self.task_id, None)

    @property
    def started(self) -> bool:
        """Shown to the client (its start forwarded), whatever happened since."""
        return self.phase is not TaskPhase.NEW

    @property
    def notified(self) -> bool:
        return self.phase is TaskPhase.NOTIFIED

    def start(self) -> None:
        """[terminal-guarantee] task_started forwarded."""
        self.phase = self.phase.to(TaskPhase.RUNNING)

    def end(self, status: str, end_time: int | None) -> None:
        """[terminal-guarantee] a terminal task_updated (``status``, Claude's) forwarded."""
        self.phase = self.phase.to(TaskPhase.ENDED)
        self.status, self.end_time = status, end_time


@attrs.define
class ControlRequest:
    """A client ``control_request`` forwarded to the backend [unsupported-control]."""

    request_id: str
    subtype: str
    request: dict[str, Any]  # the request as forwarded (replayed after "Session not found")
    #: the client has its reply: [control-reply] (the backend's) or [unsupported-control]
    #: (its safety timer, the client's control_cancel_request); a later reply is dropped
    answered: bool = False


@attrs.define
class Interrupt:
    """An interrupt the client asked for [interrupt-request]."""

    request_id: str
    cancel_queued: bool = False
    #: [interrupt-reply] cbc's error ("Session not found") that became Claude's success
    backend_error: str | None = None
    #: [interrupt-request] uuids of the queued lines ``cancel_queued`` took back
    cancelled: list[str] = attrs.Factory(list)


@attrs.define
class PermissionRequest:
    """A ``can_use_tool`` the bridge forwarded to the client [permission-routing]; removed
    when answered [permission-reply] or cancelled [permission-cancel]."""

    request_id: str
    tool_name: str
    tool_use_id: str | None
    input: dict[str, Any]
    #: [interrupt-request] an interrupt ended it: cbc was told deny + interrupt
    interrupted: bool = False


@attrs.frozen
class PermissionRule:
    """A permission rule the client's answer added ("always allow": ``updatedPermissions``
    ``addRules`` / ``replaceRules``) [permission-reply]: ``toolName`` and its optional
    ``ruleContent`` (``Bash(npm test:*)`` is ``Bash`` + ``npm test:*``), what it decides
    (``allow`` / ``deny`` / ``ask``) and where Claude would keep it (``destination``)."""

    behavior: str
    destination: str
    tool_name: str
    rule_content: str | None = None


@attrs.define
class ControlState:
    """The control protocol's facts (compat/stages/control.py, permissions.py,
    interrupts.py). Writers in brackets."""

    requests: dict[str, ControlRequest] = attrs.Factory(dict)  # [unsupported-control]
    #: request ids the bridge sent upstream itself -> what for; [control-reply] swallows
    #: their replies (the client never asked). A backend that never replies would grow it
    #: by one per request: the writers keep the newest ``MAX_OWN`` (``taskkit.remember``)
    own: dict[str, str] = attrs.Factory(dict)
    #: requests held until the backend has a session ([unsupported-control],
    #: [interrupt-request]); [control-reply] sends them at the session's first init
    deferred: list[dict[str, Any]] = attrs.Factory(list)
    interrupts: dict[str, Interrupt] = attrs.Factory(dict)  # [interrupt-request]
    permissions: dict[str, PermissionRequest] = attrs.Factory(dict)  # [permission-routing]
    #: [permission-reply] the rules the client's permission answers added, oldest first;
    #: [permission-routing] answers cbc's ``can_use_tool`` itself when one decides it
    permission_rules: list[PermissionRule] = attrs.Factory(list)
    #: [permission-routing] can_use_tool requests the bridge denied itself (no stdio
    #: prompts), [permission-cancel] those an interrupt withdrew while open:
    #: ``{tool_name, tool_use_id, tool_input}``, Claude's ``permission_denials``
    #: entries, with ``turn`` = ``client_turns`` when denied. cbc lists them in its own
    #: result too (it sees an SDK deny: ``mockoai_can-use-tool-deny``).
    permission_denials: deque[dict[str, Any]] = attrs.Factory(lambda: deque(maxlen=256))
    #: [permission-reply, permission-cancel] tool_use_ids of calls the client's answer
    #: denied (``permission-rule``) or an interrupt withdrew the prompt of
    #: (``user-rejected``) -> that ``non_execution_kind``; [permission-routing] marks their
    #: tool_result (``tool_result_meta``) and forgets them
    denied_uses: dict[str, str] = attrs.Factory(dict)
    #: [permission-reply] tool_use_ids of calls the client denied with ``interrupt: true``
    #: (the turn ends there: Claude rejects the call and stops); [interrupted-turn] ends
    #: that turn as interrupted when cbc wrote no tool_result for it, and forgets them
    denying_interrupts: dict[str, None] = attrs.Factory(dict)
    #: [max-turns] when cbc went on to ask the model again (a ``system/init``) in a turn the
    #: rule stopped: cbc ends that turn by itself a little later ("Interrupted by user",
    #: a result: dropped), and a line it reads before then is lost; None when no such end
    #: is due. [user-line] holds the client's lines meanwhile (at most ``leftover_wait``).
    leftover_due: float | None = None
    #: [user-line] uuids (None when absent) of user lines sent upstream whose turn has not
    #: started; [control-state] pops one at each turn start
    pending_user: deque[str | None] = attrs.Factory(lambda: deque(maxlen=1024))
    #: [user-line] uuids of user lines received before the session id was known, whose
    #: command_lifecycle "queued" [command-lifecycle] sends at the next turn start
    unsent_queued: deque[str] = attrs.Factory(lambda: deque(maxlen=1024))
    user_lines: int = 0  # [user-line] user lines sent upstream
    #: [compact-line] the numbers (1 for the first) of the user lines given to cbc that are
    #: ``/compact``; [compact-command] maps the client turn of that number (``client_turns``)
    compact_lines: deque[int] = attrs.Factory(lambda: deque(maxlen=64))
    #: [user-line] client user lines written while a turn runs or another line waits,
    #: not yet given to cbc (their uuids are in ``pending_user`` too); [interrupt-request]
    #: takes them back for ``cancel_queued``. Items are ``compat.frames.Frame``.
    queued_lines: deque[Any] = attrs.Factory(deque)
    #: [user-line] the stage holding ``queued_lines``: [control-state] wakes it (a timer)
    #: when a turn ends
    line_waker: Any = None
    # [control-state] turns as the client sees them (after init-once)
    turn_active: bool = False
    turn_from_client: bool = False  # the running/last turn consumed a client user line
    #: [control-state] an interrupt's receipt (``turns.is_interrupt_receipt``) arrived while
    #: the running/last turn ran; cleared when the next turn starts, not at its result;
    #: [command-lifecycle] reads it at that result, before control-state ends the turn
    turn_interrupted: bool = False
    turns: int = 0  # turns started
    client_turns: int = 0  # of which started by a client user line
    #: of which cbc ended with a result of its own (not one a rule wrote for it, as
    #: ``max-turns`` and ``interrupted-turn`` do): cbc's drain poll starts after the first
    backend_results: int = 0
    mcp_servers: list[Any] = attrs.Factory(list)  # from the last system/init
    #: [initialize-request] the confirmations of the launch fields the client's initialize
    #: carried (``compat.launch_init.confirmations``); [initialize-reply] writes them
    init_applied: dict[str, bool] = attrs.Factory(dict)
    last_result: dict[str, Any] | None = None  # usage/modelUsage/cost of the last result
    #: [control-state] the last ``system/init`` of the session as the client saw it
    #: ([local-slash-commands] writes a copy of it for a command it answers)
    last_init: dict[str, Any] | None = None
    default_model: str | None = None  # [initialize-reply] cbc's currentModelId
    #: [interrupt-request] the request id of an interrupt that ended open permission
    #: prompts (cbc then ends the turn before it answers the interrupt); [control-reply]
    #: holds that turn's result until the interrupt's receipt, and clears it
    prompt_interrupt: str | None = None
    #: [unsupported-control, control-reply] the model of the last successful set_model
    set_model: str | None = None
    #: [hook-once] the ``hook_callback`` requests forwarded to the client, by request id:
    #: the call a ``PreToolUse`` asks about (its decision may deny it), else None
    hook_requests: dict[str, PermissionRequest | None] = attrs.Factory(dict)
    #: [hook-reply] the client's answer (its ``response`` object) to each of them
    hook_answers: dict[str, dict[str, Any]] = attrs.Factory(dict)
    #: [hook-reply] calls a client's ``PreToolUse`` hook denied: tool_use_id -> its reason;
    #: [hook-deny] words their tool_result as Claude does, and forgets them
    hook_denials: dict[str, str] = attrs.Factory(dict)
    #: [sdk-mcp] cbc's ``mcp_message`` requests to the client's in-process MCP servers:
    #: request id -> (server, JSON-RPC method, the tool_use_id of a ``tools/call`` or "")
    sdk_mcp_calls: dict[str, tuple[str, str, str]] = attrs.Factory(dict)
    #: [sdk-mcp-reply] each in-process server's ``tools/list`` answer (``mcp_status``,
    #: [sdk-mcp]'s ``tool_use_meta``)
    sdk_mcp_tools: dict[str, list[dict[str, Any]]] = attrs.Factory(dict)
    #: [sdk-mcp-reply] each in-process server's ``serverInfo.name`` (its ``initialize``)
    sdk_mcp_server_names: dict[str, str] = attrs.Factory(dict)
    #: [sdk-mcp-reply] tool_use_id -> the client's ``tools/call`` result, until [sdk-mcp]
    #: rewrites that call's ``tool_result`` from it
    sdk_mcp_results: dict[str, dict[str, Any]] = attrs.Factory(dict)


@attrs.define
class SessionState:
    session_id: str | None = None
    cwd: str | None = None
    model: str | None = None
    tool_uses: dict[str, ToolUse] = attrs.Factory(dict)
    tasks: dict[str, TaskInfo] = attrs.Factory(OrderedDict)
    #: engine time of the last ``result`` cbc wrote (``session``; ``user-line``'s settle)
    result_at: float | None = None
    #: a launch fact ``bridge/proxy.py`` copies from ``compat.argv.Translation``: the client
    #: passed ``--permission-prompt-tool stdio`` (permission-routing)
    stdio_permissions: bool = False
    #: a launch fact: the client resumes a session (``--resume``, ``--continue``): cbc
    #: would replay its history unless told a prompt follows (``resume-replay``)
    resumes: bool = False
    #: a launch fact: the client's ``--max-turns N`` (a positive integer), which cbc does
    #: not always honour (``max-turns``); None: no limit
    max_turns: int | None = None
    #: the pid the client is told in the initialize reply (the bridge's own; 0 unknown)
    pid: int = 0
    #: a launch fact: the fields of the client's ``initialize`` cbc got on its command line
    #: (``--await-initialize``, ``compat.launch_init``): ``initialize-request`` removes
    #: them, ``initialize-reply`` confirms them
    launch_fields: frozenset[str] = frozenset()
    control: ControlState = attrs.Factory(ControlState)
    #: live tasks forgotten because more than MAX_TASKS were open at once
    forgotten_live: int = 0
    #: ids of the finished tasks still in ``tasks``, oldest first (``finished``)
    _finished: dict[str, None] = attrs.Factory(dict)
    #: ids of the open tasks in ``tasks`` (phase in ``_OPEN``: ``has_open_task``), kept by
    #: each task's ``phase`` setter and by the forgetting here
    _open: dict[str, None] = attrs.field(factory=dict, metadata=NOT_A_FACT)

    def remember_tool_use(self, use: ToolUse) -> None:
        use.input = trim_input(use.input)
        uses = self.tool_uses
        uses[use.id] = use
        if len(uses) > MAX_TOOL_USES:
            del uses[next(iter(uses))]

    def task(self, task_id: str) -> TaskInfo:
        info = self.tasks.get(task_id)
        if info is None:
            info = TaskInfo(task_id, seq=next(_TASK_SEQ), open_ids=self._open)
            self.tasks[task_id] = info
            if len(self.tasks) > MAX_TASKS:
                self._forget_task()
        return info

    def finished(self, info: TaskInfo) -> None:
        """[terminal-guarantee] ``info``'s notification went out. Past ``MAX_FINISHED``
        finished tasks the oldest is forgotten, so memory follows the live tasks, not the
        session's length."""
        info.phase = info.phase.to(TaskPhase.NOTIFIED)
        self._finished[info.task_id] = None
        while len(self._finished) > MAX_FINISHED:
            tid = next(iter(self._finished))
            del self._finished[tid]
            old = self.tasks.get(tid)
            if old is not None and old.notified:
                self._drop(tid)

    def _forget_task(self) -> None:
        """A finished task first (the oldest: a notified task is one of ``_finished``,
        which is short, where a scan of ``tasks`` for one was 16,384 steps a new task once
        that many ran); a live one only when none has finished (counted in
        ``forgotten_live``: the engine reports it in the statistics and logs it)."""
        tasks = self.tasks
        first: TaskInfo | None = None
        for tid in self._finished:
            t = tasks.get(tid)
            if t is not None and t.notified and (first is None or t.seq < first.seq):
                first = t
        if first is not None:
            self._drop(first.task_id)
            return
        if self._drop(next(iter(tasks))).started:
            self.forgotten_live += 1

    def _drop(self, task_id: str) -> TaskInfo:
        """``task_id`` forgotten: out of ``tasks`` and the open ids; the ``TaskInfo`` a rule
        may still hold no longer changes them."""
        info = self.tasks.pop(task_id)
        info._open_ids = None
        self._open.pop(task_id, None)
        return info

    def open_tasks(self) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.started and not t.notified]

    def running_tasks(self) -> list[TaskInfo]:
        """The open tasks not ended yet (phase ``RUNNING``), in the order they started."""
        tasks = self.tasks
        return [t for i in self._open if (t := tasks[i]).phase is TaskPhase.RUNNING]

    def has_open_task(self) -> bool:
        """``open_tasks()`` is not empty (a rule asks it per frame between turns, when the
        notified tasks kept until forgotten make ``tasks`` long: the open ids are kept
        apart)."""
        return bool(self._open)
