"""Wiring shared by ``ccbridge run`` and the drop-in ``claude-on-cbc``: settings -> an
engine with the profile's stages, the client's stdio, a recorder, one ``Session``.

Under ``cbc-to-claude`` the launch is translated (each switchable like a rule, see
``compat.profiles.TRANSLATIONS``) in ``bridge.launch``, before this module is imported:
``argv`` and ``session-pin`` in ``backend_command`` (compat/argv.py: cbc's options,
``--session-id <fresh uuid>`` unless the client named the session), ``env`` in
``backend_env`` (compat/env.py); here ``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS`` becomes the
``eof-wind-down`` ceiling (``wind_down_rules``)."""

from __future__ import annotations

import datetime
import os
import uuid
from collections.abc import Mapping, Sequence

import trio

from bridge.driver import BackendFactory, Session, SessionConfig
from bridge.files import script_reader
from bridge.headless import HeadlessIO
from bridge.launch import backend_env
from bridge.log import Logger
from bridge.recorder import Recorder
from bridge.transcripts import claude_history
from compat import TARGET_CLAUDE_VERSION, __version__, reverse_state
from compat.argv import translate_to_cbc
from compat.argv_cbc import translate_to_claude
from compat.engine import Engine
from compat.env import winddown_ceiling
from compat.profiles import build, parse_rule_settings
from compat.stage import Env


def build_engine(
    profile: str,
    rules: Sequence[str] | Mapping[str, str] = (),
    *,
    max_line: int | None = None,
    script_roots: Sequence[str] = (),
    epoch_ms: int | None = None,
    strict: bool = False,
    cwd: str | None = None,
    target: str = TARGET_CLAUDE_VERSION,
) -> Engine:
    """``cwd``: the directory the backend is started in (default: ours); workflow scripts
    are read only below it (or ``script_roots``), whatever ``cwd`` the backend reports."""
    items = [f"{k}={v}" for k, v in rules.items()] if isinstance(rules, Mapping) else rules
    up, down = build(profile, parse_rule_settings(items))
    env = Env(
        new_uuid=lambda: str(uuid.uuid4()),
        read_script=script_reader(cwd or os.getcwd(), script_roots),
        epoch_ms=epoch_ms if epoch_ms is not None else _epoch_ms_now(),
        target_version=target,
    )
    kwargs = {"max_line": max_line} if max_line else {}
    return Engine(up, down, env, strict=strict, **kwargs)


def _epoch_ms_now() -> int:
    # engine time 0 is trio's clock at the moment the session starts; stamps are
    # wall-clock milliseconds, so anchor the two here (the only clock read in the bridge)
    import time

    return int(time.time() * 1000) - int(trio.current_time() * 1000)


def set_launch_facts(
    engine: Engine,
    profile: str,
    client_argv: Sequence[str] | None,
    env: Mapping[str, str] | None = None,
) -> None:
    """What the rules must know about the launch (``SessionState``): the pid the client is
    told (``initialize-reply``); under ``cbc-to-claude`` whether the client asked for
    permission prompts over stdio (``permission-routing``); under ``claude-to-cbc`` the
    client's launch as the reverse rules read it (``compat.reverse_state``), with the
    history of a resumed session from Claude's transcript."""
    engine.state.pid = os.getpid()
    if profile == "claude-to-cbc" and client_argv is not None:
        rev = translate_to_claude(client_argv)
        cwd = os.getcwd()
        history = (
            claude_history(backend_env(profile, env or os.environ, client_argv), cwd, rev.resume)
            if rev.resume
            else None
        )
        reverse_state.launch(engine.state, rev, history, cwd)
    if profile == "cbc-to-claude" and client_argv is not None:
        tr = translate_to_cbc(client_argv)
        engine.state.stdio_permissions = tr.stdio_permissions


def wind_down_rules(
    profile: str, rules: Sequence[str] | Mapping[str, str], env: Mapping[str, str]
) -> list[str]:
    """``rules`` plus ``eof-wind-down.ceiling`` from ``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS``
    (the variable the Claude SDKs and CLI share) unless the rules set it or the rule is off."""
    items = [f"{k}={v}" for k, v in rules.items()] if isinstance(rules, Mapping) else list(rules)
    ceiling = winddown_ceiling(env)
    own = parse_rule_settings(items).get("eof-wind-down", {})
    if (
        profile != "cbc-to-claude"
        or ceiling is None
        or "ceiling" in own
        or own.get("mode") == "off"
    ):
        return items
    return [*items, f"eof-wind-down.ceiling={ceiling:g}"]


def record_file(record: str | None) -> str | None:
    """``--record FILE`` is a file; ``CCBRIDGE_RECORD`` (a directory) gets one per session."""
    if not record:
        return None
    if os.path.isdir(record) or record.endswith(os.sep):
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
        return os.path.join(record, f"session-{stamp}-{os.getpid()}.jsonl")
    return record


async def serve_stdio(
    *,
    backend_argv: list[str],
    profile: str,
    rules: Sequence[str] | Mapping[str, str],
    env: Mapping[str, str],
    log: Logger,
    record: str | None = None,
    stats: bool = False,
    max_line: int | None = None,
    eof_grace: float | None = 60.0,
    script_roots: Sequence[str] = (),
    source: str = "ccbridge run",
    client_argv: Sequence[str] | None = None,
    headless: HeadlessIO | None = None,
    backend: BackendFactory | None = None,
    target: str = TARGET_CLAUDE_VERSION,
) -> int:
    """One session on our stdio. ``backend``: the backend already started (``bridge.launch``
    then ``bridge.driver.adopt``); by default the session spawns ``backend_argv``."""
    rules = wind_down_rules(profile, rules, env)
    engine = build_engine(
        profile, rules, max_line=max_line, script_roots=script_roots, target=target
    )
    set_launch_facts(engine, profile, client_argv, env)
    path = record_file(record)
    recorder = None
    if path:
        recorder = Recorder(
            path,
            source=f"{source} (ccbridge {__version__}, profile {profile})",
            max_line=max_line,
            argv=backend_argv,
            profile=profile,
            env={
                k: v
                for k, v in env.items()
                if k.startswith(("CCBRIDGE_", "CODEBUDDY_", "CLAUDE_", "ANTHROPIC_"))
            },
        )
        log.debug(f"recording to {path}", "record")
    client_in = trio.lowlevel.FdStream(os.dup(0))
    client_out = trio.lowlevel.FdStream(os.dup(1))
    session_in, session_out = (
        (client_in, client_out) if headless is None else headless.wrap(client_in, client_out)
    )  # a prompt as a user line; text/json rendered
    config = SessionConfig(
        backend_argv=backend_argv,
        env=backend_env(profile, env, client_argv, rules) if backend is None else None,
        eof_grace=eof_grace,
        print_stats=stats,
        own_process=True,
    )
    session = Session(config, engine, session_in, session_out, log, recorder, backend=backend)
    try:
        status = await session.run()
        return status if headless is None else headless.finish(status)
    finally:
        for s in (client_in, client_out):
            try:
                await s.aclose()
            except (OSError, trio.ClosedResourceError):
                pass
