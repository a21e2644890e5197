"""Rules ``argv`` and ``session-pin``: a Claude Code command line -> one cbc 2.163.0 accepts.

cbc exits 1 on any option it does not know (``error: unknown option``), and the official
SDKs pass many cbc lacks (PROTOCOL.md §3). Every option is looked up in the table of
``compat.flags`` (``TRANSLATION_TABLE`` below is its README form): kept, renamed, split,
joined, turned into a setting or an environment variable, or dropped with one warning per
option. ``--flag=value`` and ``--flag value`` are both read, with commander's binding
rules (``<v>`` takes the next word whatever it is, ``[v]`` only a non-option word,
``<v...>`` every word up to the next option). An option the table does not know passes
when cbc declares it (an SDK's ``extra_args`` aimed at cbc) and is dropped with a warning
otherwise; when it came as ``--flag value`` and the next word is not an option, that word
is taken as its value. The first positional word (or the first word after ``--``) is the
prompt, as for Claude (``claude -p PROMPT``): it is kept in ``Translation.prompt`` and never
reaches cbc's argv (the bridge writes it to cbc as a stream-json user line, see
``compat.headless``); later positional words are ignored, as Claude ignores them. The
client's ``--input-format``/``--output-format``/``--verbose`` are kept in
``Translation.options`` (cbc always gets stream-json both ways and ``--verbose``).

Output order: ``-p``, the options in the client's order, ``--input-format stream-json
--output-format stream-json --verbose`` when missing, cbc's variadic options last (so
they cannot swallow a word meant for something else), then ``--session-id`` when
``session-pin`` adds it. Values that start with ``-`` and values of optional-value options
are written ``--flag=value``: commander binds those to the flag, never to another option.

``session-pin``: cbc learns its session id only when the first turn returns, so a user line
written during that turn starts a second, parallel session
(``cbc-2.163.0/mockoai_interrupt-during-slow-fg-bash``); unless the client passed
``--resume``, ``--continue`` or ``--session-id``, cbc is started with ``--session-id`` and
the uuid the caller supplies (the bridge's, so tests are deterministic).
"""

from __future__ import annotations

import dataclasses  # (not attrs: read before the backend is spawned; bridge.launch)
from collections.abc import Sequence
from typing import Any

import orjson

from compat.flags import (
    ACTIONS,
    BY_NAME,
    CBC_OPTIONS,
    CBC_REFUSED,
    CBC_SHORT,
    CBC_VARIADIC,
    FLAGS,
    PERMISSION_MODES,
    Flag,
    table_rows,
)

__all__ = [
    "ACTIONS",
    "FLAGS",
    "TRANSLATION_TABLE",
    "Translation",
    "readme_tables",
    "session_id_of",
    "split_tool_list",
    "translate_to_cbc",
]

#: the translation table as rows ``(Claude option(s), what cbc gets, note)`` (README)
TRANSLATION_TABLE: list[tuple[str, str, str]] = table_rows()
#: options that name the session: the client's choice wins over session-pin
SESSION_FLAGS = frozenset({"--resume", "--continue", "--session-id"})
_STREAM = "stream-json"


@dataclasses.dataclass(frozen=True)
class Translation:
    argv: list[str]
    #: one line per option dropped or changed in meaning (one per option name)
    warnings: list[str]
    #: the client asked for can_use_tool prompts over stdio (``--permission-prompt-tool
    #: stdio``, ``--permission-prompts host``): permission-routing forwards them
    stdio_permissions: bool = False
    #: the client named the session itself (--resume/--continue/--session-id)
    session_given: bool = False
    #: variables to add to cbc's environment (``--max-thinking-tokens``)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    #: the session id cbc will use, when known (pinned, --session-id, --resume <id>)
    session_id: str | None = None
    #: session-pin added ``--session-id``
    pinned: bool = False
    #: Claude options dropped (canonical names), for tests and ``--stats``
    dropped: list[str] = dataclasses.field(default_factory=list)
    #: the prompt given on the command line (the first positional word), if any
    prompt: str | None = None
    #: every Claude option the table knows, by canonical name, with the values given
    #: (the last occurrence wins for single-valued options; ``[]`` for a switch)
    options: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    #: positional words after the prompt (Claude ignores them)
    ignored: list[str] = dataclasses.field(default_factory=list)
    #: options handled otherwise with nothing lost (logged at info, not warned about)
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def resumes(self) -> bool:
        """The client resumes a session (``--resume``, ``--continue``)."""
        return "--resume" in self.options or "--continue" in self.options

    @property
    def max_turns(self) -> int | None:
        """``--max-turns N`` (the last one given) when N is a positive integer, else None
        (Claude takes 0 for no limit)."""
        text = (self.options.get("--max-turns") or [""])[-1].strip()
        return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else None


def readme_tables() -> str:
    """The README's block between ``<!-- launch-tables -->`` markers: the argv table and the
    env table (``tests/compat/test_argv.py`` checks the README carries them verbatim)."""
    from compat.env import ENV_TABLE

    def cell(x: str) -> str:
        return x.replace("|", "\\|")

    rows = ["| Claude option | cbc gets | what happens |", "|---|---|---|"]
    rows += [
        f"| `{cell(c)}` | {'`' + b + '`' if b != '-' else '-'} | {cell(n)} |"
        for c, b, n in TRANSLATION_TABLE
    ]
    rows += ["", "| Claude side | cbc gets | when |", "|---|---|---|"]
    rows += [
        f"| {'`' + c + '`' if c != '-' else '-'} | {'`' + b + '`' if b != '-' else '-'} "
        f"| {cell(n)} |"
        for c, b, n in ENV_TABLE
    ]
    return "\n".join(rows)


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


