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
import re
from collections.abc import Sequence
from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
from compat import wire
from compat.flags import PERMISSION_MODES
from compat.frames import Frame
from compat.session import MAX_OWN, PermissionRequest, PermissionRule
from compat.stage import Context, Direction, Output, Stage, register
from compat.taskkit import remember

#: tools whose denial Claude words as a write to the file they name
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
#: the modes cbc's ``set_permission_mode`` takes (its handler, 2.163.0 binary); Claude's
#: others are mapped first (``compat.flags.PERMISSION_MODES``)
CBC_MODES = frozenset({"default", "acceptEdits", "bypassPermissions", "plan", "dontAsk", "auto"})
#: the updatedPermissions types that change rules, and what a rule may decide
RULE_UPDATES = ("addRules", "replaceRules", "removeRules")
BEHAVIORS = ("deny", "ask", "allow")  # Claude's order: the first that matches decides
#: the most rules kept (a client adding rules forever does not grow the state forever)
MAX_RULES = 256
#: what makes a Bash command more than one simple command to the bridge: Claude splits
#: compound commands and checks each part (a rule with content for one part does not cover
#: ``safe && other``); the bridge does not parse shell, so it cannot tell and keeps asking
_COMPOUND = re.compile(r"[;&|<>`\n\r]|\$\(")


#: Claude Code 2.1.220's Bash path commands and what they do to their paths (its ``eNt``
#: table): a write or create outside what the session may edit asks with the path
_PATH_OPS = {"mkdir": "create", "touch": "create", "rm": "write", "rmdir": "write"}
_PATH_OPS |= {"mv": "write", "cp": "write"}
#: commands Claude reads paths with; a path outside the working directory makes it ask
#: for a Read rule (``Read(//dir/**)``) the bridge does not synthesize
_READ_OPS = frozenset(
    "cd ls find cat head tail sort uniq wc cut paste column tr file stat diff awk strings"
    " hexdump od base64 nl grep rg git jq sha256sum sha1sum md5sum".split()
)
#: Claude's wrappers a command prefix is never taken from (its ``Eko``)
_WRAPPERS = frozenset(
    "sh bash zsh fish csh tcsh ksh dash cmd powershell pwsh env xargs command builtin noglob"
    " nice stdbuf nohup timeout time watch ionice chrt setsid taskset strace ltrace script"
    " flock unshare nsenter sudo doas pkexec su runuser".split()
)
#: the environment assignments Claude lets stand before a command prefix (its ``Gsn``)
_SAFE_ENV = frozenset(
    "GOEXPERIMENT GOOS GOARCH CGO_ENABLED GO111MODULE RUST_BACKTRACE RUST_LOG NODE_ENV"
    " PYTHONUNBUFFERED PYTHONDONTWRITEBYTECODE PYTEST_DISABLE_PLUGIN_AUTOLOAD PYTEST_DEBUG"
    " ANTHROPIC_API_KEY LANG LANGUAGE LC_ALL LC_CTYPE LC_TIME CHARSET TERM COLORTERM NO_COLOR"
    " FORCE_COLOR TZ LS_COLORS LSCOLORS GREP_COLOR GREP_COLORS GCC_COLORS TIME_STYLE"
    " BLOCK_SIZE BLOCKSIZE COLUMNS LINES CLICOLOR CLICOLOR_FORCE CI DEBIAN_FRONTEND"
    " GIT_TERMINAL_PROMPT".split()
)
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=", re.ASCII)
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
#: what the bridge does not resolve as Claude's path check would (expansions, globs,
#: braces, quotes, escapes): no path suggestions are made for such a command
_UNRESOLVED = re.compile(r"[$~*?\[\]{}'\"\\]")
#: Claude's width of a prompt's description made from a command (its ``n4``)
_DESCRIPTION_WIDTH = 50
_SESSION = "session"


def _allow_rule(
    tool: str, content: str | None, destination: str = "localSettings"
) -> dict[str, Any]:
    rule: dict[str, Any] = {"toolName": tool}
    if content is not None:
        rule["ruleContent"] = content
    return {"type": "addRules", "rules": [rule], "behavior": "allow", "destination": destination}


