"""The argv translation table (rule ``argv``): every option a Claude client can put on the
command line, and what becomes of it on cbc 2.163.0's.

Sources, all checked: ``claude --help`` of 2.1.197, 2.1.220 and 2.1.332
(``captures/claude-*/help.txt``); the options the official SDKs emit but ``--help`` hides,
read from ``claude_agent_sdk/_internal/transport/subprocess_cli.py`` (Python 0.2.189 and
0.2.190, ``_build_command``; 0.2.190 writes nearly every value as ``--flag=value``) and
``sdk.mjs`` of ``@anthropic-ai/claude-agent-sdk`` 0.3.220 (the 2.1.220 twin) and 0.3.332;
and ``cbc --help`` (``captures/cbc-2.163.0/help.txt``). cbc is a
commander program: it exits 1 on any option it does not know (``error: unknown option``),
so nothing outside this table reaches it unless cbc declares it (``CBC_OPTIONS``).

One row per option. ``arity`` is how the *Claude* command line binds values (commander:
``<v>`` takes the next word whatever it is, ``[v]`` only a word that is not an option,
``<v...>`` every following word up to the next option). ``action`` says what the
translator (``compat.argv``) does; ``ACTIONS`` words each for the README.
"""

from __future__ import annotations

import dataclasses  # (not attrs: read before the backend is spawned; bridge.launch)
from typing import Literal

Arity = Literal["none", "one", "optional", "variadic"]


@dataclasses.dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]  # Claude spellings, the canonical long one first
    arity: Arity
    action: str  # a key of ACTIONS
    cbc: str = ""  # the cbc option written (default: names[0])
    note: str = ""

    @property
    def name(self) -> str:
        return self.names[0]

    @property
    def target(self) -> str:
        return self.cbc or self.names[0]


#: what each action does (the README's wording)
ACTIONS = {
    "keep": "passed on unchanged (cbc has the same option)",
    "rename": "passed on under cbc's name",
    "ensure": "always present once (the bridge speaks only this mode)",
    "format": "cbc always gets stream-json; the client's text/json is rendered by the bridge "
    '(see "Headless use")',
    "split": "comma/space-joined lists split into separate words (cbc ignores a joined word)",
    "join": "several words joined into cbc's one comma-separated value",
    "first": "the first of a comma-separated list (cbc takes one); the rest warns",
    "mode": "passed on; Claude-only values mapped to cbc's",
    "sources": "passed on; an empty list becomes cbc's `none`",
    "mcp": "one value passed on; several JSON configs merged into one (cbc takes one)",
    "settings": "passed on; --thinking/--max-thinking-tokens are merged into it",
    "thinking": "becomes cbc's `alwaysThinkingEnabled` setting (merged into --settings)",
    "thinking-tokens": "becomes MAX_THINKING_TOKENS in cbc's environment and "
    "`alwaysThinkingEnabled` (0: thinking off)",
    "plugin-no-mcp": "becomes --plugin-dir (cbc cannot skip the plugin's MCP discovery)",
    "stdio": "dropped (cbc always asks over stdio); `stdio` turns on permission-routing",
    "prompts": "dropped; `host` turns on permission-routing like --permission-prompt-tool stdio",
    "drop": "dropped with one warning (cbc has no equivalent)",
    "ignore": "not passed, said at info only: nothing is lost (the note says why)",
    "refuse": "dropped with one warning (cbc's option of that name would leave stream-json "
    "mode or means something else)",
}

