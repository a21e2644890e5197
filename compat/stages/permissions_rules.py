"""The client's permission rules matched the way Claude Code 2.1.220 matches its session
rules, for ``permission-routing`` and ``permission-reply`` (compat/stages/permissions.py).

A rule (``ControlState.permission_rules``, from an answer's ``updatedPermissions``) is
about a tool (``Bash``; ``mcp__server`` for all of a server's tools) or, for Bash, a simple
command: exact, legacy prefix (``npm test:*``), ``*`` wildcards. Deny, then ask, then allow:
the first behavior with a matching rule decides. What the bridge cannot match the way Claude
would (file path patterns, WebFetch domains, a compound Bash command) matches as None: the
client is asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from compat.session import PermissionRule

#: what a rule may decide, in Claude's order: the first that matches decides
BEHAVIORS = ("deny", "ask", "allow")
#: the verdict of each behavior's matching rule (an ask rule's: the client is asked)
_VERDICTS: dict[str, str | None] = {"deny": "deny", "ask": None, "allow": "allow"}
#: what makes a Bash command more than one simple command to the bridge: Claude splits
#: compound commands and checks each part (a rule with content for one part does not cover
#: ``safe && other``); the bridge does not parse shell, so it cannot tell and keeps asking
COMPOUND = re.compile(r"[;&|<>`\n\r]|\$\(")


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
    if "\\" in content or COMPOUND.search(command):
        return None
    command = command.strip()
    if content.endswith(":*") and "*" not in content[:-2]:
        return _prefix_matches(content[:-2], command)
    if "*" in content:
        return _wildcard_matches(content, command)
    return command == content


def _prefix_matches(prefix: str, command: str) -> bool:
    """A legacy prefix rule's prefix: the command itself, or its words before a space."""
    return command == prefix or command.startswith(prefix + " ")


def _wildcard_matches(content: str, command: str) -> bool:
    """A wildcard rule: ``glob_matches``, and ``git *`` (one star, trailing after a space)
    also covers the bare ``git``."""
    if content.endswith(" *") and content.count("*") == 1 and command == content[:-2]:
        return True
    return glob_matches(content, command)


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
    return _in_order(parts[1:-1], text, start, end)


def _in_order(parts: list[str], text: str, start: int, end: int) -> bool:
    """Each of ``parts`` in ``text[start:end]``, one after the other (each at its first
    place after the one before)."""
    for part in parts:
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
    whole = content in (None, "*")
    if not _tool_matches(rule.tool_name, tool, whole):
        return False
    return True if whole else _content_matches(content, tool, inp)


def _content_matches(content: str | None, tool: str, inp: dict[str, Any]) -> bool | None:
    """A rule's content against the call: a Bash command's; None for any other."""
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
        hit, unsure = _first_match(rules, behavior, tool, inp)
        if hit is not None:
            return _VERDICTS[behavior], hit
        if behavior != "allow" and unsure is not None:
            return None, unsure  # it could deny (or ask): the client decides
    return None, unsure


def _first_match(
    rules: Sequence[PermissionRule], behavior: str, tool: str, inp: dict[str, Any]
) -> tuple[PermissionRule | None, PermissionRule | None]:
    """The first rule of ``behavior`` that covers the call (None: none does), and the first
    of its rules the bridge cannot match (before that one)."""
    unsure: PermissionRule | None = None
    for rule in rules:
        if rule.behavior != behavior:
            continue
        hit = rule_matches(rule, tool, inp)
        if hit:
            return rule, unsure
        if hit is None:
            unsure = unsure or rule
    return None, unsure


def rule_denial(rule: PermissionRule, tool: str, inp: dict[str, Any]) -> str:
    """Claude Code's message for a call a deny rule denied."""
    command = inp.get("command")
    if rule.rule_content and rule.rule_content != "*":
        if tool == "Bash" and isinstance(command, str):
            return f"Permission to use {tool} with command {command} has been denied."
        return f"Permission to use {tool} with {rule.rule_content} has been denied."
    return f"Permission to use {tool} has been denied."
