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


#: a cbc stand-in for the drop-in: answers its user line with the two variables it got
DROPIN_BACKEND = r"""
import json, os, sys
sys.stdin.readline()
seen = json.dumps({k: os.environ.get(k) for k in ("CODEBUDDY_API_KEY", "FROM_FILE")},
                  sort_keys=True)
sid = "11111111-2222-4333-8444-555555555555"
for frame in (
    {"type": "system", "subtype": "init", "session_id": sid, "cwd": "/w", "tools": [],
     "model": "m"},
    {"type": "result", "subtype": "success", "is_error": False, "result": seen,
     "session_id": sid, "num_turns": 1, "usage": {}},
):
    print(json.dumps(frame), flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("where", ["home", "xdg"])
def test_the_drop_in_in_a_scrubbed_environment_gets_the_file(tmp_path: Path, where: str) -> None:
    """The AI-SDK provider's environment: HOME and PATH (plus what it allowlists)."""
    script = write(tmp_path / "backend.py", DROPIN_BACKEND)
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    base = xdg if where == "xdg" else home / ".config"
    write(
        base / "ccbridge/ccbridge.toml",
        f'backend = "{sys.executable} {script}"\n'
        '[env]\nCODEBUDDY_API_KEY = "from-the-file"\nFROM_FILE = "yes"\n',
    )
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "PYTHONPATH": str(conftest.REPO)}
    if where == "xdg":
        env["XDG_CONFIG_HOME"] = str(xdg)
    done = subprocess.run(
        [sys.executable, "-c", "from bridge.dropin import entry; entry()", "-p", "hi"],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout)
    assert seen == {"CODEBUDDY_API_KEY": "from-the-file", "FROM_FILE": "yes"}


#: cbc with no credentials: its turn ends at once with its reason in ``errors``
NO_AUTH = r"""
import json, sys
sys.stdin.readline()
sid = "11111111-2222-4333-8444-555555555555"
for frame in (
    {"type": "system", "subtype": "init", "session_id": sid, "cwd": "/w", "tools": [],
     "model": "m"},
    {"type": "result", "subtype": "error_during_execution", "is_error": True,
     "session_id": sid, "num_turns": 1, "usage": {},
     "errors": ["Authentication required. Please use /login command to sign in"]},
):
    print(json.dumps(frame), flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("output", ["text", "json", "stream-json"])
def test_a_backend_without_credentials_says_why_in_one_line(tmp_path: Path, output: str) -> None:
    script = write(tmp_path / "backend.py", NO_AUTH)
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(conftest.REPO),
        "CCBRIDGE_BACKEND": f"{sys.executable} {script}",
    }
    args = ["-p", "hi", "--output-format", output, *(["--verbose"] if "stream" in output else [])]
    done = subprocess.run(
        [sys.executable, "-c", "from bridge.dropin import entry; entry()", *args],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 1
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith(
        "claude-on-cbc: the backend could not run the turn: Authentication required."
    )
    assert "with neither CODEBUDDY_API_KEY nor CODEBUDDY_BASE_URL" in line
    assert "no config file (looked for " in line
    if output == "text":
        assert done.stdout == b"Execution error"  # what Claude prints for such a result
