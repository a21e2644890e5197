"""``cbc-on-claude``: the drop-in a CodeBuddy SDK client is given instead of cbc
(``codebuddy_code_path=`` / ``CODEBUDDY_CODE_PATH`` in the Python SDK,
``pathToCodebuddyCode`` in the JS SDK), which runs Claude Code behind profile
``claude-to-cbc`` (REVERSE.md).

Its argv belongs to the client (cbc's options, translated for Claude by rule ``rev-argv``);
everything else comes from the environment or the config file (``bridge.config``). Claude is
found in Claude's order: ``CCBRIDGE_BACKEND``, then ``claude`` on PATH, then what
``ccbridge backends install`` installed (``bridge.backends.lookup``). None found: say what
was tried, exit 127. ``--version`` answers as cbc 2.163.0 does (``2.163.0``).

The JS SDK runs a path that does not end in ``.exe`` under node: give it
``cbc-on-claude.exe`` (the same entry point, installed under that name too), or
``cbc-on-claude`` with ``executable`` set to the Python that installed it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn

from bridge import backends, config, launch, stdfds
from bridge.cli import columns, guarded
from compat import __version__
from compat.argv_cbc import DROPPED
from compat.env_cbc import REVERSE_ENV_TABLE
from compat.exits import Exit

EXIT_NO_BACKEND = Exit.NOT_FOUND
PROFILE = "claude-to-cbc"
#: what ``codebuddy-headless --version`` prints (the cbc the client is made to see)
TARGET_CBC_VERSION = "2.163.0"


def version_text() -> str:
    return TARGET_CBC_VERSION


def help_text() -> str:
    return "\n".join(
        [
            "Usage: cbc-on-claude [cbc options]",
            f"  (CodeBuddy Code {TARGET_CBC_VERSION} as seen by its SDKs; ccbridge {__version__} "
            "on Claude Code)",
            "",
            "A drop-in for the cbc executable (codebuddy-headless) that runs Claude Code behind",
            "the ccbridge normalization pipeline (profile claude-to-cbc). The cbc SDKs' options",
            "pass on to Claude, except:",
            '  --setting-sources none       becomes --setting-sources ""',
            "  --session-id/--resume ID     an ID that is not a UUID becomes uuid5(ID) (mapped",
            "                               back in every frame)",
            "  --session-id with --resume   dropped (unless --fork-session)",
            *(f"  {k:<29}dropped ({v})" for k, v in DROPPED.items()),
            "  --permission-prompt-tool stdio is always added (cbc asks over stdio)",
            "",
            "Environment passed on to Claude (cbc's variable, then what Claude gets):",
            *columns([(c, b) for c, b, _ in REVERSE_ENV_TABLE if c.isupper()]),
            "",
            "Claude is found by CCBRIDGE_BACKEND, then `claude` on PATH, then `ccbridge backends",
            "install`. Bridge settings: CCBRIDGE_RULES, CCBRIDGE_RECORD, CCBRIDGE_LOG,",
            "CCBRIDGE_CONFIG (see docs/settings.md).",
        ]
    )


def find_claude(env: Mapping[str, str], explicit: str | None) -> tuple[list[str] | None, list[str]]:
    """Claude's order: ``CCBRIDGE_BACKEND``, ``claude`` on PATH, the backends cache."""
    if explicit:
        return config.command_line("CCBRIDGE_BACKEND (or backend =)", explicit), []
    tried = ["CCBRIDGE_BACKEND (unset)"]
    found = shutil.which("claude", path=env.get("PATH", os.defpath))
    if found:
        return [found], tried
    tried.append("claude on PATH (not found)")
    argv, more = backends.lookup("claude", env={**env, "PATH": ""})
    return argv, tried + [t for t in more if "on PATH" not in t]


def entry() -> NoReturn:
    """``cbc-on-claude``, the console script (``stdfds.run``: no traceback on an interrupt or a
    closed pipe; the exit without Python's teardown)."""
    stdfds.run(main, "cbc-on-claude", fast=True)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """The drop-in; ``argv`` (default ``sys.argv[1:]``) is the cbc SDK's, ``env`` (default
    ``os.environ``) the bridge's settings and the backend's environment."""
    stdfds.ensure()  # before anything opens a file: a closed 0-2 is /dev/null
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-v", "--version", "-V"):
        print(version_text())
        return 0
    if args and args[0] in ("-h", "--help"):
        print(help_text())
        return 0
    return guarded(lambda: _run(args, dict(os.environ if env is None else env)))


def _run(client_argv: list[str], env: dict[str, str]) -> int:
    """As ``claude-on-cbc``: the plan, Claude spawned, then trio, the proxy and the stages
    imported while it boots (``bridge.launch``)."""
    settings = config.load(env)
    env = config.environment(settings, env)  # the config file's [env] under the caller's
    profile = "identity" if env.get("CCBRIDGE_PROFILE") == "identity" else PROFILE
    backend, tried = find_claude(env, settings.backend)
    if backend is None:
        from bridge.log import Logger

        Logger.open(settings.log, settings.log_level).error(
            "no Claude Code found; tried: "
            + "; ".join(tried)
            + ". Run `ccbridge backends install`, put `claude` on PATH or set "
            "CCBRIDGE_BACKEND."
        )
        return EXIT_NO_BACKEND
    return launch.dropin_session(
        "cbc-on-claude", profile, backend, client_argv, env, settings, launch.DeferredLog()
    )
