"""``local-slash-commands``: a slash command written as a user line, answered the way
Claude Code 2.1.220 answers it in ``-p`` stream-json mode, without the model.

The texts and what counts as a command (twins ``slash-commands``; Claude 2.1.220's command
dispatch read in its binary: ``Rfe``/``Opr`` parse, ``r0o`` the name check, the
``stat("/<name>")`` path check, ``Jse`` the built-in names):

- the line (string content, or text blocks: the last one is the input) trimmed starts with
  ``/``; the name is what follows up to the first white space, and must be made of
  ``[a-zA-Z0-9:_-]`` (``/usr/bin is slow`` is a prompt), and ``/<name>`` must not exist on
  disk (``/tmp`` is a prompt). Such a line is a command.
- ``/usage`` (``/cost``, ``/stats``): ``Total cost: …`` from the session's last result
  (cost, API time, the usage by model); ``/context``: ``## Context Usage …`` from what
  ``get_context_usage`` answers (``control_usage.context_usage``).
- a built-in command Claude has but not in ``-p`` mode (``/help``, ``/exit``, …):
  ``/<name> isn't available in this environment.``
- a name Claude does not know (and cbc's init does not list: a custom command or skill
  goes to cbc): ``Unknown command: /<name>``, ``. Did you mean /<x>?`` for a command of
  Claude's ``-p`` list at most 2 edits away.
- every other command (``/compact``, a prompt command such as ``/init``, ``/review``, a
  skill, an MCP prompt ``/mcp__s__p`` or ``(MCP)``, a namespaced ``a:b``, the local
  commands the bridge cannot run) goes to cbc as before.

Claude's answer (twins ``slash-commands.claude``): ``command_lifecycle`` ``started`` (the
line's ``queued`` is ``user-line``'s), the turn's ``system/init``, a synthetic
``assistant`` (model ``<synthetic>``, a uuid for id, ``container``/``stop_details``
null, ``stop_reason`` ``stop_sequence``, ``stop_sequence`` ``""``, zero usage) with the
output, a ``result`` with it (``num_turns`` 0, ``stop_reason`` null, no
``terminal_reason``, ``user_message_uuid`` or ``api_error_status``; the session's cost and
``modelUsage``), ``completed``. These are written straight to the client; cbc never gets
the line. The init is a copy of the last one the client saw (``ControlState.last_init``,
a new uuid): before cbc's first init (no session id yet) the line goes to cbc.

Order: Claude answers a command in its turn, after the lines before it. ``user-line``
gives the rule a line when it would give it to cbc (its queue: one line per turn); the
rule, right after it, answers a command only once every line before it has had its turn
(no turn runs, and the client turns plus the commands answered reach the line's number,
or the line's uuid heads ``pending_user``); else it holds it, with every frame behind it,
and looks again every ``poll`` seconds. Answering takes the line off ``pending_user`` and
wakes ``user-line``'s queue (a line queued behind the command goes then). Not covered:
``--replay-user-messages`` (cbc echoes the lines it gets; no capture shows Claude's echo
of a command), and Claude's count of code changes (always 0 lines).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.control_usage import context_usage
from compat.stages.lifecycle_cmd import lifecycle
from compat.stages.slash_text import (
    LISTED,
    UNAVAILABLE,
    USAGE,
    command_name,
    context_output,
    line_text,
    number,
    unknown_text,
    usage_output,
)
from compat.stages.turns import iso_ms

#: Claude's zero usage of a synthetic message, and of a result (keys in its order)
_TOOL_USE = {"web_search_requests": 0, "web_fetch_requests": 0}
_CACHE = {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}
_COUNTS = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
_ZERO_MESSAGE_USAGE = {
    **_COUNTS,
    "server_tool_use": _TOOL_USE,
    "service_tier": None,
    "cache_creation": _CACHE,
    "inference_geo": None,
    "iterations": None,
    "speed": None,
}
_ZERO_RESULT_USAGE = {
    "input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 0,
    "server_tool_use": _TOOL_USE,
    "service_tier": "standard",
    "cache_creation": _CACHE,
    "inference_geo": "",
    "iterations": [],
    "speed": "standard",
}


# -- the rule ------------------------------------------------------------------------------


@register
@attrs.define
class LocalSlashCommands(Stage):
    """A slash command written as a user line (``/cost``, ``/context``, ``/help``, an unknown
    ``/nosuch``) answered as Claude answers it, without cbc: a synthetic assistant and a
    result of ``num_turns`` 0, in the line's turn (compat/stages/slash.py)."""

    rule: ClassVar[str] = "local-slash-commands"
    direction: ClassVar[Direction] = "up"
    #: every client frame: one behind a held command waits with it
    kinds: ClassVar[frozenset[str] | None] = None
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.client_turns",
            "control.default_model",
            "control.last_init",
            "control.last_result",
            "control.line_waker",
            "control.pending_user",
            "control.queued_lines",
            "control.set_model",
            "control.turn_active",
            "model",
            "session_id",
        }
    )
    writes: ClassVar[frozenset[str]] = frozenset({"control.pending_user"})

    #: seconds between two looks at whether a held command's turn has come
    poll: float = 0.01
    #: user lines seen (a line's number: the lines before it)
    _seen: int = attrs.field(default=0, init=False)
    #: commands answered
    _answered: int = attrs.field(default=0, init=False)
    #: when the client's first frame came: the session's start, for ``/cost``'s wall time
    _born: float | None = attrs.field(default=None, init=False)
    #: a held command and the frames behind it: (frame, its line number or None, its
    #: command name or None)
    _held: list[tuple[Frame, int | None, str | None]] = attrs.field(factory=list, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if self._born is None:
            self._born = ctx.now  # (the engine's clock has no zero of its own)
        entry = self._entry(frame, ctx)
        if self._held:
            self._held.append(entry)
            ctx.hold()
            return ()
        if entry[2] is None:
            return None
        if self._ready(entry, ctx):
            self._answer(entry, ctx)
            return ()
        self._held.append(entry)
        ctx.set_timer(self, "turn", self.poll)
        ctx.count(self.rule, "held-for-turn")
        ctx.hold()
        return ()

    def _entry(self, frame: Frame, ctx: Context) -> tuple[Frame, int | None, str | None]:
        """(the frame, its line number, the command it is to answer): a user line is
        numbered; a command no session can answer yet, or that goes to cbc, has no name."""
        if frame.kind() != ("user", None):
            return frame, None, None
        n = self._seen
        self._seen += 1
        text = line_text(frame.view(wire.User))
        name = command_name(text, ctx.env.path_exists) if text is not None else None
        if name is None or ctx.state.session_id is None or self._output(name, ctx) is None:
            return frame, n, None
        return frame, n, name

    def _ready(self, entry: tuple[Frame, int | None, str | None], ctx: Context) -> bool:
        """Every line before the command has had its turn and none runs."""
        control = ctx.state.control
        if control.turn_active:
            return False
        n = entry[1] or 0
        uuid = _uuid(entry[0])
        head = control.pending_user[0] if control.pending_user else None
        done = control.client_turns + self._answered >= n
        return done or not control.pending_user or (uuid is not None and head == uuid)

    def on_timer(self, key: str, ctx: Context) -> Output:
        out: list[Frame] = []
        while self._held:
            entry = self._held[0]
            if entry[2] is not None:
                if not self._ready(entry, ctx):
                    ctx.set_timer(self, "turn", self.poll)
                    break
                self._answer(entry, ctx)
                ctx.drop_held(self.rule)
            else:
                out.append(entry[0])
            self._held.pop(0)
        return out

    # -- the answer ---------------------------------------------------------------------
    def _output(self, name: str, ctx: Context) -> str | None:
        """The command's output as Claude writes it; None: the line goes to cbc."""
        if name in USAGE:
            wall = ctx.now - (self._born if self._born is not None else ctx.now)
            return usage_output(ctx.state.control.last_result or {}, wall)
        if name == "context":
            return context_output(self._context(ctx))
        if name in LISTED or ":" in name or name.startswith("mcp__"):
            return None
        if name in UNAVAILABLE:
            return f"/{name} isn't available in this environment."
        if name in _session_commands(ctx):
            return None  # a custom command or skill of the session: cbc's
        return unknown_text(name)

    def _context(self, ctx: Context) -> dict[str, Any]:
        control = ctx.state.control
        model = control.set_model or ctx.state.model or control.default_model or ""
        return context_usage(control.last_result or {}, model)

    def _answer(self, entry: tuple[Frame, int | None, str | None], ctx: Context) -> None:
        """Claude's frames for the command, straight to the client; its line taken off
        ``pending_user``; a line queued behind it goes now."""
        frame, _, name = entry
        assert name is not None
        output = self._output(name, ctx) or ""
        control = ctx.state.control
        uuid = _uuid(frame)
        if control.pending_user:
            control.pending_user.popleft()
        self._answered += 1
        for f in self._frames(uuid, output, ctx):
            ctx.emit("down", Frame.synth(f, self.rule), self.rule)
        ctx.count(self.rule, f"answered:{name if name in LISTED else 'other'}")
        if control.queued_lines and isinstance(control.line_waker, Stage):
            ctx.set_timer(control.line_waker, "turn-end", 0.0)

    def _frames(self, uuid: str | None, output: str, ctx: Context) -> Iterable[dict[str, Any]]:
        sid = ctx.state.session_id or ""
        if uuid is not None:
            yield lifecycle(uuid, "started", ctx, sid)
        init = ctx.state.control.last_init
        if isinstance(init, dict):
            yield {**init, "uuid": ctx.env.new_uuid()}
        yield self._assistant(output.rstrip("\n"), sid, ctx)
        yield self._result(output, sid, ctx)
        if uuid is not None:
            yield lifecycle(uuid, "completed", ctx, sid)

    def _assistant(self, text: str, sid: str, ctx: Context) -> dict[str, Any]:
        message = {
            "id": ctx.env.new_uuid(),
            "container": None,
            "model": "<synthetic>",
            "role": "assistant",
            "stop_details": None,
            "stop_reason": "stop_sequence",
            "stop_sequence": "",
            "type": "message",
            "usage": _ZERO_MESSAGE_USAGE,
            "content": [{"type": "text", "text": text}],
            "context_management": None,
        }
        return {
            "type": "assistant",
            "message": message,
            "parent_tool_use_id": None,
            "session_id": sid,
            "uuid": ctx.env.new_uuid(),
            "timestamp": iso_ms(ctx.wall_ms()),
        }

    def _result(self, text: str, sid: str, ctx: Context) -> dict[str, Any]:
        control = ctx.state.control
        last = control.last_result or {}
        init = control.last_init or {}
        out: dict[str, Any] = {
            "is_error": False,
            "duration_api_ms": 0,
            "num_turns": 0,
            "stop_reason": None,
            "session_id": sid,
            "total_cost_usd": number(last, "total_cost_usd"),
            "usage": _ZERO_RESULT_USAGE,
            "modelUsage": last.get("modelUsage") or {},
            "permission_denials": [],
        }
        for key in ("fast_mode_state", "fast_mode_disabled_reason"):
            if key in init:
                out[key] = init[key]
        out.update(subtype="success", result=text, type="result", duration_ms=0)
        out["uuid"] = ctx.env.new_uuid()
        return out


def _uuid(frame: Frame) -> str | None:
    uuid = frame.view(wire.User).get("uuid")
    return uuid if isinstance(uuid, str) and uuid else None


def _session_commands(ctx: Context) -> frozenset[str]:
    """The commands and skills of the session's last init (cbc's: custom ones among them)."""
    init = ctx.state.control.last_init or {}
    names: set[str] = set()
    for key in ("slash_commands", "skills"):
        listed = init.get(key)
        if isinstance(listed, list):
            names.update(n for n in listed if isinstance(n, str))
    return frozenset(names)


__all__ = ["LocalSlashCommands"]
