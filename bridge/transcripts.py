"""Claude Code's session transcripts, read for rule ``rev-resume-replay`` (profile
``claude-to-cbc``): a cbc client that resumes a session without a prompt
(``initialize{hasPrompt:false}``) expects the history replayed, which Claude does not do.

Claude keeps a session at ``$CLAUDE_CONFIG_DIR/projects/<slug>/<session>.jsonl`` (default
``~/.claude``), the slug being the working directory with every character outside
``[A-Za-z0-9]`` made ``-`` (``project_slug``: past 200 characters, cut and suffixed with a
hash, as Claude and its SDKs do). Read only as a regular file (no link), up to ``MAX_BYTES``;
a line that is not a JSON object is skipped. None when there is no such file. The drop-in
writes the same place (``bridge.session_store``: ``projects_dir``, ``project_slug``).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

MAX_BYTES = 64 * 1024 * 1024
_SLUG = re.compile(r"[^A-Za-z0-9]")
_UUID = re.compile(r"[0-9a-fA-F-]{36}")
#: the longest slug Claude writes whole (longer: cut, and a hash of the path added)
MAX_SLUG = 200


def projects_dir(env: Mapping[str, str]) -> str:
    """``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects`` (``HOME`` from ``env``)."""
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.join(
        env.get("HOME") or str(Path.home()), ".claude"
    )
    return os.path.join(base, "projects")


def project_slug(cwd: str) -> str:
    """The directory of ``cwd``'s sessions under ``projects``: never a path (no ``/``).
    JavaScript's replace works on UTF-16 units: a character past U+FFFF is two ``-``."""
    slug = _SLUG.sub(lambda m: "--" if ord(m.group()) > 0xFFFF else "-", cwd)
    if len(slug) <= MAX_SLUG:
        return slug
    return f"{slug[:MAX_SLUG]}-{_simple_hash(cwd)}"


def _simple_hash(text: str) -> str:
    """JavaScript's ``h = (h << 5) - h + c | 0`` over UTF-16 code units, in base 36 (the
    suffix the SDKs compute for a long path; they find Claude's own by its prefix)."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = ((h << 5) - h + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    n = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits = ""
    while True:
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
        if not n:
            return digits


class StoreSpec(NamedTuple):
    """Where, and as which Claude, the drop-in writes the session store
    (``bridge.session_store``), decided before the backend is spawned."""

    projects: str  # $CLAUDE_CONFIG_DIR/projects
    cwd: str  # the session's working directory (the backend's)
    version: str  # the Claude Code version emulated
    entrypoint: str = "sdk-cli"
    log_path: str | None = None  # where its one warning goes (None: stderr)
    log_level: str = "warning"


_ENTRYPOINT = re.compile(r"[a-z][a-z0-9-]{0,31}")


def store_spec(
    env: Mapping[str, str], version: str, log_path: str | None = None, log_level: str = "warning"
) -> StoreSpec:
    """The store of a session run in our working directory with ``env``: ``entrypoint`` is
    what the SDKs set in ``CLAUDE_CODE_ENTRYPOINT`` (``sdk-py``, ``sdk-ts``), else Claude's
    own for a piped session, ``sdk-cli``."""
    given = env.get("CLAUDE_CODE_ENTRYPOINT", "")
    entrypoint = given if _ENTRYPOINT.fullmatch(given) else "sdk-cli"
    return StoreSpec(projects_dir(env), os.getcwd(), version, entrypoint, log_path, log_level)


def transcript_path(env: Mapping[str, str], cwd: str, session: str) -> Path | None:
    if not _UUID.fullmatch(session):
        return None  # a session id is a UUID here (rev-argv made it one): never a path
    return Path(projects_dir(env)) / project_slug(cwd) / f"{session}.jsonl"


def claude_history(env: Mapping[str, str], cwd: str, session: str) -> list[dict[str, Any]] | None:
    from compat.frames import loads  # (the drop-in imports this module before the spawn)

    path = transcript_path(env, cwd, session)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    out: list[dict[str, Any]] = []
    for line in data.splitlines():
        try:
            obj = loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out
