"""Start the backend first (issue 11): the launch line needs only light imports (the
config, the backend lookup, ``compat.argv``/``compat.env``), the process is spawned with the
standard library, and trio, the proxy and the stages are imported and built while the
backend boots; the session then adopts the running process (``bridge.driver.adopt``).

Everything a session needs is decided once, into a frozen ``Plan`` (``plan``): the rule
settings parsed once (``compat.rulespec``), the client's argv translated once, the backend's
command line and environment. Nothing here imports trio or a stage. The launch
translations (rules ``argv``, ``env``, ``session-pin``, ``rev-argv``, ``rev-env``) are
decided without ``compat.profiles`` (which imports every stage) unless the settings name
one of them: then the full parser and its errors decide (``launch_translations``; a test
checks the two agree)."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from compat import rulespec
from compat.rulespec import Rules, RuleSettings
from compat.versions import TARGET_CLAUDE_VERSION

if TYPE_CHECKING:
    from bridge.config import Settings
    from compat.argv import Translation as ForwardTranslation
    from compat.argv_cbc import Translation as ReverseTranslation

#: ``compat.profiles.TRANSLATIONS`` (a test checks the copy): the launch translations per
#: profile, all on unless the settings switch them
TRANSLATIONS: dict[str, tuple[str, ...]] = {
    "cbc-to-claude": ("argv", "env", "session-pin"),
    "claude-to-cbc": ("rev-argv", "rev-env"),
}
LAUNCH_RULES = ("argv", "env", "session-pin", "rev-argv", "rev-env")
#: ``compat.profiles.PROFILES``'s names (a test checks the copy), for ``ccbridge run
#: --profile`` before the stages are imported
PROFILE_NAMES = ("cbc-to-claude", "claude-to-cbc", "identity")
#: the option of a client whose first line is read before the launch (``bridge.await_init``,
#: imported only then)
AWAIT = "--await-initialize"


class Log(Protocol):
    def info(self, message: str, rule: str = "") -> None: ...

    def warning(self, message: str, rule: str = "") -> None: ...

    def debug(self, message: str, rule: str = "") -> None: ...


class DeferredLog:
    """What the launch logs before the real ``Logger`` (``compat.redact``) is imported:
    kept in order and replayed into it once the backend runs."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, str]] = []

    def info(self, message: str, rule: str = "") -> None:
        self.records.append(("info", rule, message))

    def warning(self, message: str, rule: str = "") -> None:
        self.records.append(("warning", rule, message))

    def debug(self, message: str, rule: str = "") -> None:
        self.records.append(("debug", rule, message))

    def replay(self, log: _Leveled) -> None:
        for level, rule, message in self.records:
            log.log(level, rule, message)
        self.records.clear()


class _Leveled(Protocol):
    def log(self, level: str, rule: str, message: str) -> None: ...


def launch_translations(profile: str, rules: Rules) -> dict[str, bool]:
    """Which of ``argv``, ``env``, ``session-pin``, ``rev-argv``, ``rev-env`` apply
    (``compat.profiles.translation_enabled``, imported only when the settings name one)."""
    settings = rulespec.settings(rules)
    if set(settings) & set(LAUNCH_RULES):
        from compat.profiles import translation_enabled

        return {r: translation_enabled(profile, settings, r) for r in LAUNCH_RULES}
    own = TRANSLATIONS.get(profile, ())
    return {r: r in own for r in LAUNCH_RULES}


class Plan(NamedTuple):
    """One session, decided once from the command line, the environment and the config
    file before anything starts; ``start``, ``serve`` and the session only read it. The
    client's argv is translated once here (``forward``: ``compat.argv`` for cbc,
    ``reverse``: ``compat.argv_cbc`` for Claude), and the rule settings parsed once."""

    source: str  # what runs the session, for the recorder: "ccbridge run", "claude-on-cbc"
    profile: str
    client_argv: tuple[str, ...]
    backend_argv: tuple[str, ...]
    backend_env: Mapping[str, str]
    #: our own environment (the recorder keeps the bridge's variables of it)
    env: Mapping[str, str]
    rules: RuleSettings
    forward: ForwardTranslation | None = None
    reverse: ReverseTranslation | None = None
    record: str | None = None
    log_path: str | None = None
    log_level: str = "warning"
    stats: bool = False
    max_line: int | None = None
    eof_grace: float | None = 60.0
    script_roots: tuple[str, ...] = ()
    #: the Claude Code version the rules emulate (``compat.target``)
    target: str = TARGET_CLAUDE_VERSION
    #: the client's first bytes, read before the backend started (``--await-initialize``:
    #: its ``initialize``), which the session reads first
    preread: bytes = b""
    #: the ``initialize`` fields given to cbc on its command line (``compat.launch_init``)
    launch_fields: frozenset[str] = frozenset()
    #: the private directory of the files those fields' values were written to (removed
    #: when the session ends; ``bridge.await_init``)
    private_dir: str | None = None


