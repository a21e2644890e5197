"""Run one scenario against a real CLI (or the bridge in front of one) and record it.

One nursery owns everything: the stand-in model server, the backend's stdout and stderr
readers, the client script, and the wait for the backend's exit, all under one deadline
(the scenario's ``time_limit``). At the deadline the process group gets SIGTERM, then
SIGKILL after ``KILL_GRACE``; whatever the outcome, the group is killed on the way out and
every process still carrying this run's ``MARK`` variable (a background shell that made
its own session, a daemonised helper) is killed too: no orphans.

Each run gets a fresh root (``HOME``, working directory, ``TMPDIR``), removed afterwards.
The backend's environment is built from scratch (``PATH``, ``LANG``, the fresh dirs, the
model URL, dummy keys), so nothing of the caller's own credentials reaches it.

The capture (``compat.capture``) is the client's view: ``stdin``/``stdout``/``stderr``
when the backend runs directly, ``client_in``/``client_out`` when it runs through
``python -m bridge run`` (``--via``), plus the backend side from the bridge's own
``--record`` file, merged by time. Model requests become ``note`` records
(``model {...}``). Paths of the fresh dirs and the model URL become ``{CWD}``, ``{HOME}``,
``{TMP}``, ``{ROOT}``, ``{CWD_SLUG}``, ``{MODEL_URL}`` (``{MODEL_ADDR}`` for its host:port
alone), ``{PYTHON}`` and ``{REPO}``, so captures are reproducible.
"""

from __future__ import annotations

import datetime
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio

from bridge.backends import find_backend
from bridge.files import private_dirs, write_private
from compat import capture
from harness import corpus
from harness.brain import Call, ModelScript
from harness.client import Client, Recording
from harness.model import ModelServer
from harness.scenario import Scenario, Step

BASE_ARGV = ("-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose")
KILL_GRACE = 5.0
DRAIN = 3.0  # seconds to read what is left on stdout/stderr after the exit
#: cbc 2.163.0 took over 30 s to print its version with 25 other CLIs starting at once
VERSION_TIMEOUT = 60.0
MARK = "CCBRIDGE_SCENARIO_RUN"
REPO = corpus.CODE


class BackendNotFound(LookupError):
    pass


@attrs.frozen
class Target:
    kind: str  # "claude", "cbc" or "other" (a command line of unknown flavour)
    argv: tuple[str, ...]


@attrs.frozen
class RunResult:
    exit: str  # as in the capture: "0", "sigterm-by-harness:0", "killed:-9"
    frames: list[dict[str, Any]]  # what the client read, parsed
    model_log: list[dict[str, Any]]
    backend_version: str | None
    capture: Path | None
    duration: float
    root: str | None = None  # the run's HOME/cwd/TMPDIR parent, when kept


def resolve_target(spec: str) -> Target:
    if spec in ("claude", "cbc"):
        argv = find_backend(spec)
        if argv is None:
            raise BackendNotFound(f"{spec} not installed: run `ccbridge backends install`")
        return Target(spec, tuple(argv))
    argv = shlex.split(spec)
    if not argv:
        raise BackendNotFound("empty backend command")
    base = os.path.basename(argv[0]).lower()
    kind = (
        "claude" if "claude" in base else "cbc" if "codebuddy" in base or base == "cbc" else "other"
    )
    return Target(kind, tuple(argv))


def _dialect(scenario: Scenario, kind: str, via: str | None) -> str:
    """The scenario's own ``client`` (a recording's), else ``client_dialect``."""
    return scenario.client or client_dialect(kind, via)


def client_dialect(kind: str, via: str | None) -> str:
    """The dialect the scenario client speaks (``client.DIALECTS``): that of the client the
    profile serves (``claude-to-cbc``: a cbc SDK's; ``cbc-to-claude``: a Claude SDK's),
    else the backend's own (raw cbc: a cbc SDK's)."""
    if via == "claude-to-cbc":
        return "cbc"
    if via == "cbc-to-claude":
        return "claude"
    return "cbc" if kind == "cbc" else "claude"


def backend_env(kind: str, url: str, dirs: dict[str, str], mark: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": dirs["HOME"],
        "TMPDIR": dirs["TMP"],
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "USER": os.environ.get("USER", "user"),
        MARK: mark,
    }
    if kind in ("claude", "other"):
        env.update(
            ANTHROPIC_BASE_URL=url,
            ANTHROPIC_API_KEY="sk-ant-dummy",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            DISABLE_ERROR_REPORTING="1",
        )
    if kind in ("cbc", "other"):
        env.update(
            CODEBUDDY_BASE_URL=url,
            CODEBUDDY_API_KEY="dummy",
            DISABLE_AUTOUPDATER="1",
            CODEBUDDY_DISABLE_AUTO_MEMORY="1",
        )
    return env