def session_id_of(argv: Sequence[str]) -> str | None:
    """The ``--session-id`` (or ``--resume`` id) on a cbc launch line, if any."""
    found = None
    for i, tok in enumerate(argv):
        for flag in ("--session-id", "--resume"):
            if tok == flag and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                found = argv[i + 1]
            elif tok.startswith(flag + "="):
                found = tok.split("=", 1)[1] or found
    return found


class _Translator:
    def __init__(self, argv: Sequence[str]) -> None:
        self.args = list(argv)
        self.i = 0
        self.out: list[str] = []
        self.tail: list[str] = []
        self.warned: dict[str, str] = {}
        self.notes: list[str] = []
        self.dropped: list[str] = []
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
            if vals:
                self.tail += [flag, *vals]
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
        vals = self.values("optional", inline)
        self.drop(name, vals, "unknown option (cbc would refuse it)")

    def known(self, flag: Flag, spelled: str, inline: str | None) -> None:
        vals = self.values(flag.arity, inline)
        name, action = flag.name, flag.action
        self.options[name] = (
            [*self.options.get(name, []), *vals] if flag.arity == "variadic" else vals
        )
        if name in SESSION_FLAGS:
            self.session_given = True
            if name != "--continue" and vals:
                self.session_id = vals[-1]
        if name == "--fork-session":
            self.fork = True
        if action in ("keep", "rename", "ensure"):
            if flag.arity == "none" and vals:
                self.warn(name, f"{spelled}={vals[0]}: {name} takes no value; value dropped")
                vals = []
            self.emit(flag.target, vals, flag.arity)
        elif action == "format":
            # text/json are rendered for the client from cbc's stream-json (compat.headless)
            if name not in self.seen:
                self.emit(name, [_STREAM], "one")
        elif action == "split":
            self.emit(flag.target, split_tool_list(vals), "variadic")
        elif action == "join":
            self.emit(flag.target, [",".join(v for v in vals if v) if vals else ""], "one")
        elif action == "first":
            parts = [p.strip() for v in vals for p in v.split(",") if p.strip()]
            if len(parts) > 1:
                self.warn(
                    name, f"{name}: cbc takes one model; kept {parts[0]!r}, dropped {parts[1:]}"
                )
            if parts:
                self.emit(flag.target, parts[:1], "one")
        elif action == "mode":
            mode = vals[0] if vals else ""
            if mode in PERMISSION_MODES:
                self.warn(name, f"{name} {mode!r} is {PERMISSION_MODES[mode]!r} in cbc")
                mode = PERMISSION_MODES[mode]
            if mode:
                self.emit(flag.target, [mode], "one")
        elif action == "sources":
            value = vals[0] if vals else ""
            self.emit(flag.target, [value if value.strip(", ") else "none"], "one")
        elif action == "settings":
            if vals:
                self.settings = vals[0]
        elif action == "mcp":
            self.mcp += vals
        else:
            self.special(flag, vals)

    def special(self, flag: Flag, vals: list[str]) -> None:
        name, action = flag.name, flag.action
        value = vals[0] if vals else ""
        if action == "thinking":
            if value in ("adaptive", "enabled"):
                self.settings_patch["alwaysThinkingEnabled"] = True
            elif value == "disabled":
                self.settings_patch["alwaysThinkingEnabled"] = False
            else:
                self.drop(name, vals, "unknown thinking mode")
        elif action == "thinking-tokens":
            try:
                n = int(value)
            except ValueError:
                self.drop(name, vals, "not a number")
                return
            if n > 0:
                self.env["MAX_THINKING_TOKENS"] = str(n)
            self.settings_patch["alwaysThinkingEnabled"] = n > 0
        elif action == "plugin-no-mcp":
            self.warn(
                name,
                f"{name} {value!r} loaded as --plugin-dir: cbc cannot skip the "
                "plugin's MCP discovery",
            )
            if value:
                self.emit(flag.target, [value], "one")
        elif action == "stdio":
            self.stdio = value == "stdio"
            if self.stdio:  # what the SDKs pass for can_use_tool: nothing is lost
                if name not in self.dropped:
                    self.dropped.append(name)
                self.notes.append(
                    f"{name} 'stdio' not passed: cbc always asks over stdio; "
                    "permission prompts are forwarded"
                )
            else:
                self.drop(
                    name,
                    vals,
                    "cbc always asks over stdio; not a stdio prompt tool: "
                    "the bridge denies like Claude",
                )
        elif action == "prompts":
            self.stdio = self.stdio or value == "host"
            self.drop(name, vals, "cbc has no such option")
        elif action == "refuse":
            self.drop(
                name,
                vals,
                "cbc's option of that name would leave the stdio "
                "stream-json session or means something else",
            )
        else:
            self.drop(name, vals, "cbc has no such option")

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


def translate_to_cbc(
    argv: Sequence[str], *, session_id: str | None = None, pin: bool = True
) -> Translation:
    """Translate a Claude command line. ``session_id``: the uuid session-pin gives cbc when
    the client did not name the session (``pin=False``: rule ``session-pin`` is off)."""
    t = _Translator(argv)
    t.run()
    t.finish()
    out = t.out + t.tail
    sid = t.session_id if not t.fork else None
    pinned = False
    if pin and session_id and not t.session_given:
        out += ["--session-id", session_id]
        sid, pinned = session_id, True
    return Translation(
        argv=out,
        warnings=list(t.warned.values()),
        stdio_permissions=t.stdio,
        session_given=t.session_given,
        env=t.env,
        session_id=sid,
        pinned=pinned,
        dropped=t.dropped,
        prompt=t.prompt,
        options=t.options,
        ignored=t.ignored,
        notes=list(dict.fromkeys(t.notes)),
    )