def plan(
    source: str,
    profile: str,
    backend: Sequence[str],
    client_argv: Sequence[str],
    env: Mapping[str, str],
    rules: Rules,
    log: Log,
    *,
    new_session_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    first_line: Callable[[], bytes] | None = None,
    **options: Any,
) -> Plan:
    """The launch line and environment: the backend command plus the client's argv,
    translated for cbc under ``cbc-to-claude`` (rules ``argv``, ``session-pin``, ``env``),
    for Claude under ``claude-to-cbc`` (``rev-argv``, ``rev-env``), as is otherwise; the
    ``eof-wind-down`` ceiling from ``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS``. A client that
    awaits initialize: its first line read (``first_line``) and its launch fields added
    (``bridge.await_init``). ``options``: the other fields of ``Plan``."""
    settings = wind_down_ceiling(profile, rulespec.settings(rules), env)
    on = launch_translations(profile, settings)
    forward, reverse = _translate(profile, on, client_argv, new_session_id)
    awaited = None
    if first_line is not None and forward is not None and AWAIT in forward.options and on["argv"]:
        from bridge.await_init import with_initialize

        awaited = with_initialize(forward, client_argv, first_line, log)
        forward = awaited.forward
    argv = _launch_line(on, backend, client_argv, forward, reverse, log)
    log.debug("launch line: " + " ".join(argv), "argv")
    return Plan(
        source,
        profile,
        tuple(client_argv),
        tuple(argv),
        _backend_env(on, env, forward if on["argv"] else None, reverse),
        env,
        settings,
        forward,
        reverse,
        **options,
        **(awaited.plan_fields() if awaited is not None else {}),
    )


def _translate(
    profile: str,
    on: dict[str, bool],
    client_argv: Sequence[str],
    new_session_id: Callable[[], str],
) -> tuple[ForwardTranslation | None, ReverseTranslation | None]:
    """The client's argv translated once, for the launch line and for what the rules learn
    of the launch (``bridge.proxy.set_launch_facts``), even with the translation rules
    off: (for cbc, for Claude), each None when the profile has no use for it."""
    forward: ForwardTranslation | None = None
    reverse: ReverseTranslation | None = None
    if profile == "claude-to-cbc" or on["rev-argv"] or on["rev-env"]:
        from compat.argv_cbc import translate_to_claude

        reverse = translate_to_claude(client_argv, is_root=is_root())
    if profile == "cbc-to-claude" or on["argv"]:
        from compat.argv import translate_to_cbc

        pin = on["argv"] and on["session-pin"]
        forward = translate_to_cbc(
            client_argv, session_id=new_session_id() if pin else None, pin=pin
        )
    return forward, reverse


def _launch_line(
    on: dict[str, bool],
    backend: Sequence[str],
    client_argv: Sequence[str],
    forward: ForwardTranslation | None,
    reverse: ReverseTranslation | None,
    log: Log,
) -> list[str]:
    """The backend command and the client's argv as the translation that is on has it
    (its warnings logged), or as it came."""
    if on["rev-argv"] and reverse is not None:
        for w in reverse.warnings:
            log.warning(w, "rev-argv")
        return [*backend, *reverse.argv]
    if on["argv"] and forward is not None:
        for w in forward.warnings:
            log.warning(w, "argv")
        for note in forward.notes:
            log.info(note, "argv")
        if forward.pinned:
            log.debug(f"cbc started with --session-id {forward.session_id}", "session-pin")
        return [*backend, *forward.argv]
    return [*backend, *client_argv]


def options(settings: Settings) -> dict[str, Any]:
    """The ``Plan`` fields a drop-in takes from its settings (``bridge.config``) as they are."""
    return {
        "log_path": settings.log,
        "log_level": settings.log_level,
        "record": settings.record,
        "stats": settings.stats,
        "max_line": settings.max_line,
        "eof_grace": settings.eof_grace,
        "script_roots": tuple(settings.script_roots),
        "target": settings.target,
    }


def dropin_session(
    source: str,
    profile: str,
    backend: Sequence[str],
    client_argv: Sequence[str],
    env: Mapping[str, str],
    settings: Settings,
    early: DeferredLog,
    *,
    headless: Any = None,
    prepared: bool = False,
) -> int:
    """A drop-in's session (``claude-on-cbc``, ``cbc-on-claude``): the plan from its
    settings, the backend spawned at once (once the client's initialize is read, when the
    client awaits initialize), then served."""
    p = plan(
        source,
        profile,
        backend,
        client_argv,
        env,
        settings.rules,
        early,
        first_line=first_line_reader(settings.max_line),
        **options(settings),
    )
    try:
        capture = open_record(p, "CCBRIDGE_RECORD (or record =)")
        return serve(
            start(p.backend_argv, p.backend_env),
            early,
            p,
            headless=headless,
            prepared=prepared,
            capture=capture,
        )
    finally:
        discard_private(p)


