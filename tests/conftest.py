"""Shared fixtures: where the reference captures are.

They are vendored in the repository (``captures/reference``, see its PROVENANCE.md), so the
suite needs nothing beside the checkout; ``CCBRIDGE_SHARED`` makes the tests read
``$CCBRIDGE_SHARED/reference/captures`` instead. Should that folder be missing, the tests
that need it skip with a reason that says so; they never silently pass.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CAPTURES = REPO / "captures"


def _find_reference() -> Path:
    """The copy vendored in the repository (``captures/reference``, pinned with a
    manifest), unless ``CCBRIDGE_SHARED`` names a ``shared/`` folder to read instead."""
    env = os.environ.get("CCBRIDGE_SHARED")
    if env:
        return Path(env) / "reference" / "captures"
    return CAPTURES / "reference"


REFERENCE: Path | None = _find_reference()


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
    return [
        pytest.param(
            None,
            marks=pytest.mark.skip(reason="reference captures not found (set CCBRIDGE_SHARED)"),
        )
    ]