def make_root() -> dict[str, str]:
    # only [a-z0-9-/] in the name, so the CLIs' path slugs are the path with / -> -
    root = os.path.realpath(tempfile.gettempdir())
    root = os.path.join(root, f"ccbscen-{secrets.token_hex(5)}")
    dirs = {"ROOT": root, "CWD": root + "/work", "HOME": root + "/home", "TMP": root + "/tmp"}
    for d in dirs.values():
        private_dirs(d)
    return dirs


def scrubber(dirs: dict[str, str], url: str) -> list[tuple[bytes, bytes]]:
    pairs = [(v, "{" + k + "}") for k, v in dirs.items()]
    slug = re.sub(r"[^A-Za-z0-9]", "-", dirs["CWD"])
    pairs += [(slug, "{CWD_SLUG}"), (slug.lstrip("-"), "{CWD_SLUG}"), (url, "{MODEL_URL}")]
    # launch files (hooks, MCP servers) name the interpreter and this checkout
    pairs += [(sys.executable, "{PYTHON}"), (str(REPO), "{REPO}")]
    # Claude names the host:port alone in API error texts ("check your inference gateway")
    pairs += [(url.split("://", 1)[-1], "{MODEL_ADDR}")]
    return sorted(((a.encode(), b.encode()) for a, b in pairs), key=lambda p: -len(p[0]))


async def _kill_now(proc: trio.Process) -> None:
    proc.kill()  # `--version` holds nothing worth a graceful exit


async def backend_version(target: Target, env: dict[str, str], cwd: str) -> str | None:
    with trio.move_on_after(VERSION_TIMEOUT):
        try:
            done = await trio.run_process(
                [*target.argv, "--version"],
                capture_stdout=True,
                capture_stderr=True,
                env=env,
                cwd=cwd,
                check=False,
                deliver_cancel=_kill_now,
            )
        except OSError:
            return None
        m = re.search(rb"\d+\.\d+\.\d+", done.stdout)
        return m.group().decode() if m else None
    return None


def sweep(mark: str) -> int:
    """Kill every process whose environment carries ``MARK=mark``; how many."""
    needle = f"{MARK}={mark}\0".encode()
    killed = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                if needle in f.read():
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed += 1
        except OSError:
            continue
    return killed


def _place_files(files: dict[str, str], cwd: str) -> None:
    for rel, text in files.items():
        p = Path(cwd, rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def _session_id(frames: list[dict[str, Any]]) -> str | None:
    return next(
        (
            f["session_id"]
            for f in frames
            if isinstance(f.get("session_id"), str) and f["session_id"]
        ),
        None,
    )


def _substitute(value: Any, names: dict[str, str]) -> Any:
    """``{PYTHON}``, ``{REPO}``, ``{CWD}``, ``{HOME}`` in the strings of a launch file."""
    if isinstance(value, str):
        for k, v in names.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, dict):
        return {k: _substitute(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, names) for v in value]
    return value


def _script_in(script: ModelScript, dirs: dict[str, str]) -> ModelScript:
    """The model script with ``{CWD}`` and ``{HOME}`` in its texts and tool inputs made
    this run's (tools such as Read want absolute paths)."""
    names = {"CWD": dirs["CWD"], "HOME": dirs["HOME"]}
    rules = tuple(
        attrs.evolve(
            r,
            input=_substitute(r.input, names),
            text=_substitute(r.text, names),
            when=_substitute(r.when, names),
            thinking=_substitute(r.thinking, names),
            calls=tuple(Call(c.tool, _substitute(c.input, names)) for c in r.calls),
        )
        for r in script.rules
    )
    return attrs.evolve(script, rules=rules)


def _scenario_in(scenario: Scenario, dirs: dict[str, str]) -> Scenario:
    """The scenario with ``{CWD}`` and ``{HOME}`` in its launch arguments, its client's
    lines and its model script made this run's (``ccbridge scenario from-capture`` writes
    a recorded session's paths so)."""
    names = {"CWD": dirs["CWD"], "HOME": dirs["HOME"]}

    def args(a: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_substitute(list(a), names))

    def steps(ss: tuple[Step, ...]) -> tuple[Step, ...]:
        return tuple(
            attrs.evolve(
                st,
                user=_substitute(st.user, names),
                line=_substitute(st.line, names),
                control=_substitute(st.control, names),
            )
            for st in ss
        )

    r = scenario.resume
    if r is not None:
        r = attrs.evolve(
            r,
            args=None if r.args is None else args(r.args),
            backend_args={k: args(v) for k, v in r.backend_args.items()},
            steps=steps(r.steps),
        )
    return attrs.evolve(
        scenario,
        args=args(scenario.args),
        backend_args={k: args(v) for k, v in scenario.backend_args.items()},
        steps=steps(scenario.steps),
        resume=r,
        model=_script_in(scenario.model, dirs),
    )


