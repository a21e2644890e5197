"""``claude-on-cbc``: the drop-in executable a Claude client is given instead of ``claude``
(``cli_path=`` in the Python SDK, ``pathToClaudeCodeExecutable`` in the TypeScript SDK, or
``claude`` on PATH for scripts: ``claude-on-cbc -p "..." --output-format json``; headless
modes in ``compat.headless`` / ``bridge.headless``).

Its argv belongs to the client; everything else comes from the environment or the config
file (``bridge.config``). The backend is found by ``bridge.backends.lookup`` (the order
every command uses: ``CCBRIDGE_BACKEND``, ``CODEBUDDY_CODE_PATH``, the ``ccbridge backends
install`` cache, PATH, an installed ``codebuddy-agent-sdk``). None found: say what was
tried, exit 127.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

# light on purpose: `--version` and `--help` answer before trio, the config, the proxy or
# any stage is imported, and a session spawns the backend before they are (bridge.launch)
from bridge import stdfds
from compat import __version__
from compat.exits import Exit

if TYPE_CHECKING:
    from bridge.config import Settings
    from bridge.headless import HeadlessIO
    from bridge.transcripts import StoreSpec
    from compat.rulespec import RuleSettings

EXIT_NO_BACKEND = Exit.NOT_FOUND


def version_text(env: Mapping[str, str] | None = None) -> str:
    """What ``--version`` prints: SDKs parse the first "X.Y.Z", so the emulated Claude
    version comes first, the target ``CCBRIDGE_TARGET`` (or the config file) names,
    checked as every session checks it (``bridge.config.load_target``: a bad one is a
    ``ConfigError``, exit 2)."""
    from bridge.configfile import load_target

    version = load_target(os.environ if env is None else env)
    return f"{version} (Claude Code; ccbridge {__version__} on cbc)"


def bundled_cbc() -> str | None:
    """The cbc binary of an installed ``codebuddy-agent-sdk`` (tests use it)."""
    from bridge.backends import _cbc_from_package

    exe = _cbc_from_package()
    return str(exe) if exe else None


def help_text() -> str:
    """The Claude options accepted and what cbc gets for each (rule ``argv``); no line
    longer than 100 characters."""
    from bridge.cli import columns
    from compat.argv import ACTIONS
    from compat.env import ENV_TABLE

    translated, dropped, unneeded = _option_groups()
    # (Claude option, what happens) one per line; plain pass-through needs no words
    return "\n".join(
        [
            f"Usage: claude-on-cbc [options]   ({version_text()})",
            "",
            "A drop-in for the `claude` executable that runs CodeBuddy Code (cbc) behind",
            "the ccbridge normalization pipeline (profile cbc-to-claude), in every headless",
            "mode of Claude Code: `-p PROMPT`, a prompt on stdin, --output-format",
            "text|json|stream-json (cbc always speaks stream-json to the bridge, which",
            "renders text and json as Claude does). `--flag=value` and `--flag value` are",
            "both accepted.",
            "",
            "Claude options accepted and passed on to cbc (as):",
            *columns([(c, "" if n.startswith(ACTIONS["keep"]) else n) for c, _, n in translated]),
            "",
            "Claude options accepted and dropped with one warning on stderr:",
            *(f"  {c}" for c in dropped),
            "",
            "Claude options accepted and left out, nothing lost (said at CCBRIDGE_LOG=info):",
            *(f"  {c}" for c in unneeded),
            "",
            "Other options: passed on when cbc declares them (and does not leave stream-json",
            "mode: --serve, --acp, --bg... are dropped), else dropped with a warning.",
            "Unless --resume, --continue or --session-id is given, cbc is started with",
            "--session-id <fresh uuid> (rule session-pin).",
            "",
            "Environment passed on to cbc (Claude's variable, then what cbc gets):",
            *columns([(c, b) for c, b, _ in ENV_TABLE if c != "-" and b != "-"]),
            "",
            "Bridge environment: CCBRIDGE_BACKEND, CODEBUDDY_CODE_PATH, CCBRIDGE_RULES,",
            "CCBRIDGE_RECORD, CCBRIDGE_LOG, CCBRIDGE_CONFIG, CCBRIDGE_TARGET (the Claude Code",
            "version emulated: 2.1.220, the default, or 2.1.332; see docs/drift.md);",
            "CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS bounds the wind-down after stdin EOF.",
            "Each session is also written where Claude Code keeps its own",
            "($CLAUDE_CONFIG_DIR or ~/.claude, projects/); CCBRIDGE_SESSION_STORE=off: not",
            "(docs/session-store.md).",
        ]
    )


def _option_groups() -> tuple[list[tuple[str, str, str]], list[str], list[str]]:
    """The translation table's rows for ``--help``: (Claude option, cbc's, note) of those
    passed on; the options dropped with a warning; those left out with nothing lost
    (said at info; ``--permission-prompt-tool`` only with the value stdio)."""
    from compat.argv import ACTIONS, TRANSLATION_TABLE

    quiet = (ACTIONS["ignore"], ACTIONS["stdio"])
    translated = [(c, b, n) for c, b, n in TRANSLATION_TABLE if b != "-"]
    left = [(c, n) for c, b, n in TRANSLATION_TABLE if b == "-"]
    dropped = [c for c, n in left if not n.startswith(quiet)]
    unneeded = [c.replace(" <v>", " stdio") for c, n in left if n.startswith(quiet)]
    return translated, dropped, unneeded


def entry() -> NoReturn:
    """``claude-on-cbc``, the console script (``stdfds.run``: no traceback on an interrupt or a
    closed pipe; the exit without Python's teardown)."""
    stdfds.run(main, "claude-on-cbc", fast=True)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """The drop-in; ``argv`` (default ``sys.argv[1:]``) is the client's, ``env`` (default
    ``os.environ``) the bridge's settings and the backend's environment."""
    stdfds.ensure()  # before anything opens a file: a closed 0-2 is /dev/null
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-v", "--version", "-V", "-h", "--help"):
        return _answer(args[0], os.environ if env is None else env)
    from bridge.cli import guarded

    return guarded(lambda: _run(args, dict(os.environ if env is None else env)))


def _answer(flag: str, env: Mapping[str, str]) -> int:
    """``--version`` or ``--help``, without starting anything; the target is checked as
    every session checks it."""
    from bridge.configfile import ConfigError

    try:
        version = version_text(env)
    except ConfigError as e:
        from compat.text import escape

        print(f"ccbridge: {escape(str(e))}", file=sys.stderr)
        return Exit.USAGE
    print(version if flag in ("-v", "--version", "-V") else help_text())
    return 0


def _store_spec(settings: Settings, env: Mapping[str, str]) -> StoreSpec | None:
    """Where the session store goes (docs/session-store.md); None when it is off
    (``session_store = false``, ``CCBRIDGE_SESSION_STORE=off``)."""
    if not settings.session_store:
        return None
    from bridge.transcripts import store_spec

    return store_spec(env, settings.target, settings.log, settings.log_level)


def _transcripts(settings: Settings, env: Mapping[str, str]) -> RuleSettings:
    """The rules' settings plus ``hook-input.transcripts``, the directory the session store
    writes this session's transcript to, so that a hook is told Claude's transcript path;
    as they are when the store is off or the option is set."""
    own = settings.rules.get("hook-input", {})
    if not settings.session_store or "transcripts" in own:
        return settings.rules
    from bridge.transcripts import project_slug, projects_dir

    where = os.path.join(projects_dir(env), project_slug(os.getcwd()))
    return {**settings.rules, "hook-input": {**own, "transcripts": where}}


class _LateIO:
    """A stream-json client's ``HeadlessIO`` with the session store, made once the backend
    runs (``bridge.headless`` is not imported before the spawn on this path): what
    ``bridge.headless.prepare`` gives, the client's stdin never read for a prompt."""

    def __init__(self, client_argv: Sequence[str], store: StoreSpec) -> None:
        self.argv = client_argv
        self.store = store
        self.io: HeadlessIO | None = None
        self.launched = ""

    def wrap(self, client_in: Any, client_out: Any) -> tuple[Any, Any]:
        from bridge.headless import prepare

        self.io, _ = prepare(self.argv, store=self.store)
        if self.io is None:  # (not for a command line the drop-in already let through)
            return client_in, client_out
        self.io.launched = self.launched
        return self.io.wrap(client_in, client_out)

    async def settled(self) -> None:
        if self.io is not None:
            await self.io.settled()

    def finish(self, status: int) -> int:
        return status if self.io is None else self.io.finish(status)


def _client_io(
    client_argv: list[str], settings: Settings, env: Mapping[str, str]
) -> tuple[HeadlessIO | _LateIO | None, int | None]:
    """The client's I/O as ``bridge.headless.prepare`` gives it, before the spawn when the
    prompt is read from stdin, once the backend runs otherwise (``_LateIO``, for the session
    store; None without it: ``bridge.launch.serve`` prepares it); or the status of a
    command line Claude refuses, which never starts cbc."""
    from compat.headless import EXIT_ERROR, mode_of

    mode = mode_of(client_argv)
    error = mode.usage_error()
    if error is not None:
        print(error, file=sys.stderr)
        return None, EXIT_ERROR
    store = _store_spec(settings, env)
    if mode.input == "text":  # a missing or oversized prompt never starts cbc
        from bridge.headless import prepare

        return prepare(client_argv, store=store)
    return (None if store is None else _LateIO(client_argv, store)), None


def _run(client_argv: list[str], env: dict[str, str]) -> int:
    """Settings, the backend, the launch line: then the backend is spawned, and only then
    are trio, the proxy and the stages imported (they load while the backend boots)."""
    from bridge import backends, config, launch

    settings = config.load(env)
    env = config.environment(settings, env)  # the config file's [env] under the caller's
    early = launch.DeferredLog()
    headless: HeadlessIO | _LateIO | None = None
    prepared = False
    if settings.profile == "cbc-to-claude":
        headless, status = _client_io(client_argv, settings, env)
        if status is not None:
            return status
        prepared = headless is not None
        settings.rules = _transcripts(settings, env)
    backend, tried = backends.lookup("cbc", env=env, explicit=settings.backend)
    if backend is None:
        from bridge.log import Logger

        Logger.open(settings.log, settings.log_level).error(
            "no cbc backend found; tried: "
            + "; ".join(tried)
            + ". Run `ccbridge backends install`, set CCBRIDGE_BACKEND or "
            "CODEBUDDY_CODE_PATH, or pip install codebuddy-agent-sdk."
        )
        return EXIT_NO_BACKEND
    if headless is not None:
        headless.launched = config.launched_note(backend[0], settings, env)
    return launch.dropin_session(
        "claude-on-cbc",
        settings.profile,
        backend,
        client_argv,
        env,
        settings,
        early,
        headless=headless,
        prepared=prepared,
    )