def command_prefix(command: str) -> str | None:
    """Claude's two-word prefix of a command for an "always allow" rule (its ``Sko``):
    ``git status`` of ``git status --short``; None for one word, a wrapper (``sudo``,
    ``env``), an environment assignment it does not trust, or a second word that is not a
    plain subcommand (``touch perm-probe.txt``)."""
    words = command.split()
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        if words[i].partition("=")[0] not in _SAFE_ENV:
            return None
        i += 1
    rest = words[i:]
    if len(rest) < 2 or rest[0].rsplit("/", 1)[-1] in _WRAPPERS:
        return None
    return f"{rest[0]} {rest[1]}" if _SUBCOMMAND.fullmatch(rest[1]) else None


def bash_rule_suggestion(command: str) -> dict[str, Any]:
    """Claude's "always allow" suggestion for one simple command (its ``omr`` without the
    heredoc and multi-line cases, compound commands the bridge does not synthesize for):
    ``Bash(prefix *)`` when the command has a two-word prefix, else the exact command."""
    prefix = command_prefix(command)
    return _allow_rule("Bash", f"{prefix} *" if prefix else command)


def _truncate(text: str, width: int = _DESCRIPTION_WIDTH) -> str:
    """Claude's ``truncate`` (to ``width`` columns with an ellipsis); the bridge counts
    characters, not display columns."""
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _shown_path(path: str, cwd: str | None) -> str:
    """Claude's file path as a prompt shows it (its ``Cd``): relative to the working
    directory when inside it, else as given (Claude would write ``~/...`` under HOME,
    which the bridge does not know)."""
    if cwd and posixpath.isabs(path):
        rel = posixpath.relpath(posixpath.normpath(path), cwd)
        if not rel.startswith(".."):
            return rel
    elif cwd and not path.startswith(".."):
        return posixpath.normpath(path)
    return path


def _description(tool: str, inp: dict[str, Any], cwd: str | None) -> str | None:
    """Claude's ``description`` of a prompt: for Bash the call's description, else its
    command cut to 50 columns; for file tools the path; for Glob and Grep the pattern cut
    to 50 (their ``getToolUseSummary``). None when Claude would send none or the bridge
    does not know the tool's summary (MCP and other tools)."""
    if tool in ("Bash", "PowerShell"):
        command, what = inp.get("command"), inp.get("description")
        if not isinstance(command, str) or not command:
            return None
        # Claude also redacts secrets in both (its mu()); the bridge passes them as written
        return what if isinstance(what, str) and what else _truncate(command)
    if tool in ("Write", "Edit", "MultiEdit", "Read"):
        path = inp.get("file_path")
        return _shown_path(path, cwd) if isinstance(path, str) and path else None
    if tool in ("Glob", "Grep"):
        pattern = inp.get("pattern")
        return _truncate(pattern) if isinstance(pattern, str) and pattern else None
    return None


def _inside(path: str, cwd: str) -> bool:
    return path == cwd or path.startswith(cwd.rstrip("/") + "/")


def _recursive(arg: str) -> bool:
    """``-r``, ``-R``, ``-rf``, ``--recursive``: an rm option that takes directories."""
    if arg.startswith("--"):
        return arg == "--recursive"
    return arg.startswith("-") and "r" in arg.lower()


