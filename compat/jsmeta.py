"""Read a workflow script's ``export const meta = {...}`` without running the script.

Rules ``workflow-name``, ``workflow-prompt`` and ``progress-final`` need ``meta.name``,
``meta.description`` and ``meta.phases[].title`` (PROTOCOL.md §2; Claude Code puts them on
the wire, capture ``claude-2.1.220/mockapi_workflow_local-workflow-task-progress``). The
script is untrusted text, so this is a small scanner for the JSON-like subset of JavaScript
object literals, never an evaluator:

- values: strings in ``'``, ``"`` or backticks (a template with ``${`` is not a literal),
  numbers, ``true``/``false``/``null``/``undefined``, arrays, nested objects;
- keys: identifiers, quoted strings, numbers; trailing commas; ``//`` and ``/* */``
  comments;
- any other value expression (a call, an identifier, a spread...) is skipped up to the next
  ``,`` or closing bracket at its own depth and left out, so one computed field does not
  lose the literal ones next to it.

Bounded: linear in the text, nesting depth capped, and a malformed literal raises
``MetaError`` (the callers fall back to cbc's values and log).
"""

from __future__ import annotations

import re
from typing import Any

MAX_DEPTH = 32

_META = re.compile(r"\b(?:export\s+)?(?:const|let|var)\s+meta\s*(?::[^=]{0,200})?=\s*")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_NUMBER = re.compile(
    r"[-+]?(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d+)?)"
)
_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None, "undefined": None}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_SKIP = object()  # a value the scanner does not understand: left out of the result


class MetaError(ValueError):
    pass


def parse_meta(script: str) -> dict[str, Any]:
    """The ``meta`` object literal of a workflow script, as plain Python data."""
    outside = _Outside(script)
    for m in _META.finditer(script):
        if outside.inside(m.start()):
            continue
        p = _Parser(script, m.end())
        if p.peek() != "{":
            raise MetaError("meta is not an object literal")
        value = p.value(0)
        if not isinstance(value, dict):
            raise MetaError("meta is not an object literal")
        return value
    raise MetaError("no `export const meta = {...}` in the script")


