"""The output of every capture in the repository, both profiles, is what
``tests/data/corpus.json`` says (``tests.corpus_digest``): a change to the pipeline or to a
rule's code that is not meant to change a frame changes none. A change meant to change
output regenerates the file (``python -m tests.corpus_digest --write``) and says why."""

from __future__ import annotations

import json

from .corpus_digest import GOLDEN, PROFILES, digests


def test_every_capture_gives_the_recorded_output() -> None:
    want = json.loads(GOLDEN.read_text())
    got = digests()
    assert sorted(got) == sorted(want), "captures added or removed: regenerate the digests"
    changed = [
        f"{path} ({profile})"
        for path in sorted(got)
        for profile in PROFILES
        if got[path][profile] != want[path][profile]
    ]
    assert not changed, (
        f"{len(changed)} output(s) changed: {', '.join(changed[:10])}"
        " (python -m tests.corpus_digest --write, if meant)"
    )
