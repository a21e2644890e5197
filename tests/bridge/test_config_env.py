"""The config file carries what a drop-in needs when its client scrubs the environment
(the Vercel AI-SDK provider passes only ``HOME``, ``PATH`` and a few prefixes): ``[env]``
for the backend's own variables, found from ``HOME`` or ``XDG_CONFIG_HOME``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge import config
from bridge.configfile import config_candidates, config_path

from .. import conftest


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_env_table_is_read_and_checked(tmp_path: Path) -> None:
    f = write(tmp_path / "c.toml", '[env]\nCODEBUDDY_BASE_URL = "http://x"\nK_2 = ""\n')
    s = config.load({"CCBRIDGE_CONFIG": str(f)})
    assert s.env == {"CODEBUDDY_BASE_URL": "http://x", "K_2": ""}
    assert s.source == str(f)
    for bad, said in [
        ("[env]\nPORT = 5\n", "env: PORT must be a string, not a number (5)"),
        ('[env]\n"A-B" = "x"\n', "'A-B' is not a variable name"),
        ('env = "x"\n', "must be a table of variables"),
    ]:
        write(f, bad)
        with pytest.raises(config.ConfigError, match=said.replace("(", r"\(").replace(")", r"\)")):
            config.load({"CCBRIDGE_CONFIG": str(f)})


def test_the_callers_environment_wins_over_the_file() -> None:
    s = config.Settings(env={"A": "file", "B": "file"})
    assert config.environment(s, {"A": "", "C": "env"}) == {"A": "", "B": "file", "C": "env"}


def test_the_file_is_found_from_xdg_config_home_then_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(xdg)}
    assert config_candidates(env)[1:] == [
        str(xdg / "ccbridge/ccbridge.toml"),
        str(home / ".config/ccbridge/ccbridge.toml"),
    ]
    assert config_path(env) is None
    in_home = write(home / ".config/ccbridge/ccbridge.toml", "")
    assert config_path(env) == str(in_home)
    in_xdg = write(xdg / "ccbridge/ccbridge.toml", "")
    assert config_path(env) == str(in_xdg)


#: a backend that writes what it was given of two variables, as one stream-json result
BACKEND = r"""
import json, os, sys
sys.stdin.readline()
seen = {k: os.environ.get(k) for k in ("CODEBUDDY_API_KEY", "FROM_FILE")}
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                  "result": json.dumps(seen, sort_keys=True), "session_id": "s"}), flush=True)
"""


def test_a_scrubbed_environment_gets_the_backend_variables_from_the_file(tmp_path: Path) -> None:
    script = write(tmp_path / "backend.py", BACKEND)
    home = tmp_path / "home"
    write(
        home / ".config/ccbridge/ccbridge.toml",
        f'backend = "{sys.executable} {script}"\nprofile = "identity"\n'
        '[env]\nCODEBUDDY_API_KEY = "from-the-file"\nFROM_FILE = "yes"\n',
    )
    line = b'{"type":"user","message":{"role":"user","content":"hi"}}\n'
    done = subprocess.run(
        [sys.executable, "-m", "bridge", "run"],
        input=line,
        capture_output=True,
        env={"HOME": str(home), "PATH": os.environ["PATH"], "PYTHONPATH": str(conftest.REPO)},
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(json.loads(done.stdout.splitlines()[-1])["result"])
    assert result == {"CODEBUDDY_API_KEY": "from-the-file", "FROM_FILE": "yes"}
