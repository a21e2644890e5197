"""``ccbridge conformance --target 2.1.332`` over the committed twins of that version
(``captures/twins-2.1.332/``: the real Claude Code 2.1.332 and the real cbc 2.163.0 behind
``ccbridge run --target 2.1.332``), pure: no CLI is run."""

from __future__ import annotations

import json

import pytest

from analysis import ab_cmd
from analysis import conformance_cmd as cc
from compat.capture import Capture

CORE = (
    "simple-success",
    "bg-bash",
    "bg-agent",
    "stop-task-control",
    "interrupt-midturn-workflow",
    "workflow-inline",
)
D = cc.twins_dir("2.1.332")


def frames(cap: Capture) -> list[dict[str, object]]:
    return [json.loads(r.data) for r in cap.client_view() if r.data.strip().startswith(b"{")]


def test_the_target_list_puts_its_own_entries_first_and_keeps_the_defaults() -> None:
    default = cc.load_known("2.1.220")
    mine = cc.load_known("2.1.332")
    ids = [e.id for e in mine.entries]
    assert ids[0].startswith("v332-")
    assert {e.id for e in default.entries} <= set(ids)
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", CORE)
def test_core_scenarios_conform_under_332_with_every_difference_explained(name: str) -> None:
    files = cc.twin_files(D)
    assert set(files[name]) == {"claude", "cbc-bridged"}, "regenerate with --target 2.1.332"
    (row,) = cc.load_rows(D, cc.load_known("2.1.332"), [name])
    assert row.bridged is not None
    unexplained = [d.path for d in row.bridged.unexplained] if row.bridged else []
    assert row.unexplained == 0, unexplained
    caps = {role: ab_cmd.read(p) for role, p in files[name].items()}
    assert caps["claude"].header.get("backend_version") == "2.1.332"
    init = next(f for f in frames(caps["cbc-bridged"]) if f.get("subtype") == "init")
    assert init["claude_code_version"] == "2.1.332"  # the bridge ran with --target 2.1.332


def test_raw_cbc_column_comes_from_the_default_twins() -> None:
    (row,) = cc.load_rows(D, cc.load_known("2.1.332"), ["bg-bash"])
    assert row.raw is not None
