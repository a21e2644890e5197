"""Claude Code's session transcripts, read for rule ``rev-resume-replay`` (profile
``claude-to-cbc``): a cbc client that resumes a session without a prompt
(``initialize{hasPrompt:false}``) expects the history replayed, which Claude does not do.

Claude keeps a session at ``$CLAUDE_CONFIG_DIR/projects/<slug>/<session>.jsonl`` (default
``~/.claude``), the slug being the working directory with every character outside
``[A-Za-z0-9]`` made ``-``. Read only as a regular file (no link), up to ``MAX_BYTES``; a
line that is not a JSON object is skipped. None when there is no such file.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compat.frames import loads

MAX_BYTES = 64 * 1024 * 1024
_SLUG = re.compile(r"[^A-Za-z0-9]")
_UUID = re.compile(r"[0-9a-fA-F-]{36}")


def transcript_path(env: Mapping[str, str], cwd: str, session: str) -> Path | None:
    if not _UUID.fullmatch(session):
        return None  # a session id is a UUID here (rev-argv made it one): never a path
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.join(
        env.get("HOME") or str(Path.home()), ".claude"
    )
    return Path(base) / "projects" / _SLUG.sub("-", cwd) / f"{session}.jsonl"


def claude_history(env: Mapping[str, str], cwd: str, session: str) -> list[dict[str, Any]] | None:
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
