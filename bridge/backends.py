"""``ccbridge backends install [--dir DIR] [--only claude|cbc]`` and ``ccbridge backends
list``: the real CLIs the A/B scenarios run, pinned to the versions the bridge targets.

Layout of the cache (``$CCBRIDGE_BACKENDS_DIR`` or ``~/.cache/ccbridge/backends``):

    cbc-venv/         a venv with PyPI ``codebuddy-agent-sdk==0.3.274``, whose package
                      ships the native ``bin/codebuddy-headless`` (reports 2.163.0)
    claude/           ``npm install @anthropic-ai/claude-code@2.1.220``; the native binary
                      is ``node_modules/@anthropic-ai/claude-code/bin/claude.exe`` (npm 11
                      skips the package's postinstall script; the binary is there anyway)

Discovery (``lookup``, the one every command uses, ``claude-on-cbc`` included): for cbc
``CCBRIDGE_BACKEND`` / ``CODEBUDDY_CODE_PATH`` first, then the cache, then ``PATH``, then an
installed ``codebuddy_agent_sdk`` package; for claude the cache, then ``PATH``. It returns
an argv prefix, or None. It does not check versions: the scenario runner records what
``--version`` says in each capture.
Installing uses the registries' own clients (pip, npm) and nothing else.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from bridge.cli import USAGE_EXIT, Parser, parser
from compat import versions
from compat.exits import Exit

#: the verified versions (compat.versions): what ``install`` installs unless told otherwise
CLAUDE_PACKAGE = versions.CLAUDE.spec
CBC_PACKAGE = versions.CBC.spec
NAMES = ("claude", "cbc")
#: names a cbc binary goes by on PATH
CBC_EXECUTABLES = ("codebuddy-headless", "codebuddy", "cbc")

Runner = Callable[[Sequence[str]], int]


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("CCBRIDGE_BACKENDS_DIR"):
        return Path(env["CCBRIDGE_BACKENDS_DIR"]).expanduser()
    return Path(env.get("HOME") or Path.home()).expanduser() / ".cache/ccbridge/backends"


def _claude_in(d: Path) -> Path | None:
    exe = d / "claude/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def _sdk_bin(site: Path) -> Path | None:
    exe = site / "codebuddy_agent_sdk/bin/codebuddy-headless"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def _cbc_in(d: Path) -> Path | None:
    for site in sorted((d / "cbc-venv/lib").glob("python*/site-packages")):
        exe = _sdk_bin(site)
        if exe is not None:
            return exe
    return None


def _cbc_from_package() -> Path | None:
    try:
        spec = importlib.util.find_spec("codebuddy_agent_sdk")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        exe = _sdk_bin(Path(loc).parent)
        if exe is not None:
            return exe
    return None


def lookup(
    name: str,
    *,
    dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    explicit: str | None = None,
) -> tuple[list[str] | None, list[str]]:
    """Where backend ``name`` ("claude" or "cbc") is, in the one order every command uses
    (docs/settings.md, "Finding the backend"): for cbc ``explicit`` (``CCBRIDGE_BACKEND`` /
    ``backend =``, a shlex-split command line), ``$CODEBUDDY_CODE_PATH``, the cache ``ccbridge
    backends install`` fills, ``codebuddy-headless`` / ``codebuddy`` / ``cbc`` on PATH, an
    installed ``codebuddy-agent-sdk``; for claude the cache, then ``claude`` on PATH.
    Returns the argv prefix (None: not found) and what was tried before it, in words."""
    env = os.environ if env is None else env
    d = dir if dir is not None else cache_dir(env)
    path = env.get("PATH", os.defpath)
    tried: list[str] = []
    if name not in NAMES:
        raise ValueError(f"unknown backend {name!r} (one of {', '.join(NAMES)})")
    if name == "cbc":
        if explicit:
            from bridge.config import command_line

            return command_line("CCBRIDGE_BACKEND (or backend =)", explicit), tried
        tried.append("CCBRIDGE_BACKEND (unset)")
        if env.get("CODEBUDDY_CODE_PATH"):
            return [env["CODEBUDDY_CODE_PATH"]], tried
        tried.append("CODEBUDDY_CODE_PATH (unset)")
    exe = _claude_in(d) if name == "claude" else _cbc_in(d)
    if exe is not None:
        return [str(exe)], tried
    tried.append(f"the backends cache {d} (nothing installed: ccbridge backends install)")
    for candidate in ("claude",) if name == "claude" else CBC_EXECUTABLES:
        found = shutil.which(candidate, path=path)
        if found:
            return [found], tried
        tried.append(f"{candidate} on PATH (not found)")
    if name == "cbc":
        exe = _cbc_from_package()
        if exe is not None:
            return [str(exe)], tried
        tried.append("an installed codebuddy-agent-sdk (not installed)")
    return None, tried


def installed_in(name: str, d: Path) -> list[str] | None:
    """The backend ``install`` put into cache ``d``, and nothing else (no PATH, no
    package)."""
    exe = _claude_in(d) if name == "claude" else _cbc_in(d)
    return [str(exe)] if exe is not None else None


def find_backend(
    name: str, *, dir: Path | None = None, env: Mapping[str, str] | None = None
) -> list[str] | None:
    """The argv prefix that starts backend ``name`` ("claude" or "cbc"), or None
    (``lookup``'s order)."""
    return lookup(name, dir=dir, env=env)[0]


def _run(argv: Sequence[str]) -> int:
    print("+ " + " ".join(argv), file=sys.stderr)
    try:
        return subprocess.run(list(argv), check=False).returncode
    except FileNotFoundError:
        print(f"ccbridge backends: {argv[0]} not found", file=sys.stderr)
        return Exit.NOT_FOUND


def install(
    d: Path,
    only: Sequence[str] = NAMES,
    run: Runner = _run,
    version: Mapping[str, str] | None = None,
) -> int:
    """Install the backends into ``d``: the verified ones (``compat.versions``), or for a
    name in ``version`` that package version (``{"claude": "2.1.332"}``: npm's version of
    ``@anthropic-ai/claude-code``; for cbc the ``codebuddy-agent-sdk`` version). The first
    failure's status, else 0."""
    version = version or {}
    cbc_spec = versions.spec_for(versions.CBC, version["cbc"]) if "cbc" in version else CBC_PACKAGE
    claude_spec = (
        versions.spec_for(versions.CLAUDE, version["claude"])
        if "claude" in version
        else CLAUDE_PACKAGE
    )
    d.mkdir(parents=True, exist_ok=True)
    if "cbc" in only:
        venv = d / "cbc-venv"
        if not (venv / "bin/python").exists():
            rc = run([sys.executable, "-m", "venv", str(venv)])
            if rc:
                return rc
        rc = run(
            [
                str(venv / "bin/python"),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--quiet",
                cbc_spec,
            ]
        )
        if rc:
            return rc
    if "claude" in only:
        npm = shutil.which("npm")
        if npm is None:
            print(
                "ccbridge backends: npm not found (Claude Code installs from npm; "
                "Node.js >= 18 runs its installer)",
                file=sys.stderr,
            )
            return Exit.NOT_FOUND
        rc = run(
            [
                npm,
                "install",
                "--prefix",
                str(d / "claude"),
                "--no-audit",
                "--no-fund",
                "--loglevel",
                "error",
                claude_spec,
            ]
        )
        if rc:
            return rc
    for name in only:
        found = find_backend(name, dir=d, env={"PATH": ""})
        if found is None:
            print(
                f"ccbridge backends: {name} installed but its binary was not found under {d}",
                file=sys.stderr,
            )
            return Exit.FAILED
        print(f"{name}: {found[0]}", file=sys.stderr)
    return 0


def build_parser() -> Parser:
    p = parser(
        "backends",
        "install the real CLIs the bridge was verified with, or show which would run",
        examples=[
            "ccbridge backends install",
            "ccbridge backends install --only cbc --dir /opt/ccbridge-backends",
            "ccbridge backends list",
        ],
        exits={
            Exit.OK: "installed; list: both found",
            Exit.FAILED: "installed but its binary was not found; list: one is missing",
            **USAGE_EXIT,
            Exit.NOT_FOUND: "install: pip or npm was not found",
            "N": "install: the installer's own status when it failed",
        },
    )
    sub = p.add_subparsers(
        dest="cmd", required=True, metavar="install|list", help="what to do (each has --help)"
    )
    where = "the cache directory (default: $CCBRIDGE_BACKENDS_DIR, else ~/.cache/ccbridge/backends)"
    pi = sub.add_parser(
        "install",
        help=f"install {CLAUDE_PACKAGE} (npm) and {CBC_PACKAGE} (PyPI)",
        description=f"install {CLAUDE_PACKAGE} (npm) and {CBC_PACKAGE} (PyPI) into the cache",
    )
    pi.add_argument("--dir", type=Path, default=None, metavar="DIR", help=where)
    pi.add_argument(
        "--only",
        choices=NAMES,
        action="append",
        default=None,
        help="only this backend (repeatable; default: both)",
    )
    pl = sub.add_parser(
        "list",
        help="where each backend would be found",
        description="where each backend would be found: the cache, PATH, an installed "
        "codebuddy-agent-sdk",
    )
    pl.add_argument("--dir", type=Path, default=None, metavar="DIR", help=where)
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    d = args.dir if args.dir is not None else cache_dir()
    if args.cmd == "install":
        from bridge.config import check_out_dir

        check_out_dir("--dir" if args.dir is not None else "CCBRIDGE_BACKENDS_DIR", str(d))
    if args.cmd == "install":
        return install(d, tuple(args.only or NAMES))
    missing = 0
    for name in NAMES:
        found = find_backend(name, dir=d)
        # a listing the user asked for: stdout is not a protocol channel here
        print(f"{name}\t{' '.join(found) if found else '(not found)'}")
        missing += found is None
    return Exit.FAILED if missing else Exit.OK


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
