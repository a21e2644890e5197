"""Secrets never leave (DEVELOPERS.md; seed 000: cbc's ``initialize`` reply carries
``account.token``, a live access token, plus the enterprise id and e-mail).

``redact_obj`` replaces the value of every credential-named key, at any depth, with
``REDACTED``. ``redact_line`` is the cheap byte-level entry point: a line that contains
none of the key names is returned as is, unparsed.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

REDACTED = "<redacted>"

SECRET_KEYS = frozenset(
    {
        "token", "accessToken", "access_token", "refreshToken", "refresh_token",
        "idToken", "id_token", "apiKey", "api_key", "authToken", "auth_token",
        "authorization", "Authorization", "password", "secret", "clientSecret",
        "client_secret", "cookie", "Cookie", "sessionToken", "session_token",
        "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CODEBUDDY_API_KEY",
        "CODEBUDDY_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY",
    }
)  # fmt: skip
_NEEDLES = tuple(b'"' + k.encode() + b'"' for k in SECRET_KEYS)
#: environment variable names whose values are credentials
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|COOKIE)", re.IGNORECASE)


def redact_obj(obj: Any) -> tuple[Any, int]:
    """A copy of ``obj`` with credential values replaced, and how many were."""
    if isinstance(obj, dict):
        n = 0
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if k in SECRET_KEYS and v not in (None, "", REDACTED) and not isinstance(
                v, (dict, list, bool)
            ):
                out[k] = REDACTED
                n += 1
            else:
                out[k], m = redact_obj(v)
                n += m
        return out, n
    if isinstance(obj, list):
        n = 0
        items = []
        for v in obj:
            r, m = redact_obj(v)
            items.append(r)
            n += m
        return items, n
    return obj, 0


def may_hold_secret(line: bytes) -> bool:
    return any(n in line for n in _NEEDLES)


def redact_line(line: bytes) -> bytes:
    """``line`` with credential values replaced; unchanged (same object) when it has none."""
    if not may_hold_secret(line):
        return line
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line
    red, n = redact_obj(obj)
    return orjson.dumps(red) if n else line


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (REDACTED if _SECRET_ENV.search(k) and v else v) for k, v in env.items()}
