"""The texts of ``local-slash-commands`` (compat/stages/slash.py): what Claude Code 2.1.220
takes for a command in ``-p`` mode, and the outputs it writes for the ones it answers itself
(twins ``slash-commands``; its command dispatch read in its binary)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from compat import wire

#: the commands Claude 2.1.220 lists in ``-p`` mode (its initialize reply, twins
#: slash-commands), with their aliases, in its order (the order of its suggestions)
CLAUDE_COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("deep-research", ()),
    ("dataviz", ()),
    ("update-config", ()),
    ("verify", ()),
    ("debug", ()),
    ("code-review", ()),
    ("simplify", ()),
    ("batch", ()),
    ("fewer-permission-prompts", ()),
    ("doctor", ("checkup",)),
    ("loop", ("proactive",)),
    ("claude-api", ()),
    ("run", ()),
    ("run-skill-generator", ()),
    ("agents", ()),
    ("clear", ("reset", "new")),
    ("color", ()),
    ("compact", ()),
    ("config", ("settings",)),
    ("context", ()),
    ("effort", ()),
    ("fast", ()),
    ("heapdump", ()),
    ("init", ()),
    ("mcp", ()),
    ("model", ()),
    ("__remote-workflow", ()),
    ("workflow-launch-exec", ()),
    ("reload-skills", ()),
    ("rename", ("name",)),
    ("review", ()),
    ("security-review", ()),
    ("usage", ("cost", "stats")),
    ("insights", ()),
    ("recap", ()),
    ("goal", ()),
    ("team-onboarding", ()),
)
#: every name and alias of that list
LISTED = frozenset(n for name, aliases in CLAUDE_COMMANDS for n in (name, *aliases))
#: Claude's built-in commands that are not in that list (interactive only): its
#: ``isn't available in this environment`` (the command table of its binary; ``help``:
#: twins slash-commands)
UNAVAILABLE = frozenset(
    {
        "add-dir", "advisor", "artifacts", "autofix-pr", "background", "bg", "branch",
        "brief", "btw", "cd", "chrome", "copy", "daemon", "desktop", "diff", "exit",
        "export", "feedback", "focus", "fork", "help", "hooks", "ide", "install",
        "install-github-app", "keybindings", "login", "logout", "loops", "memory",
        "mobile", "passes", "permissions", "allowed-tools", "plan", "plugin", "plugins",
        "marketplace", "powerup", "privacy-settings", "quit", "remote-control", "rc",
        "remote-env", "resume", "continue", "scroll-speed", "session", "setup-bedrock",
        "setup-vertex", "skills", "status", "tasks", "bashes", "teleport", "tp",
        "terminal-setup", "theme", "ultraplan", "upgrade", "version", "web-setup",
        "workflows",
    }
)  # fmt: skip
#: the commands the rule answers: name -> what writes the output
USAGE = frozenset({"usage", "cost", "stats"})
#: a command name Claude takes (``r0o``)
_NAME = re.compile(r"[a-zA-Z0-9:_-]+")


def line_text(obj: wire.User) -> str | None:
    """The input of a user line: its string content, or the last of its text blocks (all
    must be text); None for anything else."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    if not all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return None
    text = content[-1].get("text")
    return text if isinstance(text, str) else None


def command_name(text: str, exists: Callable[[str], bool] = lambda path: False) -> str | None:
    """The command a line is to Claude (``Rfe``, ``r0o``, the path check: ``exists``, the
    I/O side's ``Env.path_exists``); None: a prompt."""
    t = text.strip()
    if not t.startswith("/"):
        return None
    name = re.split(r"\s", t[1:], maxsplit=1)[0]
    if not name or not _NAME.fullmatch(name) or _is_mcp(t[1 + len(name) :]):
        return None
    return None if exists("/" + name) else name


def _is_mcp(args: str) -> bool:
    """An MCP prompt's ``(MCP)`` marker after the name."""
    args = args.strip()
    return args == "(MCP)" or (args.startswith("(MCP)") and args[5:6].isspace())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def suggestion(name: str) -> str | None:
    """The command of Claude's list (or its alias) at most 2 edits from ``name``, the
    nearest, the first in the list on a tie: its name."""
    best: tuple[int, str] | None = None
    for cmd, aliases in CLAUDE_COMMANDS:
        d = min(edit_distance(name.lower(), n) for n in (cmd, *aliases))
        if d <= 2 and (best is None or d < best[0]):
            best = (d, cmd)
    return None if best is None else best[1]


