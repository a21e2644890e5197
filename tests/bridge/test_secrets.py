"""Secrets never leave (issue 8): what the bridge writes (captures, logs, ``--stats``) holds
no plaintext credential and is owner-only; a workflow script is read only below the
directory the bridge started the backend in, and only a file cbc ran as a workflow script
reaches a client-visible ``prompt``."""

from __future__ import annotations

import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from bridge.driver import Session, SessionConfig
from bridge.log import Logger
from bridge.proxy import build_engine
from bridge.recorder import Recorder
from compat import capture
from compat.redact import REDACTED

if TYPE_CHECKING:
    import trio

    from compat.engine import Engine
from tests.compat.tasks_support import init, lines, logs, out, started, tool_use

SECRETS = (
    "s3cr3t-argv",
    "s3cr3t-eq",
    "s3cr3t-mcp",
    "s3cr3t-env",
    "s3cr3t-url",
    "s3cr3t-inv",
    "s3cr3t-part",
    "s3cr3t-big",
    "s3cr3t-err",
    "s3cr3t-note",
    "s3cr3t-meta",
    "s3cr3t-stat",
    "s3cr3t-tok",
)


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)  # the usual one: files would be 0644 without an explicit mode
    try:
        yield
    finally:
        os.umask(old)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_capture_holds_no_plaintext_credential_anywhere(tmp_path: Path) -> None:
    mcp = json.dumps(
        {
            "mcpServers": {
                "x": {
                    "type": "http",
                    "url": "https://h/mcp",
                    "headers": {"Authorization": "Bearer s3cr3t-mcp"},
                }
            }
        }
    )
    path = tmp_path / "c.jsonl"
    rec = Recorder(
        str(path),
        "test",
        max_line=1024,
        argv=["cbc", "--api-key", "s3cr3t-argv", "--api-key=s3cr3t-eq", "--mcp-config", mcp, "-p"],
        env={
            "CODEBUDDY_API_KEY": "s3cr3t-env",
            "ANTHROPIC_BASE_URL": "https://user:s3cr3t-url@proxy.example",
        },
    )
    rec.data("stdout", b'{"type":"system","subtype":"init","apiKeySource":"none"}\n')
    rec.data("stdout", b'{"type":"x","token":"s3cr3t-inv", not json\n')
    # an over-long line (max_line 1024), its credential across two reads of the pipe
    big = b'{"type":"assistant","pad":"' + b"a" * 3000 + b'","x_api_key":"s3cr3t-big"}\n'
    cut = big.index(b"s3cr3t-big") + 3
    rec.data("stdout", big[:cut])
    rec.data("stdout", big[cut:])
    rec.data("stderr", b"[mcp] connecting with Authorization: Token s3cr3t-err\n")
    rec.note("spawned with GITHUB_TOKEN=s3cr3t-note")
    rec.meta({"credentials": {"user": "u", "pw": "s3cr3t-meta"}})
    rec.data("stdout", b'{"type":"partial","privateKey":"s3cr3t-tok"}\nx-api-key: s3cr3t-part')
    rec.exit(0, {"rules": {"x": {"dropped": 1}}, "auth": {"password": "s3cr3t-stat"}})
    text = path.read_text()
    for secret in SECRETS:
        assert secret not in text, secret
    cap = capture.parse(path.read_bytes().splitlines())
    assert cap.header["argv"][:3] == ["cbc", "--api-key", REDACTED]
    assert cap.header["env"]["CODEBUDDY_API_KEY"] == REDACTED
    assert cap.header["env"]["ANTHROPIC_BASE_URL"] == f"https://user:{REDACTED}@proxy.example"
    out_ = cap.lines("stdout")
    # a line with nothing to hide is recorded byte for byte
    assert out_[0].data == b'{"type":"system","subtype":"init","apiKeySource":"none"}'
    # the over-long line's pieces still make up the whole line (redacted)
    pieces = [
        r
        for r in out_
        if r.data.startswith(b'{"type":"assistant"')
        or (r.partial or r.data.startswith(b'"x_api_key"'))
    ]
    assert len(pieces) >= 2
    joined = b"".join(r.data for r in out_[2:-2])
    assert joined.startswith(b'{"type":"assistant","pad":"aaa')
    assert joined.endswith(b'"x_api_key":"' + REDACTED.encode() + b'"}')
    assert out_[-1].partial
    assert out_[-1].data == b"x-api-key: " + REDACTED.encode()


def test_capture_and_log_files_are_owner_only(tmp_path: Path, umask: None) -> None:
    rec_path = tmp_path / "rec" / "deep" / "s.jsonl"
    Recorder(str(rec_path), "test").exit(0)
    assert mode(rec_path) == 0o600
    assert mode(tmp_path / "rec") == 0o700
    assert mode(tmp_path / "rec" / "deep") == 0o700
    # a log's directory must exist (a missing one is a one-line error, issue 9); the file
    # the bridge creates in it is the owner's alone
    log_path = tmp_path / "logs" / "bridge.log"
    (tmp_path / "logs").mkdir()
    log = Logger.open(str(log_path), "debug")
    log.info("hello")
    log.stream.close()
    assert mode(log_path) == 0o600
    # an existing file keeps its mode (never widened), and is appended to / replaced
    existing = tmp_path / "mine.log"
    existing.write_text("old\n")
    os.chmod(existing, 0o400 | 0o200)
    log = Logger.open(str(existing), "info")
    log.info("more")
    log.stream.close()
    assert mode(existing) == 0o600
    assert existing.read_text() == "old\nccbridge: more\n"
    # CCBRIDGE_RECORD: a directory (created by the bridge) with one capture per session
    rec = Recorder(str(tmp_path / "record-dir") + os.sep, "test")
    session_file = rec.path
    rec.exit(0)
    assert mode(tmp_path / "record-dir") == 0o700
    assert mode(Path(session_file)) == 0o600
    os.chmod(rec_path, 0o640)
    Recorder(str(rec_path), "test").exit(0)
    assert mode(rec_path) == 0o640