def _bash_suggestions(command: str, cwd: str | None) -> tuple[list[Any], str | None] | None:
    """Claude's suggestions (and ``blocked_path``) for a Bash command cbc asks about, in
    the default permission mode; None when the bridge cannot tell what Claude would
    suggest (compound commands, expansions, quotes, a read outside the working directory,
    an unknown working directory for a path command, ``sed`` and flagged ``mv``/``cp``)."""
    trimmed = command.strip()
    if not trimmed or _COMPOUND.search(command):
        return None
    words = trimmed.split()
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    base = words[i].rsplit("/", 1)[-1] if i < len(words) else ""
    args = words[i + 1 :]
    if base in _PATH_OPS or base in _READ_OPS or base == "sed":
        if base == "sed" or _UNRESOLVED.search(" ".join(args)):
            return None
        if base in ("mv", "cp") and any(a.startswith("-") for a in args):
            return None
        named = [a for a in args if not a.startswith("-") or a == "-"]
        if base in _READ_OPS:
            here = cwd or "/\0cwd"  # a relative path stays inside an unknown directory
            if any(not _inside(posixpath.normpath(posixpath.join(here, a)), here) for a in named):
                return None  # Claude asks for a Read rule of the directory
        elif cwd is None:
            return None
        elif base == "rm" and any(_recursive(a) for a in args):
            return None  # Claude names the path itself if it is a directory (it stats it)
        elif named:
            paths = [posixpath.normpath(posixpath.join(cwd, a)) for a in named]
            # in the default mode Claude asks about every write (inside the working
            # directory too: acceptEdits would allow it), for the first path it checks
            blocked = paths[0]
            # Claude's directory of the path: the path itself when it is a directory
            # (``rmdir``'s; it stats it), else its parent
            found = [
                {
                    "type": "addDirectories",
                    "directories": [blocked if base == "rmdir" else posixpath.dirname(blocked)],
                    "destination": _SESSION,
                },
                {"type": "setMode", "mode": "acceptEdits", "destination": _SESSION},
            ]
            return [bash_rule_suggestion(command), *found], blocked
    return [bash_rule_suggestion(trimmed)], None


#: Claude's reason for asking about a Bash command no rule or path check decided (its
#: ``decision_reason``, ``decision_reason_type``)
_NO_RULE = {"decision_reason": "This command requires approval", "decision_reason_type": "other"}
#: and for a file tool's path outside the working directory
_OUTSIDE = {
    "decision_reason": "Path is outside allowed working directories",
    "decision_reason_type": "workingDir",
}


def claude_prompt_fields(tool: str, inp: Any, cwd: str | None) -> dict[str, Any]:
    """What Claude Code 2.1.220's ``can_use_tool`` carries besides the tool, input and
    tool_use_id (its ``createCanUseTool``): ``display_name``, ``description``,
    ``permission_suggestions`` and ``blocked_path`` (or, for a Bash command no path check
    asks about, ``decision_reason`` "This command requires approval", type ``other``), for
    a prompt in the default permission mode; only the fields the bridge can tell the way
    Claude would (see ``permission-routing``)."""
    out: dict[str, Any] = {}
    if not tool:
        return out
    out["display_name"] = ck.tool_display_name(tool)
    if not isinstance(inp, dict):
        return out
    description = _description(tool, inp, cwd)
    if description:
        out["description"] = description
    suggestions: list[Any] | None = None
    blocked: str | None = None
    command = inp.get("command")
    if tool == "Bash" and isinstance(command, str):
        found = _bash_suggestions(command, cwd)
        if found is not None:
            suggestions, blocked = found
    elif tool in WRITE_TOOLS:
        path = inp.get("notebook_path" if tool == "NotebookEdit" else "file_path")
        if isinstance(path, str) and path and cwd is not None:
            full = posixpath.normpath(posixpath.join(cwd, path))
            suggestions = [{"type": "setMode", "mode": "acceptEdits", "destination": _SESSION}]
            if not _inside(full, cwd):
                suggestions.append(
                    {
                        "type": "addDirectories",
                        "directories": [posixpath.dirname(full)],
                        "destination": _SESSION,
                    }
                )
                out |= _OUTSIDE
    elif tool.startswith("mcp__") or tool == "WebSearch":
        suggestions = [_allow_rule(tool, None)]
    if suggestions is not None:
        out["permission_suggestions"] = suggestions
    if blocked is not None:
        out["blocked_path"] = blocked
    elif tool == "Bash" and suggestions is not None:
        out |= _NO_RULE
    return out


#: Claude's order of a can_use_tool request's fields
_PROMPT_ORDER = (
    "subtype",
    "tool_name",
    "display_name",
    "input",
    "description",
    "permission_suggestions",
    "blocked_path",
    "decision_reason",
    "decision_reason_type",
    "tool_use_id",
)