def _launch_files(scenario: Scenario, dirs: dict[str, str]) -> list[str]:
    """Write the scenario's hooks and MCP servers where the CLI will read them; the flags
    that tell it so (the same for both CLIs: ``--settings FILE``, ``--mcp-config FILE``)."""
    names = {"PYTHON": sys.executable, "REPO": str(REPO), "CWD": dirs["CWD"], "HOME": dirs["HOME"]}
    flags: list[str] = []
    if scenario.hooks is not None:
        path = os.path.join(dirs["ROOT"], "settings.json")
        Path(path).write_bytes(orjson.dumps({"hooks": _substitute(scenario.hooks, names)}))
        flags += ["--settings", path]
    if scenario.mcp_servers is not None:
        path = os.path.join(dirs["ROOT"], "mcp.json")
        Path(path).write_bytes(
            orjson.dumps({"mcpServers": _substitute(scenario.mcp_servers, names)})
        )
        flags += ["--mcp-config", path]
    return flags


def _finish(
    rec: Recording | None,
    out: Path | None,
    server: ModelServer,
    dump_requests: Path | None,
    mark: str,
    root: str | None,
) -> None:
    """Write what was recorded, however the run ended; leave no process and no files."""
    if rec is not None and out is not None:
        write_private(str(out), rec.encode())
    if rec is not None and dump_requests is not None:
        _dump(server, rec, dump_requests)
    sweep(mark)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


def _dump(server: ModelServer, rec: Recording, d: Path) -> None:
    """Every model request in full (headers without credentials, body), one file each."""
    private_dirs(str(d))
    for n, headers, body in server.bodies:
        safe = {
            k: v for k, v in headers.items() if k not in ("authorization", "x-api-key", "cookie")
        }
        data = rec.scrub(orjson.dumps({"headers": safe, "body": body}, option=orjson.OPT_INDENT_2))
        write_private(str(d / f"{n:03d}.json"), data)


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def run(
    scenario: Scenario,
    target: Target,
    out: Path | None,
    *,
    via: str | None = None,
    time_limit: float | None = None,
    source: str | None = None,
    keep_root: bool = False,
    dump_requests: Path | None = None,
    bridge_args: tuple[str, ...] = (),
    client: str | None = None,
) -> RunResult:
    """``client``: the client's dialect (``claude`` or ``cbc``; default the scenario's
    ``client``, else ``client_dialect``)."""
    dialect = client or _dialect(scenario, target.kind, via)
    dirs = make_root()
    mark = secrets.token_hex(8)
    scenario = _scenario_in(scenario, dirs)
    server = ModelServer(scenario.model, keep_bodies=dump_requests is not None)
    rec: Recording | None = None
    try:
        await trio.to_thread.run_sync(_place_files, scenario.files, dirs["CWD"])
        async with trio.open_nursery() as nursery:
            url = await nursery.start(server.serve)
            env = backend_env(target.kind, url, dirs, mark)
            env.update(scenario.env)
            version = await backend_version(target, env, dirs["CWD"])
            bridge_cap = os.path.join(dirs["ROOT"], "bridge-capture.jsonl")
            extra = await trio.to_thread.run_sync(_launch_files, scenario, dirs)
            kind = target.kind if target.kind != "other" else ""

            def argv_for(args: tuple[str, ...], cap: str) -> list[str]:
                base = () if scenario.headless else BASE_ARGV
                if via is None:
                    return [*target.argv, *base, *args, *extra]
                env["PYTHONPATH"] = os.pathsep.join(
                    p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
                )
                return [
                    sys.executable,
                    "-m",
                    "bridge",
                    "run",
                    "--profile",
                    via,
                    "--backend",
                    shlex.join(target.argv),
                    "--record",
                    cap,
                    *bridge_args,
                    "--",
                    *base,
                    *args,
                    *extra,
                ]

            argv = argv_for(scenario.args_for(kind) if via is None else scenario.args, bridge_cap)
            rec = Recording(scrubber(dirs, url), via is not None)
            limit = time_limit if time_limit is not None else scenario.time_limit
            rec.header = capture.header(
                "ccbridge scenario run",
                created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                scenario=scenario.name,
                scenario_file=source,
                description=scenario.description,
                backend=target.kind,
                backend_version=version,
                via=via,
                client=dialect,
                time_limit=limit,
                argv=[rec.scrub_text(a) for a in argv],
                env={
                    k: rec.scrub_text(v)
                    for k, v in env.items()
                    if k not in (MARK, "PATH", "PYTHONPATH")
                },
            )
            exit_text = await _drive(
                scenario, argv, env, dirs["CWD"], rec, server, limit, mark, dialect
            )
            if via is not None:
                rec.merge_bridge_capture(bridge_cap)
            if scenario.resume is not None:
                sid = _session_id(rec.frames)
                if sid is None:
                    rec.note("resume: the first run showed no session_id; no second run")
                else:
                    cap2 = os.path.join(dirs["ROOT"], "bridge-capture-2.jsonl")
                    args2 = (
                        scenario.resume_args_for(kind)
                        if via is None
                        else scenario.resume_args_for("")
                    )
                    argv2 = argv_for((*args2, "--resume", sid), cap2)
                    rec.note("resume: second run: " + rec.scrub_text(shlex.join(argv2)))
                    since = rec.now()
                    exit_text = await _drive(
                        scenario.second_run(),
                        argv2,
                        env,
                        dirs["CWD"],
                        rec,
                        server,
                        limit,
                        mark,
                        dialect,
                    )
                    if via is not None:
                        rec.merge_bridge_capture(cap2, since)
            nursery.cancel_scope.cancel()
        return RunResult(
            exit_text,
            rec.frames,
            list(server.log),
            version,
            out,
            rec.now(),
            dirs["ROOT"] if keep_root else None,
        )
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(
                _finish, rec, out, server, dump_requests, mark, None if keep_root else dirs["ROOT"]
            )


