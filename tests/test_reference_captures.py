"""The vendored reference captures are the pinned copy their manifest lists: nothing added,
removed or edited by hand (captures/reference/PROVENANCE.md says how to refresh them)."""

from __future__ import annotations

import hashlib

from .conftest import CAPTURES

VENDORED = CAPTURES / "reference"
UNLISTED = {"MANIFEST.sha256", "PROVENANCE.md"}


def test_the_vendored_captures_match_their_manifest() -> None:
    listed: dict[str, str] = {}
    for line in (VENDORED / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name.removeprefix("./")] = digest
    present = {str(p.relative_to(VENDORED)) for p in VENDORED.rglob("*") if p.is_file()}
    assert present - UNLISTED == set(listed), "files added or removed without the manifest"
    changed = [
        n for n, d in listed.items() if hashlib.sha256((VENDORED / n).read_bytes()).hexdigest() != d
    ]
    assert changed == []
    assert len(listed) > 200  # (the whole set, not a sample)