def test_the_log_never_carries_a_credential() -> None:
    buf = io.StringIO()
    log = Logger(buf, "debug")
    log.debug("launch line: cbc --api-key s3cr3t-argv -p", "argv")
    log.warning("backend said: x-api-key: s3cr3t-eq; Authorization: Token s3cr3t-mcp")
    log.error('initialize: {"credentials": {"pw": "s3cr3t-env"}, "GITHUB_TOKEN": "s3cr3t-tok"}')
    log.info("proxy https://me:s3cr3t-url@h, total_tokens=5")
    text = buf.getvalue()
    for secret in SECRETS:
        assert secret not in text, secret
    assert "total_tokens=5" in text


def test_stats_output_is_redacted() -> None:
    class Eng:
        def statistics(self) -> dict[str, Any]:
            return {
                "frames": {"up": {"in": 1}},
                "rules": {"r": {"token": "s3cr3t-stat", "dropped": 2}},
            }

    got: list[bytes] = []
    session = Session(
        SessionConfig(["x"]),
        cast("Engine", Eng()),
        cast("trio.abc.ReceiveStream", None),
        cast("trio.abc.SendStream", None),
        Logger(io.StringIO()),
        stderr=got.append,
    )
    session._print_stats()
    [line] = got
    assert b"s3cr3t-stat" not in line
    assert json.loads(line.split(b": ", 1)[1])["rules"]["r"]["dropped"] == 2


# -- workflow scripts -------------------------------------------------------------------

FLOW = """export const meta = {
  name: 'hostile-test-flow',
  description: 'A real workflow script',
  phases: [{ title: 'Scan' }],
};
export default async function () { await phase('Scan'); }
"""


def workflow_session(
    root: Path, path: str, reported_cwd: str = "/", workflow_name: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """A backend that reports ``reported_cwd`` and starts a workflow by ``path``: the
    ``task_started`` the client gets, and the log messages."""
    eng = build_engine("cbc-to-claude", cwd=str(root), epoch_ms=0)
    name = workflow_name or "path:" + path.rstrip("/").rsplit("/", 1)[-1]
    cmds = eng.feed(
        "backend",
        lines(
            init(cwd=reported_cwd),
            tool_use("call_w", "Workflow", {"scriptPath": path}),
            started("wf1", "local_workflow", name, "call_w", workflow_name=name),
        ),
        0.0,
    )
    got = [f for f in out(cmds) if f.get("subtype") == "task_started"]
    return got[0], [lg.message for lg in logs(cmds)]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "project"
    (r / "flows").mkdir(parents=True)
    (r / "flows" / "scan.js").write_text(FLOW)
    return r


def test_a_workflow_script_below_the_real_directory_is_read(root: Path) -> None:
    for path in ("flows/scan.js", str(root / "flows" / "scan.js")):
        s, _ = workflow_session(root, path, reported_cwd="/")
        assert s["prompt"] == FLOW
        assert s["workflow_name"] == "hostile-test-flow"
        assert s["description"] == "A real workflow script"


def test_the_cwd_the_backend_reports_is_not_a_root(root: Path, tmp_path: Path) -> None:
    """A hostile backend reports ``/`` (or any directory) as its cwd: a workflow script
    there, outside the directory the bridge started it in, is not read."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "flow.js").write_text(FLOW)
    s, msgs = workflow_session(root, str(outside / "flow.js"), reported_cwd=str(outside))
    assert "prompt" not in s
    assert s["workflow_name"] == "path:flow.js"
    assert any("could not read workflow script" in m for m in msgs)
    s, _ = workflow_session(root, "flow.js", reported_cwd=str(outside))
    assert "prompt" not in s


def test_system_files_and_keys_never_reach_a_prompt(root: Path, tmp_path: Path) -> None:
    ssh = root / ".ssh"
    ssh.mkdir()
    (ssh / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    (root / "notes.js").write_text("const apiKey = 'sk-not-a-workflow';\n")
    (tmp_path / "outside.js").write_text(FLOW)
    os.symlink(tmp_path / "outside.js", root / "flows" / "link.js")
    os.symlink("/etc/passwd", root / "flows" / "passwd.js")
    cases = [
        "/etc/passwd",
        "../../../../../../etc/passwd",
        "~/.ssh/id_rsa",
        str(ssh / "id_rsa"),
        ".ssh/id_rsa",
        "notes.js",
        "flows/link.js",
        "flows/passwd.js",
        "flows",
    ]
    for path in cases:
        s, msgs = workflow_session(root, path, reported_cwd=str(root))
        text = json.dumps(s)
        assert "prompt" not in s, path
        assert "PRIVATE KEY" not in text
        assert "root:" not in text
        assert "sk-not-a-workflow" not in text
        assert s["workflow_name"].startswith("path:"), path
        assert any(path in m for m in msgs), (path, msgs)
    _, msgs = workflow_session(root, "notes.js", reported_cwd=str(root))
    assert any("not a workflow script" in m for m in msgs)


def test_a_backend_name_for_another_file_is_not_believed(root: Path) -> None:
    """cbc names a script started by path ``path:<its file name>``; a task that claims to
    run another file than the call named is not read."""
    s, msgs = workflow_session(root, "flows/scan.js", workflow_name="path:other.js")
    assert "prompt" not in s
    assert any("not the call's" in m for m in msgs)
