"""Claude Code 2.1.220's fields of a ``can_use_tool`` prompt that cbc 2.163.0's lacks, and
Claude's words for a tool it denies by itself, for ``permission-routing``
(compat/stages/permissions.py).

A prompt in the default permission mode carries, besides the tool, input and tool_use_id
(Claude's ``createCanUseTool``): ``display_name``, ``description``, the
``permission_suggestions`` an SDK app offers as "always allow", and ``blocked_path`` or
Claude's ``decision_reason``. The bridge adds only those it can tell the way Claude would:
what it cannot (compound Bash commands, quotes, expansions, ``sed``, ``rm -r``, reads
outside the working directory, other tools) it leaves out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Any

from compat import controlkit as ck
from compat.stages.permissions_rules import COMPOUND

#: tools whose denial Claude words as a write to the file they name
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
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
#: Claude's reason for asking about a Bash command no rule or path check decided (its
#: ``decision_reason``, ``decision_reason_type``)
_NO_RULE = {"decision_reason": "This command requires approval", "decision_reason_type": "other"}
#: and for a file tool's path outside the working directory
_OUTSIDE = {
    "decision_reason": "Path is outside allowed working directories",
    "decision_reason_type": "workingDir",
}
#: and for a file edit in plan mode (its "Cannot write to … while in plan mode": the mode
#: asks, no rule could allow it, so no suggestion; twins plan-mode-denied)
_PLAN_MODE = {"decision_reason_type": "mode"}
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
#: what Claude says a file tool it denies by itself would do to the file it names
_FILE_ACCESS = {**dict.fromkeys(WRITE_TOOLS, "write to"), "Read": "read from"}

#: a Bash command's suggestions and ``blocked_path`` (None: the bridge cannot tell them)
Suggestions = tuple[list[Any], str | None] | None


def _text(value: Any) -> str | None:
    """``value`` when it is a string that is not empty."""
    return value if isinstance(value, str) and value else None


def inside(path: str, cwd: str) -> bool:
    """``path`` is ``cwd`` or below it."""
    return path == cwd or path.startswith(cwd.rstrip("/") + "/")


def _resolved(cwd: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(cwd, path))


# -- "always allow" suggestions ---------------------------------------------------------------


def _allow_rule(
    tool: str, content: str | None, destination: str = "localSettings"
) -> dict[str, Any]:
    rule: dict[str, Any] = {"toolName": tool}
    if content is not None:
        rule["ruleContent"] = content
    return {"type": "addRules", "rules": [rule], "behavior": "allow", "destination": destination}


def _accept_edits() -> dict[str, Any]:
    return {"type": "setMode", "mode": "acceptEdits", "destination": _SESSION}


def _add_directory(directory: str) -> dict[str, Any]:
    return {"type": "addDirectories", "directories": [directory], "destination": _SESSION}


def _program(word: str) -> str:
    """The program a command word names (the last part of its path)."""
    return word.rsplit("/", 1)[-1]


def _assignments(words: list[str]) -> int:
    """How many of a command's first words are environment assignments (``LANG=C``)."""
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    return i


def command_prefix(command: str) -> str | None:
    """Claude's two-word prefix of a command for an "always allow" rule (its ``Sko``):
    ``git status`` of ``git status --short``; None for one word, a wrapper (``sudo``,
    ``env``), an environment assignment it does not trust, or a second word that is not a
    plain subcommand (``touch perm-probe.txt``)."""
    words = command.split()
    env = _assignments(words)
    if any(w.partition("=")[0] not in _SAFE_ENV for w in words[:env]):
        return None
    return _two_word_prefix(words[env:])


def _two_word_prefix(words: list[str]) -> str | None:
    """A command's first two words, when the first is no wrapper and the second a plain
    subcommand."""
    if len(words) < 2 or _program(words[0]) in _WRAPPERS:
        return None
    return f"{words[0]} {words[1]}" if _SUBCOMMAND.fullmatch(words[1]) else None


def bash_rule_suggestion(command: str) -> dict[str, Any]:
    """Claude's "always allow" suggestion for one simple command (its ``omr`` without the
    heredoc and multi-line cases, compound commands the bridge does not synthesize for):
    ``Bash(prefix *)`` when the command has a two-word prefix, else the exact command."""
    prefix = command_prefix(command)
    return _allow_rule("Bash", f"{prefix} *" if prefix else command)


def _bash_suggestions(command: str, cwd: str | None) -> Suggestions:
    """Claude's suggestions (and ``blocked_path``) for a Bash command cbc asks about, in
    the default permission mode; None when the bridge cannot tell what Claude would
    suggest (compound commands, expansions, quotes, a read outside the working directory,
    an unknown working directory for a path command, ``sed`` and flagged ``mv``/``cp``)."""
    trimmed = command.strip()
    if not trimmed or COMPOUND.search(command):
        return None
    words = trimmed.split()
    env = _assignments(words)
    base = _program(words[env]) if env < len(words) else ""
    suggest = _BY_COMMAND.get(base, _plain_command)
    return suggest(command, base, words[env + 1 :], cwd)


