"""Secrets never leave (DEVELOPERS.md; seed 000: cbc's ``initialize`` reply carries
``account.token``, a live access token, plus the enterprise id and e-mail).

``redact_obj`` replaces the value of every credential-named key, at any depth, with
``REDACTED`` (``strip_obj`` removes it), and what cbc derives from one (``TAIL``);
``redact_text`` does the same for log messages. ``redact_line`` is the cheap byte-level
entry point: a line that contains none of the key names is returned as is, unparsed.
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


#: cbc 2.163.0 derives its anonymous account ids from the API key: ``"uid":
#: "anonymous_<the key's last 8 characters>"`` (and four more) beside ``"token": <the key>``
#: (probed: key ``sk-…0123456789`` gives ``anonymous_23456789``). A string next to a
#: credential that contains the credential's tail is a credential too.
TAIL = 8


def _is_secret(k: str, v: Any) -> bool:
    return k in SECRET_KEYS and v not in (None, "", REDACTED) and not isinstance(
        v, (dict, list, bool)
    )


def _scrub(obj: Any, strip: bool) -> tuple[Any, int]:
    if isinstance(obj, dict):
        n = 0
        out: dict[str, Any] = {}
        tails = [v[-TAIL:] for k, v in obj.items()
                 if _is_secret(k, v) and isinstance(v, str) and len(v) >= TAIL]  # fmt: skip
        for k, v in obj.items():
            if _is_secret(k, v) or (strip and k in SECRET_KEYS and v == REDACTED):
                n += v != REDACTED
                if not strip:
                    out[k] = REDACTED
            elif tails and isinstance(v, str) and any(t in v for t in tails):
                n += 1
                if not strip:
                    for t in tails:
                        v = v.replace(t, REDACTED)
                    out[k] = v
            else:
                out[k], m = _scrub(v, strip)
                n += m
        return out, n
    if isinstance(obj, list):
        n = 0
        items = []
        for v in obj:
            r, m = _scrub(v, strip)
            items.append(r)
            n += m
        return items, n
    return obj, 0


def redact_obj(obj: Any) -> tuple[Any, int]:
    """A copy of ``obj`` with credential values replaced, and how many were."""
    return _scrub(obj, strip=False)


def strip_obj(obj: Any) -> tuple[Any, int]:
    """A copy of ``obj`` without credential-named keys (at any depth) and the values
    derived from them, and how many went."""
    return _scrub(obj, strip=True)


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


_KEY_ALT = "|".join(sorted((re.escape(k) for k in SECRET_KEYS), key=len, reverse=True))
#: ``"token": "v"`` / ``token=v`` / ``'token': 'v'`` for any credential key name
_TEXT_KV = re.compile(
    r"""(?P<k>["']?(?:""" + _KEY_ALT + r""")["']?\s*[:=]\s*)(?P<q>["']?)(?P<v>[^"'\s,;}&]+)"""
)
#: values that are credentials whatever they are called: bearer tokens, JWTs, API keys
_TEXT_VALUES = re.compile(
    r"(?:(?<=Bearer )[A-Za-z0-9._~+/=-]{8,})"
    r"|(?:\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*)"
    r"|(?:\bsk-[A-Za-z0-9_-]{12,})"
)


def redact_text(text: str) -> str:
    """``text`` (a log message) with credential-looking values replaced: the value after a
    credential key name (JSON, Python repr or ``KEY=value``), bearer tokens, JWTs and
    ``sk-`` API keys. Cheap when there is nothing to hide."""
    if not text:
        return text
    text = _TEXT_VALUES.sub(REDACTED, text)
    return _TEXT_KV.sub(lambda m: m.group(0) if m.group("v") in (REDACTED, "Bearer")
                        else m.group("k") + m.group("q") + REDACTED, text)
