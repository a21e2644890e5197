"""Secrets never leave (DEVELOPERS.md; seed 000: cbc's ``initialize`` reply carries
``account.token``, a live access token, plus the enterprise id and e-mail).

Three rules, applied the same way in the stream (initialize replies), captures, logs and
stats:

- **Credential keys**, by pattern (``is_secret_key``): the key is lower-cased and its
  separators (``-``, ``_``, ``.``, spaces) removed; it names a credential when that
  normalised name is one of ``SECRET_NAMES`` or ends with one of ``SECRET_SUFFIXES``
  (``x-api-key``, ``X_API_KEY``, ``GITHUB_TOKEN``, ``privateKey``, ``client_secret``,
  ``aws_secret_access_key``, ``set-cookie``, ``credentials``…), unless a word of the key
  makes a ``…token`` key a counter or a cursor (``NOT_CREDENTIAL_WORDS``: ``max_token``,
  ``pageToken``). Being a *suffix* rule, it leaves alone the descriptive keys that merely
  start with a credential word (``tokenSource``, ``apiKeySource``, ``authMethod``,
  ``tokenType``) and the counters, which are plural (``input_tokens``,
  ``maxThinkingTokens``, ``totalTokens``) or start with it (``token_count``). The value of
  such a key is replaced by ``REDACTED`` whatever it is (an object or a list whole), except
  the values that hold nothing (``None``, ``""``, a boolean, an empty container).
- **Token shapes**, whatever their key (``redact_values``): ``Bearer …``, ``Basic …``/
  ``Token …`` after an ``Authorization`` header, JWTs, ``sk-…``/``sk-ant-…`` keys, GitHub
  (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack ``xox?-``, AWS
  access key ids (``AKIA…``/``ASIA…``), and the password of a URL's userinfo
  (``https://user:<redacted>@host``).
- **Derived values** (``TAIL``): a string next to a credential that contains its tail.

``redact_obj``/``strip_obj`` work on parsed JSON (key rule, shapes in every string);
``redact_text`` on free text (log messages, stderr, lines that are not JSON): the shapes,
plus the value after a credential key written as JSON, a Python repr, ``KEY=value``, a
``Header: value`` line or a ``--flag value`` / ``--flag=value`` option (an object or list
after the key is redacted whole, brackets matched). ``redact_line`` is the capture's entry
point: a cheap byte-level test first (a line that cannot hold a secret is returned as is,
the same object), then the structural redaction of a JSON line, and the text one for
anything else, or when the structural one cannot be done (nesting deeper than
``MAX_DEPTH``, a value the serialiser rejects). None of them raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from compat import frames

REDACTED = "<redacted>"

#: normalised names (lower case, no separators) that are credentials on their own
SECRET_NAMES = frozenset({"auth", "bearer", "pat"})
#: normalised endings that make a key a credential
SECRET_SUFFIXES = (
    "token",
    "secret",
    "secrets",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "apikey",
    "apikeys",
    "privatekey",
    "secretkey",
    "accesskey",
    "signingkey",
    "encryptionkey",
    "masterkey",
    "credential",
    "credentials",
    "cookie",
    "cookies",
    "authorization",
    "authorisation",
    "jwt",
)
#: words (of the key split at separators and camelCase) that make a ``…token`` key a
#: usage counter, a limit or a pagination cursor, not a credential
NOT_CREDENTIAL_WORDS = frozenset(
    {
        "max",
        "min",
        "total",
        "num",
        "count",
        "limit",
        "used",
        "remaining",
        "input",
        "output",
        "prompt",
        "completion",
        "cache",
        "thinking",
        "estimated",
        "reasoning",
        "budget",
        "page",
        "next",
        "continuation",
        "cancellation",
        "cursor",
    }
)
#: environment variable names are redacted a little more eagerly (``MY_SERVICE_KEY``)
_ENV_WORDS = frozenset({"key", "keys", "pass", "pw"})

_SEPARATORS = re.compile(r"[-_.\s]+")
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def _words(key: str) -> list[str]:
    return [w.lower() for part in _SEPARATORS.split(key) for w in _WORDS.findall(part)]


def is_secret_key(key: str) -> bool:
    """Whether a key (a JSON key, a header, an option or variable name) names a credential."""
    if len(key) > 256:
        return False
    norm = _SEPARATORS.sub("", key.lstrip("-")).lower()
    if norm in SECRET_NAMES:
        return True
    if not norm.endswith(SECRET_SUFFIXES):
        return False
    if norm.endswith("token") and not NOT_CREDENTIAL_WORDS.isdisjoint(_words(key)):
        return False
    return True


def is_secret_env(name: str) -> bool:
    """An environment variable whose value is a credential."""
    if is_secret_key(name):
        return True
    words = _words(name)
    return bool(words) and words[-1] in _ENV_WORDS


class _SecretKeys:
    """The credential-key rule as a container: ``key in SECRET_KEYS``."""

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and is_secret_key(key)


SECRET_KEYS = _SecretKeys()

#: cbc 2.163.0 derives its anonymous account ids from the API key: ``"uid":
#: "anonymous_<the key's last 8 characters>"`` (and four more) beside ``"token": <the key>``
#: (probed: key ``sk-…0123456789`` gives ``anonymous_23456789``). A string next to a
#: credential that contains the credential's tail is a credential too.
TAIL = 8
#: deeper than this a structure is not walked: ``redact_obj`` redacts the subtree whole,
#: ``redact_line`` falls back to text redaction
MAX_DEPTH = 200

# -- token shapes -----------------------------------------------------------------------

_AUTH_SCHEMES = r"(?:Bearer|Basic|Token|Digest|Bot|ApiKey|Negotiate|OAuth)"
_SHAPES = re.compile(
    r"(?P<p1>(?i:\bbearer)\s+)(?P<v1>[A-Za-z0-9._~+/=-]{8,})"
    # (the blanks after the ``:`` and after an opening quote: one ``\s*`` each, never two
    # side by side, which split a long blank run every way: quadratic)
    r"|(?P<p2>(?i:\b(?:proxy-)?authori[sz]ation)\\?[\"']?\s*[:=]\s*(?:(?:\\[\"']?|[\"'])\s*)?"
    + _AUTH_SCHEMES
    + r"\s+)(?P<v2>[A-Za-z0-9._~+/=:-]{4,})"
    # a JWT: where a run of its characters starts (dashes before it aside), or after a
    # dash inside a run (``x-eyJ…``) with a header of at most 256 characters: unbounded
    # there, each ``-`` of ``-eyJ-eyJ…`` started a scan to the run's end (quadratic)
    r"|(?P<p3>(?<![A-Za-z0-9_-])-*)(?P<v3>eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*)"
    r"|(?<=-)(?P<v9>eyJ[A-Za-z0-9_-]{6,256}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*)"
    r"|(?P<v4>\bsk-[A-Za-z0-9_-]{12,})"
    r"|(?P<v5>\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}))"
    r"|(?P<v6>\bxox[abposre]-[A-Za-z0-9-]{10,})"
    r"|(?P<v7>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"
    r"|(?P<p8>(?<![\w+.-])[A-Za-z][\w+.-]{0,31}://[^\s/?#@:\"'<>\\]{0,256}:)"
    r"(?P<v8>[^\s/?#@\"'<>\\]{1,256})(?=@)"
)
_SHAPE_GROUPS = tuple((f"p{i}", f"v{i}") for i in range(1, 10))


def redact_values(text: str) -> tuple[str, int]:
    """``text`` with every token shape replaced, and how many were."""
    n = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal n
        for p, v in _SHAPE_GROUPS:
            if m.group(v) is not None:
                n += 1
                return (m.group(p) if p in m.groupdict() and m.group(p) else "") + REDACTED
        return m.group(0)  # pragma: no cover - one group always matched

    out = _SHAPES.sub(sub, text)
    return (out, n) if n else (text, 0)


# -- structures -------------------------------------------------------------------------


class _TooDeep(Exception):
    pass


def _holds_value(v: Any) -> bool:
    if v is None or isinstance(v, bool) or v == REDACTED:
        return False
    if isinstance(v, (str, list, dict)):
        return len(v) > 0
    return True


def _scrub(obj: Any, strip: bool, deep: bool, depth: int = 0) -> tuple[Any, int]:
    if depth > MAX_DEPTH and isinstance(obj, (dict, list)):
        if not deep:
            raise _TooDeep
        return REDACTED, 1
    if isinstance(obj, str):
        return redact_values(obj)
    if isinstance(obj, dict):
        return _scrub_dict(obj, strip, deep, depth)
    if isinstance(obj, list):
        n = 0
        items = []
        for v in obj:
            r, m = _scrub(v, strip, deep, depth + 1)
            items.append(r)
            n += m
        return (items, n) if n else (obj, 0)
    return obj, 0


#: what a stripped entry of an object becomes (left out)
_GONE = object()


def _scrub_dict(obj: dict[Any, Any], strip: bool, deep: bool, depth: int) -> tuple[Any, int]:
    n = 0
    out: dict[str, Any] = {}
    tails = [
        v[-TAIL:]
        for k, v in obj.items()
        if isinstance(v, str)
        and len(v) >= TAIL
        and v != REDACTED
        and isinstance(k, str)
        and is_secret_key(k)
    ]
    for k, v in obj.items():
        r, m = _scrub_entry(k, v, tails, strip, deep, depth)
        if r is not _GONE:
            out[k] = r
        n += m
    return (out, n) if n else (obj, 0)


def _scrub_entry(
    k: Any, v: Any, tails: list[str], strip: bool, deep: bool, depth: int
) -> tuple[Any, int]:
    """What the value of an object's entry becomes (``_GONE`` when stripped), and how many
    credentials it held. ``tails``: the ends of the object's credentials."""
    if _is_credential(k, v, strip):
        return (_GONE if strip else REDACTED), int(v != REDACTED)
    if tails and isinstance(v, str) and any(t in v for t in tails):
        return (_GONE if strip else _without_tails(v, tails)), 1
    return _scrub(v, strip, deep, depth + 1)


