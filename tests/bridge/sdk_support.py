"""What every test driving the real Python ``claude-agent-sdk`` shares: the drop-in's path,
the SDK (its tests skip, with the reason, when it is not installed), the warnings filter
the SDK needs under trio, cbc behind the drop-in and a connected session with the
stand-in model."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.backends import find_backend
from harness.model import ModelScript, ModelServer, Rule

from .streams import closing

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
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient  # noqa: E402
from claude_agent_sdk.types import HookContext, HookInput, HookJSONOutput  # noqa: E402, F401

# (not in the package's __all__: re-exported by name)
from claude_agent_sdk.types import PermissionRuleValue as PermissionRuleValue  # noqa: E402


def cbc_behind_dropin() -> list[str]:
    """cbc's argv for a test that drives the drop-in; a skip, saying why, without cbc or
    the drop-in (call it from a sync fixture: a skip raised inside a trio test loses its
    reason)."""
    if not DROPIN.exists():
        pytest.skip(f"{DROPIN} not installed (pip install -e .)")
    argv = find_backend("cbc")
    if argv is None:
        pytest.skip(
            "cbc not installed: pip install codebuddy-agent-sdk (or `ccbridge backends install`)"
        )
    return argv


@asynccontextmanager
async def session(
    tmp_path: Path, cbc: list[str], *rules: Rule, **options: Any
) -> AsyncIterator[tuple[ClaudeSDKClient, ModelServer, Path]]:
    """A connected ``ClaudeSDKClient`` on the drop-in, cbc behind it, the stand-in model
    scripted by ``rules``, in a fresh HOME and working directory (``options``: the SDK's)."""
    server = ModelServer(ModelScript(rules=rules))
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        env = {
            "CCBRIDGE_BACKEND": " ".join(cbc),
            "CCBRIDGE_LOG_LEVEL": "warning",
            "CCBRIDGE_LOG": str(tmp_path / "bridge.log"),
            "HOME": str(home),
            "CODEBUDDY_BASE_URL": url,
            "CODEBUDDY_API_KEY": "sk-test-0123456789abcdef",
            "DISABLE_AUTOUPDATER": "1",
        }
        opts = ClaudeAgentOptions(cli_path=str(DROPIN), cwd=str(work), env=env, **options)
        async with ClaudeSDKClient(opts) as client:
            yield client, server, work
        nursery.cancel_scope.cancel()


async def turn(client: ClaudeSDKClient, prompt: str) -> list[Any]:
    """``prompt`` sent, and every message up to its result."""
    await client.query(prompt)
    out: list[Any] = []
    async with closing(client.receive_response()) as stream:
        async for m in stream:
            out.append(m)
    return out
