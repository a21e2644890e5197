"""Rule ``argv`` against the real cbc 2.163.0 binary: every command line the official SDKs
build, translated, is accepted by cbc (PROTOCOL.md §3: cbc exits 1 on any unknown option).

Not a ``--help`` dry run: cbc is started the way the bridge starts it (stream-json both
ways, the translated environment, a fresh HOME and working directory). First with stdin
closed at once: commander has parsed the whole line by then, so any option problem is on
stderr. Then with an ``initialize`` request: cbc answers it only once it is really up with
those options. Skipped with a reason when the binary is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import trio

from bridge.dropin import bundled_cbc
from compat.argv import translate_to_cbc
from compat.env import translate_env_to_cbc

from ..compat.test_argv import all_argvs

CBC = os.environ.get("CODEBUDDY_CODE_PATH") or bundled_cbc()
pytestmark = [
    pytest.mark.real_backend,
    pytest.mark.skipif(
        CBC is None or not os.path.isfile(CBC),
        reason="cbc binary not found: pip install codebuddy-agent-sdk or set CODEBUDDY_CODE_PATH",
    ),
]
#: commander's complaints about a command line
OPTION_ERRORS = (
    "unknown option",
    "argument missing",
    "too many arguments",
    "is invalid",
    "does not take an argument",
)
SID = "44444444-4444-4444-8444-444444444444"
INIT = b'{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}\n'


async def start(
    argv: list[str],
    home: Path,
    stdin: bytes,
    seconds: float,
    limiter: trio.CapacityLimiter | None = None,
) -> tuple[int, bytes, bytes]:
    os.makedirs(home / "wd", exist_ok=True)
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CLAUDE_CODE_ENTRYPOINT": "sdk-py",
        "CLAUDE_AGENT_SDK_VERSION": "test",
    }
    tr = translate_to_cbc(argv, session_id=SID)
    env = translate_env_to_cbc(base, tr.env, bridge_version="test")
    async with limiter or trio.CapacityLimiter(1):
        with trio.fail_after(seconds):
            done = await trio.run_process(
                [CBC or "", *tr.argv],
                stdin=stdin,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=env,
                cwd=str(home / "wd"),
                start_new_session=True,
            )
    return done.returncode, done.stdout, done.stderr


def assert_accepted(rc: int, stderr: bytes) -> None:
    text = stderr.decode("utf-8", "replace")
    bad = [e for e in OPTION_ERRORS if e in text]
    assert not bad, f"cbc refused the command line (exit {rc}): {text[:800]}"


async def test_cbc_accepts_every_translated_sdk_command_line(tmp_path: Path) -> None:
    """All at once (4 at a time): each SDK option set, translated, with stdin closed."""
    failures: list[str] = []
    limiter = trio.CapacityLimiter(4)

    async def one(i: int, name: str, argv: list[str]) -> None:
        rc, _, err = await start(argv, tmp_path / f"closed-{i}", b"", 60, limiter)
        try:
            assert_accepted(rc, err)
            assert rc == 0, f"exit {rc}: {err[:800]!r}"
        except AssertionError as e:
            failures.append(f"{name}: {e}")

    sets = all_argvs()
    assert len(sets) >= 12
    async with trio.open_nursery() as nursery:
        for i, (name, argv) in enumerate(sets):
            nursery.start_soon(one, i, name, argv)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        a
        for a in all_argvs()
        if a[0]
        in (
            "py-everything",
            "py-defaults",
            "ts-0.3.220-everything",
            "ts-0.3.332-newer",
            "ts-0.3.337-everything",
        )
    ],
    ids=lambda x: x if isinstance(x, str) else "",
)
async def test_cbc_starts_and_answers_initialize(
    name: str, argv: list[str], tmp_path: Path
) -> None:
    rc, out, err = await start(argv, tmp_path / "init", INIT, 90)
    assert_accepted(rc, err)
    replies = [json.loads(x) for x in out.splitlines() if x.startswith(b"{")]
    init = [r for r in replies if r.get("type") == "control_response"]
    assert init, (out[:500], err[:500])
    assert init[0]["response"]["subtype"] == "success", init[0]


def test_a_raw_unknown_option_is_what_cbc_refuses(tmp_path: Path) -> None:
    """The control: without the translation, cbc really exits on a Claude-only option."""
    home = tmp_path / "raw"
    (home / "wd").mkdir(parents=True)
    done = subprocess.run(
        [
            CBC or "",
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--max-budget-usd",
            "1",
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        cwd=home / "wd",
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(home)},
    )
    assert done.returncode == 1
    assert b"unknown option" in done.stderr