async def _drive(
    scenario: Scenario,
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    rec: Recording,
    server: ModelServer,
    limit: float,
    mark: str,
    dialect: str = "claude",
) -> str:
    try:
        proc = await trio.lowlevel.open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as e:
        rec.note(f"could not start {argv[0]}: {e}")
        return "127"
    if not rec.records:  # a resumed second run keeps the first run's clock
        server.t0 = trio.current_time()
    rec.start()
    server.on_request = rec.model_request
    rec.note(f"spawned {'bridge' if rec.via else 'backend'}; time limit {limit:g}s")
    assert proc.stdin is not None
    client = Client(scenario, proc.stdin, rec, dialect)
    exit_text = ""
    try:
        async with trio.open_nursery() as n:
            out_done, err_done = trio.Event(), trio.Event()
            assert proc.stdout is not None
            assert proc.stderr is not None
            n.start_soon(rec.read, proc.stdout, rec.out_kind, out_done)
            n.start_soon(rec.read, proc.stderr, "stderr", err_done)
            with trio.move_on_at(trio.current_time() + limit) as cs:
                async with trio.open_nursery() as inner:
                    inner.start_soon(client.run_steps)
                    inner.start_soon(client.answer_requests)
                    await proc.wait()
                    inner.cancel_scope.cancel()
            if cs.cancelled_caught:
                rec.note(f"time limit {limit:g}s reached; sending SIGTERM")
                exit_text = await _terminate(proc)
            else:
                rc = proc.returncode
                exit_text = str(rc) if rc is not None and rc >= 0 else f"killed:{rc}"
            client.report_unfinished()
            # what the leader left behind; until then it may hold our pipes open
            _killpg(proc.pid, signal.SIGKILL)
            killed = await trio.to_thread.run_sync(sweep, mark)
            if killed:
                rec.note(f"killed {killed} leftover process(es) of this run")
            with trio.move_on_after(DRAIN):
                await out_done.wait()
                await err_done.wait()
            n.cancel_scope.cancel()
    finally:
        if proc.returncode is None:
            _killpg(proc.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True):
                await proc.wait()
        rec.exit(exit_text or "killed:-9")  # (``run`` sweeps once more on its way out)
    return exit_text


async def _terminate(proc: trio.Process) -> str:
    _killpg(proc.pid, signal.SIGTERM)
    with trio.move_on_after(KILL_GRACE):
        await proc.wait()
        return f"sigterm-by-harness:{proc.returncode}"
    _killpg(proc.pid, signal.SIGKILL)
    await proc.wait()
    return "killed:-9"
