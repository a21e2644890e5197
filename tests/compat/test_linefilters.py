"""The byte-level line filters (compat/linefilters.py): what they make of a line is what a
parse, a filter of the object and a re-serialization would make, byte for byte, and a line
they cannot decide is left to the parse (``None``)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from compat.frames import dumps, loads
from compat.linefilters import (
    PRIVATE,
    PRIVATE_FIELDS,
    PrivateTail,
    block_meta_before,
    cut,
    escape_line_separators,
)

KEYS = st.text(st.characters(codec="utf-8", exclude_characters="_\\"), min_size=1, max_size=6)
LEAF = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
VALUE = st.recursive(LEAF, lambda c: st.lists(c, max_size=3) | st.dictionaries(KEYS, c, max_size=3))
PUBLIC = st.dictionaries(KEYS, VALUE, min_size=1, max_size=5)
STAMP = "2026-11-29T10:53:11.335Z"


def line(obj: dict[str, Any]) -> bytes:
    return dumps(obj)


def private_run(n: int) -> dict[str, Any]:
    """cbc's trailing run: ``n`` of its private fields, the stamp last."""
    run: dict[str, Any] = {"_requestId": "rq1", "_messageId": "m1", "_meta": {"a": 1}}
    return {**dict(list(run.items())[:n]), "__timestamp": STAMP}


@given(PUBLIC, st.integers(0, 3))
def test_a_trailing_run_is_cut_to_the_public_line(public: dict[str, Any], n: int) -> None:
    raw = line({**public, **private_run(n)})
    found = PrivateTail().find(raw)
    if found is None:  # a string starting "_", or an escape, before the run: a parse
        assert b'"_' in line(public) or b"\\u" in raw
        return
    at, fields = found
    assert fields == n + 1
    assert cut(raw, at) == line(public)
    assert loads(cut(raw, at)) == public


def test_a_run_proved_once_is_known_again_with_another_stamp() -> None:
    tail = PrivateTail()
    first = line({"type": "assistant", **private_run(3)})
    assert tail.find(first) == (first.index(b',"_'), 4)
    again = first.replace(STAMP.encode(), b"2026-11-29T10:53:12.001Z")
    assert tail.find(again) == (again.index(b',"_'), 4)


@given(PUBLIC)
def test_a_line_without_private_fields_is_left_as_it_is(public: dict[str, Any]) -> None:
    raw = line(public)
    found = PrivateTail().find(raw)
    assert found in ((-1, 0), None)
    if found is None:  # "_" opening a string that is no key, an escape: a parse
        assert b'"_' in raw or b"\\u" in raw


def test_what_only_a_parse_can_tell_is_left_to_it() -> None:
    tail = PrivateTail()
    # errors_info mid-object, a private field before a public one, an escaped key
    assert tail.find(b'{"errors_info":[],"type":"result","_meta":{}}') is None
    assert tail.find(b'{"_meta":{},"type":"result"}') is None
    assert tail.find(b'{"type":"x","\\u005fmeta":1}') is None
    # a string that starts with "_" in a list is no private field
    assert tail.find(b'{"type":"x","names":["a","_compact"]}') is None


def test_a_user_lines_block_meta_needs_the_parse() -> None:
    raw = b'{"type":"user","message":{"content":[{"_meta":{}}]},"_requestId":"r"}'
    at = raw.index(b',"_requestId"')
    assert block_meta_before(raw, at)
    assert not block_meta_before(b'{"type":"assistant","x":1,"_meta":{}}', 20)


def test_every_private_field_is_named_once() -> None:
    assert set(PRIVATE_FIELDS) == PRIVATE


@given(st.text(max_size=20))
def test_line_separators_become_escapes_of_the_same_value(text: str) -> None:
    raw = json.dumps({"t": text + "\u2028\u2029"}, ensure_ascii=False).encode()
    escaped = escape_line_separators(raw)
    assert "\u2028".encode() not in escaped
    assert "\u2029".encode() not in escaped
    assert json.loads(escaped) == json.loads(raw)
    assert escape_line_separators(escaped) is escaped  # nothing left: the same object