def _backend_env(
    on: Mapping[str, bool],
    env: Mapping[str, str],
    forward: ForwardTranslation | None,
    reverse: ReverseTranslation | None,
) -> dict[str, str]:
    """Under ``cbc-to-claude`` (rule ``env``) cbc's variables, plus those the argv
    translation derives (``--max-thinking-tokens``); under ``claude-to-cbc`` (``rev-env``)
    Claude's, from the ``CODEBUDDY_*`` ones."""
    if on["rev-env"] and reverse is not None:
        from compat.env_cbc import translate_env_to_claude

        return translate_env_to_claude(env, reverse.env)
    extra = forward.env if forward is not None else {}
    if on["env"]:
        from compat import __version__
        from compat.env import translate_env_to_cbc

        return translate_env_to_cbc(env, extra, bridge_version=__version__)
    return {**env, **extra}


def wind_down_ceiling(profile: str, settings: RuleSettings, env: Mapping[str, str]) -> RuleSettings:
    """``settings`` plus ``eof-wind-down.ceiling`` from ``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS``
    (the variable the Claude SDKs and CLI share) unless they set it or the rule is off."""
    from compat.env import winddown_ceiling

    own = settings.get("eof-wind-down", {})
    ceiling = winddown_ceiling(env)
    if profile != "cbc-to-claude" or ceiling is None or "ceiling" in own:
        return settings
    if own.get("mode") == "off":
        return settings
    return {**settings, "eof-wind-down": {**own, "ceiling": f"{ceiling:g}"}}


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def spawn(
    argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None
) -> subprocess.Popen[bytes]:
    """The backend with piped stdio, in a session of its own (its process group is
    signalled and killed as one). Raises FileNotFoundError / PermissionError."""
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
        bufsize=0,
    )


Started = subprocess.Popen[bytes] | OSError


def start(
    argv: Sequence[str], env: Mapping[str, str] | None = None, *, own_process: bool = True
) -> Started:
    """Spawn at once (the subreaper first when this process is the session's alone); an
    error is kept for the session to report as it reports a failed spawn (127, 126).
    A session: ``start(plan.backend_argv, plan.backend_env)``."""
    if own_process:
        from bridge import reaper

        reaper.become_subreaper()
    try:
        return spawn(argv, dict(env) if env is not None else None)
    except OSError as e:
        return e


def open_record(plan: Plan, setting: str) -> tuple[int, str] | None:
    """The capture file of ``plan.record`` opened before anything starts
    (``bridge.recorder.open_capture``): a target that cannot be written (a read-only or
    missing place, a link) is a ``ConfigError`` naming ``setting`` (exit 2)."""
    if not plan.record:
        return None
    from bridge.config import ConfigError
    from bridge.recorder import open_capture

    try:
        return open_capture(plan.record)
    except OSError as e:
        raise ConfigError(f"{setting}={plan.record!r}: {e.strerror or e}") from None


def serve(
    started: Started,
    early: DeferredLog,
    plan: Plan,
    *,
    headless: Any = None,
    prepared: bool = False,
    only_print: bool = False,
    capture: tuple[int, str] | None = None,
) -> int:
    """The session around a backend ``start`` spawned: the log opened (``early``'s lines
    first), the headless prompt read unless already ``prepared``, then trio, the proxy and
    the stages imported (while the backend boots) and the running backend adopted. Until
    the session has it, any failure (a rule error, an interrupt, a prompt refused) ends the
    backend (``abandon``)."""
    try:
        from bridge.log import Logger

        log = Logger.open(plan.log_path, plan.log_level)
        early.replay(log)
        if plan.profile == "cbc-to-claude" and not prepared:
            from bridge.headless import prepare

            headless, status = prepare(plan.client_argv, only_print=only_print)
            if status is not None:
                abandon(started)
                return status
        import trio

        from bridge.driver import adopt
        from bridge.proxy import serve_stdio

        return trio.run(
            lambda: serve_stdio(
                plan, log, headless=headless, backend=adopt(started), capture=capture
            )
        )
    except BaseException:
        abandon(started)
        raise


def discard_private(plan: Plan) -> None:
    """The plan's private files gone (``bridge.await_init``): after its session, or when
    it never ran."""
    if plan.private_dir is not None:
        import shutil

        shutil.rmtree(plan.private_dir, ignore_errors=True)


def first_line_reader(limit: int | None) -> Callable[[], bytes]:
    """``plan``'s ``first_line`` for a session on our stdin (``bridge.await_init``)."""

    def read() -> bytes:
        from bridge.await_init import read_first_line

        return read_first_line(0, limit)

    return read


def abandon(started: Started) -> None:
    """The session will not run (a usage error found after the spawn, an interrupt): end
    the backend's process group and reap it."""
    if isinstance(started, OSError):
        return
    import os
    import signal

    for f in (started.stdin, started.stdout, started.stderr):
        if f is not None:
            f.close()
    try:
        os.killpg(started.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        started.kill()
    started.wait()
