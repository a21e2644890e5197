"""How a recorded session was launched and where (``ccbridge scenario from-capture``):
the client's arguments (``launch_argv``, ``client_args``), the environment worth keeping
(``session_env``), which CLI it was (``backend_kind``), and the machine's paths
(``places``, ``scrubbed``: the working directory and home as ``{CWD}`` and ``{HOME}``).
Pure."""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any

import attrs

from compat.capture import Capture, Record
from compat.frames import str_at
from compat.redact import is_secret_env

#: environment variables the runner sets itself (or that name this machine)
RUNNER_ENV = frozenset(
    {
        "HOME",
        "TMPDIR",
        "LANG",
        "USER",
        "PATH",
        "PYTHONPATH",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "DISABLE_AUTOUPDATER",
        "DISABLE_TELEMETRY",
        "DISABLE_ERROR_REPORTING",
        "CODEBUDDY_DISABLE_AUTO_MEMORY",
    }
)
_EXE_NAMES = frozenset(
    {
        "claude",
        "cbc",
        "codebuddy",
        "codebuddy-headless",
        "node",
        "bun",
        "claude-on-cbc",
        "cbc-on-claude",
    }
)
_DROPPED_FLAGS = {"--resume": 1, "-r": 1, "--continue": 0, "-c": 0, "--fork-session": 0}
_HOME = re.compile(r"^(/home/[^/]+|/Users/[^/]+|/root)(?=/|$)")


def _meta(cap: Capture) -> dict[str, Any]:
    meta = cap.header.get("meta")
    return meta if isinstance(meta, dict) else {}


def launch_argv(cap: Capture) -> list[str] | None:
    """The command line the capture says the CLI (or the bridge) was started with."""
    argv = cap.header.get("argv")
    if not isinstance(argv, list):
        meta = _meta(cap)
        argv = meta.get("args") if isinstance(meta.get("args"), list) else meta.get("argv")
    if not isinstance(argv, list):
        return None
    return _client_part([str(a) for a in argv])


def launch_argv_of(command: str) -> list[str]:
    """The client's part of a command line written as one shell-quoted string (the note
    of a scenario's resumed run)."""
    try:
        return _client_part(shlex.split(command))
    except ValueError:
        return []


def _client_part(argv: list[str]) -> list[str]:
    """A launch line without the bridge's own words and the CLI's executable."""
    if "--" in argv and ("bridge" in argv[:4] or os.path.basename(argv[0]) == "ccbridge"):
        argv = argv[argv.index("--") + 1 :]  # the bridge's: the client's flags after --
    i = 0
    while i < len(argv) and not argv[i].startswith("-") and _is_exe(argv[i]):
        i += 1
    return argv[i:]


def _is_exe(word: str) -> bool:
    return (
        "/" in word
        or word.endswith((".js", ".mjs", ".cjs", ".exe"))
        or os.path.basename(word) in _EXE_NAMES
    )


def client_args(argv: list[str], notes: list[str]) -> tuple[list[str], bool]:
    """(the scenario's ``args``, headless): the stream-json base flags the runner adds
    left out (a ``-p`` run keeps its whole command line), and what cannot be replayed."""
    pairs = list(zip(argv, [*argv[1:], ""], strict=True))
    stream = ("--input-format", "stream-json") in pairs or "--input-format=stream-json" in argv
    out: list[str] = []
    base = {"-p", "--print", "--verbose"} if stream else set()
    skip = 0
    for i, a in enumerate(argv):
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if skip:
            skip -= 1
        elif stream and a in ("--input-format", "--output-format") and nxt == "stream-json":
            skip = 1
        elif stream and a in ("--input-format=stream-json", "--output-format=stream-json"):
            pass
        elif a in base:
            base.discard(a)
            base.discard({"-p": "--print", "--print": "-p"}.get(a, a))
        elif a in ("--settings", "--mcp-config") and nxt.startswith("{ROOT}"):
            skip = 1
            notes.append(f"{a}: the runner's own file of the recorded scenario is left out")
        elif a in _DROPPED_FLAGS:
            skip = _DROPPED_FLAGS[a]
            notes.append(f"{a}: the session it resumes is not in the capture; left out")
        else:
            out.append(a)
    return out, not stream


def session_env(cap: Capture) -> dict[str, str]:
    """The recorded environment variables worth keeping: no credential, no URL, nothing
    the runner sets, nothing of the bridge's own (``CCBRIDGE_*``)."""
    env = cap.header.get("env")
    if not isinstance(env, dict):
        env = _meta(cap).get("env")
    out: dict[str, str] = {}
    for k, v in (env or {}).items():
        if not isinstance(v, str) or k in RUNNER_ENV or k.startswith("CCBRIDGE_"):
            continue
        if is_secret_env(k) or k.endswith(("_BASE_URL", "_URL")) or "<" in v or "{" in v:
            continue
        out[k] = v
    return out


