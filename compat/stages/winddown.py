"""``eof-wind-down``: what happens after the client closes stdin, the Claude Code way
(PROTOCOL.md §5).

Claude Code 2.1.220 on stdin EOF finishes the turn in flight, waits for background agents
and workflows up to ``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS`` (600 s), runs the turns their
notifications trigger, gives background shells a 5 s grace from its last turn once nothing
else runs and then kills them (``background_tasks_changed``, ``task_updated{killed}``,
``task_notification{stopped}``: ``claude-2.1.220/mockapi_eof-with-bg-bash_5s-grace-then-
stopped-exit0``, 5.13 s after the EOF of an idle session; twins eof-with-bg-work: the last
notification turn's result at 24.83 s, the shell killed at 29.88 s), and exits 0, or 1
when the last result was an error
(``dummykey_eof-midturn_turn-finishes-then-exit1``). cbc on EOF stops reading, may lose a
running agent's report (``cbc-2.163.0/mockoai_eof-with-bg-agent-running``: exit with the
agent never reported) and never exits while a workflow runs
(``mockoai_eof-with-bg-workflow-running``).

So this stage holds the client's EOF (``defers_eof``): cbc's stdin stays open while

1. a turn runs (from its first frame to its ``result``), or a user line the client sent
   has not started its turn (``ControlState.pending_user``): waited for while cbc lives (a
   slow start or a slow model), bounded by the ceiling; only a line that was pending when
   cbc ended a turn (cbc may have folded it into that turn) is given up after
   ``idle_wait`` seconds without a frame from cbc;
2. background shells run: ``shell_grace`` seconds after the session last went idle with
   only shells left (no turn, no line waiting, no agent or workflow running: a turn or a
   task that is not a shell starts the grace over), the open ``local_bash`` tasks get
   ``task_updated{killed,end_time}`` + ``task_notification{stopped}`` (the later task
   rules add the snapshot and the fields; cbc's own late frames for them are dropped by
   ``terminal-guarantee``);
3. background agents and workflows run, and for ``settle`` seconds after cbc's last frame
   when that was a task's end (its notification starts a turn a moment later); after a
   ``result`` with nothing running, nothing can follow, and the close is immediate, as
   Claude exits at once there. That close says the session ``settled``
   (``CloseBackendInput.settled``): a ``-p`` run prints its text then, not at cbc's exit.

Which tasks run is the shared task phase (``TaskInfo.phase`` and ``shown``, written by
``terminal-guarantee``), with what the frame being passed does to it applied here
(``_Change``: it reaches that rule after this one), so the notification that ends the last
task is seen as that end at once.

The client can no longer answer cbc's requests, so from the EOF on they are answered here
(Claude's requests fail with "Stream closed" once its input is gone): a ``can_use_tool``
forwarded before the EOF and still open (``ControlState.permissions``), or arriving after
it, is denied with the rejection cbc itself writes when its stdin closes
(``mockoai_can-use-tool-pending-then-eof``); any other request gets an error reply.

Everything is bounded by ``ceiling`` seconds from the EOF (default 600, Claude's; the
launcher sets it from ``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS``). Then cbc's stdin is
closed. Nothing cbc writes after the close is dropped: it reaches the client. cbc may take
~20 s to exit once its stdin is closed (measured on 2.163.0; its session file is complete
when it writes the result, and it exits 0 on SIGTERM with the session resumable), so an
idle cbc is terminated ``close_wait`` seconds after the close actually happened
(``on_backend_input_closed``) or after its last frame, whichever is later; a cbc still in a
turn is not (the I/O side's ``--eof-grace`` ends it once it is silent that long); at the
ceiling, ``close_wait`` after the close whatever runs. At cbc's exit a turn still open gets
an error ``result``, open tasks get their terminal frames (``terminal-guarantee``), and the
bridge's exit status is Claude's: 0, or 1 when the last result was an error. A backend that
exits by itself with a failure status before the close keeps its status (a crash is not a
wind-down).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple, cast

import attrs

from compat import wire
from compat.exits import Exit
from compat.frames import Frame
from compat.session import TaskPhase
from compat.stage import Context, Output, Stage, register
from compat.stages.shape import ZERO_USAGE
from compat.stages.turns import REJECTED
from compat.states import Phased, transitions
from compat.taskkit import (
    RUNNING_TASK_FACTS,
    TASK_FRAMES,
    TERMINAL,
    LiveTask,
    patch_status,
    stop_frames,
    task_id_of,
)


class Phase(Phased):
    """The wind-down's phases; ``to`` allows only the transitions of its table."""

    OPEN = "open"  # before the client's EOF
    WAITING = "waiting"  # after it: the turn, lines and background work are waited for
    CLOSING = "closing"  # cbc's stdin is (being) closed; its exit is awaited
    DONE = "done"  # cbc exited


