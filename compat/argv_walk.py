"""The walk behind ``compat.argv``'s ``translate_to_cbc``: a Claude Code command line read
option by option (commander's binding rules), each option the table of ``compat.flags``
knows handled by its action (``ACTION_HANDLERS``), any other passed when cbc declares it,
and the options cbc must always get added at the end (``Translator.finish``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from compat.flags import (
    BY_NAME,
    CBC_OPTIONS,
    CBC_REFUSED,
    CBC_SHORT,
    CBC_VARIADIC,
    PERMISSION_MODES,
    Flag,
)


def variadic_words(flag: str, vals: Sequence[str]) -> list[str]:
    """A variadic option's values as cbc's commander binds them, in order: a run of words
    after the flag, except a value that begins with "-" (commander would read it as an
    option), which is one ``flag=value`` word (that form binds exactly one value)."""
    words: list[str] = []
    run = False  # the last word written opened or continues a run of plain values
    for v in vals:
        if v.startswith("-"):
            words.append(f"{flag}={v}")
            run = False
            continue
        if not run:
            words.append(flag)
            run = True
        words.append(v)
    return words


#: options that name the session: the client's choice wins over session-pin
SESSION_FLAGS = frozenset({"--resume", "--continue", "--session-id"})
_STREAM = "stream-json"


def split_tool_list(values: Sequence[str]) -> list[str]:
    """``["Bash(git log:*),Edit", "Read"]`` -> ``["Bash(git log:*)", "Edit", "Read"]``:
    commas and spaces separate tools, except inside a rule's parentheses."""
    out: list[str] = []
    for v in values:
        depth, start = 0, 0
        for i, ch in enumerate(v):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            elif depth == 0 and (ch == "," or ch.isspace()):
                if v[start:i]:
                    out.append(v[start:i])
                start = i + 1
        if v[start:]:
            out.append(v[start:])
    return out


