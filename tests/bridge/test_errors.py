"""A user never sees a traceback; bad values are rejected, not ignored; quiet when all is
well (issue 9). Each bad input runs as a process, as a user would meet it, and must give
one line on stderr naming the setting, and exit 2 (nothing is started)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios/simple-success.toml"
#: a cbc that answers each user line with a result and exits at EOF
FAKE = """import sys
for line in sys.stdin:
    sys.stdout.write('{"type":"result","subtype":"success","is_error":false,'
                     '"result":"fine","session_id":"s"}\\n')
    sys.stdout.flush()
"""


@pytest.fixture
def place(tmp_path: Path) -> Path:
    (tmp_path / "afile").write_text("not a directory\n")
    (tmp_path / "fake_cbc.py").write_text(FAKE)
    return tmp_path


def run(
    place: Path,
    args: list[str],
    env: dict[str, str] | None = None,
    dropin: bool = False,
    config: str | None = None,
) -> subprocess.CompletedProcess[str]:
    e = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(place),
        "PYTHONPATH": str(REPO),
        "CCBRIDGE_BACKEND": f"{sys.executable} {place / 'fake_cbc.py'}",
    }
    if config is not None:
        (place / "ccbridge.toml").write_text(config)
        e["CCBRIDGE_CONFIG"] = str(place / "ccbridge.toml")
    e.update(env or {})
    head = (
        [sys.executable, "-c", "import sys; from bridge.dropin import main; sys.exit(main())"]
        if dropin
        else [sys.executable, "-m", "bridge"]
    )
    return subprocess.run(
        [*head, *args],
        capture_output=True,
        text=True,
        env=e,
        cwd=place,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


RUN = ["run", "--"]
CASES: list[tuple[str, list[str], dict[str, str], str | None, str]] = [
    # (name, argv, env, config file, what the message must name)
    ("log-missing-dir", RUN, {"CCBRIDGE_LOG": "/nonexistent/dir/x.log"}, None, "CCBRIDGE_LOG"),
    ("log-is-dir", RUN, {"CCBRIDGE_LOG": "/tmp"}, None, "CCBRIDGE_LOG"),
    ("log-key-missing-dir", RUN, {}, 'log = "/nonexistent/dir/x.log"', "log"),
    ("record-under-file", ["run", "--record", "afile/x", "--"], {}, None, "--record"),
    ("eof-grace-flag", ["run", "--eof-grace", "-1", "--"], {}, None, "--eof-grace"),
    ("eof-grace-env", RUN, {"CCBRIDGE_EOF_GRACE": "-1"}, None, "CCBRIDGE_EOF_GRACE"),
    ("eof-grace-nan", RUN, {"CCBRIDGE_EOF_GRACE": "nan"}, None, "CCBRIDGE_EOF_GRACE"),
    ("eof-grace-key", RUN, {}, "eof_grace = -1", "eof_grace"),
    ("backend-quote-env", RUN, {"CCBRIDGE_BACKEND": "cbc 'x"}, None, "CCBRIDGE_BACKEND"),
    ("backend-quote-flag", ["run", "--backend", "cbc 'x", "--"], {}, None, "--backend"),
    ("max-line", ["run", "--max-line", "-1", "--"], {}, None, "--max-line"),
    ("backends-dir-file", ["backends", "install", "--dir", "afile"], {}, None, "--dir"),
    (
        "scenario-out-under-file",
        ["scenario", "run", str(SCENARIO), "--backend", "cat", "--out", "afile/x"],
        {},
        None,
        "--out",
    ),
    ("demo-capture-relative", ["demo", "--capture", "missing.jsonl"], {}, None, "--capture"),
    ("demo-capture-not-a-capture", ["demo", "--capture", "/etc/passwd"], {}, None, "--capture"),
    ("log-level-key", RUN, {}, 'log_level = "verbose"', "log_level"),
    ("log-level-env", RUN, {"CCBRIDGE_LOG_LEVEL": "loud"}, None, "CCBRIDGE_LOG_LEVEL"),
    ("rule-negative", ["run", "--rule", "late-progress.grace=-1", "--"], {}, None, "late-progress"),
    ("rule-nan", ["run", "--rule", "late-progress.grace=nan", "--"], {}, None, "late-progress"),
    ("rule-key-negative", RUN, {}, '[rules]\n"late-progress.grace" = "-2"', "late-progress"),
    ("stats-key", RUN, {}, 'stats = "yes"', "stats"),
    ("stats-env", RUN, {"CCBRIDGE_STATS": "maybe"}, None, "CCBRIDGE_STATS"),
    ("script-roots-key", RUN, {}, 'script_roots = "notalist"', "script_roots"),
    ("backend-key", RUN, {"CCBRIDGE_BACKEND": ""}, "backend = 5", "backend"),
    ("unknown-key", RUN, {}, "colour = true", "colour"),
    ("flag-without-value", ["run", "--backend"], {}, None, "--backend"),
    ("flag-without-value-scenario", ["scenario", "run", str(SCENARIO), "--out"], {}, None, "--out"),
]


@pytest.mark.parametrize(
    ("name", "argv", "env", "config", "names"), CASES, ids=[c[0] for c in CASES]
)
def test_a_bad_input_is_one_plain_line_and_exit_2(
    place: Path, name: str, argv: list[str], env: dict[str, str], config: str | None, names: str
) -> None:
    r = run(place, argv, env, config=config)
    assert "Traceback" not in r.stderr
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert names in lines[0]
    # plain words: none of the config library's or Python's internals
    for internal in ("cattrs", "Structuring", "ExceptionGroup", "Errno", "ValueError"):
        assert internal not in lines[0]


@pytest.mark.parametrize(
    "env",
    [
        {"CCBRIDGE_LOG": "/nonexistent/dir/x.log"},
        {"CCBRIDGE_BACKEND": "cbc 'x"},
        {"CCBRIDGE_LOG_LEVEL": "loud"},
        {"CCBRIDGE_EOF_GRACE": "-5"},
    ],
)
def test_the_dropin_rejects_them_the_same_way(place: Path, env: dict[str, str]) -> None:
    r = run(place, ["-p", "hello"], env, dropin=True)
    assert "Traceback" not in r.stderr
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1
    assert next(iter(env)) in r.stderr


def test_record_directory_is_created_and_gets_one_capture_per_session(place: Path) -> None:
    record = place / "records/new"
    for _ in range(2):
        r = run(place, ["-p", "hello"], {"CCBRIDGE_RECORD": str(record)}, dropin=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout == "fine\n"
    assert record.is_dir()
    files = list(record.iterdir())
    assert len(files) == 2, files


def test_quiet_when_all_is_well(place: Path) -> None:
    r = run(place, ["-p", "hello", "--permission-prompt-tool", "stdio"], dropin=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "fine\n", "")
    r = run(
        place,
        ["-p", "hello", "--permission-prompt-tool", "stdio"],
        {"CCBRIDGE_LOG_LEVEL": "info"},
        dropin=True,
    )
    assert "--permission-prompt-tool" in r.stderr  # the rest is there at info


def test_record_help_prints_help(place: Path) -> None:
    r = run(place, ["record", "--help"])
    assert r.returncode == 0
    assert "--out" in r.stdout


def test_scenario_with_a_backend_that_cannot_start_fails(place: Path) -> None:
    r = run(
        place,
        [
            "scenario",
            "run",
            str(SCENARIO),
            "--backend",
            "/nonexistent/cbc",
            "--out",
            str(place / "out.jsonl"),
        ],
    )
    assert r.returncode == 127
    assert "Traceback" not in r.stderr
    assert "could not be started" in r.stderr
