"""``permission-routing``, ``permission-reply``, ``permission-cancel``: tool permission
prompts the Claude way (PROTOCOL.md §2 "Control protocol", §3 ``permission-routing``).

Strategy: cbc 2.163.0 asks the client about every tool its policy does not allow, Claude
Code 2.1.220 only a client that asked for stdio prompts; the rules route each prompt, translate
the answer between the two shapes, and record every denied or withdrawn call
(``ControlState.permission_denials``, ``denied_uses``) so the result and the tool_result
read as Claude's.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple, cast

import attrs

from compat import controlkit as ck
from compat import wire
from compat.flags import PERMISSION_MODES
from compat.frames import Frame
from compat.session import MAX_OWN, ControlState, PermissionRequest, PermissionRule
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.permissions_prompt import (
    WRITE_TOOLS,
    bash_rule_suggestion,
    claude_denial,
    claude_prompt_fields,
    command_prefix,
    inside,
    with_claude_fields,
)
from compat.stages.permissions_rules import (
    BEHAVIORS,
    glob_matches,
    matchable,
    rule_denial,
    rule_matches,
    rule_text,
    rule_verdict,
)
from compat.stages.plan import EXIT_PLAN, PLAN_KEYS
from compat.taskkit import remember

__all__ = [
    "BEHAVIORS",
    "CBC_MODES",
    "MAX_RULES",
    "RULE_UPDATES",
    "WRITE_TOOLS",
    "PermissionCancel",
    "PermissionReply",
    "PermissionRouting",
    "bash_rule_suggestion",
    "claude_denial",
    "claude_prompt_fields",
    "command_prefix",
    "glob_matches",
    "matchable",
    "rule_denial",
    "rule_matches",
    "rule_text",
    "rule_verdict",
    "with_claude_fields",
]

#: the modes cbc's ``set_permission_mode`` takes (its handler, 2.163.0 binary); Claude's
#: others are mapped first (``compat.flags.PERMISSION_MODES``)
CBC_MODES = frozenset({"default", "acceptEdits", "bypassPermissions", "plan", "dontAsk", "auto"})
#: the updatedPermissions types that change rules
RULE_UPDATES = ("addRules", "replaceRules", "removeRules")
#: the most rules kept (a client adding rules forever does not grow the state forever)
MAX_RULES = 256
#: how ``permission-reply`` applies an update of one type (False: it cannot)
_Update = Callable[["PermissionReply", dict[str, Any], Context], bool]
#: the most denied calls remembered for their tool_result (``ControlState.denied_uses``)
_MAX_DENIED = 256


def record_denial(control: ControlState, prompt: PermissionRequest) -> None:
    """A call the session denied, listed for the turn's ``result.permission_denials``."""
    control.permission_denials.append(
        {
            "tool_name": prompt.tool_name,
            "tool_use_id": prompt.tool_use_id,
            "tool_input": prompt.input,
            "turn": control.client_turns,
        }
    )


def _denial(reason: str, interrupt: bool) -> dict[str, Any]:
    """cbc's deny answer."""
    return {"allowed": False, "reason": reason, "interrupt": interrupt}


