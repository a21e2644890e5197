"""The byte-level line filters: rewrites that need no parse, in one place, with their own
tests (``tests/compat/test_linefilters.py``). The rules that apply them (``private-fields``,
``line-separators``: ``compat/stages/hygiene.py``) declare what they act on; the bytes are
edited here, and a line they cannot decide on its bytes is left to a parse (``None``).

``PrivateTail``: cbc writes its private top-level fields (``__timestamp``, ``_requestId``,
``_messageId``, ``_meta``, ``errors_info``) last, so the line without them is the line cut
before them. ``find`` says where, after checking that the trailing run holds private fields
only; a run it proved once (cbc repeats a message's ``_requestId``, ``_messageId`` and
``_meta`` on each of its frames, and only the closing stamp changes) is recognised again
without a parse.

``escape_line_separators``: U+2028/U+2029 written as the escapes ``\\u2028``/``\\u2029``
(the same JSON value), as Claude Code writes them (``compat.frames``, whose ``dumps`` uses
it for every line it writes).
"""

from __future__ import annotations

import re

from compat.frames import LINE_SEPARATORS as LINE_SEPARATORS
from compat.frames import escape_line_separators as escape_line_separators
from compat.frames import has_u_escape, loads

PRIVATE_FIELDS = ("__timestamp", "_requestId", "_messageId", "_meta", "errors_info")
PRIVATE = frozenset(PRIVATE_FIELDS)
_PRIVATE_KEYS = frozenset(f.encode() for f in PRIVATE_FIELDS)
#: the stamp cbc closes a line with (``,"__timestamp":"2026-11-29T10:53:11.335Z"}``)
_STAMP = re.compile(rb',"__timestamp":"[0-9A-Za-z:.+\-]*"\}')


class PrivateTail:
    """Finds the trailing run of private top-level fields of a JSON object's line."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        #: the last run proved well-formed, without its closing stamp, and its field count
        self._known: tuple[bytes, int] = (b"", 0)

    def find(self, raw: bytes) -> tuple[int, int] | None:
        """Where the trailing run of private top-level fields of the JSON object ``raw``
        starts (the index of the comma before it) and how many fields it has (``(-1, 0)``:
        the line holds no private field); None when only a parse can tell.

        Why the cut is right for valid JSON: ``,"_`` can only be a comma between members or
        array items followed by a string (inside a string, that ``"`` would end it and
        ``_`` could not follow). If ``{`` + the rest parses as an object, the rest closes
        exactly the object open at the comma, and since it ends the line that is the
        top-level object: the members after the comma are its last ones, and they are all
        private (checked). None comes before: no ``"_`` occurs before the first one, and
        neither ``"errors_info"`` nor an escape that could spell a key (``\\u``) does.
        A rest that is the known run plus a plain stamp is such a run without a parse."""
        at = raw.find(b'"_')
        if at < 0:
            return None if _may_hide_private(raw) else (-1, 0)
        cut = at - 1
        # the known run (it starts with its comma and a private key), or a private key
        known = self._known_at(raw, cut)
        if not (known or _private_key_at(raw, at)) or _may_hide_private(raw, cut):
            return None
        return (cut, self._known[1]) if known else self._parsed_run(raw, at, cut)

    def _known_at(self, raw: bytes, cut: int) -> bool:
        """The rest of ``raw`` from ``cut`` is the known run and a plain stamp."""
        run = self._known[0]
        return (
            bool(run)
            and raw.startswith(run, cut)
            and _STAMP.fullmatch(raw, cut + len(run)) is not None
        )

    def _parsed_run(self, raw: bytes, at: int, cut: int) -> tuple[int, int] | None:
        """The run from ``at`` parsed: private fields only (then remembered with its
        stamp cut off, as the known run), or None."""
        try:
            tail = loads(b"{" + raw[at:])
        except ValueError:
            return None
        if type(tail) is not dict or not tail.keys() <= PRIVATE:
            return None
        stamp = raw.rfind(b',"__timestamp":"')
        if stamp > cut and _STAMP.fullmatch(raw, stamp):
            self._known = (raw[cut:stamp], len(tail))
        return cut, len(tail)


def cut(raw: bytes, at: int) -> bytes:
    """The line without its trailing run (``PrivateTail.find``'s index)."""
    return raw[:at] + b"}"


def block_meta_before(raw: bytes, at: int) -> bool:
    """A user line that may hold a tool_result's ``_meta`` before its trailing run (only a
    parse can remove that one)."""
    return raw.startswith(b'{"type":"user"') and raw.find(b'"_meta"', 0, at) >= 0


def _may_hide_private(raw: bytes, end: int | None = None) -> bool:
    """``raw[:end]`` holds ``"errors_info"`` (cbc writes it mid-object) or an escape that
    could spell a private key (``"\\u005fmeta"``)."""
    return raw.find(b'"errors_info"', 0, end) >= 0 or has_u_escape(raw, 0, end)


def _private_key_at(raw: bytes, at: int) -> bool:
    """``raw[at:]`` is a member after a comma whose key is a private field's (not just a
    string starting with ``_``: ``"_compact"`` in a list)."""
    if raw[at - 1] != 0x2C:  # ","
        return False
    end = raw.find(b'"', at + 1)
    return raw[at + 1 : end] in _PRIVATE_KEYS and raw[end + 1 : end + 2] == b":"