def with_claude_fields(body: dict[str, Any], cwd: str | None) -> dict[str, Any] | None:
    """cbc's ``can_use_tool`` body with Claude's fields it lacks added in Claude's order
    (a field cbc sent is kept as sent); None when nothing is added."""
    tool = body.get("tool_name")
    if not isinstance(tool, str):
        return None
    add = {
        k: v for k, v in claude_prompt_fields(tool, body.get("input"), cwd).items() if k not in body
    }
    if not add:
        return None
    merged = {**body, **add}
    ordered = {k: merged[k] for k in _PROMPT_ORDER if k in merged}
    return ordered | {k: v for k, v in merged.items() if k not in ordered}


def claude_denial(tool_name: str, tool_input: dict[str, Any]) -> str:
    """Claude Code's message when it denies a tool it was not allowed to ask about."""
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if tool_name in WRITE_TOOLS and isinstance(path, str) and path:
        return f"Claude requested permissions to write to {path}, but you haven't granted it yet."
    if tool_name == "Read" and isinstance(path, str) and path:
        return f"Claude requested permissions to read from {path}, but you haven't granted it yet."
    return f"Claude requested permissions to use {tool_name}, but you haven't granted it yet."


def rule_text(rule: PermissionRule) -> str:
    """``Bash(npm test:*)``, or ``Bash`` for a rule about every use of the tool."""
    return f"{rule.tool_name}({rule.rule_content})" if rule.rule_content else rule.tool_name


def _tool_matches(rule_tool: str, tool: str, whole_tool: bool) -> bool:
    """Claude's tool part of a rule: the tool's name; for a rule about every use of a tool,
    ``mcp__server`` (or ``mcp__server__*``) also names every tool of that MCP server."""
    if rule_tool == tool:
        return True
    if not whole_tool or not rule_tool.startswith("mcp__"):
        return False
    server = rule_tool.removesuffix("__*")
    return server.count("__") == 1 and tool.startswith(server + "__")


def _bash_matches(content: str, command: str) -> bool | None:
    """Claude's ``Bash(content)`` against a command: exact (``npm run build``), legacy
    prefix (``npm test:*``: the prefix alone or followed by a space), wildcard (``*``
    matches any characters; a single trailing `` *`` also matches the bare command:
    ``git *`` covers ``git``). None when the bridge cannot tell the way Claude would: a
    compound command (``&&``, ``|``, ``;``, redirections, substitutions: Claude checks each
    part), or escapes in the rule."""
    if "\\" in content or _COMPOUND.search(command):
        return None
    command = command.strip()
    if content.endswith(":*") and "*" not in content[:-2]:
        prefix = content[:-2]
        return command == prefix or command.startswith(prefix + " ")
    if "*" in content:
        if content.endswith(" *") and content.count("*") == 1 and command == content[:-2]:
            return True
        return glob_matches(content, command)
    return command == content


