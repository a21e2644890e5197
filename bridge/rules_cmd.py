"""``ccbridge rules [ID ...]``: every rule id (or the ones named), its modes, what it does,
its options with their defaults (``--rule ID.option=VALUE``), and the profiles' stage
order. ``ccbridge rules --markdown`` writes the repository's rule reference
(``docs/rules.md``) from the same sources: each rule class's docstring, its options (with
the ``#:`` comment above each field), the frames it reads, its profiles and position, and
its module's strategy note. A test checks the file is what the code says."""

from __future__ import annotations

import inspect
import re
import sys
from typing import TYPE_CHECKING, Any

from bridge.cli import Parser, parser
from compat.exits import Exit
from compat.profiles import PROFILES, describe, options_of
from compat.stage import REGISTRY, Stage
from compat.text import escape

if TYPE_CHECKING:  # rich loads only when the list is drawn (bridge.render)
    from rich.console import RenderableType

#: a field of a rule class, with the ``#:`` comment lines right above it
_FIELD = re.compile(r"((?:^[ \t]*#:.*\n)+)^[ \t]*(\w+)\s*:", re.MULTILINE)


def build_parser() -> Parser:
    p = parser(
        "rules",
        "list the rules: their modes, what each does, their options, and each profile's order",
        examples=[
            "ccbridge rules",
            "ccbridge rules late-progress tasks-snapshot",
            "ccbridge rules --markdown > docs/rules.md",
        ],
        exits={Exit.OK: "listed", Exit.USAGE: "a usage error, or an unknown rule id"},
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="only these rules (default: every rule)")
    p.add_argument(
        "--markdown", action="store_true", help="print the rule reference (docs/rules.md) instead"
    )
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown())
        return 0
    rows = describe()
    known = {rule for rule, _, _ in rows}
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        print(
            f"ccbridge rules: unknown rule id(s): {escape(', '.join(unknown))} "
            f"(known: {', '.join(sorted(known))})",
            file=sys.stderr,
        )
        return Exit.USAGE
    print(rule_list(rows, args.ids))
    if not args.ids:
        print()
        print(profile_list())
    return 0


def rule_list(
    rows: list[tuple[str, str, tuple[str, ...]]], ids: list[str], width: int | None = None
) -> str:
    """Each rule (of ``ids``, when any): its id and modes, then what it does and its
    options, indented, wrapped between words to ``width`` columns (default: the
    terminal's, 80 when it is not one, at most 100; ``bridge.render``)."""
    from rich.padding import Padding
    from rich.text import Text

    from bridge.render import render

    parts: list[RenderableType] = []
    for rule, summary, modes in rows:
        if ids and rule not in ids:
            continue
        parts.append(Text(f"{rule}  [{'|'.join(('on', *[m for m in modes if m != 'on']))}|off]"))
        said = [
            summary,
            *(f"--rule {rule}.{name}={default!s}" for name, default in options_of(rule)),
        ]
        parts += [Padding(Text(x), (0, 0, 0, 4)) for x in said]
    return render(*parts, width=width) if parts else ""


def profile_list(width: int | None = None) -> str:
    """Each profile's stage order, per direction, wrapped beside its name."""
    from rich.text import Text

    from bridge.render import beside, render

    orders = [
        (Text(f"{name} {direction}:"), Text(" > ".join(stages) or "(none)"))
        for name, dirs in PROFILES.items()
        for direction, stages in dirs.items()
    ]
    return render(beside(orders), width=width)


def _field_notes(cls: type[Stage]) -> dict[str, str]:
    notes: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, Stage)):
            continue
        try:
            src = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        for m in _FIELD.finditer(src):
            text = " ".join(line.strip()[2:].strip() for line in m.group(1).splitlines())
            notes[m.group(2)] = text
    return notes


def _reads(cls: type[Stage]) -> str:
    kinds = (
        "every frame"
        if cls.kinds is None
        else ", ".join(f"`{k}`" for k in sorted(cls.kinds)) or "no frame kind"
    )
    if cls.triggers:
        kinds += "; lines holding " + ", ".join(f"`{t.decode()}`" for t in cls.triggers)
    return kinds