@register
@attrs.define
class PermissionRouting(Stage):
    """Forward `can_use_tool` only to a client that asked for stdio prompts; else deny.

    cbc 2.163.0 asks the client about every tool its policy does not allow
    (``control_request{subtype:"can_use_tool", tool_name, input, tool_use_id}``, no
    ``--permission-prompt-tool`` needed). Claude Code 2.1.220 asks only when the client passed
    ``--permission-prompt-tool stdio``
    (``mockapi_permission-prompt-stdio_can-use-tool_{allow,deny}``); otherwise it denies by
    itself with "Claude requested permissions to use X, but you haven't granted it yet." (to
    *write to <path>* for file edits) and lists the call in ``result.permission_denials``.

    Mode ``auto`` forwards ``can_use_tool`` when the client asked for stdio prompts
    (``SessionState.stdio_permissions``, from the launch line) and denies it itself,
    Claude-worded, otherwise; ``forward`` / ``deny`` force one way. A forwarded request is
    remembered by ``request_id``; a local denial is recorded in
    ``ControlState.permission_denials`` (cbc also lists it in its own result, since to cbc it
    is an SDK deny: ``mockoai_can-use-tool-deny``). The tool_result of a call the client's
    answer denied gets Claude's ``tool_result_meta: [{id, non_execution_kind:
    "permission-rule"}]`` (twins permission-deny.claude.jsonl); other user frames pass.

    A prompt that would be forwarded is first checked against the rules the client's
    answers added (``updatedPermissions``: ``ControlState.permission_rules``, kept by
    ``permission-reply``), as Claude checks its session rules before it asks: deny, then
    ask, then allow; a matching deny or allow is answered to cbc by the bridge (counted
    ``denied-by-rule`` / ``allowed-by-rule``) and the client is not asked again. A rule
    is about a tool (``Bash``; ``mcp__server`` for all of a server's tools) or, for Bash,
    a command: exact, legacy prefix (``npm test:*``), ``*`` wildcards. A rule the bridge
    cannot match the way Claude would (file path patterns, WebFetch domains, a compound
    Bash command) never answers: the client is asked (said at debug).

    A forwarded prompt gets the fields of Claude's that cbc's lacks (Claude's
    ``createCanUseTool``, 2.1.220 binary; twins permission-allow.claude.jsonl), a field cbc
    sent kept as sent (counted ``claude-fields``): ``display_name`` (the name's last ``__``
    part, words capitalized), ``description`` (Bash: the call's description, else the
    command cut to 50; Write/Edit/Read: the path, relative inside the working directory;
    Glob/Grep: the pattern), and the default mode's ``permission_suggestions`` that an SDK
    app offers as "always allow" (and answers as ``updatedPermissions``, which
    ``permission-reply`` applies): for a simple Bash command Claude's ``Bash(prefix *)``
    rule when its first two words make one (``git push *``; Claude has a model-made
    prefix too, but its default check does not ask the model), else the exact command,
    followed for a path command that writes (``touch``, ``mkdir``, ``rm``, ``rmdir``,
    ``mv``, ``cp``) by the path's directory (``rmdir``'s path) and ``acceptEdits``,
    with ``blocked_path`` the path, and otherwise with Claude's ``decision_reason`` "This
    command requires approval" (``decision_reason_type`` ``other``; a probe run of
    Claude, ``git init``);
    for Write/Edit/MultiEdit/NotebookEdit ``acceptEdits``, and for a path outside the
    working directory its directory, with ``decision_reason`` "Path is outside allowed
    working directories" (``workingDir``; a probe run of Claude's Write); for MCP tools
    and WebSearch a rule for the tool. None where the bridge cannot tell what Claude
    would suggest: compound Bash commands, quotes, expansions and globs, ``sed``,
    ``rm -r``, flagged ``mv``/``cp``, reads outside the working directory (Claude: a Read
    rule), an unknown working directory for a path, other tools. In plan mode (the
    session's mode as its last ``system/init`` or ``system/status`` said it) a file edit
    is asked about because of the mode, as Claude says: ``decision_reason_type`` ``mode``
    and no suggestions (twins plan-mode-denied).
    """

    rule: ClassVar[str] = "permission-routing"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.client_turns",
            "control.denied_uses",
            "control.permission_rules",
            "control.permissions",
            "cwd",
            "stdio_permissions",
        }
    )
    writes: ClassVar[frozenset[str]] = frozenset(
        {"control.denied_uses", "control.permission_denials"}
    )
    modes: ClassVar[tuple[str, ...]] = ("auto", "forward", "deny")
    #: can_use_tool requests, and tool results (``user``) of calls the client denied; a
    #: turn's result forgets the calls an interrupt withdrew; the session's permission
    #: mode from each ``system/init`` and ``system/status`` that says it
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"control_request", "user", "result", "system/init", "system/status"}
    )

    #: the session's permission mode, as its last init or status frame said it
    _mode: str = attrs.field(default="default", init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        kind = frame.kind()
        if kind == ("user", None):
            return self._tool_result(frame, ctx)
        if kind is not None and kind[0] == "result":
            _forget_withdrawn(ctx.state.control.denied_uses)
            return None
        if kind is not None and kind[0] == "system":
            self._mode = _mode_of(frame, self._mode)
            return None
        return self._prompt(frame, ctx)

    def _prompt(self, frame: Frame, ctx: Context) -> Output:
        """A ``can_use_tool``: denied Claude-worded, or answered by a rule of the client's,
        or forwarded with Claude's fields."""
        rid, request = ck.request_of(frame.obj)
        body = cast("wire.CanUseTool", request)
        if rid is None or body.get("subtype") != "can_use_tool":
            return None
        prompt = _prompt_of(rid, body)
        if not self._forwards(ctx):
            return self._deny(prompt, ctx)
        if self._by_rule(prompt, ctx):
            return ()
        return self._forward(frame, body, prompt, ctx)

    def _forwards(self, ctx: Context) -> bool:
        """Whether prompts go to the client (mode ``auto``: when it asked for stdio
        prompts)."""
        return ctx.state.stdio_permissions if self.mode == "auto" else self.mode == "forward"

    def _forward(
        self, frame: Frame, body: wire.CanUseTool, prompt: PermissionRequest, ctx: Context
    ) -> Output:
        """The prompt to the client, remembered by its request id, with Claude's fields."""
        remember(ctx.state.control.permissions, prompt.request_id, prompt, cap=256)
        fuller = with_claude_fields(cast("dict[str, Any]", body), ctx.state.cwd, self._mode)
        if fuller is None:
            return None
        ctx.count(self.rule, "claude-fields")
        return (frame.replace({**frame.obj, "request": fuller}),)

    def _deny(self, prompt: PermissionRequest, ctx: Context) -> Output:
        """Claude's own denial of a tool it was not allowed to ask the client about."""
        reason = claude_denial(prompt.tool_name, prompt.input)
        record_denial(ctx.state.control, prompt)
        self._answer(prompt, _denial(reason, False), ctx)
        ctx.log(
            self.rule,
            f"denied {prompt.tool_name} (the client did not ask for permission prompts: "
            "no --permission-prompt-tool stdio)",
            "debug",
        )
        ctx.count(self.rule, "denied")
        return ()

    def _answer(self, prompt: PermissionRequest, reply: dict[str, Any], ctx: Context) -> None:
        """The bridge's answer to cbc's prompt."""
        if prompt.tool_use_id:
            reply["tool_use_id"] = prompt.tool_use_id
        ctx.emit("up", Frame.from_obj(ck.success(prompt.request_id, reply)), self.rule)

    def _by_rule(self, prompt: PermissionRequest, ctx: Context) -> bool:
        """Answer cbc itself when a rule the client added (``updatedPermissions``,
        ``ControlState.permission_rules``) decides the call, as Claude does without asking
        the client again: an allow with the input as asked, or a deny Claude-worded
        (listed in ``permission_denials``, its tool_result marked ``permission-rule``).
        False when the client is to be asked."""
        tool, inp = prompt.tool_name, prompt.input
        verdict, rule = rule_verdict(ctx.state.control.permission_rules, tool, inp)
        if verdict is None:
            self._say_asked(prompt, rule, ctx)
            return False
        assert rule is not None
        allowed = verdict == "allow"
        reply = (
            {"allowed": True, "updatedInput": inp} if allowed else self._denied(prompt, rule, ctx)
        )
        self._answer(prompt, reply, ctx)
        done = "allowed" if allowed else "denied"
        ctx.log(self.rule, f"{done} {tool} by the client's rule {rule_text(rule)}", "debug")
        ctx.count(self.rule, f"{done}-by-rule")
        return True

    @staticmethod
    def _denied(prompt: PermissionRequest, rule: PermissionRule, ctx: Context) -> dict[str, Any]:
        """A deny rule's answer, Claude-worded; the call listed in ``permission_denials``
        and its tool_result to be marked ``permission-rule``."""
        reply = _denial(rule_denial(rule, prompt.tool_name, prompt.input), False)
        control = ctx.state.control
        record_denial(control, prompt)
        if prompt.tool_use_id:
            remember(control.denied_uses, prompt.tool_use_id, "permission-rule", cap=_MAX_DENIED)
        return reply

    def _say_asked(
        self, prompt: PermissionRequest, rule: PermissionRule | None, ctx: Context
    ) -> None:
        """Why a rule about the call did not answer it (at debug)."""
        if rule is None:
            return
        tool = prompt.tool_name
        why = (
            "the bridge cannot match this rule's content the way Claude does"
            if rule_matches(rule, tool, prompt.input) is None
            else "an ask rule"
        )
        ctx.log(
            self.rule,
            f"{tool} asked about despite the {rule.behavior} rule {rule_text(rule)}: {why}",
            "debug",
        )

    def _tool_result(self, frame: Frame, ctx: Context) -> Output:
        """The tool_results of denied calls marked with Claude's ``tool_result_meta``."""
        denied = ctx.state.control.denied_uses
        if not denied:
            return None
        obj = frame.view(wire.User)
        meta = _rejections(_main_thread_content(obj), denied)
        if not meta:
            return None
        for m in meta:
            denied.pop(m["id"], None)
        return (frame.replace(_with_meta(obj, meta)),)


def _mode_of(frame: Frame, mode: str) -> str:
    """The permission mode an init or status frame says (``mode`` when it says none)."""
    family = wire.SystemInit if frame.key() == "system/init" else wire.SystemStatus
    said = frame.view(family).get("permissionMode")
    return said if isinstance(said, str) and said else mode


def _prompt_of(rid: str, body: wire.CanUseTool) -> PermissionRequest:
    """A prompt's request id, tool, call id and input (a value of another type: none)."""
    tool, use, inp = body.get("tool_name"), body.get("tool_use_id"), body.get("input")
    return PermissionRequest(
        rid,
        tool if isinstance(tool, str) else "",
        use if isinstance(use, str) else None,
        inp if isinstance(inp, dict) else {},
    )


def _forget_withdrawn(denied: dict[str, str]) -> None:
    """The calls an interrupt withdrew, forgotten: the interrupted turn is over (cbc wrote
    no result)."""
    for withdrawn in [u for u, k in denied.items() if k == "user-rejected"]:
        del denied[withdrawn]


def _main_thread_content(obj: wire.User) -> list[Any]:
    """The content of a user message of the main thread (``[]``: none, or a sub-agent's)."""
    if obj.get("parent_tool_use_id") is not None:
        return []
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _rejections(content: list[Any], denied: dict[str, str]) -> list[dict[str, Any]]:
    """Claude's ``tool_result_meta`` of the tool_results of denied calls."""
    return [
        {"id": b["tool_use_id"], "non_execution_kind": denied[b["tool_use_id"]]}
        for b in content
        if _result_of(b, denied)
    ]


def _result_of(block: Any, calls: dict[str, str]) -> bool:
    """A tool_result block of one of the ``calls``."""
    return (
        isinstance(block, dict)
        and block.get("type") == "tool_result"
        and block.get("tool_use_id") in calls
    )


def _with_meta(obj: wire.User, meta: list[dict[str, Any]]) -> dict[str, Any]:
    new: dict[str, Any] = {k: v for k, v in obj.items() if k != "tool_result_meta"}
    new["tool_result_meta"] = meta
    return new


@register
@attrs.define
class PermissionReply(Stage):
    """Claude's `{behavior, updatedInput | message}` answer -> cbc's `{allowed, ...}`.

    cbc reads ``{allowed, reason, interrupt, updatedInput}`` back; a reply without ``allowed``
    is a deny (``mockoai_can-use-tool-claude-shaped-allow`` denies a Claude-shaped allow).
    Claude reads ``{behavior:"allow", updatedInput}`` / ``{behavior:"deny", message,
    interrupt?}`` (``mockapi_permission-prompt-stdio_can-use-tool_{allow,deny}``).

    The client's answer to a forwarded request (or any answer of Claude's shape) is translated
    to cbc's, the legacy ``claude-code-sdk`` 0.0.x answer (``{allow, reason | input}``) too,
    its reason kept; a client error reply becomes a deny, and the denied call's id is noted
    (``ControlState.denied_uses``; with ``interrupt: true`` also ``denying_interrupts``:
    ``interrupted-turn`` ends the turn as Claude does). An allow's ``updatedPermissions``
    are applied (``_apply``): rules kept for ``permission-routing``, a mode sent to cbc. A
    plain denial of ``ExitPlanMode``, after which cbc stalls, is sent with ``interrupt: true``
    (option ``plan_deny_interrupts``): the turn ends instead of hanging.
    """

    rule: ClassVar[str] = "permission-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.permissions", "cwd"})
    writes: ClassVar[frozenset[str]] = frozenset(
        {
            "control.denied_uses",
            "control.denying_interrupts",
            "control.own",
            "control.permission_rules",
        }
    )
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    #: a plain denial of ``ExitPlanMode`` is sent to cbc with ``interrupt: true``
    #: (``_plan_denial``)
    plan_deny_interrupts: bool = True
    _own: int = attrs.field(default=0, init=False)  # set_permission_mode requests sent

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, sub, response = ck.response_of(frame.obj)
        if rid is None:
            return None
        pending = ctx.state.control.permissions.pop(rid, None)
        body = cast("wire.PermissionAnswer", ck.body_of(response))
        if pending is None and not _claude_shaped(body):
            return None  # not an answer to a permission prompt (hooks, MCP messages...)
        shape = _answer_shape(sub, body)
        if shape is None:
            return None  # already cbc's shape
        resp = cast("wire.ControlResponseBody", response)
        reply = _TRANSLATIONS[shape](self, _Answer(resp, body, pending, ctx))
        self._plan_denial(reply, pending, ctx)
        _note_call(reply, pending, ctx)
        return (frame.replace(ck.success(rid, reply)),)

    def _plan_denial(
        self, reply: dict[str, Any], pending: PermissionRequest | None, ctx: Context
    ) -> None:
        """cbc 2.163.0 stalls after a plain denial of ``ExitPlanMode``: no model request, no
        result, the next line never answered (twins plan-mode-denied); denied with
        ``interrupt: true`` it ends the turn and answers the next line. So such a denial is
        sent with it, and the turn ends as Claude ends a denial that interrupts."""
        if not self.plan_deny_interrupts or pending is None or pending.tool_name != EXIT_PLAN:
            return
        if reply.get("allowed") is False and reply.get("interrupt") is not True:
            reply["interrupt"] = True
            ctx.count(self.rule, "plan-denial-interrupts")
            ctx.log(
                self.rule,
                "ExitPlanMode denied: cbc stalls after a plain denial, so it was told to "
                "interrupt; the turn ends and the model does not read the denial's message",
                "warning",
            )

    def _from_error(self, a: _Answer) -> dict[str, Any]:
        """A client's error reply: a deny, the error its reason."""
        return _denial(_reason(a.resp.get("error")), False)

    def _from_legacy(self, a: _Answer) -> dict[str, Any]:
        """The legacy claude-code-sdk (0.0.x): ``{allow: true, input?}`` / ``{allow: false,
        reason}``; its deny reason reaches cbc as given."""
        if a.body["allow"]:
            return _allowed(a.body.get("input"), a.pending)
        return _denial(_reason(a.body.get("reason")), a.body.get("interrupt") is True)

    def _from_allow(self, a: _Answer) -> dict[str, Any]:
        """Claude's allow; its ``updatedPermissions`` applied."""
        reply = _allowed(a.body.get("updatedInput"), a.pending)
        self._apply(a.body.get("updatedPermissions"), a.ctx)
        return reply

    def _from_deny(self, a: _Answer) -> dict[str, Any]:
        """Claude's deny (any other behavior is taken as one, said in a warning)."""
        behavior = a.body.get("behavior")
        if behavior != "deny":
            said = f"permission answer with behavior {behavior!r} taken as a deny"
            a.ctx.log(self.rule, said, "warning")
        return _denial(_reason(a.body.get("message")), a.body.get("interrupt") is True)

    def _apply(self, updates: Any, ctx: Context) -> None:
        """An allow's ``updatedPermissions`` (the SDKs' "always allow"), applied the way
        Claude Code 2.1.220 applies them, though cbc's answer has no field for them (it
        reads only ``{allowed, reason, interrupt, updatedInput}``: its binary):

        - ``addRules`` / ``replaceRules`` / ``removeRules`` (``behavior`` allow, deny or
          ask) change ``ControlState.permission_rules``, which ``permission-routing``
          answers cbc's later prompts from; a destination other than ``session`` is kept
          for the session only (the bridge writes no settings file: said at info);
        - ``setMode`` is sent to cbc as the bridge's own ``set_permission_mode``
          (``ControlState.own``: ``control-reply`` swallows cbc's reply), Claude's mode
          mapped to cbc's (``compat.flags.PERMISSION_MODES``);
        - ``addDirectories`` of directories inside cbc's working directory needs nothing;
        - what cbc has no way to take (other ``addDirectories``, ``removeDirectories``: no
          control request of cbc's changes its directories; a malformed update, an
          unknown type or mode) is named in one warning per answer and counted
          (``permission-updates-unapplied``): the tool may be asked about again.
        """
        if not isinstance(updates, list) or not updates:
            return
        unapplied: list[str] = []
        for u in updates:
            if self._applied(u, ctx):
                ctx.count(self.rule, "permission-updates-applied")
            else:
                unapplied.append(_update_kind(u))
        self._say_unapplied(unapplied, ctx)

    def _applied(self, update: Any, ctx: Context) -> bool:
        """Whether the update was applied (one of a type the bridge takes, well formed)."""
        apply = _update_handler(update)
        return apply is not None and apply(self, update, ctx)

    def _say_unapplied(self, unapplied: list[str], ctx: Context) -> None:
        if not unapplied:
            return
        ctx.count(self.rule, "permission-updates-unapplied", len(unapplied))
        ctx.log(
            self.rule,
            f"updatedPermissions not applied ({', '.join(sorted(set(unapplied)))}): cbc has "
            "no way to take them, so the tool may be asked about again",
            "warning",
        )

    def _known_directories(self, update: dict[str, Any], ctx: Context) -> bool:
        """An ``addDirectories`` of directories inside cbc's working directory (what
        ``permission-routing`` suggests for a write there, as Claude does) changes nothing:
        cbc may already work in them."""
        dirs, cwd = update.get("directories"), ctx.state.cwd
        if not cwd or not isinstance(dirs, list) or not dirs:
            return False
        return _all_inside(dirs, cwd)

    def _rules(self, update: dict[str, Any], ctx: Context) -> bool:
        """``addRules`` / ``replaceRules`` / ``removeRules``: the client's rules changed."""
        behavior = update.get("behavior")
        destination = update.get("destination") or "session"
        new = _given_rules(update.get("rules"), behavior, destination)
        if new is None:
            return False
        kind = update["type"]
        _RULE_CHANGES[kind](ctx.state.control.permission_rules, new, behavior, destination)
        if kind != "removeRules":
            self._say_unmatchable(new, ctx)
        if destination != "session":
            ctx.log(
                self.rule,
                f"{kind} for {destination} applied to this session only: the bridge "
                "writes no settings file",
                "info",
            )
        ctx.log(
            self.rule,
            f"{kind} {behavior} {', '.join(rule_text(r) for r in new)} ({destination})",
            "debug",
        )
        return True

    def _say_unmatchable(self, rules: list[PermissionRule], ctx: Context) -> None:
        """The rules kept that never answer (the bridge cannot match their content)."""
        for r in rules:
            if not matchable(r):
                ctx.log(
                    self.rule,
                    f"{r.behavior} rule {rule_text(r)} kept, but cbc's prompts for "
                    f"{r.tool_name} are still asked: the bridge cannot match its content "
                    "the way Claude does",
                    "info",
                )

    def _set_mode(self, update: dict[str, Any], ctx: Context) -> bool:
        mode = update.get("mode")
        if not isinstance(mode, str):
            return False
        mode = PERMISSION_MODES.get(mode, mode)
        if mode not in CBC_MODES:
            return False
        self._own += 1
        rid = f"ccbridge-mode-{self._own}"
        remember(ctx.state.control.own, rid, "set_permission_mode", cap=MAX_OWN)
        body = {"subtype": "set_permission_mode", "mode": mode}
        ctx.emit("up", Frame.from_obj(ck.request(rid, body)), self.rule)
        ctx.log(self.rule, f"setMode sent to cbc as set_permission_mode {mode!r}", "info")
        return True


