"""Text from a peer made safe to show: on a terminal, in a log, in a report.

What the backend, the client or a capture sends is untrusted: a frame type, a tool name, a
message can hold an escape sequence (``ESC ] 0 ; title BEL`` retitles a terminal, ``ESC [
2 J`` clears it, C1 ``CSI`` U+009B does the same on some), a bidirectional control that
makes a line read backwards, or an invisible character that makes two names look equal.
Every command, log line and report shows such strings through this module, on a terminal
and off it (a log file is read on one later):

- ``escape(text)``: plain text. Every character of ``UNSAFE_RANGES`` becomes a visible
  escape: ``\\n`` and ``\\t`` for a newline and a tab (a log line stays one line, and
  readable), ``\\xNN`` below U+0100, ``\\uNNNN`` in the BMP, ``\\UNNNNNNNN`` above. Text
  without such a character is returned as it is. A backslash is kept as it is (decided,
  not overlooked): much of what is shown is already an escaped form whose backslashes
  mean something (a message quoting a peer's string with ``repr``, as the stages do; JSON
  text), and doubling them would show an ESC quoted by ``repr`` as ``\\\\x1b``. So the
  escape is injective on text without a backslash, and a peer that sends the four
  characters ``\\x1b`` is shown as one that sent an ESC would be: inert either way;
  where the exact string matters it is quoted with ``repr`` or JSON first, whose own
  backslashes tell the two apart (``'\\\\x1b'`` against ``'\\x1b'``).
- ``escape_json(text)``: JSON text (``orjson.dumps(...).decode()``, compact or indented;
  a frame's line as the peer wrote it), for ``--json`` outputs, the ``--stats`` line, a
  frame or a value shown as JSON. The same characters, but a newline (an indented
  document's), become ``\\uXXXX`` JSON escapes (a surrogate pair above the BMP): the same
  JSON value, harmless on a terminal; a line that is not JSON is shown safely too. A
  backslash is left as it is: in JSON text it is already unambiguous (``"a\\nb"`` is
  shown as JSON writes it, not doubled).
- ``clip(text, limit)``: a name cut to ``limit`` characters, the last one an ellipsis (a
  counter key, a label: an invented 1 MB frame type must not print 1 MB).

``UNSAFE_RANGES`` is every character of Unicode categories Cc (C0, DEL, C1), Cf (bidi
controls U+061C, U+200E/F, U+202A-E, U+2066-9; zero-width U+200B-D, U+2060, U+FEFF; soft
hyphen; tags...), Zl/Zp (U+2028/U+2029) and Cs (lone surrogates, which cannot even be
written to a UTF-8 terminal), as of Unicode 15. Pure: no I/O.
"""

from __future__ import annotations

import re

#: the characters never shown raw, as inclusive ranges of code points
UNSAFE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F),  # C0 (ESC, BEL, CR, newline, tab...)
    (0x007F, 0x009F),  # DEL, C1 (CSI U+009B, OSC U+009D...)
    (0x00AD, 0x00AD),  # soft hyphen
    (0x0600, 0x0605),  # Arabic prepended concatenation marks
    (0x061C, 0x061C),  # ARABIC LETTER MARK (bidi)
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),  # Mongolian vowel separator
    (0x200B, 0x200F),  # zero-width space/non-joiner/joiner, LRM, RLM
    (0x2028, 0x202E),  # line/paragraph separators, bidi embeddings and overrides
    (0x2060, 0x2064),  # word joiner, invisible operators
    (0x2066, 0x206F),  # bidi isolates, deprecated format characters
    (0xD800, 0xDFFF),  # lone surrogates
    (0xFEFF, 0xFEFF),  # zero-width no-break space (BOM)
    (0xFFF9, 0xFFFB),  # interlinear annotation
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),  # language tag
    (0xE0020, 0xE007F),  # tag characters
)


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    def one(c: int) -> str:
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"

    return "[" + "".join(one(a) if a == b else f"{one(a)}-{one(b)}" for a, b in ranges) + "]"


_UNSAFE = _class(UNSAFE_RANGES)
_TEXT = re.compile(_UNSAFE)
#: what ``escape_json`` rewrites: the unsafe characters but a newline
_JSON = re.compile(f"(?!\n){_UNSAFE}")
_NAMED = {"\n": "\\n", "\t": "\\t"}


def _escaped(m: re.Match[str]) -> str:
    ch = m.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    c = ord(ch)
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def escape(text: str) -> str:
    """``text`` safe to show: every unsafe character a visible escape (``\\n``, ``\\t``,
    ``\\xNN``, ``\\uNNNN``, ``\\UNNNNNNNN``); anything else, a backslash too, as it is."""
    return _TEXT.sub(_escaped, text)


def _json_escaped(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x10000:
        return f"\\u{c:04x}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"


def escape_json(text: str) -> str:
    """JSON text with every unsafe character but a newline as a ``\\uXXXX`` escape: the
    same JSON value, harmless on a terminal."""
    return _JSON.sub(_json_escaped, text)


def clip(text: str, limit: int = 64) -> str:
    """``text`` cut to ``limit`` characters (the last an ellipsis) when it is longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