def _plain_command(command: str, base: str, args: list[str], cwd: str | None) -> Suggestions:
    """A command whose paths Claude does not check: its rule."""
    return [bash_rule_suggestion(command.strip())], None


def _unknown_command(command: str, base: str, args: list[str], cwd: str | None) -> Suggestions:
    """A command whose path check the bridge does not know (``sed``'s)."""
    return None


def _read_command(command: str, base: str, args: list[str], cwd: str | None) -> Suggestions:
    """A command that reads its paths: its rule, when every path is inside the working
    directory (else Claude asks for a Read rule of the directory)."""
    if _UNRESOLVED.search(" ".join(args)):
        return None
    here = cwd or "/\0cwd"  # a relative path stays inside an unknown directory
    if any(not inside(_resolved(here, a), here) for a in _named(args)):
        return None
    return _plain_command(command, base, args, cwd)


def _write_command(command: str, base: str, args: list[str], cwd: str | None) -> Suggestions:
    """A command that writes or creates its paths: its rule, the first path's directory
    and ``acceptEdits``, that path blocked (in the default mode Claude asks about every
    write, inside the working directory too: acceptEdits would allow it, for the first
    path it checks); its rule alone when it names no path."""
    if cwd is None or _UNRESOLVED.search(" ".join(args)) or _unsure(base, args):
        return None
    named = _named(args)
    if not named:
        return _plain_command(command, base, args, cwd)
    blocked = _resolved(cwd, named[0])
    return [bash_rule_suggestion(command), *_write_suggestions(base, blocked)], blocked


def _write_suggestions(base: str, blocked: str) -> list[dict[str, Any]]:
    """The directory of the path (Claude's: the path itself when it is a directory,
    ``rmdir``'s, as it stats it; else its parent), and ``acceptEdits``."""
    directory = blocked if base == "rmdir" else posixpath.dirname(blocked)
    return [_add_directory(directory), _accept_edits()]


def _named(args: list[str]) -> list[str]:
    """A command's arguments that name paths (not its options; ``-`` is stdin's name)."""
    return [a for a in args if not a.startswith("-") or a == "-"]


def _flag(arg: str) -> bool:
    return arg.startswith("-")


def _recursive(arg: str) -> bool:
    """``-r``, ``-R``, ``-rf``, ``--recursive``: an rm option that takes directories."""
    if arg.startswith("--"):
        return arg == "--recursive"
    return arg.startswith("-") and "r" in arg.lower()


#: the arguments of a write command whose path Claude checks otherwise than the bridge
#: can tell: a flagged ``mv``/``cp``; ``rm -r`` (Claude names the path itself if it is a
#: directory: it stats it)
_UNSURE_ARGUMENT: dict[str, Callable[[str], bool]] = {"mv": _flag, "cp": _flag, "rm": _recursive}


def _unsure(base: str, args: list[str]) -> bool:
    unsure = _UNSURE_ARGUMENT.get(base)
    return unsure is not None and any(unsure(a) for a in args)


#: Claude's suggestions for each command whose paths it checks (any other: its rule)
_BY_COMMAND: dict[str, Callable[[str, str, list[str], str | None], Suggestions]] = {
    "sed": _unknown_command,
    **dict.fromkeys(_READ_OPS, _read_command),
    **dict.fromkeys(_PATH_OPS, _write_command),
}


# -- the prompt's fields ----------------------------------------------------------------------


def _truncate(text: str, width: int = _DESCRIPTION_WIDTH) -> str:
    """Claude's ``truncate`` (to ``width`` columns with an ellipsis); the bridge counts
    characters, not display columns."""
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _shown_path(path: str, cwd: str | None) -> str:
    """Claude's file path as a prompt shows it (its ``Cd``): relative to the working
    directory when inside it, else as given (Claude would write ``~/...`` under HOME,
    which the bridge does not know)."""
    if not cwd:
        return path
    if posixpath.isabs(path):
        rel = posixpath.relpath(posixpath.normpath(path), cwd)
        return path if rel.startswith("..") else rel
    return path if path.startswith("..") else posixpath.normpath(path)


def _command_description(inp: dict[str, Any], cwd: str | None) -> str | None:
    """The call's description, else its command cut to 50 columns."""
    command = _text(inp.get("command"))
    if command is None:
        return None
    # Claude also redacts secrets in both (its mu()); the bridge passes them as written
    return _text(inp.get("description")) or _truncate(command)


def _path_description(inp: dict[str, Any], cwd: str | None) -> str | None:
    path = _text(inp.get("file_path"))
    return _shown_path(path, cwd) if path is not None else None


def _pattern_description(inp: dict[str, Any], cwd: str | None) -> str | None:
    pattern = _text(inp.get("pattern"))
    return _truncate(pattern) if pattern is not None else None


#: how Claude describes a call of each tool it summarizes
_DESCRIPTIONS: dict[str, Callable[[dict[str, Any], str | None], str | None]] = {
    "Bash": _command_description,
    "PowerShell": _command_description,
    **dict.fromkeys(("Write", "Edit", "MultiEdit", "Read"), _path_description),
    "Glob": _pattern_description,
    "Grep": _pattern_description,
}