def backend_kind(cap: Capture, frames: list[dict[str, Any]]) -> str:
    """claude, cbc or unknown: from the header, the launch, or the first ``system/init``."""
    h = cap.header
    if h.get("backend") in ("claude", "cbc"):
        return str(h["backend"])
    profile = {"cbc-to-claude": "cbc", "claude-to-cbc": "claude"}.get(str(h.get("profile")))
    meta = _meta(cap)
    if profile or "cbc_version" in meta or "codebuddy" in str(meta.get("exe", "")):
        return profile or "cbc"
    raw = h.get("argv")
    first = os.path.basename(str(raw[0])) if isinstance(raw, list) and raw else ""
    if "claude" in first or "codebuddy" in first or first == "cbc":
        return "claude" if "claude" in first else "cbc"
    return _kind_of_init(next((f for f in frames if f.get("subtype") == "init"), {}))


#: the dialect of the client a profile serves (``harness.runner.client_dialect``)
_SERVED = {"cbc-to-claude": "claude", "claude-to-cbc": "cbc"}


def client_dialect(cap: Capture) -> str | None:
    """The dialect the recorded client spoke (``claude`` or ``cbc``), so that the scenario
    answers as it did: the header's ``client``; the client a profile serves; else what its
    first permission answer or session control shows (``_dialect_of``). None when nothing
    says."""
    h = cap.header
    if h.get("client") in ("claude", "cbc"):
        return str(h["client"])
    served = _SERVED.get(str(h.get("profile"))) or _SERVED.get(str(h.get("via")))
    if served is not None:
        return served  # (a recording's own lines: a permission answer, a session control)
    kinds = ("client_in",) if any(r.kind == "client_in" for r in cap.records) else ("stdin",)
    for r in cap.records:
        said = _dialect_of(r.text) if r.kind in kinds else None
        if said is not None:
            return said
    return None


#: the session controls a cbc SDK sends with the session's id (a Claude SDK without it)
_SESSION_CONTROLS = ("interrupt", "set_model", "set_permission_mode")


def _dialect_of(line: str) -> str | None:
    """The dialect a client line shows: a permission answer's shape (``allowed``: a cbc
    SDK's, ``behavior``: a Claude SDK's), or a session control with or without its
    ``session_id``; None for any other line."""
    if '"control_' not in line:
        return None
    try:
        frame = json.loads(line)
    except ValueError:
        return None
    if not isinstance(frame, dict):
        return None
    inner = frame.get("response") if frame.get("type") == "control_response" else None
    answer = inner.get("response") if isinstance(inner, dict) else None
    if isinstance(answer, dict) and ("allowed" in answer or "behavior" in answer):
        return "cbc" if "allowed" in answer else "claude"
    request = frame.get("request") if frame.get("type") == "control_request" else None
    if isinstance(request, dict) and request.get("subtype") in _SESSION_CONTROLS:
        return "cbc" if "session_id" in request else "claude"
    return None


def _kind_of_init(init: dict[str, Any]) -> str:
    if "claude_code_version" in init:
        return "claude"
    return "cbc" if "codebuddy" in str(init.get("apiKeySource", "")) else "unknown"


def places(cap: Capture, frames: list[dict[str, Any]]) -> list[tuple[bytes, bytes]]:
    """(path, placeholder) pairs, longest first: the session's working directory (its
    ``system/init``'s ``cwd``) and home (the recorded ``HOME``, else the home the working
    directory is in)."""
    cwd = next((c for f in frames if f.get("subtype") == "init" and (c := str_at(f, "cwd"))), None)
    pairs = [(p, n) for p, n in ((cwd, "{CWD}"), (_home(cap, cwd), "{HOME}")) if _real(p)]
    return sorted(((str(p).encode(), n.encode()) for p, n in pairs), key=lambda x: -len(x[0]))


def _real(path: str | None) -> bool:
    """A path of the machine (not a placeholder already, not ``/``)."""
    return bool(path) and "{" not in str(path) and bool(str(path).rstrip("/"))


def _home(cap: Capture, cwd: str | None) -> str | None:
    env = cap.header.get("env")
    home = env.get("HOME") if isinstance(env, dict) else None
    if isinstance(home, str) and _real(home):
        return home
    m = _HOME.match(cwd or "")
    return m.group(1) if m else None


def scrubbed(records: tuple[Record, ...], pairs: list[tuple[bytes, bytes]]) -> list[Record]:
    """The records with each path of ``pairs`` (where a path ends: not ``/rootfs`` for
    ``/root``) replaced by its placeholder."""
    if not pairs:
        return list(records)
    pattern = re.compile(b"|".join(re.escape(p) + rb"(?![\w.-])" for p, _ in pairs))
    names = dict(pairs)
    out = []
    for r in records:
        data = pattern.sub(lambda m: names[m.group()], r.data)
        out.append(attrs.evolve(r, data=data) if data != r.data else r)
    return out
