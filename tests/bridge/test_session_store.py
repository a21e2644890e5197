"""``bridge.session_store``: the drop-in's copy of Claude's session store, written as the
session runs: 0600 in 0700 directories it creates, never through a link, a resumed
session's file appended to, and any failure one warning, the session going on."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from bridge.config import ConfigError, load
from bridge.session_store import SessionStore, git_branch
from bridge.transcripts import StoreSpec, project_slug, store_spec

SID = "11111111-2222-4333-8444-555555555555"
INIT = b'{"type":"system","subtype":"init","session_id":"%s","cwd":"/w"}\n' % SID.encode()
USER = b'{"type":"user","message":{"role":"user","content":"hello"}}\n'
REPLY = (
    b'{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]},'
    b'"parent_tool_use_id":null,"uuid":"22222222-2222-4333-8444-555555555555"}\n'
)
RESULT = b'{"type":"result","subtype":"success","is_error":false,"result":"ok"}\n'


class Store:
    """A store under ``tmp_path`` and the warnings it gave."""

    def __init__(self, tmp_path: Path, cwd: str = "/w/proj") -> None:
        self.projects = tmp_path / "claude" / "projects"
        self.dir = self.projects / project_slug(cwd)
        self.file = self.dir / f"{SID}.jsonl"
        self.warnings: list[str] = []
        spec = StoreSpec(str(self.projects), cwd, "2.1.220")
        self.store = SessionStore(spec, warn=self.warnings.append, clock=lambda: 0.0)

    def turn(self) -> None:
        self.store.client_data(USER)
        self.store.frame_data(INIT + REPLY + RESULT)

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.file.read_text().splitlines()]


def test_records_are_written_as_the_session_runs(tmp_path: Path) -> None:
    s = Store(tmp_path)
    s.store.client_data(USER)
    assert not s.file.exists()  # no session id yet
    s.store.frame_data(INIT)
    assert [r["type"] for r in s.records()] == ["queue-operation", "queue-operation", "user"]
    s.store.frame_data(REPLY[:30])
    s.store.frame_data(REPLY[30:] + RESULT)
    assert [r["type"] for r in s.records()][3:] == ["assistant", "last-prompt"]
    s.store.close()
    assert s.records()[2]["timestamp"] == "1970-01-01T00:00:00.000Z"
    assert s.records()[2]["cwd"] == "/w/proj"
    assert s.warnings == []


def test_the_file_is_0600_in_0700_directories_it_made(tmp_path: Path) -> None:
    s = Store(tmp_path)
    s.turn()
    assert stat.S_IMODE(s.file.stat().st_mode) == 0o600
    for d in (s.dir, s.projects, s.projects.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_a_link_in_place_of_the_file_is_not_written_through(tmp_path: Path) -> None:
    s = Store(tmp_path)
    s.dir.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.write_text("mine\n")
    s.file.symlink_to(target)
    s.turn()
    assert target.read_text() == "mine\n"
    assert len(s.warnings) == 1
    assert "a symbolic link; not written through" in s.warnings[0]
    assert "the session goes on" in s.warnings[0]


def test_a_link_in_place_of_the_project_directory_is_not_written_through(tmp_path: Path) -> None:
    s = Store(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    s.projects.mkdir(parents=True)
    s.dir.symlink_to(elsewhere)
    s.turn()
    assert list(elsewhere.iterdir()) == []
    assert len(s.warnings) == 1
    assert "symbolic link" in s.warnings[0]


def test_a_resumed_sessions_file_is_appended_to_its_chain_going_on(tmp_path: Path) -> None:
    first = Store(tmp_path)
    first.turn()
    first.store.close()
    before = first.records()
    again = Store(tmp_path)
    again.turn()
    again.store.close()
    after = again.records()
    assert after[: len(before)] == before
    new_user = next(r for r in after[len(before) :] if r["type"] == "user")
    assert new_user["parentUuid"] == before[-2]["uuid"]  # the first run's last assistant
    assert again.warnings == []


def test_a_file_of_someone_elses_or_not_a_file_is_left_alone(tmp_path: Path) -> None:
    s = Store(tmp_path)
    s.dir.mkdir(parents=True)
    s.file.write_text("")
    if os.geteuid() == 0:
        os.chown(s.file, 4242, -1)
    else:
        s.file.unlink()
        os.mkfifo(s.file)
    s.turn()
    assert len(s.warnings) == 1
    if os.geteuid() == 0:
        assert s.file.read_text() == ""


def test_an_existing_file_is_never_created_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first open is exclusive: a file that appears between the two is appended to."""
    s = Store(tmp_path)
    flags: list[int] = []
    real = os.open

    def spy(path: Any, f: int, *a: Any, **k: Any) -> int:
        flags.append(f)
        return real(path, f, *a, **k)

    monkeypatch.setattr("bridge.session_store.os.open", spy)
    s.turn()
    file_flags = [f for f in flags if not f & os.O_DIRECTORY]
    assert file_flags
    assert file_flags[0] & os.O_EXCL
    assert file_flags[0] & os.O_CREAT
    assert all(f & os.O_NOFOLLOW for f in flags)