def _is_credential(k: Any, v: Any, strip: bool) -> bool:
    """A credential key's value to redact (or, stripping, an entry to leave out)."""
    secret = isinstance(k, str) and is_secret_key(k)
    return secret and (_holds_value(v) or (strip and v == REDACTED))


def _without_tails(v: str, tails: list[str]) -> str:
    """A string that holds the end of a credential: ends and token shapes replaced."""
    for t in tails:
        v = v.replace(t, REDACTED)
    return redact_values(v)[0]


def redact_obj(obj: Any) -> tuple[Any, int]:
    """A copy of ``obj`` with credential values replaced, and how many were (``obj``
    itself when none was). A subtree nested deeper than ``MAX_DEPTH`` is redacted whole."""
    return _scrub(obj, strip=False, deep=True)


def strip_obj(obj: Any) -> tuple[Any, int]:
    """A copy of ``obj`` without credential-named keys (at any depth) and the values
    derived from them (token shapes in other strings are replaced), and how many went."""
    return _scrub(obj, strip=True, deep=True)


# -- lines (captures) -------------------------------------------------------------------


#: a credential key as a line may write it: looked for in the line lower-cased and without
#: ``-``, ``_`` and ``.`` (so ``X_API_KEY``, ``x-api-key`` and ``apiKey`` all read
#: ``apikey``), as the word before a ``:`` or ``=`` (a JSON key, ``KEY=v``, ``Header: v``;
#: quotes and blanks between them skipped); or a ``Bearer`` token. Walking the separators
#: is one C-level scan for a line that has none (an over-long line of text).
_KEY_ENDS = tuple(w.encode() for w in sorted({*SECRET_SUFFIXES, *SECRET_NAMES}))
_KEY_SEP = re.compile(rb"[:=]")
_BEARER = re.compile(rb"bearer\s")
#: an option (``--api-key VALUE``): classified one by one, in lines that have one
_FLAG_HINT = re.compile(rb"--([A-Za-z][\w.-]{0,127})[ \t=]")
#: token shapes: a literal each contains (a fast ``in`` test), then a looser form of the
#: shape (``None``: the literal is enough); ``\u`` escapes may spell anything
_VALUE_HINTS: tuple[tuple[bytes, re.Pattern[bytes] | None], ...] = (
    (
        b"eyJ",
        re.compile(rb"(?<![A-Za-z0-9_-])-*eyJ[A-Za-z0-9_-]{6,}\.|(?<=-)eyJ[A-Za-z0-9_-]{6,256}\."),
    ),
    (b"sk-", re.compile(rb"sk-[A-Za-z0-9_-]{12}")),
    (b"gh", re.compile(rb"gh[pousr]_[A-Za-z0-9]{20}|github_pat_")),
    (b"xox", re.compile(rb"xox[a-z]-")),
    (b"AKIA", None),
    (b"ASIA", None),
    (b"://", re.compile(rb"://[^\s/?#\"'@]{0,600}@")),
    (b"\\u", None),
)
_FOLD = bytes.maketrans(b"", b"")