def unknown_text(name: str) -> str:
    near = suggestion(name)
    return f"Unknown command: /{name}" + (f". Did you mean /{near}?" if near else "")


# -- the outputs --------------------------------------------------------------------------


def compact_number(n: float) -> str:
    """Claude's ``formatNumber`` (Intl compact, one decimal, lower case): 219, 2.6k, 1m."""
    if n < 1000:
        return str(round(n))
    for unit, size in (("k", 1e3), ("m", 1e6), ("b", 1e9)):
        v = round(n / size, 1)
        if v < 1000 or unit == "b":
            return f"{v:.1f}".removesuffix(".0") + unit
    return str(n)  # (unreachable)


def cost_text(cost: float) -> str:
    """Claude's ``$`` amount: 2 decimals above $0.50, else 4."""
    return f"${cost:.2f}" if cost > 0.5 else f"${cost:.4f}"


def duration_text(ms: float) -> str:
    """Claude's duration: ``0s``, ``2s``, ``1m 5s``, ``1h 2m 3s``."""
    s = int(ms // 1000)
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m {s}s"
    h, m = divmod(m, 60)
    return f"{h}h {m}m {s}s"


def number(d: Any, key: str) -> float:
    v = d.get(key) if isinstance(d, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _model_line(model: str, u: dict[str, Any]) -> str:
    short = re.sub(r"\[[^\]]*\]$", "", model)
    counts = ", ".join(
        f"{compact_number(number(u, k))} {what}"
        for k, what in (
            ("inputTokens", "input"),
            ("outputTokens", "output"),
            ("cacheReadInputTokens", "cache read"),
            ("cacheCreationInputTokens", "cache write"),
        )
    )
    return f"{short + ':':>21}  {counts} ({cost_text(number(u, 'costUSD'))})"


def usage_output(last: dict[str, Any], wall_s: float) -> str:
    """``/usage`` (``/cost``): the session's cost, API and wall time, usage by model."""
    lines = [
        f"Total cost:            {cost_text(number(last, 'total_cost_usd'))}",
        f"Total duration (API):  {duration_text(number(last, 'duration_api_ms'))}",
        f"Total duration (wall): {duration_text(wall_s * 1000)}",
        "Total code changes:    0 lines added, 0 lines removed",
    ]
    models = _models(last.get("modelUsage"))
    if not models:
        return "\n".join([*lines, _NO_USAGE])
    return "\n".join([*lines, "Usage by model:", *(_model_line(m, u) for m, u in models)])


#: Claude's usage line of a session without model usage
_NO_USAGE = "Usage:                 0 input, 0 output, 0 cache read, 0 cache write"


def _models(by_model: Any) -> list[tuple[str, dict[str, Any]]]:
    """The models of a result's ``modelUsage`` and their counts."""
    if not isinstance(by_model, dict):
        return []
    return [(m, u) for m, u in by_model.items() if isinstance(u, dict)]


def _pct(tokens: float, window: float) -> str:
    return f"{100 * tokens / window:.1f}%" if window else "0.0%"


def context_output(usage: dict[str, Any]) -> str:
    """``/context``: Claude's markdown of what ``get_context_usage`` answers."""
    window = usage["maxTokens"]
    rows = [
        f"| {c['name']} | {compact_number(c['tokens'])} | {_pct(c['tokens'], window)} |"
        for c in usage["categories"]
    ]
    return "\n".join(
        [
            "## Context Usage",
            "",
            f"**Model:** {usage['model']}  ",
            f"**Tokens:** {compact_number(usage['totalTokens'])} / {compact_number(window)}"
            f" ({usage['percentage']}%)",
            "",
            "### Estimated usage by category",
            "",
            "| Category | Tokens | Percentage |",
            "|----------|--------|------------|",
            *rows,
            "",
            "",
        ]
    )


__all__ = [
    "CLAUDE_COMMANDS",
    "LISTED",
    "UNAVAILABLE",
    "USAGE",
    "command_name",
    "compact_number",
    "context_output",
    "cost_text",
    "duration_text",
    "edit_distance",
    "line_text",
    "number",
    "suggestion",
    "unknown_text",
    "usage_output",
]
