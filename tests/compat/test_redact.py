"""Secrets never leave, by pattern (``compat.redact``): credential key names classified
case-insensitively whatever their separators, token shapes whatever their key, structural
redaction of JSON lines with a text fallback that never raises, and no ordinary key of the
reference captures touched."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat import frames
from compat.redact import (
    REDACTED,
    SECRET_KEYS,
    is_secret_env,
    is_secret_key,
    may_hold_secret,
    redact_argv,
    redact_env,
    redact_line,
    redact_obj,
    redact_text,
    redact_values,
    strip_obj,
)
from tests.compat.control_support import cr, engine, replay, stdout_frame
from tests.conftest import CAPTURES

#: names that reached the client or a capture with the exact, case-sensitive key list
LEAKING = [
    "x-api-key",
    "X-Api-Key",
    "X_API_KEY",
    "apikey",
    "APIKey",
    "api-key",
    "bearer",
    "credentials",
    "Credentials",
    "jwt",
    "JWT",
    "privateKey",
    "private_key",
    "PRIVATE-KEY",
    "secretKey",
    "aws_secret_access_key",
    "AWS_SECRET_ACCESS_KEY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "client_secret",
    "clientSecret",
    "password",
    "Password",
    "passwd",
    "db_password",
    "set-cookie",
    "Set-Cookie",
    "cookie",
    "refresh_token",
    "csrfToken",
    "accessToken",
    "webhook_secret",
    "OPENAI_API_KEY",
    "stripe_api_key",
    "authorization",
    "Proxy-Authorization",
    "passphrase",
    "id_token",
    "sessionToken",
    "auth",
]
#: ordinary keys that look like credentials: counters, cursors, descriptive names
ORDINARY = [
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "max_tokens",
    "maxThinkingTokens",
    "max_thinking_tokens",
    "totalTokens",
    "total_tokens",
    "token_count",
    "tokenCount",
    "tokens",
    "max_token",
    "maxOutputToken",
    "authMethod",
    "auth_method",
    "apiKeySource",
    "tokenSource",
    "tokenType",
    "token_type",
    "apiKeyHelper",
    "nextPageToken",
    "page_token",
    "secretName",
    "passwordPolicy",
    "cookiesEnabled",
    "session_id",
    "signature",
    "keys",
    "primaryKey",
    "key",
    "author",
    "credits",
    "truncatedByTokenCap",
    "output_tokens_details",
]
#: the credential keys the reference captures hold (all dummy values)
CAPTURE_CREDENTIAL_KEYS = {"token", "ANTHROPIC_API_KEY", "CODEBUDDY_API_KEY"}


@pytest.mark.parametrize("key", LEAKING)
def test_credential_names_are_recognised_whatever_their_spelling(key: str) -> None:
    assert is_secret_key(key)
    assert key in SECRET_KEYS  # the contract's test (analysis.contract) reads the same rule
    red, n = redact_obj({"type": "x", key: "v4lue-that-leaks"})
    assert (red[key], n) == (REDACTED, 1)


@pytest.mark.parametrize("key", ORDINARY)
def test_counters_and_descriptive_keys_are_not_credentials(key: str) -> None:
    assert not is_secret_key(key)
    obj = {key: "none", "n": {key: 5}}
    assert redact_obj(obj) == (obj, 0)


def _keys(obj: Any) -> Iterator[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _keys(v)
    elif isinstance(obj, str) and obj[:1] in "{[":
        try:
            yield from _keys(json.loads(obj))
        except ValueError:
            pass


def _capture_lines(reference: Path) -> Iterator[bytes]:
    for root in (reference, CAPTURES):
        for p in sorted(root.rglob("*.jsonl")):
            yield from p.read_bytes().splitlines()


def test_no_ordinary_key_of_the_captures_is_a_credential(reference: Path) -> None:
    keys: set[str] = set()
    for raw in _capture_lines(reference):
        try:
            keys.update(_keys(orjson.loads(raw)))
        except orjson.JSONDecodeError:
            pass
    assert len(keys) > 400  # every frame shape of both CLIs, transcripts' records included
    assert {k for k in keys if is_secret_key(k)} == CAPTURE_CREDENTIAL_KEYS


def test_capture_lines_change_only_where_a_credential_was(reference: Path) -> None:
    """Every line of the captures stays byte-identical unless it holds a credential key or
    shape; where it changes, only those values became ``REDACTED``."""
    changed = 0
    for raw in _capture_lines(reference):
        out = redact_line(raw)
        if out is raw:
            continue
        changed += 1
        assert REDACTED.encode() in out
        try:
            before, after = orjson.loads(raw), orjson.loads(out)
        except orjson.JSONDecodeError:
            continue
        assert _keys(before).__next__() == _keys(after).__next__()
        assert json.dumps(after).count(REDACTED) >= 1
    assert changed > 0


def test_init_frames_and_initialize_replies_keep_their_source_names(reference: Path) -> None:
    """``apiKeySource`` (``none``, ``ANTHROPIC_API_KEY``, ``www.codebuddy.ai``) and
    ``tokenSource`` name a source, not a credential: kept in init frames and replies."""
    seen = 0
    for raw in _capture_lines(reference):
        if b'"apiKeySource"' not in raw and b'"tokenSource"' not in raw:
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        red, _ = redact_obj(obj)
        for a, b in zip(_sources(obj), _sources(red), strict=True):
            assert a == b
            seen += 1
    assert seen > 50


def _sources(obj: Any) -> Iterator[Any]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("apiKeySource", "tokenSource"):
                yield v
            yield from _sources(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _sources(v)


def test_a_credential_object_or_list_is_redacted_whole() -> None:
    obj = {
        "credentials": {"user": "u", "pw": "p"},
        "tokens": [1, 2],
        "headers": {"Authorization": ["Bearer abc", "x"]},
        "auth": {"a": 1},
        "cookie": [],
        "password": None,
        "secret": True,
    }
    red, n = redact_obj(obj)
    assert red == {
        "credentials": REDACTED,
        "tokens": [1, 2],
        "headers": {"Authorization": REDACTED},
        "auth": REDACTED,
        "cookie": [],
        "password": None,
        "secret": True,
    }
    assert n == 3
    stripped, m = strip_obj(obj)
    assert stripped == {
        "tokens": [1, 2],
        "headers": {},
        "cookie": [],
        "password": None,
        "secret": True,
    }
    assert m == 3


SHAPES = {
    "Bearer": ("curl -H 'X: Bearer abcdefghijklmnop1234'", "abcdefghijklmnop1234"),
    "Basic": ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    "Token": ('{"Authorization": "Token 0123456789abcdef"}', "0123456789abcdef"),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl", "eyJhbGciOiJIUzI1NiJ9"),
    "sk": ("key sk-proj-ABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNOP"),
    "sk-ant": ("sk-ant-api03-ABCDEFGHIJKLMNOPQRST-xyz", "ABCDEFGHIJKLMNOPQRST"),
    "ghp": ("ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    "gho": ("gho_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    "ghs": ("ghs_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    "github_pat": ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "abcdefghijklmnop"),
    "slack": ("xoxb-123456789012-abcdefghijkl", "abcdefghijkl"),
    "aws": ("id AKIAIOSFODNN7EXAMPLE here", "IOSFODNN7EXAMPLE"),
    "url": ("https://alice:s3cr3tpw@git.example.com/repo.git", "s3cr3tpw"),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_token_shapes_are_redacted_whatever_their_key(name: str) -> None:
    text, secret = SHAPES[name]
    assert secret not in redact_text(text)
    red, n = redact_obj({"type": "x", "message": {"content": [{"text": text}]}})
    assert secret not in json.dumps(red)
    assert n >= 1
    line = orjson.dumps({"note": text})
    assert secret.encode() not in redact_line(line)
    assert secret.encode() not in redact_line(b"not json: " + text.encode())


def test_url_userinfo_keeps_the_user_and_host() -> None:
    assert redact_text("clone https://alice:pw@h.example/x and http://h/y") == (
        f"clone https://alice:{REDACTED}@h.example/x and http://h/y"
    )
    assert redact_text("mail bob@example.com at https://h/x?a=b:c@d") == (
        "mail bob@example.com at https://h/x?a=b:c@d"
    )


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("x-api-key: k3yk3yk3y", "k3yk3yk3y"),
        ("X-API-KEY=k3yk3yk3y", "k3yk3yk3y"),
        ("Authorization: Token abcd1234", "abcd1234"),
        ("Proxy-Authorization: Digest zzzzyyyy", "zzzzyyyy"),
        ("Cookie: session=abc; theme=dark", "session=abc"),
        ("Set-Cookie: sid=abc123; Path=/; HttpOnly", "sid=abc123"),
        ("GITHUB_TOKEN=gh-secret-1", "gh-secret-1"),
        ("aws_secret_access_key = wJalrXUtnFEMI", "wJalrXUtnFEMI"),
        ("{'privateKey': 'MIIEvQIBADAN'}", "MIIEvQIBADAN"),
        ('{"client_secret":"cs-123","n":1}', "cs-123"),
        ('{\\"password\\":\\"hunter2\\"}', "hunter2"),
        ('{"credentials": {"user": "u", "pass": "hunter2"}, "x": 1}', "hunter2"),
        ("cbc --api-key hunter2 -p", "hunter2"),
        ("cbc --api-key=hunter2", "hunter2"),
        ("passwd: hunter2", "hunter2"),
        ('jwt="abc.def.ghi"', "abc.def.ghi"),
    ],
)
def test_text_redaction_finds_the_value_after_a_credential_key(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert REDACTED in out


def test_text_redaction_leaves_ordinary_text_alone() -> None:
    for text in (
        "usage: total_tokens=5, 3 tokens",
        "max_tokens: 4096 input_tokens=3",
        "apiKeySource: none",
        "authMethod: oauth",
        "the secret is safe",
        "token counting",
        "Bearer",
        "password: true",
        "task-started sk-1",
        "ERROR: no api key configured",
        "tokenSource=none",
    ):
        assert redact_text(text) is text


def test_argv_and_env_are_redacted_option_by_option() -> None:
    mcp = json.dumps(
        {
            "mcpServers": {
                "x": {
                    "url": "https://u:pw1@h/mcp",
                    "headers": {"Authorization": "Bearer abcdefghij"},
                }
            }
        }
    )
    argv = [
        "cbc",
        "--api-key",
        "V1",
        "--api-key=V2",
        "--mcp-config",
        mcp,
        "--token",
        "V3",
        "-p",
        "--max-tokens",
        "5",
        "--settings",
        '{"apiKey":"V4"}',
        "say hi",
    ]
    out = redact_argv(argv)
    text = json.dumps(out)
    for secret in ("V1", "V2", "V3", "V4", "abcdefghij", "pw1"):
        assert secret not in text
    assert out[:2] == ["cbc", "--api-key"]
    assert out[8:11] == ["-p", "--max-tokens", "5"]
    assert out[-1] == "say hi"
    env = redact_env(
        {
            "CODEBUDDY_API_KEY": "a",
            "ANTHROPIC_AUTH_TOKEN": "b",
            "MY_SERVICE_KEY": "c",
            "ANTHROPIC_BASE_URL": "http://u:pw2@h",
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "8000",
            "CCBRIDGE_PROFILE": "identity",
            "CCBRIDGE_BACKEND": "cbc --api-key pw3",
        }
    )
    assert env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "8000"
    assert env["CCBRIDGE_PROFILE"] == "identity"
    for secret in ("pw2", "pw3"):
        assert secret not in json.dumps(env)
    assert [k for k, v in env.items() if v == REDACTED] == [
        "CODEBUDDY_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "MY_SERVICE_KEY",
    ]
    assert is_secret_env("NPM_TOKEN")
    assert not is_secret_env("CODEBUDDY_DISABLE_AUTO_MEMORY")


def test_lines_that_structural_redaction_cannot_rewrite_fall_back_to_text() -> None:
    deep = b"[" * 300 + b'{"token":"s3cret-deep"}' + b"]" * 300  # orjson writes 255 levels
    surrogate = b'{"text":"half \\ud83d emoji","token":"s3cret-sur"}'
    big = BIG_INT_LINE
    invalid = b'{"token":"s3cret-inv", oops'
    latin1 = b'\xff\xfe{"password":"s3cret-bin"}'
    for raw in (deep, surrogate, big, invalid, latin1):
        out = redact_line(raw)
        assert b"s3cret" not in out, raw[:40]
    assert redact_line(latin1).startswith(b"\xff\xfe")


BIG_INT_LINE = b'{"n":123456789012345678901234567890,"apiKey":"s3cret-big"}'


@pytest.mark.skipif(
    not isinstance(frames.loads(b"123456789012345678901234567890"), int),
    reason="compat.frames.loads reads integers above 2**64 as floats (its "
    "robust version is another item of issue 8)",
)
def test_a_redacted_line_keeps_the_digits_of_big_integers() -> None:
    assert b"123456789012345678901234567890" in redact_line(BIG_INT_LINE)


def test_the_initialize_reply_is_redacted_by_pattern() -> None:
    """The stream (rule ``initialize-reply``): credential names beyond ``account.token``
    and token shapes in any string of the reply."""
    raw = stdout_frame(
        "mockoai_can-use-tool-allow",
        lambda f: (
            f.get("type") == "control_response"
            and "commands" in (f["response"].get("response") or {})
        ),
    )
    body = raw["response"]["response"]
    acc = {
        **body["account"],
        "GITHUB_TOKEN": "ghx-1",
        "credentials": {"k": "v-2"},
        "x-api-key": "k-3",
        "apiKeySource": "none",
    }
    body = {
        **body,
        "account": acc,
        "mcp": {"url": "https://u:pw-4@h/x", "note": "Bearer abcdefghij5"},
    }
    raw = {**raw, "response": {**raw["response"], "response": body}}
    eng = engine()
    run = replay(
        eng, extra=[(0.0, "client", cr("init", subtype="initialize")), (1.0, "backend", raw)]
    )
    [reply] = run.frames()
    text = json.dumps(reply)
    for secret in ("ghx-1", "v-2", "k-3", "pw-4", "abcdefghij5"):
        assert secret not in text
    account = reply["response"]["response"]["account"]
    assert account["apiKeySource"] == "none"
    assert account["tokenSource"] == body["account"].get("tokenSource", "none")


def test_redaction_never_raises_on_mutated_lines(reference: Path) -> None:
    """A seeded mutator over real capture lines (truncations, byte flips, credential
    names and shapes spliced in): ``redact_line`` and ``redact_text`` return, and a spliced
    credential value never survives."""
    rng = random.Random(8)
    lines = [ln for ln in _capture_lines(reference) if 20 < len(ln) < 20_000]
    rng.shuffle(lines)
    splices = [
        b'"GITHUB_TOKEN":"LEAK1234",',
        b'"x-api-key":{"a":"LEAK1234"},',
        b" Authorization: Token LEAK1234 ",
        b'"u":"https://a:LEAK1234@h",',
    ]
    for raw in lines[:1500]:
        op = rng.randrange(4)
        if op == 0:
            raw = raw[: rng.randrange(1, len(raw))]
        elif op == 1:
            b = bytearray(raw)
            for _ in range(3):
                b[rng.randrange(len(b))] = rng.randrange(256)
            raw = bytes(b)
        splice = rng.choice(splices)
        at = raw.find(b"{") + 1 if op == 2 else rng.randrange(len(raw) + 1)
        mutated = raw[:at] + splice + raw[at:]
        out = redact_line(mutated)
        assert isinstance(out, bytes)
        if op == 2 and mutated.startswith(b"{"):
            assert b"LEAK1234" not in out, mutated[:200]
        redact_text(mutated.decode("utf-8", "replace"))


_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"


@pytest.mark.parametrize("before", [" ", '"', "=", "--", "\n", "(", "", "x-", "a_b--"])
def test_a_jwt_that_starts_a_run_of_its_characters_is_found_in_text_and_lines(
    before: str,
) -> None:
    text = f"x{before}{_JWT} y" if before else f"{_JWT} y"  # (x-, a_b--: glued to a word)
    out, n = redact_values(text)
    assert n == 1
    assert _JWT not in out
    assert "eyJzdWIi" not in out
    assert may_hold_secret(text.encode())


@pytest.mark.parametrize("unit", ["-eyJ", "eyJ", "-", "a-eyJ", "-eyJa"])
def test_text_dense_with_jwt_prefixes_is_scanned_at_once(unit: str) -> None:
    """``\\beyJ`` started again after every ``-`` of ``-eyJ-eyJ…`` and read to the end of
    the run each time: 2.0 s on 80 KB, quadratic (the capture reads every line so, and a
    line is the backend's). A JWT is now looked for where a run of its characters starts,
    or after a dash with a bounded header: this returns, nothing found."""
    text = unit * (400_000 // len(unit))
    assert redact_values(text) == (text, 0)
    assert redact_line(text.encode()) == text.encode()


#: the ``Authorization: <scheme>`` prefix as redact_values read it before: ``\s*`` on
#: both sides of an optional ``\"`` took a long blank run every way it splits (quadratic)
_OLD_AUTH = r"(?P<p2>(?i:\b(?:proxy-)?authori[sz]ation)\\?[\"']?\s*[:=]\s*\\?[\"']?\s*"
_NEW_AUTH = (
    r"(?P<p2>(?i:\b(?:proxy-)?authori[sz]ation)\\?[\"']?\s*[:=]\s*(?:(?:\\[\"']?|[\"'])\s*)?"
)


def _shape_matches(pattern: re.Pattern[str], text: str) -> list[tuple[Any, ...]]:
    return [(m.span(), tuple(sorted(m.groupdict().items()))) for m in pattern.finditer(text)]


_BLANKS = st.sampled_from(["", " ", "  \t", "\n", " \n "])
_QUOTES_OR_NOT = st.sampled_from(["", "\\", '"', '\\"', "'", "\\'", '""'])
#: ``Authorization: Bearer <value>`` with each piece varied, left out or doubled
_AUTH_ATTEMPT = st.tuples(
    st.sampled_from(["authorization", "Proxy-Authorisation", "xauthorization", "AUTHORIZATION"]),
    _QUOTES_OR_NOT,
    _BLANKS,
    st.sampled_from([":", "=", "", "::"]),
    _BLANKS,
    _QUOTES_OR_NOT,
    _BLANKS,
    st.sampled_from(["Bearer", "Basic", "OAuth", "bearer", ""]),
    _BLANKS,
    st.sampled_from(["abcd", "ab", "tok:en/1=", "", '"']),
).map("".join)


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(_AUTH_ATTEMPT | st.sampled_from([" ", "x", "\\", '"', ":"]), max_size=4).map("".join)
)
def test_the_authorization_shape_is_found_as_before(text: str) -> None:
    from compat.redact import _SHAPES

    assert _NEW_AUTH in _SHAPES.pattern
    old = re.compile(_SHAPES.pattern.replace(_NEW_AUTH, _OLD_AUTH))
    assert _shape_matches(_SHAPES, text) == _shape_matches(old, text)


@pytest.mark.parametrize("quote", ["", '"', '\\"'])
def test_a_long_blank_run_after_authorization_is_scanned_at_once(quote: str) -> None:
    """``Authorization:`` then blanks that no scheme follows: the old pattern split the
    run between its two ``\\s*`` every way (1.9 s on 16 KB, growing with the square; a
    tool's output is text like any other); this returns, no shape found."""
    text = f"Authorization:{quote}" + " " * 500_000 + "x"
    assert redact_values(text) == (text, 0)
    assert redact_text(text).endswith(REDACTED)  # (the value after the key, as ever)
    assert redact_line(text.encode()).endswith(REDACTED.encode())
