"""A small TOML writer for the scenario files ``ccbridge scenario from-capture`` writes
(the stdlib reads TOML, it does not write it). Pure.

``dumps(doc, comments)``: the comment lines first, then the document's scalar and inline
values (``key = value``; a table value inline, ``{ a = 1 }``), then each table value as a
``[section]`` and each list of tables as ``[[section]]`` blocks, nested sections named with
dots (``[[model.rules]]``). Strings are TOML basic strings (JSON-like escapes, every
control character escaped, a lone surrogate written as U+FFFD); ``multiline`` keys
(``files``' values) are multi-line basic strings. TOML has no null: ``clean`` drops
``None`` values (and counts them) before a document is written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def clean(value: Any) -> tuple[Any, int]:
    """``value`` without its ``None`` values (dict entries and list items), and how many
    were dropped."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        dropped = 0
        for k, v in value.items():
            if v is None:
                dropped += 1
                continue
            out[str(k)], n = clean(v)
            dropped += n
        return out, dropped
    if isinstance(value, list | tuple):
        items = []
        dropped = 0
        for v in value:
            if v is None:
                dropped += 1
                continue
            item, n = clean(v)
            items.append(item)
            dropped += n
        return items, dropped
    return value, 0


def _char(c: str) -> str:
    esc = _ESCAPES.get(c)
    if esc is not None:
        return esc
    o = ord(c)
    if o < 0x20 or o == 0x7F:
        return f"\\u{o:04X}"
    if 0xD800 <= o <= 0xDFFF:
        return "\ufffd"
    return c


def string(s: str) -> str:
    """A TOML basic string."""
    return '"' + "".join(_char(c) for c in s) + '"'


def multiline(s: str) -> str:
    """A TOML multi-line basic string (newlines kept, everything else escaped)."""
    body = "".join(c if c == "\n" else _char(c) for c in s)
    return '"""\n' + body + '"""'


def key(k: str) -> str:
    return k if _BARE.fullmatch(k) else string(k)


def value(v: Any) -> str:
    """``v`` as an inline TOML value."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(value(x) for x in v) + "]"
    raise TypeError(f"no TOML value for {type(v).__name__}")


#: keys whose table values are written inline wherever they appear
INLINE = {
    "after",
    "match",
    "control",
    "permission",
    "input",
    "calls",
    "backend_args",
    "env",
    "hooks",
    "mcp_servers",
}
#: tables whose string values are written as multi-line strings
MULTILINE = {"files"}


def _is_table_list(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _body(d: dict[str, Any], multi: bool = False) -> list[str]:
    """The ``key = value`` lines of a table (its sections left out); ``multi``: its
    strings as multi-line strings."""
    return [
        f"{key(k)} = {multiline(v) if multi and isinstance(v, str) else value(v)}"
        for k, v in d.items()
        if k in INLINE or not (isinstance(v, dict) or _is_table_list(v))
    ]


def _sections(d: dict[str, Any], prefix: str) -> list[str]:
    out: list[str] = []
    for k, v in d.items():
        name = f"{prefix}{key(k)}"
        if k in INLINE:
            continue
        if isinstance(v, dict):
            body = _body(v, multi=k in MULTILINE)
            subs = _sections(v, name + ".")
            if body or not subs:  # (a table of tables alone needs no header)
                out += ["", f"[{name}]", *body]
            out += subs
        elif _is_table_list(v):
            for item in v:
                out += ["", f"[[{name}]]", *_body(item)]
                out += _sections(item, name + ".")
    return out


def dumps(doc: dict[str, Any], comments: Iterable[str] = ()) -> str:
    """The TOML text of ``doc`` (no ``None`` in it: see ``clean``), after ``comments``
    (each a ``#`` line). ``files``' values are multi-line strings."""
    lines = [("# " + c).rstrip() for c in comments]
    lines += _body(doc)
    lines += _sections(doc, "")
    return "\n".join(lines).lstrip("\n") + "\n"
