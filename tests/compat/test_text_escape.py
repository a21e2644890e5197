"""``compat.text``: the one escaping of what a peer sends, before any terminal or log.

``escape`` (text) and ``escape_json`` (JSON text) never let a character of the unsafe
classes through (C0, DEL, C1, bidi controls, zero-width and line separators, lone
surrogates), for any input; text without one is left as it is; on text without a backslash
``escape`` is injective (``unescape`` below reads every input back), and a backslash is
kept as it is (decided: ``compat.text``'s docstring); ``escape_json`` keeps the JSON value.
And it is the only one: no other module defines an ``escape`` of its own.
"""

from __future__ import annotations

import ast
import json
import re
import unicodedata
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from compat.text import UNSAFE_RANGES, clip, escape, escape_json

ROOT = Path(__file__).resolve().parents[2]

#: the classes the issue names, spelled out independently of compat.text
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
INVISIBLE = "\u200b\u200c\u200d\u2028\u2029\u2060\ufeff"
UNSAFE = re.compile(
    "[\x00-\x1f\x7f\x80-\x9f" + BIDI + INVISIBLE + "\ud800-\udfff]",
)

#: any text, lone surrogates included (hypothesis leaves category Cs out by default)
ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=200)
NASTY = st.sampled_from(
    ["\x1b]0;pwned\x07", "\x1b[31m", "\x9b", "\x7f", "\u202e", "\u2066", "\x00", "\r", "\\"]
)
#: text rich in the characters that matter: unsafe ones, backslashes, escape look-alikes
MIXED = st.lists(st.one_of(NASTY, st.sampled_from(["x1b", "u202e", "n", "a"]), ANY_TEXT)).map(
    "".join
)


def unescape(text: str) -> str:
    """``escape``'s inverse on what it made of a text without a backslash."""
    named = {"n": "\n", "t": "\t"}

    def one(m: re.Match[str]) -> str:
        body = m.group(1)
        return named[body] if body in named else chr(int(body[1:], 16))

    return re.sub(r"\\(n|t|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})", one, text)


@given(MIXED)
def test_escape_never_lets_an_unsafe_character_through(text: str) -> None:
    out = escape(text)
    assert not UNSAFE.search(out), ascii(out)
    out.encode("utf-8")  # a terminal can be written it (no lone surrogate left)


@given(MIXED)
def test_escape_json_never_lets_an_unsafe_character_through_but_a_newline(text: str) -> None:
    out = escape_json(text)
    assert not UNSAFE.search(out.replace("\n", "")), ascii(out)


@given(ANY_TEXT)
def test_escape_is_injective_on_text_without_a_backslash(text: str) -> None:
    text = text.replace("\\", "/")
    assert unescape(escape(text)) == text


@given(ANY_TEXT)
def test_safe_text_and_backslashes_are_left_as_they_are(text: str) -> None:
    """Readable: what needs no escape is shown as it is, backslashes too (a message that
    quotes a peer's string with ``repr`` keeps its one level of escapes)."""
    safe = UNSAFE.sub("", "".join(c for c in text if not _unsafe_category(c)))
    assert escape(safe) == safe
    assert escape(repr("\x1b]0;pwned\x07")) == repr("\x1b]0;pwned\x07")
    assert escape("C:\\Users\\x1b") == "C:\\Users\\x1b"


#: JSON values (orjson writes no lone surrogate: none in their strings)
JSON_TEXT = ANY_TEXT.filter(lambda s: not re.search("[\ud800-\udfff]", s))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(JSON_TEXT, inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_escape_json_keeps_the_json_value(value: object) -> None:
    for option in (0, orjson.OPT_INDENT_2):
        text = orjson.dumps(value, option=option).decode()
        out = escape_json(text)
        assert json.loads(out) == value
        assert not UNSAFE.search(out.replace("\n", ""))


def test_the_reported_sequences_are_shown_escaped() -> None:
    assert escape("\x1b]0;pwned\x07") == "\\x1b]0;pwned\\x07"
    assert escape("\x1b[31mred") == "\\x1b[31mred"
    assert escape("\x9b31m\x7f") == "\\x9b31m\\x7f"
    assert escape("a\u202eb\u2066c\u200bd\u2028e\ufeff") == (
        "a\\u202eb\\u2066c\\u200bd\\u2028e\\ufeff"
    )
    assert escape("tab\there\nnl\r") == "tab\\there\\nnl\\x0d"  # one line, readable
    assert escape("\ud83d lone") == "\\ud83d lone"
    assert escape("tag\U000e0041") == "tag\\U000e0041"
    assert escape_json('"\x9b\u202e\U000e0041"') == '"\\u009b\\u202e\\udb40\\udc41"'


def _unsafe_category(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")


def test_the_unsafe_ranges_cover_every_control_format_and_separator_character() -> None:
    """Every character of categories Cc, Cf, Zl, Zp and Cs this Python knows is escaped
    (a newer Unicode adding a format character fails here: add it to UNSAFE_RANGES)."""
    covered = {c for a, b in UNSAFE_RANGES for c in range(a, b + 1)}
    missing = [
        f"U+{c:04X}" for c in range(0x110000) if _unsafe_category(chr(c)) and c not in covered
    ]
    assert not missing
    everything = "".join(chr(c) for c in sorted(covered))
    assert not UNSAFE.search(escape(everything))
    assert not any(_unsafe_category(c) for c in escape(everything))


def test_clip_bounds_a_name() -> None:
    assert clip("short") == "short"
    assert clip("x" * 64) == "x" * 64
    long = clip("y" * 1_000_000)
    assert len(long) == 64
    assert long.endswith("…")
    assert clip("abcdef", 4) == "abc…"


def _defs_and_imports(path: Path) -> tuple[list[str], list[str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defs = [
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef)
        and n.name in ("escape", "terminal_safe_json", "escape_json")
    ]
    imports = [
        f"{n.module}.{a.name}"
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module
        for a in n.names
        if a.name in ("escape", "escape_json", "terminal_safe_json")
        and n.module not in ("compat.text", "html")
    ]
    return defs, imports


def test_there_is_one_escaping_function() -> None:
    """``compat.text`` defines it; nothing else defines or re-exports an ``escape``."""
    files = [
        p
        for top in ("compat", "bridge", "analysis", "harness", "bench", "tests")
        for p in sorted((ROOT / top).rglob("*.py"))
    ]
    found = {}
    for p in files:
        defs, imports = _defs_and_imports(p)
        if p != ROOT / "compat" / "text.py" and (defs or imports):
            found[str(p.relative_to(ROOT))] = (defs, imports)
    assert not found
