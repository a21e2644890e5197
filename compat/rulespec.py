"""Rule settings as one value, parsed once: ``["late-progress=fold", "late-progress.grace=2",
"tasks-snapshot=off"]`` (``--rule``, ``CCBRIDGE_RULES`` comma lists, a config file's
``[rules]`` table) -> ``{"late-progress": {"mode": "fold", "grace": "2"}, "tasks-snapshot":
{"mode": "off"}}``.

Only the syntax is decided here, without importing a stage (the launch reads it before the
backend is spawned); what a rule, mode or option means is ``compat.profiles``'s to check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

#: rule id -> option ("mode" for ``ID=VALUE``) -> value
RuleSettings = dict[str, dict[str, str]]
#: what a caller may hand over: setting items, a flat ``{"ID[.option]": VALUE}`` table, or
#: settings already parsed
Rules = Sequence[str] | Mapping[str, str] | Mapping[str, Mapping[str, str]]


class RuleError(ValueError):
    pass


def parse(items: Iterable[str], into: RuleSettings | None = None) -> RuleSettings:
    """Items, each ``ID=VALUE`` or ``ID.option=VALUE`` or a comma list of them; later ones
    win. ``into``: settings to add them to (a copy is returned, ``into`` is not changed)."""
    out = {rule: dict(opts) for rule, opts in (into or {}).items()}
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise RuleError(f"rule setting {part!r} is not ID=VALUE")
            rule, _, option = key.strip().partition(".")
            out.setdefault(rule, {})[option or "mode"] = value.strip()
    return out


def settings(rules: Rules) -> RuleSettings:
    """Any accepted form as parsed settings."""
    if not isinstance(rules, Mapping):
        return parse(rules)
    flat = [f"{k}={v}" for k, v in rules.items() if not isinstance(v, Mapping)]
    nested = {
        str(r): {str(k): str(v) for k, v in o.items()}
        for r, o in rules.items()
        if isinstance(o, Mapping)
    }
    return parse(flat, into=nested)


def items(settings: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The settings as ``--rule`` items (for a log line or a child's command line)."""
    return [
        f"{rule}={value}" if option == "mode" else f"{rule}.{option}={value}"
        for rule, opts in settings.items()
        for option, value in opts.items()
    ]
