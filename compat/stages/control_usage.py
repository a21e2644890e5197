"""``get_context_usage`` as Claude Code 2.1.220 answers it, from what the session knows
(``unsupported-control`` answers it locally: ``compat/stages/control.py``).

Pure functions of the last result's usage and the current model.
"""

from __future__ import annotations

from typing import Any

#: Claude's default context window (a model it has no window for: cbc reports 0)
DEFAULT_WINDOW = 200_000
#: Claude Code's auto-compact threshold: the window less the output it reserves (20,000)
#: and its buffer (13,000): 167,000 of 200,000 (raw run midsession-controls)
_COMPACT_RESERVE = 20_000 + 13_000
#: the usage counts of ``apiUsage`` (0 for one the result does not give)
_API_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def _square_count(tokens: Any, per: float) -> Any:
    """The squares of a category that is not free space: one per ``per`` tokens, at
    least one for any."""
    return max(1, round(tokens / per)) if tokens > 0 else 0


def _squares(c: dict[str, Any], n: int, window: int, per: float, free: bool) -> list[Any]:
    """A category's ``n`` squares, full but for its last one's remainder (free space's
    all full)."""
    tokens = c["tokens"]
    pct = round(100 * tokens / window) if window else 0
    return [
        {
            "color": c["color"],
            "isFilled": True,
            "categoryName": c["name"],
            "tokens": tokens,
            "percentage": pct,
            "squareFullness": 1 if free else min(1, tokens / per - i),
        }
        for i in range(n)
    ]


def grid_rows(categories: list[dict[str, Any]], window: int) -> list[list[dict[str, Any]]]:
    """Claude's 10 x 10 context grid: a square per 1 % of the window, each category (in
    order, free space last) taking ``max(1, round(tokens / square))`` squares, full but for
    its last one's remainder (``squareFullness``); free space fills what is left (raw run
    midsession-controls: 8,027 tokens = 4 squares, 118 = 1 square 0.059 full)."""
    per = window / 100
    squares: list[dict[str, Any]] = []
    free = categories[-1]
    for c in [*categories[:-1], free]:
        n = max(0, 100 - len(squares)) if c is free else _square_count(c["tokens"], per)
        squares += _squares(c, n, window, per, c is free)
    squares = squares[:100]
    return [squares[i : i + 10] for i in range(0, len(squares), 10)]


def api_usage(last: dict[str, Any]) -> dict[str, int]:
    """The last result's ``usage`` counts (``apiUsage``)."""
    usage = last.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return {k: usage[k] if type(usage.get(k)) is int else 0 for k in _API_KEYS}


def context_window(last: dict[str, Any], model: str) -> int:
    """The model's window in the last result's ``modelUsage`` (``contextWindow``), else
    Claude's default."""
    model_usage = last.get("modelUsage")
    entry = model_usage.get(model) if isinstance(model_usage, dict) else None
    window = 0
    if isinstance(entry, dict) and type(entry.get("contextWindow")) is int:
        window = entry["contextWindow"]
    return window if window > 0 else DEFAULT_WINDOW


def context_usage(last: dict[str, Any], model: str) -> dict[str, Any]:
    """Claude's shape (raw run midsession-controls), from what the session knows: the
    last result's usage (``apiUsage``; the context is its input, cached or not) and
    the current model's window (``modelUsage.contextWindow``; Claude's 200,000 when
    cbc reports none). Claude's split of its own prompt (system prompt, tools, skills,
    memory files, MCP tools, agents, slash commands, the message breakdown) is its
    estimate of a prompt cbc does not show: the context is one ``Messages`` category,
    the lists are empty and the breakdown's counts 0 (as Claude writes them for a
    session without such things)."""
    api = api_usage(last)
    total = api["input_tokens"] + api["cache_creation_input_tokens"]
    total += api["cache_read_input_tokens"]
    window = context_window(last, model)
    categories = [
        {"name": "Messages", "tokens": total, "color": "purple_FOR_SUBAGENTS_ONLY"},
        {"name": "Free space", "tokens": max(0, window - total), "color": "promptBorder"},
    ]
    return {
        "categories": categories,
        "totalTokens": total,
        "maxTokens": window,
        "rawMaxTokens": window,
        "autocompactSource": "auto",
        "percentage": round(100 * total / window),
        "gridRows": grid_rows(categories, window),
        "model": model,
        "memoryFiles": [],
        "mcpTools": [],
        "agents": [],
        "slashCommands": {"totalCommands": 0, "includedCommands": 0, "tokens": 0},
        "skills": {
            "totalSkills": 0,
            "includedSkills": 0,
            "tokens": 0,
            "skillFrontmatter": [],
        },
        "autoCompactThreshold": max(0, window - _COMPACT_RESERVE),
        "isAutoCompactEnabled": True,
        "messageBreakdown": {
            "toolCallTokens": 0,
            "toolResultTokens": 0,
            "attachmentTokens": 0,
            "assistantMessageTokens": 0,
            "userMessageTokens": 0,
            "redirectedContextTokens": 0,
            "unattributedTokens": 0,
            "toolCallsByType": [],
            "attachmentsByType": [],
        },
        "apiUsage": api,
    }
