"""Wiring shared by ``ccbridge run``, ``record`` and the drop-ins: a launch ``Plan`` -> an
engine with the profile's stages, the client's stdio, a recorder, one ``Session``.

The launch (argv and environment translations, each switchable like a rule, see
``compat.profiles.TRANSLATIONS``; the rule settings) was decided by ``bridge.launch.plan``
before this module is imported; here it is only read."""

from __future__ import annotations

import os
from collections.abc import Sequence

import trio

from bridge.driver import BackendFactory, Session, SessionConfig
from bridge.files import script_reader
from bridge.headless import HeadlessIO
from bridge.headless_streams import PrereadStream
from bridge.launch import Plan
from bridge.log import Logger
from bridge.recorder import Recorder, open_capture
from bridge.transcripts import claude_history
from compat import TARGET_CLAUDE_VERSION, __version__, reverse_state, rulespec
from compat.engine import Engine
from compat.profiles import build
from compat.rulespec import Rules
from compat.stage import Env


def build_engine(
    profile: str,
    rules: Rules = (),
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
    up, down = build(profile, rulespec.settings(rules))
    env = Env(
        new_uuid=Uuid4(),
        read_script=script_reader(cwd or os.getcwd(), script_roots),
        path_exists=os.path.exists,
        epoch_ms=epoch_ms if epoch_ms is not None else _epoch_ms_now(),
        target_version=target,
    )
    kwargs = {"max_line": max_line} if max_line else {}
    return Engine(up, down, env, strict=strict, **kwargs)


class Uuid4:
    """Random (version 4) UUIDs as strings, like ``str(uuid.uuid4())`` from the same source
    (``os.urandom``), read 4 KiB at a time: a rule may make one per frame it writes
    (``system/status`` before each model request), and one system call and one ``UUID``
    object each cost more than the rest of that frame's way."""

    _VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48))
    _VERSION_BITS = (0x4000 << 64) | (0x8000 << 48)  # version 4, RFC 4122 variant

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def __call__(self) -> str:
        at = self._at
        if at + 16 > len(self._pool):
            self._pool, at = os.urandom(4096), 0
        self._at = at + 16
        n = int.from_bytes(self._pool[at : at + 16]) & self._VERSION_MASK | self._VERSION_BITS
        h = f"{n:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _epoch_ms_now() -> int:
    # engine time 0 is trio's clock at the moment the session starts; stamps are
    # wall-clock milliseconds, so anchor the two here (the only clock read in the bridge)
    import time

    return int(time.time() * 1000) - int(trio.current_time() * 1000)


def set_launch_facts(engine: Engine, plan: Plan) -> None:
    """What the rules must know about the launch (``SessionState``): the pid the client is
    told (``initialize-reply``), the ``initialize`` fields cbc got at launch
    (``initialize-request``, ``initialize-reply``); under ``cbc-to-claude`` whether the
    client asked for permission prompts over stdio (``permission-routing``), resumes a
    session (``resume-replay``) and its ``--max-turns`` (``max-turns``); under
    ``claude-to-cbc`` the client's launch as the reverse rules read it
    (``compat.reverse_state``), with the history of a resumed session from Claude's
    transcript."""
    engine.state.pid = os.getpid()
    rev = plan.reverse
    if plan.profile == "claude-to-cbc" and rev is not None:
        cwd = os.getcwd()
        history = claude_history(plan.backend_env, cwd, rev.resume) if rev.resume else None
        reverse_state.launch(engine.state, rev, history, cwd)
    engine.state.launch_fields = plan.launch_fields
    if plan.profile == "cbc-to-claude" and plan.forward is not None:
        engine.state.stdio_permissions = plan.forward.stdio_permissions
        engine.state.resumes = plan.forward.resumes
        engine.state.max_turns = plan.forward.max_turns


async def serve_stdio(
    plan: Plan,
    log: Logger,
    *,
    headless: HeadlessIO | None = None,
    backend: BackendFactory | None = None,
    capture: tuple[int, str] | None = None,
) -> int:
    """One session on our stdio. ``backend``: the backend already started (``bridge.launch``
    then ``bridge.driver.adopt``); by default the session spawns ``plan.backend_argv``.
    ``capture``: the recording's file, opened before the backend started
    (``bridge.launch.open_record``); by default opened here when ``plan.record`` names one."""
    engine = build_engine(
        plan.profile,
        plan.rules,
        max_line=plan.max_line,
        script_roots=plan.script_roots,
        target=plan.target,
    )
    set_launch_facts(engine, plan)
    if capture is None and plan.record:
        capture = open_capture(plan.record)
    recorder = None
    if capture is not None:
        recorder = Recorder(
            capture,
            source=f"{plan.source} (ccbridge {__version__}, profile {plan.profile})",
            max_line=plan.max_line,
            on_error=log.error,
            argv=list(plan.backend_argv),
            profile=plan.profile,
            env={
                k: v
                for k, v in plan.env.items()
                if k.startswith(("CCBRIDGE_", "CODEBUDDY_", "CLAUDE_", "ANTHROPIC_"))
            },
        )
        log.debug(f"recording to {recorder.path}", "record")
    client_in = trio.lowlevel.FdStream(os.dup(0))
    client_out = trio.lowlevel.FdStream(os.dup(1))
    first: trio.abc.ReceiveStream = client_in
    if plan.preread:
        first = PrereadStream(plan.preread, client_in)
    session_in, session_out = (
        (first, client_out) if headless is None else headless.wrap(first, client_out)
    )  # a prompt as a user line; text/json rendered
    config = SessionConfig(
        backend_argv=list(plan.backend_argv),
        env=dict(plan.backend_env) if backend is None else None,
        eof_grace=plan.eof_grace,
        print_stats=plan.stats,
        own_process=True,
    )
    session = Session(
        config,
        engine,
        session_in,
        session_out,
        log,
        recorder,
        backend=backend,
        on_settled=None if headless is None else headless.settled,
    )
    try:
        status = await session.run()
        return status if headless is None else headless.finish(status)
    finally:
        for s in (client_in, client_out):
            try:
                await s.aclose()
            except (OSError, trio.ClosedResourceError):
                pass
