"""Rule ``env``: the environment a Claude client gives its CLI -> what cbc needs.

Variables with a cbc counterpart are mapped (the Claude name is kept as well: cbc ignores
it); the variables cbc's own SDKs set when they launch it are set unless the user set
them: ``DISABLE_AUTOUPDATER=1`` (an update restarts cbc mid-session) and
``CODEBUDDY_DISABLE_AUTO_MEMORY=1``.
"""

from __future__ import annotations

from collections.abc import Mapping

COUNTERPARTS = {
    "CLAUDE_CODE_ENTRYPOINT": "CODEBUDDY_CODE_ENTRYPOINT",
    "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "CODEBUDDY_CODE_DISABLE_BACKGROUND_TASKS",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "CODEBUDDY_CODE_MAX_OUTPUT_TOKENS",
}
CBC_DEFAULTS = {"DISABLE_AUTOUPDATER": "1", "CODEBUDDY_DISABLE_AUTO_MEMORY": "1"}


def translate_env_to_cbc(env: Mapping[str, str]) -> dict[str, str]:
    out = dict(env)
    for claude, cbc in COUNTERPARTS.items():
        if claude in env and cbc not in env:
            out[cbc] = env[claude]
    for k, v in CBC_DEFAULTS.items():
        out.setdefault(k, v)
    return out
