"""The drop-in writes Claude's session store (docs/session-store.md) under
``$CLAUDE_CONFIG_DIR``, else ``~/.claude``: the tests that start it, or Claude, with the
environment they run in (the SDKs' tests, the replays) would write the developer's own.
``CLAUDE_CONFIG_DIR`` is a directory of the test run's instead (removed at its end); the
store's own tests give their sessions a HOME of their own and no such variable."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CONFIG_DIR = tempfile.mkdtemp(prefix="ccbridge-tests-claude-")


def pytest_configure(config: pytest.Config) -> None:
    os.environ["CLAUDE_CONFIG_DIR"] = _CONFIG_DIR


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CONFIG_DIR, ignore_errors=True)