#: the client's answer to cbc's prompt in each shape (``_answer_shape``)
class _Answer(NamedTuple):
    """A client's answer to a permission prompt, as each translation reads it."""

    resp: wire.ControlResponseBody
    body: wire.PermissionAnswer
    pending: PermissionRequest | None
    ctx: Context


_TRANSLATIONS = {
    "error": PermissionReply._from_error,
    "legacy": PermissionReply._from_legacy,
    "allow": PermissionReply._from_allow,
    "deny": PermissionReply._from_deny,
}


def _claude_shaped(body: wire.PermissionAnswer) -> bool:
    """An answer in Claude's shape (``behavior``), not cbc's (``allowed``)."""
    return "behavior" in body and "allowed" not in body


def _answer_shape(sub: str | None, body: wire.PermissionAnswer) -> str | None:
    """What the client answered: an ``error`` reply, the ``legacy`` claude-code-sdk's
    ``{allow}``, Claude's ``allow`` or ``deny`` (any other behavior); None for an answer
    in cbc's shape already."""
    if sub == "error":
        return "error"
    if "allowed" in body:
        return None
    if "behavior" not in body and isinstance(body.get("allow"), bool):
        return "legacy"
    return "allow" if body.get("behavior") == "allow" else "deny"


def _reason(value: Any) -> str:
    """A deny's reason: the client's words, else cbc's default."""
    return value if isinstance(value, str) and value else "Permission denied"


