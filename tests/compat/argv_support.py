"""Support for the argv tests: the command lines the official SDKs really build, and a
checker that parses a cbc launch line with commander's rules and cbc's own option table.

- Python SDK: ``SubprocessCLITransport._build_command()`` of the installed
  ``claude_agent_sdk`` for option sets that together use every option that becomes a flag.
- TypeScript SDK: ``data/ts_sdk_argv_<version>.json``, written by
  ``tests/js/ts_sdk_argv.mjs`` (its ``query()`` with a spawn hook that records the argv).
- cbc: its options are parsed from the reference ``cbc-2.163.0/help.txt`` when present (so
  the checker does not trust the translator's own table), else from ``compat.flags``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from compat.flags import CBC_OPTIONS, CBC_SHORT

from ..conftest import REFERENCE

DATA = Path(__file__).resolve().parent / "data"
TS_FILES = sorted(DATA.glob("ts_sdk_argv_*.json"))

_HELP_LINE = re.compile(r"^\s+(?:(-\w), )?(--[\w-]+)(?: (<[^>]+>|\[[^\]]+\]))?")


def cbc_options() -> tuple[dict[str, str], dict[str, str]]:
    """(long option -> arity, short -> long) as cbc 2.163.0 declares them."""
    help_txt = REFERENCE / "cbc-2.163.0" / "help.txt" if REFERENCE else None
    if help_txt is None or not help_txt.is_file():
        return dict(CBC_OPTIONS), dict(CBC_SHORT)
    options: dict[str, str] = {}
    short: dict[str, str] = {}
    for raw in help_txt.read_text().splitlines():
        if raw.strip() == "Commands:":
            break
        m = _HELP_LINE.match(raw)
        if m is None:
            continue
        s, name, value = m.groups()
        arity = (
            "none"
            if value is None
            else "variadic"
            if "..." in value
            else "optional"
            if value.startswith("[")
            else "one"
        )
        options[name] = arity
        if s:
            short[s] = name
    return options, short


def parse_cbc(argv: list[str]) -> tuple[dict[str, list[list[str]]], list[str]]:
    """Parse a cbc argv the way commander does. Returns ({option: [values per use]},
    problems): unknown options, missing values, positional words."""
    options, short = cbc_options()
    got: dict[str, list[list[str]]] = {}
    problems: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if not tok.startswith("-"):
            problems.append(f"positional word {tok!r}")
            continue
        name, eq, inline = tok.partition("=")
        name = short.get(name, name)
        arity = options.get(name)
        if arity is None:
            problems.append(f"unknown option {name!r}")
            continue
        vals = [inline] if eq else []
        if arity == "none" and eq:
            problems.append(f"{name} takes no value")
        elif arity == "one" and not eq:
            if i >= len(argv):
                problems.append(f"{name} misses its value")
            else:
                vals.append(argv[i])
                i += 1
        elif arity in ("optional", "variadic") and not (arity == "optional" and eq):
            while i < len(argv) and not argv[i].startswith("-"):
                vals.append(argv[i])
                i += 1
                if arity == "optional":
                    break
        got.setdefault(name, []).append(vals)
    return got, problems


def ts_argvs() -> list[tuple[str, list[str]]]:
    out = []
    for path in TS_FILES:
        doc: dict[str, Any] = json.loads(path.read_text())
        for name, rec in doc["sets"].items():
            if "args" in rec:
                out.append((f"ts-{doc['version']}-{name}", list(rec["args"])))
    return out
