"""Start-up (issue 11): ``--version``/``--help`` answer before trio, the config, the proxy
or a stage is imported; a session spawns the backend before trio, the proxy and the stages
are imported, and the session adopts the running process (``bridge.launch``,
``bridge.driver.adopt``). Import checks, not timings (the benchmark measures those)."""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from bridge import launch
from bridge.driver import Session, SessionConfig, adopt
from bridge.log import Logger

from ..compat.helpers import engine_for

#: what a session imports after the backend was spawned (it loads while the backend boots)
LATE = (
    "trio",
    "bridge.proxy",
    "bridge.driver",
    "bridge.headless",
    "bridge.log",
    "compat.profiles",
    "compat.stages",
    "compat.engine",
    "compat.redact",
    # attrs and cattrs cost 20 ms of import: the settings, the argv and the headless mode
    # read before the spawn are plain classes (cattrs reads a config file only)
    "attrs",
    "cattrs",
)
#: the layers a session never imports (issue 10: the runtime is lean)
#: (shtab: ``ccbridge completion`` alone imports it; rich: the tool commands' renderers,
#: ``bridge.render``)
TOOL_LAYERS = {"analysis", "harness", "h11", "hypothesis", "msgspec.yaml", "shtab", "rich"}
#: ... and what ``--version`` / ``--help`` never import
HEAVY = (*LATE, "bridge.config", "cattrs", "shtab", "rich", "bridge.render")


def _modules_after(code: str, env: dict[str, str] | None = None) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr.decode()
    out: dict[str, object] = json.loads(done.stderr.decode().splitlines()[-1])
    return out


@pytest.mark.parametrize("flag", ["--version", "-v", "--help"])
def test_version_and_help_import_nothing_heavy(flag: str) -> None:
    mods = _modules_after(
        "import json, sys\nfrom bridge.dropin import main\n"
        f"main([{flag!r}])\nprint(json.dumps({{'m': sorted(sys.modules)}}), file=sys.stderr)"
    )
    loaded = set(mods["m"])  # type: ignore[call-overload]
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    if flag != "--help":  # --version: not even attrs (SDKs run it before every session)
        assert "attrs" not in loaded


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_ccbridge_version_and_help_import_nothing_heavy(flag: str) -> None:
    """Nor any command's module: the commands (and their parsers, and the completion's
    shtab) load only when one runs."""
    mods = _modules_after(
        "import json, sys\nfrom bridge.cli import main\n"
        f"main([{flag!r}])\nprint(json.dumps({{'m': sorted(sys.modules)}}), file=sys.stderr)"
    )
    loaded = set(mods["m"])  # type: ignore[call-overload]
    assert not loaded & set(HEAVY)
    from bridge.cli import command_modules

    commands = {module for _, module, _ in command_modules().values()}
    assert not loaded & commands, sorted(loaded & commands)


#: ignores its argv (cbc's, translated), answers each line with an assistant frame echoing
#: it and a result (a turn, so the wind-down closes its stdin at once), exits at EOF
BACKEND = r"""
import json, sys
for line in sys.stdin:
    for o in ({"type": "assistant", "echo": json.loads(line)},
              {"type": "result", "subtype": "success", "is_error": False, "result": "ok",
               "session_id": "s", "uuid": "r"}):
        sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()
"""

#: what the modules were when the backend was spawned: an audit hook on subprocess.Popen
PROBE = r"""
import json, sys
seen = []
def hook(event, args):
    if event == "subprocess.Popen" and not seen:
        seen.append(sorted(m for m in sys.modules))
sys.addaudithook(hook)
from {module} import main
status = main({argv!r})
print(json.dumps({{"status": status, "m": seen[0] if seen else None, "end": sorted(sys.modules)}}),
      file=sys.stderr)
"""


@pytest.mark.parametrize("how", ["claude-on-cbc", "ccbridge run"])
def test_the_backend_is_spawned_before_trio_the_proxy_and_the_stages(
    tmp_path: Path, how: str
) -> None:
    script = tmp_path / "backend.py"
    script.write_text(BACKEND)
    backend = shlex.join([sys.executable, str(script)])
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "CCBRIDGE_BACKEND": backend}
    client = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
    if how == "claude-on-cbc":
        code = PROBE.format(module="bridge.dropin", argv=client)
    else:
        code = PROBE.format(
            module="bridge.run_cmd", argv=["--profile", "cbc-to-claude", "--", *client]
        )
    user = (
        b'{"type":"user","message":{"role":"user","content":"hi"},"session_id":"",'
        b'"parent_tool_use_id":null}\n'
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        input=user,
    )
    report = json.loads(done.stderr.decode().splitlines()[-1])
    assert report["status"] == 0, done.stderr.decode()
    assert report["m"] is not None  # the backend was spawned
    assert not set(report["m"]) & set(LATE), sorted(set(report["m"]) & set(LATE))
    # a whole session imports the protocol core and the runtime only: no analysis tool, no
    # harness, none of the harness's dependencies
    tools = sorted(m for m in report["end"] if m.partition(".")[0] in TOOL_LAYERS)
    assert not tools, tools
    # and the session ran through the profile on that adopted process
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert lines[0]["echo"]["type"] == "user"
    assert lines[-1]["type"] == "result"