_ = Flag
FLAGS: tuple[Flag, ...] = (
    # -- the mode the bridge runs cbc in --------------------------------------------------
    _(("--print", "-p"), "none", "ensure"),
    _(("--verbose",), "none", "ensure"),
    _(("--input-format",), "one", "format"),
    _(("--output-format",), "one", "format"),
    # -- session ----------------------------------------------------------------------------
    _(("--session-id",), "one", "keep", note="the client names the session: no session-pin"),
    _(("--resume", "-r"), "optional", "keep", note="no session-pin; written as --resume=<id>"),
    _(("--continue", "-c"), "none", "keep", note="no session-pin"),
    _(("--fork-session",), "none", "keep"),
    _(("--no-session-persistence",), "none", "keep"),
    _(("--resume-session-at",), "one", "drop", note="SDK resume_session_at"),
    _(("--resume-drops-turn",), "one", "drop", note="SDK resume_drops_turn"),
    _(("--session-mirror",), "none", "drop", note="SDK session_store"),
    _(("--name", "-n"), "one", "keep", note="cbc: the session's name"),
    # -- model and prompt --------------------------------------------------------------------
    _(("--model",), "one", "keep", note="model ids are passed as given"),
    _(("--fallback-model",), "one", "first"),
    _(("--effort",), "one", "keep"),
    _(("--max-turns",), "one", "keep"),
    _(("--system-prompt",), "one", "keep", note='the Python SDK sends --system-prompt ""'),
    _(("--system-prompt-file",), "one", "keep"),
    _(("--append-system-prompt",), "one", "keep"),
    _(("--append-system-prompt-file",), "one", "drop"),
    _(("--json-schema",), "one", "keep"),
    _(("--thinking",), "one", "thinking", note="adaptive/enabled: on; disabled: off"),
    _(("--max-thinking-tokens",), "one", "thinking-tokens"),
    _(("--thinking-display",), "one", "drop"),
    _(("--max-budget-usd",), "one", "drop"),
    _(("--task-budget",), "one", "drop"),
    _(("--betas",), "variadic", "drop"),
    _(("--system-prompt-snapshot",), "one", "drop"),
    _(("--exclude-dynamic-system-prompt-sections",), "none", "drop"),
    _(("--autocompact",), "one", "keep"),
    # -- tools and permissions ---------------------------------------------------------------
    _(("--allowedTools", "--allowed-tools"), "variadic", "split", "--allowedTools"),
    _(("--disallowedTools", "--disallowed-tools"), "variadic", "split", "--disallowedTools"),
    _(("--tools",), "variadic", "join"),
    _(("--permission-mode",), "one", "mode", note="Claude's `manual` becomes `default`"),
    _(("--permission-prompt-tool",), "one", "stdio"),
    _(("--permission-prompts",), "one", "prompts"),
    _(("--dangerously-skip-permissions",), "none", "keep"),
    _(
        ("--allow-dangerously-skip-permissions",),
        "none",
        "ignore",
        note="cbc lets a session switch to bypassPermissions without it",
    ),
    _(("--disable-slash-commands",), "none", "drop"),
    # -- configuration -----------------------------------------------------------------------
    _(("--settings",), "one", "settings"),
    _(("--setting-sources",), "one", "sources"),
    _(("--managed-settings",), "one", "drop"),
    _(("--managed-settings-in-initialize",), "none", "drop"),
    _(
        ("--initialize-fields",),
        "one",
        "ignore",
        note="the initialize's fields are read as --await-initialize says",
    ),
    _(
        ("--await-initialize",),
        "none",
        "ignore",
        note="the bridge reads the client's initialize before it starts cbc, whose command "
        "line gets the initialize's launch options (mcpServers, settings…)",
    ),
    _(("--project-config-root",), "one", "drop"),
    _(("--workload",), "one", "drop", note="TS SDK `workload`"),
    _(("--await-claim",), "none", "drop", note="TS SDK"),
    _(("--mcp-config",), "variadic", "mcp"),
    _(("--strict-mcp-config",), "none", "keep"),
    _(("--add-dir",), "variadic", "keep"),
    _(("--plugin-dir",), "one", "keep", note="cbc's is variadic: written last"),
    _(("--plugin-dir-no-mcp",), "one", "plugin-no-mcp", "--plugin-dir"),
    _(("--plugin-url",), "one", "drop"),
    _(("--agent",), "one", "keep"),
    _(("--agents",), "one", "keep"),
    _(("--channels",), "one", "keep"),
    _(("--include-partial-messages",), "none", "keep"),
    _(("--replay-user-messages",), "none", "keep"),
    _(("--include-hook-events",), "none", "drop"),
    _(("--forward-subagent-text",), "none", "drop"),
    _(("--prompt-suggestions",), "optional", "drop"),
    _(("--brief",), "none", "keep"),
    _(("--ide",), "none", "keep"),
    _(("--worktree", "-w"), "optional", "keep"),
    _(("--file",), "variadic", "drop"),
    _(("--bare",), "none", "drop"),
    _(("--safe-mode",), "none", "drop"),
    _(("--restricted",), "none", "drop"),
    _(("--ax-screen-reader",), "none", "drop"),
    _(("--chrome",), "none", "drop"),
    _(("--no-chrome",), "none", "drop"),
    _(("--debug", "-d"), "optional", "keep", note="Claude's filter categories differ"),
    _(("--debug-file",), "one", "drop", note="the TS SDK adds it under DEBUG_CLAUDE_AGENT_SDK"),
    _(("--debug-to-stderr", "-d2e"), "none", "drop"),
    _(("--sdk-url",), "one", "drop"),
    _(("--enable-auth-status",), "none", "drop"),
    _(("--remote-control-session-id",), "one", "drop"),
    _(("--remote-control-session-name-prefix",), "one", "drop"),
    _(("--from-pr",), "optional", "drop"),
    _(("--cloud",), "optional", "drop"),
    _(("--desktop",), "none", "drop"),
    _(("--environment",), "one", "drop"),
    # cbc has options of these names, but they detach, serve HTTP or mean something else
    _(("--remote-control",), "optional", "refuse"),
    _(("--teleport",), "optional", "refuse"),
    _(("--tmux",), "optional", "refuse"),
    _(("--bg", "--background"), "none", "refuse"),
    _(("--help", "-h"), "none", "refuse", note="claude-on-cbc answers it as its first word"),
    _(("--version", "-v"), "none", "refuse", note="claude-on-cbc answers it as its first word"),
)
del _

