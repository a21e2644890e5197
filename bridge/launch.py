"""Start the backend first (issue 11): the launch line needs only light imports (the
config, the backend lookup, ``compat.argv``/``compat.env``), the process is spawned with the
standard library, and trio, the proxy and the stages are imported and built while the
backend boots; the session then adopts the running process (``bridge.driver.adopt``).

Nothing here imports trio or a stage. The launch translations (rules ``argv``, ``env``,
``session-pin``, ``compat.profiles.TRANSLATIONS``) are decided without ``compat.profiles``
(which imports every stage) unless the settings name one of them: then the full parser
and its errors decide (``launch_translations``; a test checks the two agree)."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

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

Rules = Sequence[str] | Mapping[str, str]


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


def _items(rules: Rules) -> list[str]:
    return [f"{k}={v}" for k, v in rules.items()] if isinstance(rules, Mapping) else list(rules)


def _names(items: Iterable[str]) -> set[str]:
    """The rule ids the settings name (``argv=off``, ``argv.x=1``, comma lists)."""
    return {
        part.partition("=")[0].strip().partition(".")[0]
        for item in items
        for part in item.split(",")
        if part.strip()
    }


def launch_translations(profile: str, rules: Rules) -> dict[str, bool]:
    """Which of ``argv``, ``env``, ``session-pin`` apply (``translation_enabled``)."""
    items = _items(rules)
    if _names(items) & set(LAUNCH_RULES):
        from compat.profiles import parse_rule_settings, translation_enabled

        settings = parse_rule_settings(items)
        return {r: translation_enabled(profile, settings, r) for r in LAUNCH_RULES}
    own = TRANSLATIONS.get(profile, ())
    return {r: r in own for r in LAUNCH_RULES}


def backend_command(
    backend: Sequence[str],
    profile: str,
    client_argv: Sequence[str],
    log: Log,
    rules: Rules = (),
    new_session_id: Callable[[], str] = lambda: str(uuid.uuid4()),
) -> list[str]:
    """The launch line: the backend command plus the client's argv, translated for cbc
    under ``cbc-to-claude`` (rules ``argv``, ``session-pin``), for Claude under
    ``claude-to-cbc`` (``rev-argv``), as is otherwise."""
    on = launch_translations(profile, rules)
    if on["rev-argv"]:
        from compat.argv_cbc import translate_to_claude

        rev = translate_to_claude(client_argv, is_root=is_root())
        for w in rev.warnings:
            log.warning(w, "rev-argv")
        argv = [*backend, *rev.argv]
    elif on["argv"]:
        from compat.argv import translate_to_cbc

        pin = on["session-pin"]
        tr = translate_to_cbc(client_argv, session_id=new_session_id() if pin else None, pin=pin)
        for w in tr.warnings:
            log.warning(w, "argv")
        for note in tr.notes:
            log.info(note, "argv")
        if tr.pinned:
            log.debug(f"cbc started with --session-id {tr.session_id}", "session-pin")
        argv = [*backend, *tr.argv]
    else:
        argv = [*backend, *client_argv]
    log.debug("launch line: " + " ".join(argv), "argv")
    return argv


def backend_env(
    profile: str,
    env: Mapping[str, str],
    client_argv: Sequence[str] | None = None,
    rules: Rules = (),
) -> dict[str, str]:
    """The backend's environment: under ``cbc-to-claude`` (rule ``env``) cbc's variables,
    plus those the argv translation derives (``--max-thinking-tokens``); under
    ``claude-to-cbc`` (``rev-env``) Claude's, from the ``CODEBUDDY_*`` ones."""
    on = launch_translations(profile, rules)
    if client_argv is not None and on["rev-env"]:
        from compat.argv_cbc import translate_to_claude
        from compat.env_cbc import translate_env_to_claude

        return translate_env_to_claude(env, translate_to_claude(client_argv, is_root=is_root()).env)
    extra: dict[str, str] = {}
    if client_argv is not None and on["argv"]:
        from compat.argv import translate_to_cbc

        extra = translate_to_cbc(client_argv).env
    if on["env"]:
        from compat import __version__
        from compat.env import translate_env_to_cbc

        return translate_env_to_cbc(env, extra, bridge_version=__version__)
    return {**env, **extra}


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
    argv: Sequence[str], env: dict[str, str] | None = None, *, own_process: bool = True
) -> Started:
    """Spawn at once (the subreaper first when this process is the session's alone); an
    error is kept for the session to report as it reports a failed spawn (127, 126)."""
    if own_process:
        from bridge import reaper

        reaper.become_subreaper()
    try:
        return spawn(argv, env)
    except OSError as e:
        return e


def serve(
    started: Started,
    early: DeferredLog,
    *,
    log_path: str | None,
    log_level: str,
    profile: str,
    client_argv: Sequence[str],
    headless: Any,
    prepared: bool,
    only_print: bool = False,
    **session: Any,
) -> int:
    """The session around a backend ``start`` spawned: the log opened (``early``'s lines
    first), the headless prompt read unless already ``prepared``, then trio, the proxy and
    the stages imported (while the backend boots) and the running backend adopted. Until
    the session has it, any failure (a rule error, an interrupt, a prompt refused) ends the
    backend (``abandon``)."""
    try:
        from bridge.log import Logger

        log = Logger.open(log_path, log_level)
        early.replay(log)
        if profile == "cbc-to-claude" and not prepared:
            from bridge.headless import prepare

            headless, status = prepare(client_argv, only_print=only_print)
            if status is not None:
                abandon(started)
                return status
        import trio

        from bridge.driver import adopt
        from bridge.proxy import serve_stdio

        return trio.run(
            lambda: serve_stdio(
                profile=profile,
                log=log,
                client_argv=client_argv,
                headless=headless,
                backend=adopt(started),
                **session,
            )
        )
    except BaseException:
        abandon(started)
        raise


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