def test_the_light_launch_tables_are_compat_profiles_own() -> None:
    from compat.profiles import PROFILES, TRANSLATIONS

    assert launch.TRANSLATIONS == TRANSLATIONS
    assert set(launch.PROFILE_NAMES) == set(PROFILES)
    assert set(launch.LAUNCH_RULES) == {r for rs in TRANSLATIONS.values() for r in rs}


@pytest.mark.parametrize(
    "rules",
    [
        {},
        {"late-progress": "pass"},
        {"argv": "off"},
        {"session-pin": "off"},
        {"env": "off", "argv": "on"},
        ["private-fields=off,session-pin=off"],
        ["argv=on"],
    ],
)
@pytest.mark.parametrize("profile", ["cbc-to-claude", "identity"])
def test_launch_translations_agree_with_compat_profiles(
    profile: str, rules: dict[str, str] | list[str]
) -> None:
    from compat.profiles import parse_rule_settings, translation_enabled

    items = [f"{k}={v}" for k, v in rules.items()] if isinstance(rules, dict) else rules
    settings = parse_rule_settings(items)
    want = {r: translation_enabled(profile, settings, r) for r in launch.LAUNCH_RULES}
    assert launch.launch_translations(profile, rules) == want


def test_a_bad_launch_rule_is_still_the_full_parsers_error() -> None:
    from compat.profiles import RuleError

    with pytest.raises(RuleError, match="unknown mode"):
        launch.launch_translations("cbc-to-claude", {"argv": "sometimes"})


def test_the_deferred_log_replays_in_order() -> None:
    early = launch.DeferredLog()
    early.warning("w", "argv")
    early.info("i", "argv")
    early.debug("d", "session-pin")
    out = io.StringIO()
    early.replay(Logger(out, "debug"))
    text = out.getvalue()
    assert text.index("w") < text.index(" i") < text.index(" d"), text
    assert early.records == []


async def test_a_session_adopts_a_process_already_running(tmp_path: Path) -> None:
    script = tmp_path / "backend.py"
    script.write_text(BACKEND)
    started = launch.start([sys.executable, str(script)], own_process=False)
    assert not isinstance(started, OSError)
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    got = bytearray()
    s = Session(
        SessionConfig(["(adopted)"]),
        engine_for("identity"),
        in_recv,
        out_send,
        Logger(io.StringIO()),
        stderr=lambda _: None,
        backend=adopt(started),
    )

    async def drain() -> None:
        while data := await out_recv.receive_some(65536):
            got.extend(data)

    async with trio.open_nursery() as n:
        n.start_soon(drain)
        await in_send.send_all(b'{"type":"user","n":7}\n')
        await in_send.aclose()
        with trio.fail_after(20):
            status = await s.run()
        await out_send.aclose()
    assert status == 0
    assert json.loads(bytes(got).splitlines()[0])["echo"] == {"type": "user", "n": 7}
    assert started.returncode == 0
    launch.abandon(started)  # reaped already: nothing to do


async def test_a_failed_early_spawn_is_reported_as_the_sessions_own() -> None:
    started = launch.start(["/nonexistent/backend-binary"], own_process=False)
    assert isinstance(started, FileNotFoundError)
    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, _ = trio.testing.memory_stream_one_way_pair()
    s = Session(
        SessionConfig(["/nonexistent/backend-binary"]),
        engine_for("identity"),
        in_recv,
        out_send,
        Logger(io.StringIO()),
        backend=adopt(started),
    )
    assert await s.run() == 127


def test_abandon_ends_a_backend_the_session_never_adopted() -> None:
    started = launch.start(
        [sys.executable, "-c", "import time; time.sleep(300)"], own_process=False
    )
    assert not isinstance(started, OSError)
    launch.abandon(started)
    assert started.returncode == -signal.SIGKILL


def test_a_rule_error_after_the_spawn_leaves_no_backend_behind(tmp_path: Path) -> None:
    """An unknown rule is found when the stages are built, after the backend was spawned:
    the usage error (exit 2) and the backend ended, not orphaned."""
    pidfile = tmp_path / "pid"
    # sh writes its pid at once (the bridge imports the stages for ~100 ms after the spawn)
    backend = ["sh", "-c", f"echo $$ > {shlex.quote(str(pidfile))}; exec sleep 300", "sh"]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "CCBRIDGE_BACKEND": shlex.join(backend),
        "CCBRIDGE_RULES": "no-such-rule=on",
    }
    client = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from bridge.dropin import main; sys.exit(main(sys.argv[1:]))",
            *client,
        ],
        capture_output=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        input=b"",
    )
    assert done.returncode == 2, done.stderr.decode()
    assert b"no-such-rule" in done.stderr
    pid = int(pidfile.read_text())  # it was running
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return  # ended and reaped
    os.kill(pid, signal.SIGKILL)
    pytest.fail(f"the backend {pid} outlived the bridge")
