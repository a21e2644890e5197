"""What every test driving the real Python ``claude-agent-sdk`` shares: the drop-in's path,
the SDK (its tests skip, with the reason, when it is not installed) and the warnings filter
the SDK needs under trio."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

claude_agent_sdk = pytest.importorskip(
    "claude_agent_sdk", reason="claude-agent-sdk not installed (pip install -e '.[test]')"
)

#: ``claude-on-cbc`` as installed beside the interpreter running the tests
DROPIN = Path(sys.executable).with_name("claude-on-cbc")

#: the SDK leaves its own internal async generators (receive_response ->
#: Query.receive_messages -> transport reader) to the garbage collector when a caller stops
#: early; under trio that is a ResourceWarning raised from the SDK, not from us
SDK_GC_WARNINGS = [
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore:Async generator:ResourceWarning"),
]

# the SDK's names, imported here (after the skip) so a test module imports them from us
from claude_agent_sdk import *  # noqa: E402, F403
from claude_agent_sdk.types import HookContext, HookInput, HookJSONOutput  # noqa: E402, F401

# (not in the package's __all__: re-exported by name)
from claude_agent_sdk.types import PermissionRuleValue as PermissionRuleValue  # noqa: E402
