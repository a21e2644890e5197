"""Rule ``rev-env``: the environment a cbc SDK gives its CLI -> what Claude Code reads
(profile ``claude-to-cbc``; REVERSE.md gap 18, 27).

The forward table (``compat.env.COUNTERPARTS``: a Claude variable -> its cbc twin) read
backwards: each ``CODEBUDDY_*`` variable a cbc client sets is copied to its Claude twin
unless that is set (``CODEBUDDY_CODE_DISABLE_BACKGROUND_TASKS`` -> ``CLAUDE_CODE_DISABLE_
BACKGROUND_TASKS``, which Python ``query()`` sets; ``CODEBUDDY_DISABLE_AUTO_MEMORY`` ->
``CLAUDE_CODE_DISABLE_AUTO_MEMORY``; ``CODEBUDDY_CODE_ENTRYPOINT`` -> ``CLAUDE_CODE_
ENTRYPOINT``; ...), plus ``CODEBUDDY_IS_SANDBOX`` -> ``IS_SANDBOX``. The ``CODEBUDDY_*``
names are kept (Claude ignores them). ``extra`` (from ``compat.argv_cbc``: ``IS_SANDBOX=1``
for bypass as root) is set unless the user set it.
"""

from __future__ import annotations

from collections.abc import Mapping

from compat.env import COUNTERPARTS

REVERSE_COUNTERPARTS: dict[str, str] = {
    **{cbc: claude for claude, cbc in COUNTERPARTS.items()},
    "CODEBUDDY_IS_SANDBOX": "IS_SANDBOX",
}

#: the docs/reverse.md form: (cbc variable, what Claude gets, when)
REVERSE_ENV_TABLE: list[tuple[str, str, str]] = [
    *((cbc, claude, "copied unless set") for cbc, claude in REVERSE_COUNTERPARTS.items()),
    (
        "--permission-mode bypassPermissions as root",
        "IS_SANDBOX=1",
        "unless set (Claude refuses bypass as root otherwise)",
    ),
]


def translate_env_to_claude(
    env: Mapping[str, str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    out = dict(env)
    for cbc, claude in REVERSE_COUNTERPARTS.items():
        if cbc in env and claude not in env:
            out[claude] = env[cbc]
    for k, v in (extra or {}).items():
        out.setdefault(k, v)
    return out