def test_a_full_disk_is_one_warning_and_the_session_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Store(tmp_path)

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("bridge.session_store.os.write", full)
    s.turn()
    s.turn()
    s.store.close()
    assert len(s.warnings) == 1
    assert "No space left on device" in s.warnings[0]
    assert s.store.failed is not None


def test_a_session_id_that_is_not_a_uuid_names_no_file(tmp_path: Path) -> None:
    s = Store(tmp_path)
    s.store.client_data(USER)
    s.store.frame_data(b'{"type":"system","subtype":"init","session_id":"../../etc/x"}\n')
    assert not s.projects.exists()
    assert len(s.warnings) == 1


def test_an_unwritable_place_is_one_warning(tmp_path: Path) -> None:
    (tmp_path / "claude").write_text("a file where the directory goes")
    s = Store(tmp_path)
    s.turn()
    s.turn()
    assert len(s.warnings) == 1


def test_lines_that_are_not_json_or_not_records_are_skipped(tmp_path: Path) -> None:
    s = Store(tmp_path)
    s.store.client_data(b"not json\n[1]\n" + USER)
    s.store.frame_data(b'{"type":"stream_event","event":{}}\nnot json\n' + INIT + RESULT)
    s.store.close()
    assert [r["type"] for r in s.records()] == [
        "queue-operation",
        "queue-operation",
        "user",
        "last-prompt",
    ]


def test_the_branch_is_the_repositorys(tmp_path: Path) -> None:
    assert git_branch(str(tmp_path)) == "HEAD"  # (no repository above a pytest tmp dir)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/feature/x\n")
    (tmp_path / "sub").mkdir()
    assert git_branch(str(tmp_path / "sub")) == "feature/x"
    (tmp_path / ".git" / "HEAD").write_text("0123456789abcdef\n")
    assert git_branch(str(tmp_path)) == "HEAD"  # detached
    wt = tmp_path / "wt"
    (wt / "gitdir").mkdir(parents=True)
    (wt / ".git").write_text("gitdir: gitdir\n")
    (wt / "gitdir" / "HEAD").write_text("ref: refs/heads/main\n")
    assert git_branch(str(wt)) == "main"


def test_the_place_is_claudes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    spec = store_spec({"HOME": "/h"}, "2.1.220")
    assert spec.projects == "/h/.claude/projects"
    assert spec.cwd == os.getcwd()
    assert spec.entrypoint == "sdk-cli"
    spec = store_spec({"CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_ENTRYPOINT": "sdk-py"}, "2.1.220")
    assert (spec.projects, spec.entrypoint) == ("/c/projects", "sdk-py")
    assert store_spec({"CLAUDE_CODE_ENTRYPOINT": "../x"}, "v").entrypoint == "sdk-cli"
    assert project_slug("/tmp/a b/ü") == "-tmp-a-b--"
    long = "/" + "x" * 300
    assert project_slug(long).startswith("-" + "x" * 199 + "-")
    assert len(project_slug(long)) > 200


def test_the_switch(tmp_path: Path) -> None:
    base = {"HOME": str(tmp_path), "CCBRIDGE_CONFIG": str(tmp_path / "c.toml")}
    (tmp_path / "c.toml").write_text("")
    assert load(base).session_store is True
    assert load({**base, "CCBRIDGE_SESSION_STORE": "off"}).session_store is False
    (tmp_path / "c.toml").write_text("session_store = false\n")
    assert load(base).session_store is False
    assert load({**base, "CCBRIDGE_SESSION_STORE": "1"}).session_store is True
    with pytest.raises(ConfigError, match="CCBRIDGE_SESSION_STORE"):
        load({**base, "CCBRIDGE_SESSION_STORE": "maybe"})
    (tmp_path / "c.toml").write_text('session_store = "no"\n')
    with pytest.raises(ConfigError, match="session_store"):
        load(base)
