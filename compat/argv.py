"""Rules ``argv`` and ``session-pin``: a Claude Code command line -> one cbc 2.163.0 accepts.

cbc exits 1 on any option it does not know (``error: unknown option``), and the official
SDKs pass many cbc lacks (PROTOCOL.md §3). Every option is looked up in the table of
``compat.flags`` (``TRANSLATION_TABLE`` below is its README form): kept, renamed, split,
joined, turned into a setting or an environment variable, or dropped with one warning per
option. ``--flag=value`` and ``--flag value`` are both read, with commander's binding
rules (``<v>`` takes the next word whatever it is, ``[v]`` only a non-option word,
``<v...>`` every word up to the next option). An option the table does not know passes
when cbc declares it (an SDK's ``extra_args`` aimed at cbc); one neither CLI knows is
listed in ``Translation.unknown``, and the drop-in refuses the first as Claude does
(``error: unknown option '--x'`` and commander's "Did you mean", exit 1:
``compat.headless.unknown_option``); translated anyway, it is dropped with a warning (when
it came as ``--flag value`` and the next word is not an option, that word is taken as its
value). The first positional word (or the first word after ``--``) is the
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

The walk over the command line, one option at a time, is ``compat.argv_walk``.
"""

from __future__ import annotations

import dataclasses  # (not attrs: read before the backend is spawned; bridge.launch)
from collections.abc import Sequence

from compat.argv_walk import SESSION_FLAGS as SESSION_FLAGS
from compat.argv_walk import Translator
from compat.argv_walk import split_tool_list as split_tool_list
from compat.flags import ACTIONS, FLAGS, table_rows

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
    #: options neither Claude nor cbc knows, as spelled (Claude refuses the first: the
    #: drop-in does too, ``compat.headless.Mode.usage_error``)
    unknown: list[str] = dataclasses.field(default_factory=list)
    #: options Claude knows given without their required value (Claude refuses the first)
    missing: list[str] = dataclasses.field(default_factory=list)

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


def translate_to_cbc(
    argv: Sequence[str], *, session_id: str | None = None, pin: bool = True
) -> Translation:
    """Translate a Claude command line. ``session_id``: the uuid session-pin gives cbc when
    the client did not name the session (``pin=False``: rule ``session-pin`` is off)."""
    t = Translator(argv)
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
        unknown=t.unknown_words,
        missing=t.missing,
    )