def may_hold_secret(line: bytes) -> bool:
    """A cheap superset of what the rules can find in a line (``False``: nothing to hide)."""
    for needle, shape in _VALUE_HINTS:
        if needle in line and (shape is None or shape.search(line) is not None):
            return True
    low = line.lower().translate(_FOLD, b"-_.")
    if b"bearer" in low and _BEARER.search(low) is not None:
        return True
    for m in _KEY_SEP.finditer(low):
        at = m.start()
        if low[max(0, at - 40) : at].rstrip(b" \t\"'\\").endswith(_KEY_ENDS):
            return True
    return b"--" in line and any(
        is_secret_key(m.group(1).decode("ascii")) for m in _FLAG_HINT.finditer(line)
    )


def redact_line(line: bytes) -> bytes:
    """``line`` with credentials replaced; unchanged (the same object) when it has none.
    A JSON line is redacted structurally, anything else as text; never raises."""
    if not may_hold_secret(line):
        return line
    try:
        obj = frames.loads(line)
    except Exception:
        return redact_text_bytes(line)
    try:
        red, n = _scrub(obj, strip=False, deep=False)
        return frames.dumps(red) if n else line
    except Exception:
        return redact_text_bytes(line)


def redact_text_bytes(data: bytes) -> bytes:
    """``redact_text`` for bytes that may not be UTF-8 (undecodable bytes kept)."""
    text = data.decode("utf-8", "surrogateescape")
    out = redact_text(text)
    return data if out is text else out.encode("utf-8", "surrogateescape")


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """Credential variables' values replaced; the others' text redacted (a URL's
    password, a token in a command line)."""
    return {
        k: (REDACTED if is_secret_env(k) and v else redact_text(v) if isinstance(v, str) else v)
        for k, v in env.items()
    }


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with credentials replaced: the value of a credential option
    (``--api-key VALUE``, ``--api-key=VALUE``), credentials inside a JSON argument
    (``--mcp-config '{"mcpServers":…}'``, ``--settings``), and text in any other one."""
    out: list[str] = []
    secret_next = False
    for a in argv:
        if not isinstance(a, str):
            out.append(a)
            continue
        if secret_next:
            secret_next = False
            if not a.startswith("-"):
                out.append(REDACTED if a else a)
                continue
        if a.startswith("-") and not a.startswith("---"):
            name, eq, value = a.partition("=")
            if is_secret_key(name):
                if eq:
                    out.append(f"{name}={REDACTED}" if value else a)
                else:
                    secret_next = True
                    out.append(a)
                continue
        out.append(_redact_arg(a))
    return out


def _redact_arg(a: str) -> str:
    if a.lstrip()[:1] in ("{", "["):
        try:
            red, n = _scrub(frames.loads(a), strip=False, deep=False)
            return frames.dumps(red).decode() if n else a
        except Exception:
            pass
    return redact_text(a)


# -- text (logs, stderr, lines that are not JSON) ----------------------------------------

#: ``key: v`` / ``"key": "v"`` / ``'key'='v'`` / ``\"key\":\"v\"`` (a key followed by
#: ``:`` or ``=``), or ``--flag v`` / ``--flag=v``
_TEXT_KEY = re.compile(
    r"(?<![\w.\-\\])(?:"
    r"(?P<flag>--?[A-Za-z][\w.-]{0,127})(?P<fsep>=|[ \t]+)"
    r"|(?P<q>\\?[\"'])?(?P<key>[A-Za-z_][\w.-]{0,127})(?(q)(?P=q))[ \t]*[:=][ \t]*"
    r")"
)
_SCHEME = re.compile(_AUTH_SCHEMES + r"[ \t]+", re.IGNORECASE)
_BARE = re.compile(r"[^\s\"',;}&)\]]+")
_TO_EOL = re.compile(r"[^\r\n\"']+")
_QUOTES = ('\\"', '"', "'")


def _quoted_end(text: str, start: int, q: str) -> int:
    """The index of the quote ``q`` closing a string whose content starts at ``start``
    (an escaped quote does not close it); ``len(text)`` when it is not closed."""
    i = start
    while True:
        j = text.find(q, i)
        if j < 0:
            return len(text)
        k = j
        while k > start and text[k - 1] == "\\":
            k -= 1
        if (j - k) % 2 == 0:
            return j
        i = j + 1


def _bracket_end(text: str, start: int) -> int:
    """The index just past the bracket that closes the one at ``start`` (strings in
    ``"`` or ``'`` skipped); ``len(text)`` when it is never closed."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            i = _quoted_end(text, i + 1, c) + 1
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _value_span(text: str, p: int, key: str, q: str) -> tuple[int, int, str] | None:
    """(start, end, replacement) of the value that starts at ``p``; None when there is
    nothing to hide."""
    for quote in _QUOTES:
        if text.startswith(quote, p):
            return _quoted_span(text, p + len(quote), quote)
    if p < len(text) and text[p] in "{[":
        return _bracket_span(text, p, q)
    return _bare_span(text, p, key)


def _quoted_span(text: str, s: int, quote: str) -> tuple[int, int, str] | None:
    """A value in quotes, its content starting at ``s`` (an auth scheme kept)."""
    e = _quoted_end(text, s, quote)
    value = text[s:e]
    if not value or value == REDACTED:
        return None
    m = _SCHEME.match(value)
    if m is not None and m.end() < len(value):
        s += m.end()
    return s, e, REDACTED


def _bracket_span(text: str, p: int, q: str) -> tuple[int, int, str] | None:
    """An object or list at ``p``, redacted whole (as a string in the key's quotes)."""
    e = _bracket_end(text, p)
    if e - p <= 2 and text[p:e] in ("{}", "[]"):
        return None
    quote = q or '"'
    return p, e, quote + REDACTED + quote


def _bare_span(text: str, p: int, key: str) -> tuple[int, int, str] | None:
    """A value without quotes at ``p`` (an auth scheme kept; a cookie runs to the end of
    the line)."""
    m = _SCHEME.match(text, p)
    if m is not None:
        p = m.end()
    pattern = _TO_EOL if "cookie" in key.lower() else _BARE
    m = pattern.match(text, p)
    if m is None:
        return None
    value = m.group(0).rstrip()
    if value in (REDACTED, "null", "None", "true", "false", "True", "False"):
        return None
    return p, p + len(value), REDACTED


def redact_text(text: str) -> str:
    """``text`` (a log message, a stderr line, a line that is not JSON) with
    credential-looking values replaced: the token shapes, and the value after a credential
    key (JSON, Python repr, ``KEY=value``, ``Header: value``, ``--flag value``). Returns
    ``text`` itself when there is nothing to hide; never raises."""
    if not text:
        return text
    try:
        return _redact_text(text)
    except Exception:  # pragma: no cover - defensive: a log line must never fail
        return REDACTED


def _redact_text(text: str) -> str:
    parts: list[str] = []
    pos = 0
    for m in _TEXT_KEY.finditer(text):
        if m.start() < pos:
            continue
        key = m.group("flag") or m.group("key") or ""
        if not is_secret_key(key):
            continue
        span = _value_span(text, m.end(), key, m.group("q") or "")
        if span is None:
            continue
        s, e, rep = span
        parts.append(text[pos:s])
        parts.append(rep)
        pos = e
    if parts:
        parts.append(text[pos:])
        text = "".join(parts)
    out, _ = redact_values(text)
    return out
