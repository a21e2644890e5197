"""bridge/transcripts.py: Claude's session transcript, read for rev-resume-replay."""

from __future__ import annotations

import json
from pathlib import Path

from bridge.transcripts import claude_history, transcript_path

SID = "1fea61ef-4445-57fc-8982-2f5fed69fee1"


def test_the_transcript_is_read_from_claudes_projects_directory(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    path = transcript_path(env, "/tmp/a b/work", SID)
    assert path == tmp_path / ".claude/projects/-tmp-a-b-work" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"type": "user", "message": {"content": "hi"}}) + "\nnot json\n")
    assert claude_history(env, "/tmp/a b/work", SID) == [
        {"type": "user", "message": {"content": "hi"}}
    ]
    other = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"), "HOME": str(tmp_path)}
    assert claude_history(other, "/tmp/a b/work", SID) is None  # CLAUDE_CONFIG_DIR wins


def test_no_link_and_no_path_in_a_session_id(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    path = transcript_path(env, "/w", SID)
    assert path is not None
    path.parent.mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.write_text('{"type": "user"}\n')
    path.symlink_to(secret)
    assert claude_history(env, "/w", SID) is None
    assert transcript_path(env, "/w", "../../secret") is None
