"""What the real third-party client tests (``test_acp_real.py``: Zed's ACP adapter;
``test_ai_sdk_real.py``: the Vercel AI-SDK provider) share: the two CLIs they run each
case on, the proof of which CLI answered, the stand-in model, the cleanup, and keeping
the recordings.

Each case runs twice with the same expectations: on the real Claude Code 2.1.220, and
through the drop-in ``claude-on-cbc`` on the real cbc 2.163.0; the model is the scripted
stand-in (``harness.model``). Both clients fall back on a Claude of their own when they are
not told which CLI to run (the adapter's SDK its bundled ``cli.js``), so every case proves
which one answered from the model's requests: Claude's ``User-Agent`` names
``claude-cli/2.1.220``, cbc's ``CodeBuddy/2.163.0`` and ``claude-on-cbc`` (and the bridge
recorded the session).

``CCBRIDGE_CLIENT_KEEP=DIR`` keeps each case's recordings in ``DIR/<test id>/``: through
the bridge its ``CCBRIDGE_RECORD`` captures (what the client and cbc wrote, both sides), on
Claude a ``ccbridge record`` capture of what the client's SDK and Claude wrote (Claude then
runs under ``ccbridge record``, which changes nothing on the wire), with this run's paths,
model address and ports replaced by placeholders (``runner.scrubber``). That is how
``tests/bridge/data/acp/`` was made.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import IO, Any, Literal

import attrs
import pytest

from bridge.backends import find_backend
from compat.versions import CBC, CLAUDE
from harness import runner
from harness.model import ModelServer

from ..conftest import REPO

Kind = Literal["claude", "cbc"]
KINDS: tuple[Kind, ...] = ("claude", "cbc")
JS = REPO / "tests" / "js"
DROPIN = Path(sys.executable).with_name("claude-on-cbc")
KEEP_ENV = "CCBRIDGE_CLIENT_KEEP"


def node_or_skip() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed (the JavaScript client tests need Node >= 18)")
    return node


def package_or_skip(package: str) -> str:
    """The installed version of an npm package of ``tests/js/package.json``."""
    pinned = (JS / "package.json").read_text()
    meta = JS / "node_modules" / package / "package.json"
    if not meta.is_file():
        pytest.skip(f"{package} not installed: run npm install --omit=optional in tests/js")
    version = str(json.loads(meta.read_text()).get("version"))
    want = json.loads(pinned)["dependencies"].get(package)
    if want is not None and want != version:
        pytest.skip(f"{package} {version} installed, package.json pins {want}: run npm install")
    return version


@attrs.frozen
class Cli:
    """One of the two CLIs a case runs on, and how a client is pointed at it."""

    kind: Kind
    #: the real CLI's command line (Claude: its binary; cbc: the bridge's backend)
    argv: tuple[str, ...]

    @property
    def executable(self) -> str:
        """What the client is told to run (``CLAUDE_CODE_EXECUTABLE``,
        ``pathToClaudeCodeExecutable``): the real Claude, or the drop-in."""
        return self.argv[0] if self.kind == "claude" else str(DROPIN)


def cli_or_skip(kind: Kind) -> Cli:
    argv = find_backend(kind)
    if argv is None:
        pytest.skip(f"{kind} not installed: run `ccbridge backends install`")
    if kind == "cbc" and not DROPIN.exists():
        pytest.skip(f"{DROPIN} not installed (pip install -e .)")
    if kind == "claude" and len(argv) != 1:
        pytest.skip(f"the clients take one executable path, the Claude found is {argv}")
    return Cli(kind, tuple(argv))


def cbc_config(url: str, cli: Cli, root: Path, mark: str) -> str:
    """``~/.config/ccbridge/ccbridge.toml`` for a client that passes the drop-in only an
    allowlist of its environment: the backend, where to record and log, and (``[env]``)
    the backend's endpoint, key, and the run's mark (so ``runner.sweep`` finds cbc)."""

    def s(v: str) -> str:
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return "\n".join(
        [
            f"backend = {s(shlex.join(cli.argv))}",
            f"record = {s(str(root / 'record'))}",
            f"log = {s(str(root / 'bridge.log'))}",
            "",
            "[env]",
            f"CODEBUDDY_BASE_URL = {s(url)}",
            'CODEBUDDY_API_KEY = "dummy"',
            'DISABLE_AUTOUPDATER = "1"',
            'CODEBUDDY_DISABLE_AUTO_MEMORY = "1"',
            f"{runner.MARK} = {s(mark)}",
            "",
        ]
    )


def recorder_shim(real: str, root: Path) -> Path:
    """An executable that runs ``real`` under ``ccbridge record`` (one capture per start,
    in ``root/record``): what the client's SDK and the real Claude wrote, nothing
    changed."""
    shim = root / "claude-recorded"
    out = shlex.quote(str(root / "record")) + "/claude-$$.jsonl"
    cmd = shlex.join([sys.executable, "-m", "bridge", "record", "--out"])
    shim.write_text(
        "#!/bin/sh\n"
        f"export PYTHONPATH={shlex.quote(str(REPO))}\n"
        f'exec {cmd} {out} -- {shlex.quote(real)} "$@"\n'
    )
    shim.chmod(0o755)
    return shim


def model_messages(server: ModelServer, limit: int = 1500) -> list[list[dict[str, Any]]]:
    """The ``messages`` of each model request the server kept, long texts cut to
    ``limit`` characters (what the recordings keep of the model's side)."""

    def cut(value: Any) -> Any:
        if isinstance(value, str):
            return value if len(value) <= limit else value[:limit] + f"... [{len(value)} chars]"
        if isinstance(value, list):
            return [cut(v) for v in value]
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        return value

    return [cut(body.get("messages", [])) for _, _, body in server.bodies]


def open_log(path: Path) -> IO[bytes]:
    """A file a child process writes its output to (opened before it starts)."""
    return path.open("wb")


def read_text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def user_agents(server: ModelServer) -> list[str]:
    return [h.get("user-agent", "") for _, h, _ in server.bodies]


def assert_cli_answered(cli: Cli, server: ModelServer, record: Path | None) -> None:
    """Every model request came from the CLI the case meant (never the client's own
    Claude), and there was at least one."""
    agents = user_agents(server)
    assert agents, f"the stand-in model got no request at all ({cli.kind})"
    if cli.kind == "claude":
        wrong = [a for a in agents if not a.startswith(f"claude-cli/{CLAUDE.version} ")]
        assert not wrong, f"not Claude Code {CLAUDE.version} answering: {wrong}"
        return
    wrong = [a for a in agents if f"CodeBuddy/{CBC.version}" not in a or "claude-on-cbc" not in a]
    assert not wrong, f"not cbc {CBC.version} through claude-on-cbc answering: {wrong}"
    assert record is not None
    assert any(record.glob("*.jsonl")), "the bridge recorded no session"


def new_root() -> tuple[dict[str, str], str]:
    """A fresh HOME/cwd/TMPDIR (``runner.make_root``) and a mark for ``runner.sweep``."""
    dirs = runner.make_root()
    Path(dirs["ROOT"], "record").mkdir(mode=0o700)
    return dirs, secrets.token_hex(8)


def group_alive(pgid: int) -> bool:
    """Whether a process of the group ``pgid`` still runs (zombies, left to be reaped by
    whoever adopted them, do not count)."""
    with os.scandir("/proc") as entries:
        pids = [e.name for e in entries if e.name.isdigit()]
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                # pid (comm) state ppid pgrp ...: comm may hold spaces, split after it
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def end_group(pgid: int, grace: float = 3.0) -> None:
    """SIGTERM to the process group (the bridge then finishes its recording), up to
    ``grace`` seconds for it to go, then SIGKILL."""
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    signal_group(pgid, signal.SIGKILL)


def cleanup(
    dirs: dict[str, str],
    mark: str,
    *,
    pgid: int | None = None,
    keep: tuple[str, str, Cli, dict[str, Any]] | None = None,
) -> None:
    """Kill every process of the run (the process group ``pgid``, everything carrying
    ``mark``), keep its recordings (``keep``: the arguments of ``keep_recordings`` after
    ``dirs``), remove its dirs. Whether the case passed or not."""
    if pgid is not None:
        end_group(pgid)
    runner.sweep(mark)
    if keep is not None:
        name, url, cli, extra = keep
        keep_recordings(dirs, url, cli, name, extra)
    shutil.rmtree(dirs["ROOT"], ignore_errors=True)


def keep_dir() -> Path | None:
    value = os.environ.get(KEEP_ENV)
    return Path(value) if value else None


def keep_recordings(
    dirs: dict[str, str], url: str, cli: Cli, name: str, extra: dict[str, Any] | None = None
) -> None:
    """With ``CCBRIDGE_CLIENT_KEEP``: this run's recordings (and ``extra``, as JSON
    files), scrubbed, under ``$CCBRIDGE_CLIENT_KEEP/<name>/``."""
    base = keep_dir()
    if base is None:
        return
    out = base / re.sub(r"[^A-Za-z0-9_.-]+", "-", name)
    out.mkdir(parents=True, exist_ok=True)
    pairs = runner.scrubber(dirs, url)
    pairs += [(cli.argv[0].encode(), b"{" + cli.kind.upper().encode() + b"}")]
    pairs += [(str(DROPIN).encode(), b"{DROPIN}"), (str(JS).encode(), b"{JS}")]
    port = url.rsplit(":", 1)[-1].encode()

    def scrub(data: bytes) -> bytes:
        for a, b in sorted(pairs, key=lambda p: -len(p[0])):
            data = data.replace(a, b)
        return re.sub(rb"127\.0\.0\.1:" + re.escape(port), b"{MODEL_ADDR}", data)

    for i, f in enumerate(sorted(Path(dirs["ROOT"], "record").glob("*.jsonl"))):
        kind = "claude" if f.name.startswith("claude-") else "bridge"
        (out / f"{kind}-{i}.jsonl").write_bytes(scrub(f.read_bytes()))
    for key, value in (extra or {}).items():
        text = json.dumps(value, indent=1, default=str).encode()
        (out / f"{key}.json").write_bytes(scrub(text))
