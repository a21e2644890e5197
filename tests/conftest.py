"""Shared fixtures: where the reference captures are, and how to skip without them.

The reference captures live in ``shared/reference/captures`` beside the repository (CI
clones the repo next to a copy of ``shared/``). ``CCBRIDGE_SHARED`` overrides the lookup.
Tests that need them skip with a reason that says so; they never silently pass.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CAPTURES = REPO / "captures"


def _find_shared() -> Path | None:
    env = os.environ.get("CCBRIDGE_SHARED")
    if env:
        return Path(env)
    for parent in [REPO, *REPO.parents]:
        cand = parent / "shared" / "reference" / "captures"
        if cand.is_dir():
            return parent / "shared"
        sib = parent.parent / "shared" / "reference" / "captures"
        if sib.is_dir():
            return parent.parent / "shared"
    return None


SHARED = _find_shared()
REFERENCE = SHARED / "reference" / "captures" if SHARED else None


@pytest.fixture
def reference() -> Path:
    if REFERENCE is None or not REFERENCE.is_dir():
        pytest.skip("reference captures not found (set CCBRIDGE_SHARED to the shared/ folder)")
    return REFERENCE


def reference_files(pattern: str) -> list[Path]:
    """For parametrization at collection time; empty when the captures are absent (the
    test then gets a single skipped parameter, see ``params_or_skip``)."""
    if REFERENCE is None or not REFERENCE.is_dir():
        return []
    return sorted(REFERENCE.glob(pattern))


def params_or_skip(paths: list[Path]) -> list[object]:
    if paths:
        return [pytest.param(p, id=p.parent.name + "/" + p.name) for p in paths]
    return [pytest.param(None, marks=pytest.mark.skip(reason="reference captures not found "
                                                            "(set CCBRIDGE_SHARED)"))]
