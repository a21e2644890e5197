"""What ends a command outside its work ends in words (bridge/stdfds.py ``run``): a reader
that went away before the output (``claude-on-cbc --help | head -1``) is exit 141 and
nothing on stderr, for every console script, whatever the command printed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .. import conftest

SCRIPTS = {
    "ccbridge": "from bridge.cli import entry",
    "claude-on-cbc": "from bridge.dropin import entry",
    "cbc-on-claude": "from bridge.dropin_cbc import entry",
}


@pytest.mark.parametrize(
    ("script", "args"),
    [
        ("ccbridge", ["--help"]),
        ("ccbridge", ["rules", "--markdown"]),
        ("claude-on-cbc", ["--help"]),
        ("claude-on-cbc", ["--version"]),
        ("cbc-on-claude", ["--help"]),
    ],
)
def test_a_reader_gone_is_exit_141_without_a_word(script: str, args: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte
    try:
        done = subprocess.run(
            [sys.executable, "-c", f"{SCRIPTS[script]}; entry()", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=conftest.REPO,
            env={**os.environ, "CCBRIDGE_CONFIG": os.devnull},
            timeout=60,
        )
    finally:
        os.close(write)
    assert done.returncode == 141
    assert done.stderr == b""