def _allowed(given: Any, pending: PermissionRequest | None) -> dict[str, Any]:
    """cbc's allow, with the input the client gave, else the prompt's as asked;
    ``ExitPlanMode``'s without the plan ``exit-plan-mode`` showed the client (cbc's schema
    takes no key)."""
    if not isinstance(given, dict):
        given = pending.input if pending is not None else {}
    if pending is not None and pending.tool_name == EXIT_PLAN:
        given = {k: v for k, v in given.items() if k not in PLAN_KEYS}
    return {"allowed": True, "updatedInput": given}


def _note_call(reply: dict[str, Any], pending: PermissionRequest | None, ctx: Context) -> None:
    """The prompt's call id on cbc's answer; a denied call noted for its tool_result."""
    if pending is None or not pending.tool_use_id:
        return
    reply["tool_use_id"] = pending.tool_use_id
    if reply["allowed"]:
        return
    control = ctx.state.control
    remember(control.denied_uses, pending.tool_use_id, "permission-rule", cap=_MAX_DENIED)
    if reply.get("interrupt") is True:
        remember(control.denying_interrupts, pending.tool_use_id, None, cap=_MAX_DENIED)


def _update_kind(update: Any) -> str:
    """An update's ``type`` as a warning names it (its JSON type when it is no object)."""
    return str(update.get("type") if isinstance(update, dict) else type(update).__name__)


