"""Scenarios run through ``claude-on-cbc`` on the real cbc 2.163.0 (the stand-in model)
leave a session store of the same structure as the one Claude Code 2.1.220 wrote for the
same scenarios (``tests/bridge/data/claude-store``: record types in order, field names per
record, the ``parentUuid`` chain, each tool result hung from its call): a tool call that
fails, and a session ``--resume``d in a second run, which appends to the same file. The
Python SDK's session functions list and read it.

Skipped, saying why, without cbc (``ccbridge backends install``), the drop-in or the Python
SDK (``sdk_support``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import attrs
import pytest
import trio

from bridge.transcripts import project_slug
from harness import runner
from harness.model import ModelScript, ModelServer, Rule
from harness.scenario import load

from ..compat.store_support import claude_store, read_store, structure
from .sdk_support import (
    DROPIN,
    SDK_GC_WARNINGS,
    ClaudeAgentOptions,
    cbc_behind_dropin,
    get_session_messages,
    list_sessions,
    query,
)

pytestmark = [pytest.mark.real_backend, *SDK_GC_WARNINGS]

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture
def cbc() -> list[str]:
    return cbc_behind_dropin()  # (a sync fixture: a skip inside a trio test loses its reason)


async def _stores(name: str, cbc: list[str], tmp_path: Path) -> tuple[list[Path], str]:
    """The scenario run by a Claude client on the drop-in, cbc behind it: the store files
    left in its HOME (copied out), and its working directory."""
    scenario = load(SCENARIOS / f"{name}.toml")
    scenario = attrs.evolve(scenario, env={**scenario.env, "CCBRIDGE_BACKEND": " ".join(cbc)})
    target = runner.Target("other", (str(DROPIN),))  # both APIs' variables: the stand-in's
    res = await runner.run(scenario, target, tmp_path / "run.jsonl", keep_root=True)
    assert res.root is not None
    try:
        assert res.exit == "0"
        return _copy_out(res.root, tmp_path), f"{res.root}/work"
    finally:
        shutil.rmtree(res.root, ignore_errors=True)


def _copy_out(root: str, into: Path) -> list[Path]:
    """The store files the run left under ``root`` (its HOME's), copied ``into``."""
    found = Path(root, "home/.claude/projects", project_slug(f"{root}/work")).glob("*.jsonl")
    copies = []
    for f in sorted(found):
        copies.append(into / f.name)
        shutil.copyfile(f, copies[-1])
    return copies


@pytest.mark.parametrize("name", ["failing-tool", "resume-session"])
async def test_the_store_has_the_structure_claude_gives_it(
    name: str, cbc: list[str], tmp_path: Path
) -> None:
    (store,), work = await _stores(name, cbc, tmp_path)  # (resumed: the same file)
    ours = read_store(store)
    assert structure(ours) == structure(claude_store(name))
    assert {r["cwd"] for r in ours if "cwd" in r} == {work}
    assert {r["sessionId"] for r in ours} == {store.stem}


async def test_the_sdk_lists_and_reads_the_resumed_session(
    cbc: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (store,), work = await _stores("resume-session", cbc, tmp_path)
    projects = tmp_path / "config" / "projects" / project_slug(work)
    projects.mkdir(parents=True)
    shutil.copyfile(store, projects / store.name)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    (info,) = list_sessions()
    assert (info.session_id, info.first_prompt, info.summary) == (
        store.stem,
        "remember BLUE",
        "what did I say",
    )
    messages = get_session_messages(store.stem)
    assert [m.type for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[-1].message["content"] == [{"type": "text", "text": "you said BLUE"}]


async def test_continue_goes_on_in_the_same_file(cbc: list[str], tmp_path: Path) -> None:
    """``--continue`` (the SDK's ``continue_conversation``): cbc continues its own copy of
    the session (the model sees the first turn), the drop-in appends to the file of the
    session the first run left, the chain going on from its last record."""
    server = ModelServer(ModelScript(rules=(Rule(when="what did I say", text="you said BLUE"),)))
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        env = {
            "CCBRIDGE_BACKEND": " ".join(cbc),
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),  # (the tests' own otherwise: conftest)
            "CODEBUDDY_BASE_URL": url,
            "CODEBUDDY_API_KEY": "sk-test-0123456789abcdef",
            "DISABLE_AUTOUPDATER": "1",
        }
        for prompt, again in (("remember BLUE", False), ("what did I say", True)):
            opts = ClaudeAgentOptions(
                cli_path=str(DROPIN), cwd=str(work), env=env, continue_conversation=again
            )
            async for _ in query(prompt=prompt, options=opts):
                pass
        nursery.cancel_scope.cancel()
    (store,) = (home / ".claude/projects" / project_slug(str(work))).glob("*.jsonl")
    records = read_store(store)
    users = [r for r in records if r["type"] == "user"]
    assert [u["message"]["content"] for u in users] == ["remember BLUE", "what did I say"]
    first_answer = next(r for r in records if r["type"] == "assistant")
    assert users[1]["parentUuid"] == first_answer["uuid"]
    assert {r["sessionId"] for r in records} == {store.stem}
    assert server.log[-1]["n_messages"] >= 3  # the model saw the first turn