#: every option cbc 2.163.0 declares (help.txt), by how it binds values; a name the table
#: above does not know passes when cbc knows it (an SDK's ``extra_args`` aimed at cbc),
#: unless it is in CBC_REFUSED
CBC_OPTIONS: dict[str, Arity] = {
    **dict.fromkeys(
        (
            "--verbose",
            "--print",
            "--include-partial-messages",
            "--dangerously-skip-permissions",
            "--continue",
            "--strict-mcp-config",
            "--resume-create-missing",
            "--no-session-persistence",
            "--ide",
            "--brief",
            "--fork-session",
            "--replay-user-messages",
            "--tmux",
            "--tmux-classic",
            "--serve",
            "--open",
            "--acp",
            "--sandbox-upload-dir",
            "--sandbox-new",
            "--sandbox-kill",
            "--multitask",
            "--bg",
            "--background",
            "--swarm",
            "--help",
            "--version",
        ),
        "none",
    ),
    **dict.fromkeys(
        (
            "--output-format",
            "--input-format",
            "--json-schema",
            "--permission-mode",
            "--permission-mode-before-plan",
            "--subagent-permission-mode",
            "--tools",
            "--mcp-config",
            "--channels",
            "--dangerously-load-development-channels",
            "--model",
            "--text-to-image-model",
            "--image-to-image-model",
            "--fallback-model",
            "--session-id",
            "--worktree-branch",
            "--port",
            "--host",
            "--base-path",
            "--auth",
            "--acp-transport",
            "--sandbox-id",
            "--teleport",
            "--max-turns",
            "--effort",
            "--autocompact",
            "--system-prompt",
            "--system-prompt-file",
            "--append-system-prompt",
            "--prompt-vars-file",
            "--agent",
            "--agents",
            "--settings",
            "--setting-sources",
            "--name",
            "--exec",
        ),
        "one",
    ),
    **dict.fromkeys(
        ("--debug", "--resume", "--worktree", "--sandbox", "--remote-control"), "optional"
    ),
    **dict.fromkeys(
        ("--allowedTools", "--disallowedTools", "--add-dir", "--header", "--plugin-dir"), "variadic"
    ),
}
#: cbc's short options (help.txt)
CBC_SHORT = {
    "-d": "--debug",
    "-p": "--print",
    "-y": "--dangerously-skip-permissions",
    "-c": "--continue",
    "-r": "--resume",
    "-w": "--worktree",
    "-H": "--header",
    "-V": "--version",
    "-v": "--version",
    "-h": "--help",
}
#: cbc-only options that would take cbc out of a stdio stream-json session
CBC_REFUSED = frozenset(
    {
        "--serve",
        "--open",
        "--port",
        "--host",
        "--base-path",
        "--auth",
        "--acp",
        "--acp-transport",
        "--sandbox",
        "--sandbox-upload-dir",
        "--sandbox-new",
        "--sandbox-id",
        "--sandbox-kill",
        "--teleport",
        "--bg",
        "--background",
        "--exec",
        "--swarm",
        "--tmux",
        "--tmux-classic",
        "--remote-control",
        "--multitask",
        "--help",
        "--version",
        "--dangerously-load-development-channels",
    }
)