def _update_handler(update: Any) -> _Update | None:
    """How ``permission-reply`` applies an update of its type (None: it cannot)."""
    kind = update.get("type") if isinstance(update, dict) else None
    return _UPDATES.get(kind) if isinstance(kind, str) else None


#: the updatedPermissions types the bridge takes
_UPDATES: dict[str, _Update] = {
    **dict.fromkeys(RULE_UPDATES, PermissionReply._rules),
    "setMode": PermissionReply._set_mode,
    "addDirectories": PermissionReply._known_directories,
}


def _all_inside(dirs: list[Any], cwd: str) -> bool:
    return all(isinstance(d, str) and inside(posixpath.normpath(d), cwd) for d in dirs)


def _given_rules(given: Any, behavior: Any, destination: Any) -> list[PermissionRule] | None:
    """The rules of an update (None: a behavior or rule the bridge does not take)."""
    if behavior not in BEHAVIORS or not isinstance(given, list):
        return None
    new: list[PermissionRule] = []
    for r in given:
        rule = _given_rule(r, behavior, destination)
        if rule is None:
            return None
        new.append(rule)
    return new


def _given_rule(r: Any, behavior: Any, destination: Any) -> PermissionRule | None:
    """``{toolName, ruleContent?}`` as a rule (None: no tool name, or content of another
    type than a string)."""
    if not isinstance(r, dict):
        return None
    tool, content = r.get("toolName"), r.get("ruleContent")
    if not isinstance(tool, str) or not tool or not isinstance(content, (str, type(None))):
        return None
    return PermissionRule(str(behavior), str(destination), tool, content or None)


