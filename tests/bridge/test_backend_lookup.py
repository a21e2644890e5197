"""One backend lookup for every command (``bridge.backends.lookup``): ``claude-on-cbc``
finds what ``ccbridge backends install`` installed, ``backends list`` shows what the
drop-in will run, and the order is the one the README and docs/settings.md give."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.backends import lookup
from bridge.config import ConfigError

REPO = Path(__file__).resolve().parents[2]
#: a cbc that answers one user line with a result and exits at EOF
FAKE = """#!{py}
import sys
for line in sys.stdin:
    sys.stdout.write('{{"type":"result","subtype":"success","is_error":false,'
                     '"result":"from {where}","session_id":"s"}}\\n')
    sys.stdout.flush()
"""


def executable(path: Path, where: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE.format(py=sys.executable, where=where))
    path.chmod(0o755)
    return path


def cached_cbc(cache: Path) -> Path:
    """Where ``backends install`` puts cbc: the SDK package in the cache's venv."""
    return executable(
        cache / "cbc-venv/lib/python3.11/site-packages/codebuddy_agent_sdk/bin/codebuddy-headless",
        "cache",
    )


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": str(tmp_path / "empty"),
        "HOME": str(tmp_path),
        "CCBRIDGE_BACKENDS_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(REPO),
        **extra,
    }


def test_the_dropin_runs_the_installed_cbc(tmp_path: Path) -> None:
    exe = cached_cbc(tmp_path / "cache")
    env = env_for(tmp_path)
    # (a python that cannot import codebuddy_agent_sdk: the cache alone must be enough)
    code = (
        "import sys, importlib.util as u; u.find_spec = lambda n, *a: None; "
        "from bridge.dropin import main; sys.exit(main())"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, "-p", "hello"],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"from cache\n"
    listed = subprocess.run(
        [sys.executable, "-m", "bridge", "backends", "list"],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert f"cbc\t{exe}" in listed.stdout.decode()


def test_lookup_order(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    on_path = executable(tmp_path / "bin/cbc", "path")
    env = {"PATH": str(on_path.parent)}
    assert lookup("cbc", dir=cache, env=env)[0] == [str(on_path)]
    exe = cached_cbc(cache)
    assert lookup("cbc", dir=cache, env=env)[0] == [str(exe)]  # the cache before PATH
    env["CODEBUDDY_CODE_PATH"] = "/opt/cbc"
    assert lookup("cbc", dir=cache, env=env)[0] == ["/opt/cbc"]
    got, tried = lookup("cbc", dir=cache, env=env, explicit="'/x y/cbc' --flag")
    assert got == ["/x y/cbc", "--flag"]
    assert tried == []


def test_what_was_tried_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bridge.backends._cbc_from_package", lambda: None)
    got, tried = lookup("cbc", dir=tmp_path, env={"PATH": str(tmp_path)})
    assert got is None
    text = "; ".join(tried)
    for what in (
        "CCBRIDGE_BACKEND",
        "CODEBUDDY_CODE_PATH",
        "backends cache",
        "cbc on PATH",
        "codebuddy-agent-sdk",
    ):
        assert what in text


def test_a_bad_backend_command_line_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no closing quotation"):
        lookup("cbc", explicit="'unterminated")
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from bridge.dropin import main; sys.exit(main())",
            "-p",
            "hi",
        ],
        capture_output=True,
        timeout=60,
        env=env_for(tmp_path, CCBRIDGE_BACKEND="cbc 'oops"),
        check=False,
    )
    assert r.returncode == 2
    err = r.stderr.decode()
    assert "Traceback" not in err
    assert err.count("\n") == 1
    assert "CCBRIDGE_BACKEND" in err
    assert json.dumps("cbc 'oops")[1:-1] in err or "cbc 'oops" in err