class Translator:
    def __init__(self, argv: Sequence[str]) -> None:
        self.args = list(argv)
        self.i = 0
        self.out: list[str] = []
        self.tail: list[str] = []
        self.warned: dict[str, str] = {}
        self.notes: list[str] = []
        self.dropped: list[str] = []
        #: options neither Claude nor cbc knows, as the client spelled them
        self.unknown_words: list[str] = []
        #: options Claude knows given without the value they require (canonical names)
        self.missing: list[str] = []
        self.stdio = False
        self.session_given = False
        self.session_id: str | None = None
        self.fork = False
        self.env: dict[str, str] = {}
        self.settings: str | None = None
        self.settings_patch: dict[str, Any] = {}
        self.mcp: list[str] = []
        self.seen: set[str] = set()
        self.prompt: str | None = None
        self.options: dict[str, list[str]] = {}
        self.ignored: list[str] = []

    def positional(self, word: str) -> None:
        if self.prompt is None:
            self.prompt = word
        else:
            self.ignored.append(word)

    # -- reading ----------------------------------------------------------------------
    def values(self, arity: str, inline: str | None) -> list[str]:
        """The values bound to an option, consumed from the argv (commander's rules)."""
        args = self.args
        if arity == "none":
            return [] if inline is None else [inline]
        if arity == "one":
            if inline is not None:
                return [inline]
            if self.i < len(args):
                self.i += 1
                return [args[self.i - 1]]
            return []
        vals = [] if inline is None else [inline]
        if arity == "optional" and inline is not None:
            return vals
        while self.i < len(args) and not args[self.i].startswith("-"):
            vals.append(args[self.i])
            self.i += 1
            if arity == "optional":
                break
        return vals

    def warn(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned[key] = message

    def drop(self, flag: str, vals: list[str], why: str) -> None:
        shown = " ".join([flag, *(repr(v) for v in vals)])
        if flag not in self.dropped:
            self.dropped.append(flag)
        self.warn(flag, f"dropped {shown}: {why}")

    # -- writing ----------------------------------------------------------------------
    def emit(self, flag: str, vals: Sequence[str], arity: str) -> None:
        if flag in CBC_VARIADIC:
            self.tail += variadic_words(flag, vals)
            return
        if not vals:
            if flag in ("--print", "--verbose") and flag in self.seen:
                return
            self.out.append(flag)
        elif arity == "optional" or vals[0].startswith("-"):
            self.out.append(f"{flag}={vals[0]}")
        else:
            self.out += [flag, vals[0]]
        self.seen.add(flag)

    # -- the walk ---------------------------------------------------------------------
    def run(self) -> None:
        args = self.args
        while self.i < len(args):
            tok = args[self.i]
            self.i += 1
            if tok == "--":
                for word in args[self.i :]:
                    self.positional(word)
                break
            if not tok.startswith("-") or tok == "-":
                self.positional(tok)
                continue
            name, eq, value = tok.partition("=")
            inline = value if eq else None
            flag = BY_NAME.get(name)
            if flag is None:
                self.unknown(name, inline)
            else:
                self.known(flag, name, inline)

    def unknown(self, name: str, inline: str | None) -> None:
        cbc = CBC_SHORT.get(name, name)
        arity = CBC_OPTIONS.get(cbc)
        if arity is not None and cbc not in CBC_REFUSED:
            self.emit(cbc, self.values(arity, inline), arity)
            return
        if arity is not None:
            vals = self.values(arity, inline)
            self.drop(
                name, vals, "cbc's option of that name would leave the stdio stream-json session"
            )
            return
        self.unknown_words.append(name if inline is None else f"{name}={inline}")
        vals = self.values("optional", inline)
        self.drop(name, vals, "unknown option (cbc would refuse it)")

    def known(self, flag: Flag, spelled: str, inline: str | None) -> None:
        vals = self.values(flag.arity, inline)
        if not vals and flag.arity in ("one", "variadic"):
            self.missing.append(flag.name)
        self.record(flag, vals)
        ACTION_HANDLERS.get(flag.action, Translator.no_such)(self, flag, vals, spelled)

    def record(self, flag: Flag, vals: list[str]) -> None:
        """Keep the option's values in ``options``; note a session the client names."""
        name = flag.name
        self.options[name] = (
            [*self.options.get(name, []), *vals] if flag.arity == "variadic" else vals
        )
        if name in SESSION_FLAGS:
            self.session_given = True
            if name != "--continue" and vals:
                self.session_id = vals[-1]
        if name == "--fork-session":
            self.fork = True

    # -- one method per action (``ACTION_HANDLERS``): flag, its values, its spelling --
    def keep(self, flag: Flag, vals: list[str], spelled: str) -> None:
        name = flag.name
        if flag.arity == "none" and vals:
            self.warn(name, f"{spelled}={vals[0]}: {name} takes no value; value dropped")
            vals = []
        self.emit(flag.target, vals, flag.arity)

    def stream_format(self, flag: Flag, vals: list[str], spelled: str) -> None:
        # text/json are rendered for the client from cbc's stream-json (compat.headless)
        if flag.name not in self.seen:
            self.emit(flag.name, [_STREAM], "one")

    def split_list(self, flag: Flag, vals: list[str], spelled: str) -> None:
        self.emit(flag.target, split_tool_list(vals), "variadic")

    def join_values(self, flag: Flag, vals: list[str], spelled: str) -> None:
        self.emit(flag.target, [",".join(v for v in vals if v) if vals else ""], "one")

    def first_value(self, flag: Flag, vals: list[str], spelled: str) -> None:
        name = flag.name
        parts = [p.strip() for v in vals for p in v.split(",") if p.strip()]
        if len(parts) > 1:
            self.warn(name, f"{name}: cbc takes one model; kept {parts[0]!r}, dropped {parts[1:]}")
        if parts:
            self.emit(flag.target, parts[:1], "one")

    def permission_mode(self, flag: Flag, vals: list[str], spelled: str) -> None:
        name = flag.name
        mode = vals[0] if vals else ""
        if mode in PERMISSION_MODES:
            self.warn(name, f"{name} {mode!r} is {PERMISSION_MODES[mode]!r} in cbc")
            mode = PERMISSION_MODES[mode]
        if mode:
            self.emit(flag.target, [mode], "one")

    def setting_sources(self, flag: Flag, vals: list[str], spelled: str) -> None:
        value = vals[0] if vals else ""
        self.emit(flag.target, [value if value.strip(", ") else "none"], "one")

    def use_settings(self, flag: Flag, vals: list[str], spelled: str) -> None:
        if vals:
            self.settings = vals[0]

    def add_mcp(self, flag: Flag, vals: list[str], spelled: str) -> None:
        self.mcp += vals

    def thinking(self, flag: Flag, vals: list[str], spelled: str) -> None:
        value = vals[0] if vals else ""
        if value in ("adaptive", "enabled"):
            self.settings_patch["alwaysThinkingEnabled"] = True
        elif value == "disabled":
            self.settings_patch["alwaysThinkingEnabled"] = False
        else:
            self.drop(flag.name, vals, "unknown thinking mode")

    def thinking_tokens(self, flag: Flag, vals: list[str], spelled: str) -> None:
        try:
            n = int(vals[0] if vals else "")
        except ValueError:
            self.drop(flag.name, vals, "not a number")
            return
        if n > 0:
            self.env["MAX_THINKING_TOKENS"] = str(n)
        self.settings_patch["alwaysThinkingEnabled"] = n > 0

    def plugin_no_mcp(self, flag: Flag, vals: list[str], spelled: str) -> None:
        name, value = flag.name, vals[0] if vals else ""
        self.warn(
            name,
            f"{name} {value!r} loaded as --plugin-dir: cbc cannot skip the plugin's MCP discovery",
        )
        if value:
            self.emit(flag.target, [value], "one")

    def stdio_tool(self, flag: Flag, vals: list[str], spelled: str) -> None:
        name = flag.name
        self.stdio = (vals[0] if vals else "") == "stdio"
        if not self.stdio:
            self.drop(
                name,
                vals,
                "cbc always asks over stdio; not a stdio prompt tool: "
                "the bridge denies like Claude",
            )
            return
        # what the SDKs pass for can_use_tool: nothing is lost
        if name not in self.dropped:
            self.dropped.append(name)
        self.notes.append(
            f"{name} 'stdio' not passed: cbc always asks over stdio; "
            "permission prompts are forwarded"
        )

    def ignore(self, flag: Flag, vals: list[str], spelled: str) -> None:
        """Left out with nothing lost (its note says why): said at info, not warned."""
        if flag.name not in self.dropped:
            self.dropped.append(flag.name)
        self.notes.append(f"{flag.name} not passed: {flag.note}")

    def permission_prompts(self, flag: Flag, vals: list[str], spelled: str) -> None:
        self.stdio = self.stdio or (vals[0] if vals else "") == "host"
        self.drop(flag.name, vals, "cbc has no such option")

    def refuse(self, flag: Flag, vals: list[str], spelled: str) -> None:
        self.drop(
            flag.name,
            vals,
            "cbc's option of that name would leave the stdio "
            "stream-json session or means something else",
        )

    def no_such(self, flag: Flag, vals: list[str], spelled: str) -> None:
        self.drop(flag.name, vals, "cbc has no such option")

    def finish(self) -> None:
        if self.settings_patch:
            self.merge_settings()
        elif self.settings is not None:
            self.emit("--settings", [self.settings], "one")
        if self.mcp:
            self.emit("--mcp-config", [self.merge_mcp()], "one")
        for must in ("--input-format", "--output-format"):
            if must not in self.seen:
                self.emit(must, [_STREAM], "one")
        if "--verbose" not in self.seen:
            self.emit("--verbose", [], "none")
        if "--print" not in self.seen:
            self.out.insert(0, "-p")

    def merge_settings(self) -> None:
        patch, current = self.settings_patch, self.settings
        if current is None:
            self.emit("--settings", [orjson.dumps(patch).decode()], "one")
            return
        try:
            obj = orjson.loads(current)
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            self.emit("--settings", [orjson.dumps({**obj, **patch}).decode()], "one")
            return
        self.emit("--settings", [current], "one")
        self.warn(
            "--thinking",
            f"thinking settings {patch} not applied: --settings names a "
            "file, which the bridge does not rewrite",
        )

    def merge_mcp(self) -> str:
        if len(self.mcp) == 1:
            return self.mcp[0]
        servers: dict[str, Any] = {}
        for value in self.mcp:
            try:
                obj = orjson.loads(value)
            except orjson.JSONDecodeError:
                obj = None
            if not isinstance(obj, dict) or not isinstance(obj.get("mcpServers"), dict):
                self.warn(
                    "--mcp-config",
                    f"--mcp-config: cbc takes one config; kept "
                    f"{self.mcp[0]!r}, dropped {len(self.mcp) - 1} more",
                )
                return self.mcp[0]
            servers.update(obj["mcpServers"])
        return orjson.dumps({"mcpServers": servers}).decode()


_Action = Callable[[Translator, Flag, list[str], str], None]
#: what each action of ``compat.flags`` does to the command line (``drop``, and any action
#: not listed: dropped, cbc has no such option)
ACTION_HANDLERS: dict[str, _Action] = {
    "keep": Translator.keep,
    "rename": Translator.keep,
    "ensure": Translator.keep,
    "format": Translator.stream_format,
    "split": Translator.split_list,
    "join": Translator.join_values,
    "first": Translator.first_value,
    "mode": Translator.permission_mode,
    "sources": Translator.setting_sources,
    "settings": Translator.use_settings,
    "mcp": Translator.add_mcp,
    "thinking": Translator.thinking,
    "thinking-tokens": Translator.thinking_tokens,
    "plugin-no-mcp": Translator.plugin_no_mcp,
    "stdio": Translator.stdio_tool,
    "prompts": Translator.permission_prompts,
    "refuse": Translator.refuse,
    "ignore": Translator.ignore,
}