def _facts(cls: type[Stage]) -> str:
    def names(facts: frozenset[str]) -> str:
        return ", ".join(f"`{f}`" for f in sorted(facts))

    parts = []
    if cls.writes:
        parts.append("writes " + names(cls.writes))
    if cls.reads:
        parts.append("reads " + names(cls.reads))
    if cls.reads_earlier:
        parts.append("of which as earlier frames left them " + names(cls.reads_earlier))
    return "; ".join(parts) or "none"


def _positions(rule: str) -> list[str]:
    out = []
    for name, dirs in PROFILES.items():
        for direction, stages in dirs.items():
            if rule in stages:
                out.append(f"`{name}` {direction}, {stages.index(rule) + 1} of {len(stages)}")
    return out


def _flags(cls: type[Stage]) -> list[str]:
    flags = []
    for flag, what in (
        ("defers_eof", "holds the client's EOF"),
        ("invalid", "also sees lines that are not JSON objects"),
    ):
        if getattr(cls, flag, False):
            flags.append(f"`{flag}` ({what})")
    return flags


def _default(v: Any) -> str:
    return f"`{v!s}`" if not isinstance(v, str) else f"`{v}`" if v else '`""`'


def markdown() -> str:
    """The rule reference, generated (``ccbridge rules --markdown > docs/rules.md``)."""
    out = [
        "# Rule reference",
        "",
        "Generated from the code by `ccbridge rules --markdown > docs/rules.md` (a test",
        "checks it is current): every rule's class docstring, options, the frames it reads,",
        "the shared facts it reads and writes (checked by tests/compat/test_ownership.py),",
        "its place in each profile, and the strategy note of the module it lives in.",
        "Rules are switched and tuned with `--rule ID=MODE` / `--rule ID.option=VALUE`",
        "(`CCBRIDGE_RULES`, `rules =` in `ccbridge.toml`).",
        "",
        "## Profiles",
        "",
        *_profiles_markdown(),
        "",
    ]
    modules: dict[str, list[str]] = {}
    for rule, cls in sorted(REGISTRY.items(), key=lambda kv: (kv[1].__module__, kv[0])):
        modules.setdefault(cls.__module__, []).append(rule)
    for module, rules in modules.items():
        out += [f"## `{module}`", ""]
        note = inspect.cleandoc(sys.modules[module].__doc__ or "")
        if note:
            out += [note, ""]
        for rule in rules:
            out += _rule_markdown(rule)
    return "\n".join(out).rstrip() + "\n"


def _profiles_markdown() -> list[str]:
    """Each profile's stage order, per direction."""
    out = []
    for name, dirs in PROFILES.items():
        for direction, stages in dirs.items():
            arrow = "client -> backend" if direction == "up" else "backend -> client"
            order = " > ".join(f"`{r}`" for r in stages) or "(no stage)"
            out.append(f"- `{name}` {direction} ({arrow}): {order}")
    return out


def _rule_markdown(rule: str) -> list[str]:
    """A rule's section of the reference."""
    cls = REGISTRY[rule]
    modes = "|".join(("on", *[m for m in cls.modes if m != "on"], "off"))
    out = [
        f"### `{rule}`",
        "",
        f"- modes: `{modes}` (default `{cls.modes[0]}`); direction: "
        f"{'client -> backend' if cls.direction == 'up' else 'backend -> client'}",
        f"- reads: {_reads(cls)}",
        f"- shared facts (`compat.facts`): {_facts(cls)}",
        f"- profiles: {'; '.join(_positions(rule)) or 'none'}",
    ]
    flags = _flags(cls)
    if flags:
        out.append(f"- declares: {', '.join(flags)}")
    notes = _field_notes(cls)
    opts = options_of(rule)
    if opts:
        out.append("- options:")
        out += [
            f"  - `{n}` = {_default(d)}" + (f": {notes[n]}" if n in notes else "") for n, d in opts
        ]
    return [*out, "", inspect.cleandoc(cls.__doc__ or "(no docstring)"), ""]