def glob_matches(pattern: str, text: str) -> bool:
    """``pattern``, where ``*`` stands for any characters (newlines too) and nothing else is
    special, matches the whole of ``text``. Linear in ``text`` for each part between stars
    (each part at its first place after the one before: the earliest is never worse), where
    a backtracking regex (``a.*a.*a.*b``) takes exponential time on a long command the model
    wrote, e.g. 3.5 s for ``a*a*a*a*a*b`` on 200 characters."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return text == pattern
    first, last = parts[0], parts[-1]
    start, end = len(first), len(text) - len(last)
    if end < start or not text.startswith(first) or not text.endswith(last):
        return False
    for part in parts[1:-1]:
        at = text.find(part, start, end)
        if at < 0:
            return False
        start = at + len(part)
    return True


def matchable(rule: PermissionRule) -> bool:
    """Whether the bridge can match the rule's content the way Claude does (for the
    simple commands of Bash, ``rule_matches``), or the rule is about every use."""
    content = rule.rule_content
    return content in (None, "*") or (rule.tool_name == "Bash" and "\\" not in content)


def rule_matches(rule: PermissionRule, tool: str, inp: dict[str, Any]) -> bool | None:
    """Whether ``rule`` covers a call of ``tool`` with ``inp`` as Claude's would; None when
    the bridge cannot tell (content it cannot match exactly: file path patterns, WebFetch
    domains, other tools' specifiers, compound Bash commands)."""
    content = rule.rule_content
    whole = content is None or content == "*"
    if not _tool_matches(rule.tool_name, tool, whole):
        return False
    if whole:
        return True
    command = inp.get("command")
    if tool == "Bash" and isinstance(command, str) and content is not None:
        return _bash_matches(content, command)
    return None


def rule_verdict(
    rules: Sequence[PermissionRule], tool: str, inp: dict[str, Any]
) -> tuple[str | None, PermissionRule | None]:
    """What the client's rules decide for a call: ``("deny" | "allow", rule)``, or
    ``(None, rule)`` when it is to be asked (an ``ask`` rule matched, or a rule the bridge
    cannot match could decide it before an allow: deny before ask before allow, as in
    Claude), or ``(None, None)`` when no rule is about it."""
    unsure: PermissionRule | None = None
    for behavior in BEHAVIORS:
        for rule in rules:
            if rule.behavior != behavior:
                continue
            hit = rule_matches(rule, tool, inp)
            if hit is None:
                unsure = unsure or rule
            elif hit:
                return (behavior if behavior != "ask" else None), rule
        if behavior != "allow" and unsure is not None:
            return None, unsure  # it could deny (or ask): the client decides
    return None, unsure


def rule_denial(rule: PermissionRule, tool: str, inp: dict[str, Any]) -> str:
    """Claude Code's message for a call a deny rule denied."""
    command = inp.get("command")
    if rule.rule_content and rule.rule_content != "*":
        if tool == "Bash" and isinstance(command, str):
            return f"Permission to use {tool} with command {command} has been denied."
        return f"Permission to use {tool} with {rule.rule_content} has been denied."
    return f"Permission to use {tool} has been denied."


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
    rule), an unknown working directory for a path, other tools.
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
    #: turn's result forgets the calls an interrupt withdrew
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request", "user", "result"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        kind = frame.kind()
        if kind == ("user", None):
            return self._tool_result(frame, ctx)
        if kind is not None and kind[0] == "result":
            denied = ctx.state.control.denied_uses
            for withdrawn in [u for u, k in denied.items() if k == "user-rejected"]:
                del denied[withdrawn]  # the interrupted turn is over (cbc wrote no result)
            return None
        rid, request = ck.request_of(frame.obj)
        body = cast("wire.CanUseTool", request)
        if rid is None or body.get("subtype") != "can_use_tool":
            return None
        tool = body.get("tool_name")
        tool = tool if isinstance(tool, str) else ""
        inp = body.get("input")
        inp = inp if isinstance(inp, dict) else {}
        use = body.get("tool_use_id")
        use = use if isinstance(use, str) else None
        control = ctx.state.control
        forward = ctx.state.stdio_permissions if self.mode == "auto" else self.mode == "forward"
        if forward and control.permission_rules and self._by_rule(rid, tool, use, inp, ctx):
            return ()
        if forward:
            remember(control.permissions, rid, PermissionRequest(rid, tool, use, inp), cap=256)
            fuller = with_claude_fields(cast("dict[str, Any]", body), ctx.state.cwd)
            if fuller is None:
                return None
            ctx.count(self.rule, "claude-fields")
            return (frame.replace({**frame.obj, "request": fuller}),)
        reason = claude_denial(tool, inp)
        control.permission_denials.append(
            {"tool_name": tool, "tool_use_id": use, "tool_input": inp, "turn": control.client_turns}
        )
        reply: dict[str, Any] = {"allowed": False, "reason": reason, "interrupt": False}
        if use:
            reply["tool_use_id"] = use
        ctx.emit("up", Frame.from_obj(ck.success(rid, reply)), self.rule)
        ctx.log(
            self.rule,
            f"denied {tool} (the client did not ask for permission prompts: "
            "no --permission-prompt-tool stdio)",
            "debug",
        )
        ctx.count(self.rule, "denied")
        return ()

    def _by_rule(
        self, rid: str, tool: str, use: str | None, inp: dict[str, Any], ctx: Context
    ) -> bool:
        """Answer cbc itself when a rule the client added (``updatedPermissions``,
        ``ControlState.permission_rules``) decides the call, as Claude does without asking
        the client again: an allow with the input as asked, or a deny Claude-worded
        (listed in ``permission_denials``, its tool_result marked ``permission-rule``).
        False when the client is to be asked."""
        control = ctx.state.control
        verdict, rule = rule_verdict(control.permission_rules, tool, inp)
        if verdict is None:
            if rule is not None:
                why = (
                    "the bridge cannot match this rule's content the way Claude does"
                    if rule_matches(rule, tool, inp) is None
                    else "an ask rule"
                )
                ctx.log(
                    self.rule,
                    f"{tool} asked about despite the {rule.behavior} rule {rule_text(rule)}: {why}",
                    "debug",
                )
            return False
        assert rule is not None
        reply: dict[str, Any]
        if verdict == "allow":
            reply = {"allowed": True, "updatedInput": inp}
        else:
            reply = {"allowed": False, "reason": rule_denial(rule, tool, inp), "interrupt": False}
            control.permission_denials.append(
                {
                    "tool_name": tool,
                    "tool_use_id": use,
                    "tool_input": inp,
                    "turn": control.client_turns,
                }
            )
            if use:
                remember(control.denied_uses, use, "permission-rule", cap=256)
        if use:
            reply["tool_use_id"] = use
        ctx.emit("up", Frame.from_obj(ck.success(rid, reply)), self.rule)
        done = "allowed" if verdict == "allow" else "denied"
        ctx.log(self.rule, f"{done} {tool} by the client's rule {rule_text(rule)}", "debug")
        ctx.count(self.rule, f"{done}-by-rule")
        return True

    def _tool_result(self, frame: Frame, ctx: Context) -> Output:
        denied = ctx.state.control.denied_uses
        if not denied:
            return None
        obj = cast("wire.User", frame.obj)
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or obj.get("parent_tool_use_id") is not None:
            return None
        meta = [
            {"id": b["tool_use_id"], "non_execution_kind": denied[b["tool_use_id"]]}
            for b in content
            if isinstance(b, dict)
            and b.get("type") == "tool_result"
            and b.get("tool_use_id") in denied
        ]
        if not meta:
            return None
        for m in meta:
            denied.pop(m["id"], None)
        new: dict[str, Any] = {k: v for k, v in obj.items() if k != "tool_result_meta"}
        new["tool_result_meta"] = meta
        return (frame.replace(new),)


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
    (``ControlState.denied_uses``). An allow's ``updatedPermissions`` are applied
    (``_apply``): rules kept for ``permission-routing``, a mode sent to cbc.
    """

    rule: ClassVar[str] = "permission-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.permissions", "cwd"})
    writes: ClassVar[frozenset[str]] = frozenset(
        {"control.denied_uses", "control.own", "control.permission_rules"}
    )
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    _own: int = attrs.field(default=0, init=False)  # set_permission_mode requests sent

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
            kind = u.get("type") if isinstance(u, dict) else type(u).__name__
            done = False
            if isinstance(u, dict) and kind in RULE_UPDATES:
                done = self._rules(u, ctx)
            elif isinstance(u, dict) and kind == "setMode":
                done = self._set_mode(u, ctx)
            elif isinstance(u, dict) and kind == "addDirectories":
                done = self._known_directories(u, ctx)
            if done:
                ctx.count(self.rule, "permission-updates-applied")
            else:
                unapplied.append(str(kind))
        if not unapplied:
            return
        ctx.count(self.rule, "permission-updates-unapplied", len(unapplied))
        ctx.log(
            self.rule,
            f"updatedPermissions not applied ({', '.join(sorted(set(unapplied)))}): cbc has "
            "no way to take them, so the tool may be asked about again",
            "warning",
        )

    @staticmethod
    def _known_directories(update: dict[str, Any], ctx: Context) -> bool:
        """An ``addDirectories`` of directories inside cbc's working directory (what
        ``permission-routing`` suggests for a write there, as Claude does) changes nothing:
        cbc may already work in them."""
        dirs, cwd = update.get("directories"), ctx.state.cwd
        if not cwd or not isinstance(dirs, list) or not dirs:
            return False
        return all(isinstance(d, str) and _inside(posixpath.normpath(d), cwd) for d in dirs)

    def _rules(self, update: dict[str, Any], ctx: Context) -> bool:
        behavior = update.get("behavior")
        destination = update.get("destination") or "session"
        given = update.get("rules")
        if behavior not in BEHAVIORS or not isinstance(given, list):
            return False
        new: list[PermissionRule] = []
        for r in given:
            tool = r.get("toolName") if isinstance(r, dict) else None
            content = r.get("ruleContent") if isinstance(r, dict) else None
            if not isinstance(tool, str) or not tool or not isinstance(content, (str, type(None))):
                return False
            new.append(PermissionRule(str(behavior), str(destination), tool, content or None))
        rules = ctx.state.control.permission_rules
        kind = update["type"]
        if kind == "replaceRules":
            rules[:] = [r for r in rules if (r.behavior, r.destination) != (behavior, destination)]
        if kind == "removeRules":
            gone = set(new)
            rules[:] = [r for r in rules if r not in gone]
        else:
            rules.extend(r for r in dict.fromkeys(new) if r not in rules)
            del rules[:-MAX_RULES]
            for r in new:
                if not matchable(r):
                    ctx.log(
                        self.rule,
                        f"{r.behavior} rule {rule_text(r)} kept, but cbc's prompts for "
                        f"{r.tool_name} are still asked: the bridge cannot match its content "
                        "the way Claude does",
                        "info",
                    )
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

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, sub, response = ck.response_of(frame.obj)
        if rid is None:
            return None
        pending = ctx.state.control.permissions.pop(rid, None)
        resp = cast("wire.ControlResponseBody", response)
        body = cast("wire.PermissionAnswer", ck.body_of(response))
        if pending is None and not ("behavior" in body and "allowed" not in body):
            return None  # not an answer to a permission prompt (hooks, MCP messages...)
        if sub == "error":
            message = resp.get("error")
            reply = self._deny(
                message if isinstance(message, str) and message else "Permission denied", False
            )
        elif "allowed" in body:
            return None  # already cbc's shape
        elif "behavior" not in body and isinstance(body.get("allow"), bool):
            # the legacy claude-code-sdk (0.0.x): {allow: true, input?} / {allow: false,
            # reason}; its deny reason reaches cbc as given
            if body["allow"]:
                updated = body.get("input")
                if not isinstance(updated, dict):
                    updated = pending.input if pending is not None else {}
                reply = {"allowed": True, "updatedInput": updated}
            else:
                reason = body.get("reason")
                reply = self._deny(
                    reason if isinstance(reason, str) and reason else "Permission denied",
                    body.get("interrupt") is True,
                )
        elif body.get("behavior") == "allow":
            updated = body.get("updatedInput")
            if not isinstance(updated, dict):
                updated = pending.input if pending is not None else {}
            reply = {"allowed": True, "updatedInput": updated}
            self._apply(body.get("updatedPermissions"), ctx)
        else:
            if body.get("behavior") != "deny":
                ctx.log(
                    self.rule,
                    f"permission answer with behavior {body.get('behavior')!r} taken as a deny",
                    "warning",
                )
            message = body.get("message")
            reply = self._deny(
                message if isinstance(message, str) and message else "Permission denied",
                body.get("interrupt") is True,
            )
        if pending is not None and pending.tool_use_id:
            reply["tool_use_id"] = pending.tool_use_id
            if not reply["allowed"]:
                remember(
                    ctx.state.control.denied_uses, pending.tool_use_id, "permission-rule", cap=256
                )
        return (frame.replace(ck.success(rid, reply)),)

    @staticmethod
    def _deny(reason: str, interrupt: bool) -> dict[str, Any]:
        return {"allowed": False, "reason": reason, "interrupt": interrupt}


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
            # Claude: the withdrawn call is a denial of the turn, its rejection "user-rejected"
            # (raw run interrupt-permission-prompt, 2026-12-01). (A prompt interrupt-request
            # ended with deny + interrupt gets no result from cbc: interrupted-turn writes
            # the marked rejection, and the mark is forgotten at the result.)
            if req.tool_use_id:
                remember(control.denied_uses, req.tool_use_id, "user-rejected", cap=256)
            control.permission_denials.append(
                {
                    "tool_name": req.tool_name,
                    "tool_use_id": req.tool_use_id,
                    "tool_input": req.input,
                    "turn": control.client_turns,
                }
            )
        control.permissions.clear()
        return (*cancels, frame)