def _description(tool: str, inp: dict[str, Any], cwd: str | None) -> str | None:
    """Claude's ``description`` of a prompt: for Bash the call's description, else its
    command cut to 50 columns; for file tools the path; for Glob and Grep the pattern cut
    to 50 (their ``getToolUseSummary``). None when Claude would send none or the bridge
    does not know the tool's summary (MCP and other tools)."""
    describe = _DESCRIPTIONS.get(tool)
    return describe(inp, cwd) if describe is not None else None


def _bash_fields(tool: str, inp: dict[str, Any], cwd: str | None) -> dict[str, Any]:
    """A Bash command's suggestions, with its ``blocked_path`` or else Claude's reason for
    asking about a command no rule decided."""
    command = inp.get("command")
    found = _bash_suggestions(command, cwd) if isinstance(command, str) else None
    if found is None:
        return {}
    suggestions, blocked = found
    if blocked is None:
        return {"permission_suggestions": suggestions, **_NO_RULE}
    return {"permission_suggestions": suggestions, "blocked_path": blocked}


def _file_fields(tool: str, inp: dict[str, Any], cwd: str | None) -> dict[str, Any]:
    """A file edit's ``acceptEdits``; for a path outside the working directory also its
    directory, and Claude's reason (``workingDir``)."""
    path = _text(inp.get("notebook_path" if tool == "NotebookEdit" else "file_path"))
    if path is None or cwd is None:
        return {}
    full = _resolved(cwd, path)
    if inside(full, cwd):
        return {"permission_suggestions": [_accept_edits()]}
    directory = _add_directory(posixpath.dirname(full))
    return {**_OUTSIDE, "permission_suggestions": [_accept_edits(), directory]}


def _tool_rule_fields(tool: str, inp: dict[str, Any], cwd: str | None) -> dict[str, Any]:
    """A rule for every use of the tool."""
    return {"permission_suggestions": [_allow_rule(tool, None)]}


#: the suggestion fields of each tool Claude suggests for (and of every MCP tool)
_SUGGESTIONS: dict[str, Callable[[str, dict[str, Any], str | None], dict[str, Any]]] = {
    "Bash": _bash_fields,
    **dict.fromkeys(WRITE_TOOLS, _file_fields),
    "WebSearch": _tool_rule_fields,
}


def _suggestion_fields(tool: str, inp: dict[str, Any], cwd: str | None) -> dict[str, Any]:
    fields = _tool_rule_fields if tool.startswith("mcp__") else _SUGGESTIONS.get(tool)
    return fields(tool, inp, cwd) if fields is not None else {}


def claude_prompt_fields(
    tool: str, inp: Any, cwd: str | None, mode: str = "default"
) -> dict[str, Any]:
    """What Claude Code 2.1.220's ``can_use_tool`` carries besides the tool, input and
    tool_use_id (its ``createCanUseTool``): ``display_name``, ``description``,
    ``permission_suggestions`` and ``blocked_path`` (or, for a Bash command no path check
    asks about, ``decision_reason`` "This command requires approval", type ``other``);
    only the fields the bridge can tell the way Claude would (see ``permission-routing``).
    In plan ``mode`` a file edit is asked about because of the mode: ``decision_reason_type``
    ``mode`` and no suggestions."""
    if not tool:
        return {}
    out: dict[str, Any] = {"display_name": ck.tool_display_name(tool)}
    if not isinstance(inp, dict):
        return out
    description = _description(tool, inp, cwd)
    if description:
        out["description"] = description
    if mode == "plan" and tool in WRITE_TOOLS:
        return out | _PLAN_MODE
    return out | _suggestion_fields(tool, inp, cwd)


def with_claude_fields(
    body: dict[str, Any], cwd: str | None, mode: str = "default"
) -> dict[str, Any] | None:
    """cbc's ``can_use_tool`` body with Claude's fields it lacks added in Claude's order
    (a field cbc sent is kept as sent); None when nothing is added."""
    tool = body.get("tool_name")
    if not isinstance(tool, str):
        return None
    fields = claude_prompt_fields(tool, body.get("input"), cwd, mode)
    add = {k: v for k, v in fields.items() if k not in body}
    return _in_prompt_order({**body, **add}) if add else None


def _in_prompt_order(prompt: dict[str, Any]) -> dict[str, Any]:
    """A prompt's fields in Claude's order, any others after them as they come."""
    ordered = {k: prompt[k] for k in _PROMPT_ORDER if k in prompt}
    return ordered | {k: v for k, v in prompt.items() if k not in ordered}


def claude_denial(tool_name: str, tool_input: dict[str, Any]) -> str:
    """Claude Code's message when it denies a tool it was not allowed to ask about."""
    path = _text(tool_input.get("file_path") or tool_input.get("notebook_path"))
    access = _FILE_ACCESS.get(tool_name)
    if access is None or path is None:
        return f"Claude requested permissions to use {tool_name}, but you haven't granted it yet."
    return f"Claude requested permissions to {access} {path}, but you haven't granted it yet."
