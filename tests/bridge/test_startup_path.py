"""What a drop-in loads before it spawns the backend (bench/oneshot.py: the time before
the spawn is added to every ``-p`` run; what loads after it overlaps cbc's own start-up).
trio, the proxy and the rules load after the spawn, on every path: stream-json, ``-p`` with
the prompt in the argv, and ``-p`` reading it from stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: loads the drop-in, replaces the spawn by a report of what is loaded then, runs the session
PROBE = r"""
import json, sys
import bridge.launch as launch
def spawn(*a, **k):
    heavy = (
        "trio", "bridge.proxy", "bridge.driver", "compat.engine", "compat.stages", "shtab", "rich"
    )
    if "--await-initialize" not in sys.argv:  # (its first line is read: a module of its own)
        heavy += ("bridge.await_init", "tempfile")
    print(json.dumps(sorted(m for m in heavy if m in sys.modules)), flush=True)
    raise SystemExit(0)
launch.spawn = spawn
from bridge.dropin import main
sys.argv = ["claude-on-cbc", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["-p", "say hello"], b""),
        (["-p"], b"say hello from stdin"),
        (["-p", "--output-format", "json", "hi"], b""),
        (["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"], b""),
        (
            [
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--await-initialize",
            ],
            b'{"type":"control_request","request_id":"i","request":{"subtype":"initialize",'
            b'"mcpServers":{"x":{"command":"x"}}}}\n',
        ),
    ],
)
def test_nothing_heavy_loads_before_the_backend_is_spawned(
    args: list[str], stdin: bytes, tmp_path: Path
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {
        "TMPDIR": str(tmp),
        "PATH": "/usr/bin:/bin",
        "HOME": "/nonexistent",
        "PYTHONPATH": str(REPO),
        "CCBRIDGE_CONFIG": "/dev/null",
        "CCBRIDGE_BACKEND": "/bin/cat",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    lines = done.stdout.decode().splitlines()
    assert lines, done.stderr.decode()[-2000:]
    assert json.loads(lines[0]) == []