def _add_rules(rules: list[PermissionRule], new: list[PermissionRule], *_: Any) -> None:
    """The new rules after the others (each once); the oldest forgotten past MAX_RULES."""
    rules.extend(r for r in dict.fromkeys(new) if r not in rules)
    del rules[:-MAX_RULES]


def _replace_rules(
    rules: list[PermissionRule], new: list[PermissionRule], behavior: Any, destination: Any
) -> None:
    """The rules of that behavior and destination replaced by the new ones."""
    rules[:] = [r for r in rules if (r.behavior, r.destination) != (behavior, destination)]
    _add_rules(rules, new)


def _remove_rules(rules: list[PermissionRule], new: list[PermissionRule], *_: Any) -> None:
    gone = set(new)
    rules[:] = [r for r in rules if r not in gone]


#: how each rule update changes the client's rules
_RULE_CHANGES = {
    "addRules": _add_rules,
    "replaceRules": _replace_rules,
    "removeRules": _remove_rules,
}


@register
@attrs.define
class PermissionCancel(Stage):
    """Withdraw open permission prompts before an interrupt's receipt.

    At the receipt of an interrupt, Claude withdraws every open prompt with
    ``control_cancel_request{request_id}`` before the receipt
    (``mockapi_permission-prompt-stdio_interrupt_cli-sends-control-cancel-request``); cbc
    cancels them internally and says nothing (``mockoai_can-use-tool-then-interrupt``). Claude
    also lists each withdrawn call in the result's ``permission_denials`` and marks its
    rejected tool_result ``tool_result_meta: [{id, non_execution_kind: "user-rejected"}]``
    (raw run interrupt-permission-prompt): the call is recorded for ``result-shape`` and
    ``permission-routing``.
    """

    rule: ClassVar[str] = "permission-cancel"
    reads: ClassVar[frozenset[str]] = frozenset({"control.client_turns", "control.interrupts"})
    #: (changed in place: the withdrawn prompts forgotten, their calls recorded as denied)
    writes: ClassVar[frozenset[str]] = frozenset(
        {"control.denied_uses", "control.permission_denials", "control.permissions"}
    )
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, _, _ = ck.response_of(frame.obj)
        control = ctx.state.control
        if rid not in control.interrupts or not control.permissions:
            return None
        cancels = [
            Frame.synth({"type": "control_cancel_request", "request_id": pid}, self.rule)
            for pid in control.permissions
        ]
        for req in control.permissions.values():
            _withdraw(control, req)
        control.permissions.clear()
        return (*cancels, frame)


def _withdraw(control: ControlState, req: PermissionRequest) -> None:
    """A prompt an interrupt withdrew: its call recorded as denied, ``user-rejected``."""
    # Claude: the withdrawn call is a denial of the turn, its rejection "user-rejected"
    # (raw run interrupt-permission-prompt, 2026-12-01). (A prompt interrupt-request
    # ended with deny + interrupt gets no result from cbc: interrupted-turn writes
    # the marked rejection, and the mark is forgotten at the result.)
    if req.tool_use_id:
        remember(control.denied_uses, req.tool_use_id, "user-rejected", cap=_MAX_DENIED)
    record_denial(control, req)
