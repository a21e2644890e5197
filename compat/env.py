"""Rule ``env``: the environment a Claude client gives its CLI -> what cbc needs.

Two parts (PROTOCOL.md §3 ``env``):

- ``COUNTERPARTS``: Claude variables whose cbc twin does the same thing (the names come
  from the strings of the 2.163.0 binary). The cbc name is set from the Claude one unless
  the user set it; the Claude name is kept (cbc ignores it). Variables that only look
  alike are not mapped: Claude's model ids, API keys, mTLS client certificates and
  telemetry endpoints address Anthropic, not cbc's service.
- ``CBC_DEFAULTS``: what ``codebuddy_agent_sdk`` (``transport/subprocess.py``,
  ``SubprocessTransport.connect``) sets when it launches cbc: ``CODEBUDDY_CODE_ENTRYPOINT``
  (from the Claude client's ``CLAUDE_CODE_ENTRYPOINT``, ``sdk-py``/``sdk-ts``),
  ``DISABLE_AUTOUPDATER=1`` (an update restarts cbc mid-session),
  ``CODEBUDDY_DISABLE_AUTO_MEMORY=1`` unless set (auto-memory makes tool calls an SDK
  caller did not ask for), ``MAX_THINKING_TOKENS`` from the thinking options (here: from
  ``compat.argv``'s ``Translation.env``) and a ``User-Agent`` first in
  ``CODEBUDDY_CUSTOM_HEADERS``. Its ``query()`` also sets
  ``CODEBUDDY_CODE_DISABLE_BACKGROUND_TASKS=1``; that is not copied: a Claude client reads
  background tasks across turns.

``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS`` has no cbc twin: it is the bridge's own
``eof-wind-down`` ceiling (``winddown_ceiling``).
"""

from __future__ import annotations

from collections.abc import Mapping

COUNTERPARTS = {
    "CLAUDE_CODE_ENTRYPOINT": "CODEBUDDY_CODE_ENTRYPOINT",
    "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "CODEBUDDY_CODE_DISABLE_BACKGROUND_TASKS",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "CODEBUDDY_CODE_MAX_OUTPUT_TOKENS",
    "CLAUDE_CODE_MAX_RETRIES": "CODEBUDDY_MAX_RETRIES",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "CODEBUDDY_DISABLE_AUTO_MEMORY",
    "CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING": "CODEBUDDY_CODE_DISABLE_FILE_CHECKPOINTING",
    "CLAUDE_CODE_SHELL": "CODEBUDDY_CODE_SHELL",
    "CLAUDE_CODE_SHELL_PREFIX": "CODEBUDDY_CODE_SHELL_PREFIX",
    "CLAUDE_CODE_GIT_BASH_PATH": "CODEBUDDY_CODE_GIT_BASH_PATH",
    "CLAUDE_CODE_DONT_INHERIT_ENV": "CODEBUDDY_CODE_DONT_INHERIT_ENV",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "CODEBUDDY_CODE_DISABLE_TERMINAL_TITLE",
    "CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS": "CODEBUDDY_CODE_FILE_READ_MAX_OUTPUT_TOKENS",
    "CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD": "CODEBUDDY_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD",  # noqa: E501
    "CLAUDE_CODE_DEBUG_LOGS_DIR": "CODEBUDDY_CODE_DEBUG_LOGS_DIR",
    "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "CODEBUDDY_AUTO_COMPACT_WINDOW",
    "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "CODEBUDDY_AUTOCOMPACT_PCT_OVERRIDE",
}
CBC_DEFAULTS = {"DISABLE_AUTOUPDATER": "1", "CODEBUDDY_DISABLE_AUTO_MEMORY": "1"}
HEADERS = "CODEBUDDY_CUSTOM_HEADERS"
CEILING_ENV = "CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS"

#: the docs/launch.md form: (Claude variable, what cbc gets, note)
ENV_TABLE: list[tuple[str, str, str]] = [
    *((c, b, "copied unless set") for c, b in COUNTERPARTS.items()),
    ("-", "DISABLE_AUTOUPDATER=1", "always (as codebuddy-agent-sdk)"),
    ("-", "CODEBUDDY_DISABLE_AUTO_MEMORY=1", "unless set (as codebuddy-agent-sdk)"),
    (
        "CLAUDE_AGENT_SDK_VERSION",
        f"{HEADERS}: User-Agent first",
        "as codebuddy-agent-sdk, naming ccbridge and the Claude SDK",
    ),
    ("--max-thinking-tokens N", "MAX_THINKING_TOKENS=N", "from the argv rule"),
    (CEILING_ENV, "-", "the bridge's eof-wind-down ceiling"),
]


def user_agent(env: Mapping[str, str], bridge_version: str) -> str:
    sdk = env.get("CLAUDE_AGENT_SDK_VERSION") or "unknown"
    entry = env.get("CLAUDE_CODE_ENTRYPOINT") or "cli"
    return f"User-Agent: ccbridge/{bridge_version} (claude-on-cbc; {entry}; Claude Agent SDK/{sdk})"


def translate_env_to_cbc(
    env: Mapping[str, str],
    extra: Mapping[str, str] | None = None,
    *,
    bridge_version: str = "",
) -> dict[str, str]:
    """``env`` as cbc should get it. ``extra``: variables the argv translation derived (set
    unless the user set them). ``bridge_version``: adds the User-Agent header."""
    out = dict(env)
    for claude, cbc in COUNTERPARTS.items():
        if claude in env and cbc not in env:
            out[cbc] = env[claude]
    for k, v in CBC_DEFAULTS.items():
        out.setdefault(k, v)
    out["DISABLE_AUTOUPDATER"] = "1"  # not negotiable: an update restarts cbc mid-session
    for k, v in (extra or {}).items():
        out.setdefault(k, v)
    if bridge_version:
        ua = user_agent(env, bridge_version)
        existing = env.get(HEADERS, "")
        out[HEADERS] = f"{ua}\n{existing}" if existing else ua
    return out


def winddown_ceiling(env: Mapping[str, str]) -> float | None:
    """``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS`` in seconds (None: unset or not a number).
    Claude's own meaning: how long it waits for background agents after stdin EOF."""
    raw = env.get(CEILING_ENV, "").strip()
    if not raw:
        return None
    try:
        ms = float(raw)
    except ValueError:
        return None
    return max(0.0, ms / 1000.0)