transitions(
    Phase,
    "eof-wind-down",
    {
        Phase.OPEN: {Phase.WAITING, Phase.DONE},
        Phase.WAITING: {Phase.CLOSING, Phase.DONE},
        Phase.CLOSING: {Phase.DONE},
        Phase.DONE: {Phase.DONE},
    },
)

#: frames that show a turn is running (status/api_retry come first, before the held init)
_TURN = frozenset(
    {
        "system/init",
        "system/status",
        "system/api_retry",
        "assistant",
        "user",
        "stream_event",
        "tool_progress",
    }
)
SHELL = "local_bash"


class _Change(NamedTuple):
    """What a task frame this stage passes (or its own kills) does to the running tasks,
    before ``terminal-guarantee`` (later in the pipeline) writes it into their phase."""

    started: Mapping[str, LiveTask] = {}
    ended: frozenset[str] = frozenset()


def _change(obj: dict[str, Any], kind: str, ctx: Context) -> _Change | None:
    """A task frame's change: a start the client has not seen yet (a task the bridge
    ended already stays ended), or an end (a terminal update or the notification)."""
    tid = task_id_of(obj)
    if tid is None:
        return None
    if kind == "system/task_started":
        info = ctx.state.tasks.get(tid)
        if info is None:
            return _Change(started={tid: LiveTask.shown(obj, None)})
        if info.phase is not TaskPhase.NEW:
            return None  # (terminal-guarantee drops a second start)
        return _Change(started={tid: LiveTask.shown(obj, info.tool_use_id)})
    if kind == "system/task_notification" or (
        kind == "system/task_updated" and patch_status(obj) in TERMINAL
    ):
        return _Change(ended=frozenset({tid}))
    return None


