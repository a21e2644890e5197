"""``bridge.proxy.Uuid4``: the ids the bridge gives the frames it writes are random version-4
UUIDs, as ``str(uuid.uuid4())`` writes them."""

from __future__ import annotations

import uuid
from pathlib import Path

from bridge.proxy import Uuid4, build_engine


def test_ids_are_distinct_version_4_uuids_in_canonical_form() -> None:
    new = Uuid4()
    ids = [new() for _ in range(5000)]  # (past the 4 KiB pool: it is read again)
    assert len(set(ids)) == len(ids)
    for s in ids:
        u = uuid.UUID(s)
        assert u.version == 4
        assert u.variant == uuid.RFC_4122
        assert str(u) == s
    # every random hex digit takes every value (not a constant, not a counter)
    for pos in (0, 7, 9, 15, 20, 35):
        assert len({s[pos] for s in ids}) == 16, pos


def test_the_engine_is_given_them() -> None:
    eng = build_engine("cbc-to-claude", epoch_ms=0)
    assert type(eng.ctx.env.new_uuid) is Uuid4


def test_the_engine_can_tell_a_path_on_this_machine(tmp_path: Path) -> None:
    """``local-slash-commands`` takes ``/<name>`` for a path, not a command, when it exists
    (Claude's check is a ``stat``: a link is followed, a dangling one is no path)."""
    env = build_engine("cbc-to-claude", epoch_ms=0).ctx.env
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    assert env.path_exists(str(tmp_path))
    assert not env.path_exists(str(tmp_path / "link"))
    (tmp_path / "nowhere").mkdir()
    assert env.path_exists(str(tmp_path / "link"))
