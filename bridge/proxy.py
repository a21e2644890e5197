"""Wiring shared by ``ccbridge run`` and the drop-in ``claude-on-cbc``: settings -> an
engine with the profile's stages, the client's stdio, a recorder, one ``Session``."""

from __future__ import annotations

import datetime
import os
import uuid
from collections.abc import Mapping, Sequence

import trio

from bridge.driver import Session, SessionConfig
from bridge.files import script_reader
from bridge.log import Logger
from bridge.recorder import Recorder
from compat import TARGET_CLAUDE_VERSION, __version__
from compat.argv import translate_to_cbc
from compat.engine import Engine
from compat.env import translate_env_to_cbc
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
) -> Engine:
    items = [f"{k}={v}" for k, v in rules.items()] if isinstance(rules, Mapping) else rules
    up, down = build(profile, parse_rule_settings(items))
    env = Env(
        new_uuid=lambda: str(uuid.uuid4()),
        read_script=script_reader(script_roots),
        epoch_ms=epoch_ms if epoch_ms is not None else _epoch_ms_now(),
        target_version=TARGET_CLAUDE_VERSION,
    )
    kwargs = {"max_line": max_line} if max_line else {}
    return Engine(up, down, env, strict=strict, **kwargs)


def _epoch_ms_now() -> int:
    # engine time 0 is trio's clock at the moment the session starts; stamps are
    # wall-clock milliseconds, so anchor the two here (the only clock read in the bridge)
    import time

    return int(time.time() * 1000) - int(trio.current_time() * 1000)


def backend_command(
    backend: Sequence[str], profile: str, client_argv: Sequence[str], log: Logger
) -> list[str]:
    """The launch line: the backend command plus the client's argv, translated for cbc
    under ``cbc-to-claude`` (rule ``argv``), as is otherwise."""
    if profile == "cbc-to-claude":
        tr = translate_to_cbc(client_argv)
        for w in tr.warnings:
            log.warning(w, "argv")
        argv = [*backend, *tr.argv]
    else:
        argv = [*backend, *client_argv]
    log.debug("launch line: " + " ".join(argv), "argv")
    return argv


def set_launch_facts(engine: Engine, profile: str, client_argv: Sequence[str] | None) -> None:
    """What the rules must know about the launch (``SessionState``): the pid the client is
    told (``initialize-reply``), and under ``cbc-to-claude`` whether the client asked for
    permission prompts over stdio (``permission-routing``) and named the session itself."""
    engine.state.pid = os.getpid()
    if profile == "cbc-to-claude" and client_argv is not None:
        tr = translate_to_cbc(client_argv)
        engine.state.stdio_permissions = tr.stdio_permissions
        engine.state.session_given = tr.session_given


def backend_env(profile: str, env: Mapping[str, str]) -> dict[str, str]:
    return translate_env_to_cbc(env) if profile == "cbc-to-claude" else dict(env)


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
) -> int:
    engine = build_engine(profile, rules, max_line=max_line, script_roots=script_roots)
    set_launch_facts(engine, profile, client_argv)
    path = record_file(record)
    recorder = None
    if path:
        recorder = Recorder(
            path,
            source=f"{source} (ccbridge {__version__}, profile {profile})",
            argv=backend_argv,
            profile=profile,
            env={k: v for k, v in env.items() if k.startswith(("CCBRIDGE_", "CODEBUDDY_",
                                                                 "CLAUDE_", "ANTHROPIC_"))},
        )
        log.debug(f"recording to {path}", "record")
    client_in = trio.lowlevel.FdStream(os.dup(0))
    client_out = trio.lowlevel.FdStream(os.dup(1))
    config = SessionConfig(
        backend_argv=backend_argv,
        env=backend_env(profile, env),
        eof_grace=eof_grace,
        print_stats=stats,
    )
    session = Session(config, engine, client_in, client_out, log, recorder)
    try:
        return await session.run()
    finally:
        for s in (client_in, client_out):
            try:
                await s.aclose()
            except (OSError, trio.ClosedResourceError):
                pass