@register
@attrs.define
class EofWindDown(Stage):
    """After the client's EOF: finish the turn, 5 s for shells, wait for agents/workflows
    (bounded), then close cbc's stdin, terminate it, exit 0/1 like Claude."""

    rule: ClassVar[str] = "eof-wind-down"
    reads: ClassVar[frozenset[str]] = RUNNING_TASK_FACTS | {
        "control.pending_user",
        "control.permissions",
        "session_id",
    }
    #: (terminal-guarantee, later, writes them: the frame being passed is ``_Change``)
    reads_earlier: ClassVar[frozenset[str]] = frozenset({"task.phase", "task.shown"})
    defers_eof: ClassVar[bool] = True
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"result", "control_request", *_TURN, *TASK_FRAMES}
    )

    #: seconds background shells get, once only they run and no turn does, before they are
    #: killed
    shell_grace: float = 5.0
    #: the most seconds from the EOF to closing cbc's stdin, whatever still runs
    ceiling: float = 600.0
    #: seconds of silence from cbc after a task ended (its notification may start a turn a
    #: moment later), once nothing runs, before closing; none after a result
    settle: float = 1.0
    #: seconds without a frame from cbc after which user lines cbc may have folded into a
    #: turn that ended (lines that were pending at a result) are no longer waited for
    idle_wait: float = 30.0
    #: seconds an idle cbc gets, from its stdin being closed (and from each frame it
    #: writes after that), to exit by itself before it is terminated
    close_wait: float = 0.2

    _eof: bool = attrs.field(default=False, init=False)
    _phase: Phase = attrs.field(default=Phase.OPEN, init=False)
    _active: bool = attrs.field(default=False, init=False)
    _last_error: bool = attrs.field(default=False, init=False)
    _last_frame: float = attrs.field(default=-1e18, init=False)
    #: the last frame cbc wrote was a ``result`` (nothing can follow but a new turn)
    _after_result: bool = attrs.field(default=False, init=False)
    #: a result came while client lines were pending: cbc may have folded them
    _folded: bool = attrs.field(default=False, init=False)
    #: cbc's stdin is closed (the I/O side said so); the close was forced by the ceiling
    _input_closed: bool = attrs.field(default=False, init=False)
    _forced: bool = attrs.field(default=False, init=False)
    _shell_timer: bool = attrs.field(default=False, init=False)
    _idle_timer: bool = attrs.field(default=False, init=False)
    _ignore_pending: bool = attrs.field(default=False, init=False)
    _terminate_armed: bool = attrs.field(default=False, init=False)

    def eof_budget(self) -> float | None:
        return max(0.0, self.ceiling) + max(0.0, self.close_wait)

    # -- frames -------------------------------------------------------------------------
    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        kind = frame.key()
        if kind == "control_request":
            return self._request(frame, ctx) if self._eof else None
        self._last_frame = ctx.now
        self._after_result = kind == "result"
        change = None
        if kind in TASK_FRAMES:
            change = _change(frame.obj, kind, ctx)
        elif kind == "result":
            self._active = False
            self._last_error = frame.view(wire.Result).get("is_error") is True
            self._folded = self._pending_lines(ctx) > 0
        else:
            self._active = True
        return self._after_frame(ctx, change)

    def _after_frame(self, ctx: Context, change: _Change | None) -> Output:
        """What every frame from cbc does to the wind-down (its state already updated)."""
        if self._phase is Phase.CLOSING:
            # cbc still writes after its stdin was closed: every frame reaches the client,
            # and an idle cbc's time to exit starts over from it
            ctx.count(self.rule, "passed-after-close")
            self._arm_terminate(ctx, change)
            return None
        if self._eof:
            if self._idle_timer:
                if self._active:  # the turn started: wait for its result, not for lines
                    self._idle_timer = False
                    ctx.cancel_timer(self, "idle")
                else:
                    ctx.set_timer(self, "idle", self.idle_wait)  # cbc is alive: start over
            self._check(ctx, change)
        return None

    def _request(self, frame: Frame, ctx: Context) -> Output:
        """A request from cbc after the client's EOF: nobody can answer it but us."""
        request = frame.view(wire.ControlRequest)
        rid, req = request.get("request_id"), request.get("request")
        if not isinstance(rid, str) or not isinstance(req, dict):
            return None
        self._answer(ctx, rid, cast("wire.SetterBody", req).get("subtype"))
        return ()

    def _answer(self, ctx: Context, rid: str, subtype: object) -> None:
        if subtype == "can_use_tool":
            resp = {
                "subtype": "success",
                "request_id": rid,
                "response": {"allowed": False, "reason": REJECTED, "interrupt": False},
            }
        else:
            resp = {"subtype": "error", "request_id": rid, "error": "Stream closed"}
        ctx.emit("up", Frame.from_obj({"type": "control_response", "response": resp}), self.rule)
        ctx.log(
            self.rule,
            f"answered cbc's {subtype} request {rid!r} itself: the client closed its input",
            "debug",
        )

    def _open(self, ctx: Context, change: _Change | None = None) -> dict[str, LiveTask]:
        """Tasks still running (terminal-guarantee's ``TaskPhase.RUNNING``), with what the
        frame being passed does to them (``change``: it reaches that rule after this one)."""
        tasks = {t.task_id: t.shown for t in ctx.state.running_tasks() if t.shown is not None}
        if change is not None:
            tasks.update(change.started)
            for tid in change.ended:
                tasks.pop(tid, None)
        return tasks

    def _pending_lines(self, ctx: Context) -> int:
        if self._ignore_pending:
            return 0
        n = len(ctx.state.control.pending_user)
        if not n:
            self._folded = False
        return n

    # -- the wind-down ------------------------------------------------------------------
    def on_client_eof(self, ctx: Context) -> Output:
        self._eof = True
        self._phase = self._phase.to(Phase.WAITING)
        pending = ctx.state.control.permissions  # prompts forwarded, never answered
        for rid in list(pending):
            self._answer(ctx, rid, "can_use_tool")
        pending.clear()
        ctx.set_timer(self, "ceiling", max(0.0, self.ceiling))
        ctx.log(
            self.rule,
            "client EOF: finishing the turn and background work before closing the backend's stdin",
            "debug",
        )
        self._check(ctx)
        return None

    def _check(self, ctx: Context, change: _Change | None = None) -> None:
        if self._phase is not Phase.WAITING:
            return
        if self._active:
            self._stop_shell_grace(ctx)  # Claude counts the grace from its last turn
            return
        if self._pending_lines(ctx):
            self._stop_shell_grace(ctx)
            # a line cbc has not started yet is waited for while cbc lives (a slow start or
            # a slow model; the ceiling bounds it), unless cbc ended a turn meanwhile and
            # may have folded it into that turn: then only for idle_wait of silence
            if self._folded and not self._idle_timer:
                self._idle_timer = True
                ctx.set_timer(self, "idle", self.idle_wait)
            return
        tasks = self._open(ctx, change)
        shells = [tid for tid, t in tasks.items() if t.task_type == SHELL]
        if len(shells) < len(tasks):  # agents/workflows first, and their notification turns
            self._stop_shell_grace(ctx)
            return
        if shells and not self._shell_timer:
            self._shell_timer = True
            ctx.set_timer(self, "shells", self.shell_grace)
        if tasks:
            return
        settled = self._last_frame + (0.0 if self._after_result else self.settle)
        if ctx.now + 1e-9 < settled:  # (a tolerance: the timer fires at exactly `settled`)
            ctx.set_timer(self, "settle", settled - ctx.now)
            return
        self._finish(ctx, "the session is idle")

    def _stop_shell_grace(self, ctx: Context) -> None:
        if self._shell_timer:
            self._shell_timer = False
            ctx.cancel_timer(self, "shells")

    def _finish(self, ctx: Context, why: str, forced: bool = False) -> None:
        if self._phase is not Phase.WAITING:
            return
        self._phase = self._phase.to(Phase.CLOSING)
        self._forced = forced
        for key in ("shells", "settle", "idle", "ceiling"):
            ctx.cancel_timer(self, key)
        ctx.log(self.rule, f"closing the backend's stdin ({why})", "debug")
        # after a result with nothing running, nothing can follow: Claude would print its
        # output and exit here (a -p run's text need not wait for cbc's exit)
        ctx.close_backend_input(self, settled=self._after_result and not forced)

    def on_backend_input_closed(self, ctx: Context) -> Output:
        self._input_closed = True
        self._arm_terminate(ctx)
        return None

    def _arm_terminate(self, ctx: Context, change: _Change | None = None) -> None:
        """Once cbc's stdin is closed: an idle cbc (its last frame a result, no turn, no
        task running) is terminated ``close_wait`` seconds after its last frame, as Claude
        exits at once there; at the ceiling, ``close_wait`` after the close whatever runs
        (Claude's bound). A cbc in a turn, or that never wrote a result, is left to finish:
        the I/O side's grace (``--eof-grace``) ends it only once it falls silent."""
        if not self._input_closed or self._phase is not Phase.CLOSING:
            return
        if self._forced:
            if not self._terminate_armed:
                self._terminate_armed = True
                ctx.set_timer(self, "terminate", max(0.0, self.close_wait))
            return
        if self._active or not self._after_result or self._open(ctx, change):
            self._terminate_armed = False
            ctx.cancel_timer(self, "terminate")
            return
        self._terminate_armed = True
        ctx.set_timer(self, "terminate", max(0.0, self.close_wait))

    def on_timer(self, key: str, ctx: Context) -> Output:
        if key == "terminate":
            ctx.terminate_backend(
                self,
                f"idle {self.close_wait:g}s after its stdin was closed (eof-wind-down)"
                if not self._forced
                else f"still running {self.close_wait:g}s after the wind-down "
                "ceiling closed its stdin (eof-wind-down)",
            )
            return None
        if key == "ceiling":
            n = len(self._open(ctx))
            ctx.log(
                self.rule,
                f"wind-down ceiling of {self.ceiling:g}s reached"
                + (f" with {n} background task(s) still running" if n else "")
                + (" during a turn" if self._active else ""),
                "warning",
            )
            self._finish(ctx, "ceiling", forced=True)
            return None
        if key == "idle":
            self._idle_timer = False
            self._ignore_pending = True
            ctx.log(
                self.rule,
                f"no turn started {self.idle_wait:g}s after the client's last "
                "user line(s); not waiting for them",
                "warning",
            )
        out: list[Frame] = []
        change = None
        if key == "shells":
            self._shell_timer = False
            out, change = self._kill_shells(ctx)
        self._check(ctx, change)
        return out or None

    def _kill_shells(self, ctx: Context) -> tuple[list[Frame], _Change]:
        """The end of every running shell (their frames, and that change to the tasks)."""
        out: list[Frame] = []
        end = ctx.wall_ms()
        shells = {t: s for t, s in self._open(ctx).items() if s.task_type == SHELL}
        for tid, task in shells.items():
            out += stop_frames(ctx, self.rule, tid, task, end)
        if out:
            ctx.log(
                self.rule,
                f"killed {len(out) // 2} background shell(s) "
                f"{self.shell_grace:g}s after the session went idle (client EOF)",
                "info",
            )
        return out, _Change(ended=frozenset(shells))

    # -- the end ----------------------------------------------------------------------
    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        if not self._eof:
            return None
        out: list[Frame] = []
        closed = self._phase is Phase.CLOSING
        if self._active:
            self._active, self._last_error = False, True
            out.append(Frame.synth(wire.plain(self._abandoned_result(ctx)), self.rule))
            ctx.log(self.rule, f"{ctx.backend_end} before the turn ended", "warning")
        if closed or status == 0:
            ctx.set_exit_status(Exit.FAILED if self._last_error else Exit.OK)
        self._phase = self._phase.to(Phase.DONE)
        return out or None

    def _abandoned_result(self, ctx: Context) -> wire.Result:
        why = f"{ctx.backend_end or 'the backend exited'} before the turn ended"
        return {
            "type": "result",
            "subtype": "error_during_execution",
            "is_error": True,
            "duration_ms": 0,
            "duration_api_ms": 0,
            "num_turns": 0,
            "session_id": ctx.state.session_id or "",
            "total_cost_usd": 0,
            "usage": dict(ZERO_USAGE),
            "modelUsage": {},
            "permission_denials": [],
            "stop_reason": None,
            "terminal_reason": "aborted_streaming",
            "errors": [f"ccbridge: {why}"],
            "uuid": ctx.env.new_uuid(),
        }
