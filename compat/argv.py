"""Rule ``argv``: a Claude Code command line -> one cbc 2.163.0 accepts.

cbc exits 1 on any option it does not know (``error: unknown option``), and the official
SDKs pass many cbc lacks. The tables below come from ``claude --help`` (2.1.220), the
flags the SDKs emit, and ``cbc --help`` (reference capture ``cbc-2.163.0/help.txt``).

Each client option is: kept (same name in cbc), renamed, split (comma-joined tool lists
become separate words: cbc ignores the joined form, ``mockoai_allowedtools-comma-joined``)
or dropped with one warning. ``--flag=value`` and ``--flag value`` are both understood.
An option neither table knows is dropped with a warning too (cbc would exit on it): when
it came as ``--flag value`` and the next word does not look like an option, that word is
taken as its value. ``-p``, ``--input-format stream-json``, ``--output-format
stream-json`` and ``--verbose`` are ensured, because the bridge only speaks stream-json.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

#: cbc options that take one value
CBC_VALUE = frozenset(
    {
        "--output-format", "--input-format", "--json-schema", "--permission-mode",
        "--permission-mode-before-plan", "--subagent-permission-mode", "--tools",
        "--mcp-config", "--model", "--fallback-model", "--session-id", "--max-turns",
        "--effort", "--system-prompt", "--system-prompt-file", "--append-system-prompt",
        "--agents", "--agent", "--settings", "--setting-sources", "--name",
        "--autocompact", "--prompt-vars-file", "--text-to-image-model",
        "--image-to-image-model",
    }
)  # fmt: skip
#: cbc options that take one or more values (commander variadic)
CBC_VARIADIC = frozenset({"--allowedTools", "--disallowedTools", "--add-dir", "--plugin-dir"})
#: cbc options with an optional value
CBC_OPTIONAL = frozenset({"--resume", "--debug"})
CBC_BOOL = frozenset(
    {
        "--verbose", "--print", "--include-partial-messages",
        "--dangerously-skip-permissions", "--continue", "--strict-mcp-config",
        "--fork-session", "--replay-user-messages", "--no-session-persistence",
        "--resume-create-missing", "--ide", "--brief",
    }
)  # fmt: skip
SHORT = {"-p": "--print", "-c": "--continue", "-r": "--resume", "-d": "--debug",
         "-y": "--dangerously-skip-permissions"}  # fmt: skip
#: Claude options cbc lacks, and whether they take a value
CLAUDE_ONLY = {
    "--permission-prompt-tool": True, "--max-thinking-tokens": True,
    "--max-budget-usd": True, "--betas": True, "--task-budget": True,
    "--resume-session-at": True, "--resume-drops-turn": True, "--debug-file": True,
    "--thinking": True, "--sdk-url": True, "--remote-control-session-id": True,
    "--include-hook-events": False, "--disable-slash-commands": False,
    "--session-mirror": False, "--allow-dangerously-skip-permissions": False,
    "--debug-to-stderr": False, "--enable-auth-status": False, "--no-chrome": False,
    "--chrome": False, "--exclude-dynamic-system-prompt-sections": False,
}  # fmt: skip
SPLIT_LISTS = frozenset({"--allowedTools", "--disallowedTools"})
ALIASES = {"--allowed-tools": "--allowedTools", "--disallowed-tools": "--disallowedTools"}


@attrs.frozen
class Translation:
    argv: list[str]
    warnings: list[str]
    #: the client asked for can_use_tool prompts over stdio (``--permission-prompt-tool stdio``)
    stdio_permissions: bool = False
    #: the client named the session itself (--resume/--continue/--session-id)
    session_given: bool = False


def _split(values: list[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


def translate_to_cbc(argv: Sequence[str]) -> Translation:
    out: list[str] = []
    warnings: list[str] = []
    stdio_permissions = False
    session_given = False
    variadic_tail: list[str] = []  # variadic options go last so they cannot swallow words
    i = 0
    args = list(argv)
    while i < len(args):
        tok = args[i]
        i += 1
        if not tok.startswith("-") or tok == "-":
            warnings.append(f"dropped the positional argument {tok!r} (prompts go on stdin)")
            continue
        if tok == "--":
            rest = args[i:]
            if rest:
                warnings.append(f"dropped {len(rest)} argument(s) after '--'")
            break
        name, eq, inline = tok.partition("=")
        name = SHORT.get(name, ALIASES.get(name, name))
        has_inline = bool(eq)

        def take_value(name: str = name, inline: str = inline, eq: bool = has_inline) -> str:
            nonlocal i
            if eq:
                return inline
            if i < len(args):
                i += 1
                return args[i - 1]
            return ""

        if name in CBC_BOOL:
            out.append(name)
        elif name in CBC_VALUE:
            out += [name, take_value()]
        elif name in CBC_OPTIONAL:
            if has_inline:
                out.append(f"{name}={inline}")
            elif i < len(args) and not args[i].startswith("-"):
                out += [name, args[i]]
                i += 1
            else:
                out.append(name)
            if name == "--resume":
                session_given = True
        elif name in CBC_VARIADIC:
            values = [inline] if has_inline else []
            while not has_inline and i < len(args) and not args[i].startswith("-"):
                values.append(args[i])
                i += 1
            if name in SPLIT_LISTS:
                values = _split(values)
            if values:
                variadic_tail += [name, *values]
        elif name in CLAUDE_ONLY:
            value = take_value() if CLAUDE_ONLY[name] else ""
            if name == "--permission-prompt-tool":
                stdio_permissions = value == "stdio"
            shown = f"{name} {value}".strip()
            warnings.append(f"dropped {shown!r}: cbc has no such option")
        else:
            value = ""
            if has_inline:
                value = inline
            elif i < len(args) and not args[i].startswith("-"):
                value = args[i]
                i += 1
            shown = f"{name} {value}".strip()
            warnings.append(f"dropped unknown option {shown!r}: cbc would refuse it")
        if name in ("--continue", "--session-id"):
            session_given = True
    for must, value in (("--input-format", "stream-json"), ("--output-format", "stream-json")):
        if must not in out:
            out += [must, value]
    if "--verbose" not in out:
        out.append("--verbose")
    if "--print" not in out:
        out.insert(0, "-p")
    out += variadic_tail
    return Translation(out, warnings, stdio_permissions, session_given)