BY_NAME: dict[str, Flag] = {n: f for f in FLAGS for n in f.names}
#: cbc options that take several words; they go last so they cannot swallow other words
CBC_VARIADIC = frozenset(n for n, a in CBC_OPTIONS.items() if a == "variadic")
#: Claude permission modes cbc lacks -> cbc's
PERMISSION_MODES = {"manual": "default"}


def table_rows() -> list[tuple[str, str, str]]:
    """``(Claude option(s) with their value, what cbc gets, note)`` for the README and
    ``claude-on-cbc --help``, in table order."""
    shape = {"none": "", "one": " <v>", "optional": " [v]", "variadic": " <v...>"}
    rows = []
    for f in FLAGS:
        claude = ", ".join(f.names) + shape[f.arity]
        if f.action in ("thinking", "thinking-tokens"):
            cbc = "--settings" if f.action == "thinking" else "env MAX_THINKING_TOKENS"
        elif f.action in ("stdio", "prompts", "drop", "refuse", "ignore"):
            cbc = "-"
        else:
            cbc = f.target
        note = ACTIONS[f.action] + (f"; {f.note}" if f.note else "")
        rows.append((claude, cbc, note))
    return rows


#: the long options ``claude --help`` (2.1.220) lists, in its order: the candidates of
#: commander's "Did you mean" under an unknown option (hidden options are never suggested;
#: ``tests/compat/test_suggest.py`` checks the list against ``captures/reference``)
CLAUDE_VISIBLE: tuple[str, ...] = (
    "--add-dir",
    "--agent",
    "--agents",
    "--allow-dangerously-skip-permissions",
    "--allowedTools",
    "--append-system-prompt",
    "--ax-screen-reader",
    "--bg",
    "--bare",
    "--betas",
    "--brief",
    "--chrome",
    "--continue",
    "--dangerously-skip-permissions",
    "--debug",
    "--debug-file",
    "--disable-slash-commands",
    "--disallowedTools",
    "--effort",
    "--exclude-dynamic-system-prompt-sections",
    "--fallback-model",
    "--file",
    "--fork-session",
    "--forward-subagent-text",
    "--from-pr",
    "--help",
    "--ide",
    "--include-hook-events",
    "--include-partial-messages",
    "--input-format",
    "--json-schema",
    "--max-budget-usd",
    "--mcp-config",
    "--model",
    "--name",
    "--no-chrome",
    "--no-session-persistence",
    "--output-format",
    "--permission-mode",
    "--plugin-dir",
    "--plugin-url",
    "--print",
    "--prompt-suggestions",
    "--remote-control",
    "--remote-control-session-name-prefix",
    "--replay-user-messages",
    "--resume",
    "--safe-mode",
    "--session-id",
    "--setting-sources",
    "--settings",
    "--strict-mcp-config",
    "--system-prompt",
    "--tmux",
    "--tools",
    "--verbose",
    "--version",
    "--worktree",
)


#: the value placeholder ``claude --help`` (2.1.220) shows for each option that takes a
#: value it requires: commander names it when the value is missing
#: (``error: option '--model <model>' argument missing``)
CLAUDE_PLACEHOLDERS: dict[str, str] = {
    "--add-dir": "<directories...>",
    "--agent": "<agent>",
    "--agents": "<json>",
    "--append-system-prompt": "<prompt>",
    "--betas": "<betas...>",
    "--debug-file": "<path>",
    "--effort": "<level>",
    "--fallback-model": "<model>",
    "--file": "<specs...>",
    "--input-format": "<format>",
    "--json-schema": "<schema>",
    "--max-budget-usd": "<amount>",
    "--mcp-config": "<configs...>",
    "--model": "<model>",
    "--name": "<name>",
    "--output-format": "<format>",
    "--permission-mode": "<mode>",
    "--plugin-dir": "<path>",
    "--plugin-url": "<url>",
    "--remote-control-session-name-prefix": "<prefix>",
    "--session-id": "<uuid>",
    "--setting-sources": "<sources>",
    "--settings": "<file-or-json>",
    "--system-prompt": "<prompt>",
    "--tools": "<tools...>",
}