class _Outside:
    """Whether a position is inside a comment or string, for positions asked in order: a
    cheap scan from the start, resumed where the last question left it (scanning from
    the start for each ``meta`` that a comment holds was quadratic in their number)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0  # the scan's position: no comment or string starts before it
        self.end = -1  # where the comment or string at ``i`` ends (-1: not yet read)

    def inside(self, pos: int) -> bool:
        text = self.text
        while self.i < pos:
            i = self.i
            if self.end < 0:
                c = text[i]
                if c == "/" and text.startswith("//", i):
                    j = text.find("\n", i)
                    self.end = len(text) + 1 if j < 0 else j + 1
                elif c == "/" and text.startswith("/*", i):
                    j = text.find("*/", i + 2)
                    self.end = len(text) + 2 if j < 0 else j + 2
                elif c in "'\"`":
                    self.end = _string_end(text, i)
                else:
                    self.i = i + 1
                    continue
            if self.end > pos:
                return True
            self.i, self.end = self.end, -1
        return False


def _string_end(text: str, i: int) -> int:
    """Index just past the string literal starting at ``i`` (or len(text))."""
    q, i, n = text[i], i + 1, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == q:
            return i + 1
        if c == "\n" and q != "`":
            return i
        i += 1
    return n


class _Parser:
    def __init__(self, text: str, pos: int) -> None:
        self.s = text
        self.i = pos

    def error(self, what: str) -> MetaError:
        line = self.s.count("\n", 0, self.i) + 1
        return MetaError(f"{what} at line {line}")

    def ws(self) -> None:
        s, n = self.s, len(self.s)
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n\ufeff\u00a0\u2028\u2029":
                self.i += 1
            elif s.startswith("//", self.i):
                j = s.find("\n", self.i)
                self.i = n if j < 0 else j + 1
            elif s.startswith("/*", self.i):
                j = s.find("*/", self.i + 2)
                if j < 0:
                    raise self.error("unterminated comment")
                self.i = j + 2
            else:
                return

    def peek(self) -> str:
        self.ws()
        return self.s[self.i] if self.i < len(self.s) else ""

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.error("meta nested too deeply")
        c = self.peek()
        if c == "{":
            return self.obj(depth + 1)
        if c == "[":
            return self.arr(depth + 1)
        if c in "'\"`":
            start = self.i
            text = self.string()
            if text is None or not self.at_end():
                self.i = start
                return self.skip()
            return text
        if c == "":
            raise self.error("unexpected end of script")
        return self.scalar()

    def at_end(self) -> bool:
        """The value read ends here (a ``,`` or closing bracket follows)."""
        return self.peek() in (",", "}", "]")

    def scalar(self) -> Any:
        """A number or a word (``true``, ``null``...) at ``i``; any other expression is
        skipped."""
        m = _NUMBER.match(self.s, self.i)
        if m and m.group():
            self.i = m.end()
            return _number(m.group()) if self.at_end() else self.skip()
        m = _IDENT.match(self.s, self.i)
        if m:
            self.i = m.end()
            if m.group() in _WORDS and self.at_end():
                return _WORDS[m.group()]
        return self.skip()

    def obj(self, depth: int) -> dict[str, Any]:
        self.i += 1  # {
        out: dict[str, Any] = {}
        while True:
            c = self.peek()
            if c == "}":
                self.i += 1
                return out
            if c == "":
                raise self.error("unterminated object")
            if self.s.startswith("...", self.i):
                self.skip()
            else:
                key = self.key()
                c = self.peek()
                if c == ":":
                    self.i += 1
                    v = self.value(depth)
                    if v is not _SKIP:
                        out[key] = v
                elif c == "(":  # a method: name() {...}
                    self.skip()
                elif c not in (",", "}"):
                    raise self.error(f"unexpected {c!r} after key {key!r}")
            c = self.peek()
            if c == ",":
                self.i += 1
            elif c != "}":
                raise self.error(f"expected ',' or '}}', found {c!r}")

    def arr(self, depth: int) -> list[Any]:
        self.i += 1  # [
        out: list[Any] = []
        while True:
            c = self.peek()
            if c == "]":
                self.i += 1
                return out
            if c == "":
                raise self.error("unterminated array")
            if c != ",":
                v = self.value(depth)
                if v is not _SKIP:
                    out.append(v)
            c = self.peek()
            if c == ",":
                self.i += 1
            elif c != "]":
                raise self.error(f"expected ',' or ']', found {c!r}")

    def key(self) -> str:
        c = self.peek()
        if c in "'\"`":
            k = self.string()
            if k is None:
                raise self.error("computed key")
            return k
        if c == "[":
            raise self.error("computed key")
        m = _IDENT.match(self.s, self.i) or _NUMBER.match(self.s, self.i)
        if not m or not m.group():
            raise self.error(f"unexpected {c!r} where a key belongs")
        self.i = m.end()
        return m.group()

    def string(self) -> str | None:
        """A string literal at ``i``; None (position after it) for a template with ``${``."""
        s, n = self.s, len(self.s)
        q = s[self.i]
        i = self.i + 1
        out: list[str] = []
        template = False
        while True:
            if i >= n:
                raise self.error("unterminated string")
            c = s[i]
            if c == q:
                self.i = i + 1
                return None if template else "".join(out)
            if c == "\n" and q != "`":
                raise self.error("newline in string")
            if c == "$" and q == "`" and s.startswith("${", i):
                template = True
            if c == "\\":
                text, i = self.escape_sequence(i + 1)
                out.append(text)
            else:
                out.append(c)
                i += 1

    def escape_sequence(self, i: int) -> tuple[str, int]:
        """The text of the escape sequence whose letter is at ``i`` (just after its
        backslash), and the index after the sequence."""
        s, n = self.s, len(self.s)
        if i >= n:
            raise self.error("unterminated string")
        e = s[i]
        i += 1
        if e in _ESCAPES and not (e == "0" and s[i : i + 1].isdigit()):
            return _ESCAPES[e], i
        if e == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", s[i : i + 2]):
            return chr(int(s[i : i + 2], 16)), i + 2
        if e == "u":
            return self.unicode(i)
        if e == "\r":
            return "", i + 1 if s.startswith("\n", i) else i
        if e in "\n\u2028\u2029":
            return "", i  # line continuation
        return e, i

    def unicode(self, i: int) -> tuple[str, int]:
        """``\\u{...}`` or ``\\uXXXX`` with ``i`` just after the ``u`` (a lone ``u``
        otherwise), and the index after it."""
        s = self.s
        if s.startswith("{", i):
            j = s.find("}", i)
            digits = s[i + 1 : j] if j > 0 else ""
            if not re.fullmatch(r"[0-9a-fA-F]{1,6}", digits) or int(digits, 16) > 0x10FFFF:
                raise self.error("bad \\u{...} escape")
            return chr(int(digits, 16)), j + 1
        if re.fullmatch(r"[0-9a-fA-F]{4}", s[i : i + 4]):
            return chr(int(s[i : i + 4], 16)), i + 4
        return "u", i

    def skip(self) -> object:
        """Skip an expression up to the next ``,``/``}``/``]`` at depth 0."""
        s, n = self.s, len(self.s)
        depth = 0
        while True:
            self.ws()
            if self.i >= n:
                raise self.error("unterminated expression")
            c = s[self.i]
            if c in "'\"`":
                self.i = _string_end(s, self.i)
                continue
            if c in "([{":
                depth += 1
                if depth > MAX_DEPTH:
                    raise self.error("meta nested too deeply")
            elif c in ")]}":
                if depth == 0:
                    return _SKIP
                depth -= 1
            elif c == "," and depth == 0:
                return _SKIP
            self.i += 1


def _number(text: str) -> int | float:
    t = text.replace("_", "")
    if t.lower().lstrip("+-").startswith("0x"):
        return int(t, 16)
    try:
        return int(t)
    except ValueError:
        return float(t)


def meta_summary(meta: dict[str, Any]) -> tuple[str | None, str | None, list[str] | None]:
    """(name, description, phase titles) where they are strings; None where not."""
    name = meta.get("name")
    desc = meta.get("description")
    phases = meta.get("phases")
    titles: list[str] | None = None
    if isinstance(phases, list):
        titles = []
        for p in phases:
            if isinstance(p, dict) and isinstance(p.get("title"), str):
                titles.append(p["title"])
            elif isinstance(p, str):
                titles.append(p)
            else:
                titles = None
                break
    return (
        name if isinstance(name, str) and name else None,
        desc if isinstance(desc, str) and desc else None,
        titles,
    )
