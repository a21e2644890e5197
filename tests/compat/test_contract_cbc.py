"""The cbc contract (analysis/contract_cbc.py): cbc 2.163.0's own captures pass it; Claude Code
2.1.220's raw captures break it where REVERSE.md says; Claude's frames through profile
``claude-to-cbc`` pass it."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import contract_cbc
from analysis.contract import Violation
from compat.capture import Record

from .helpers import line
from .test_reverse import CBC, CLAUDE, Run, engine, transcript


def records(path: Path) -> tuple[list[Record], list[Record]]:
    """(what the client read, what it sent) of a reference transcript (both layouts)."""
    outs: list[Record] = []
    ins: list[Record] = []
    for i, (kind, obj) in enumerate(transcript(path)):
        rec = Record(float(i), kind, line(obj).strip(), lineno=i + 1)
        (ins if kind == "stdin" else outs).append(rec)
    return outs, ins


@pytest.mark.parametrize("path", sorted(CBC.glob("*.transcript.jsonl")), ids=lambda p: p.stem)
def test_every_cbc_capture_passes(path: Path) -> None:
    outs, ins = records(path)
    assert outs
    assert contract_cbc.check_records(outs, ins) == []


def rules(vs: list[Violation]) -> set[str]:
    return {v.rule for v in vs}


def bridged(name: str) -> list[Violation]:
    """Claude's transcript ``name`` through claude-to-cbc, checked as the client saw it."""
    run = Run(engine())
    ins: list[Record] = []
    outs: list[Record] = []
    for kind, obj in transcript(CLAUDE / f"{name}.transcript.jsonl"):
        before = len(run.client)
        if kind == "stdin":
            ins.append(Record(run.t + 0.005, "client_in", line(obj).strip()))
            run.client_says(obj)
        else:
            run.claude_says(obj)
        outs += [
            Record(run.t, "client_out", line(o).strip(), lineno=len(outs) + 1)
            for o in run.client[before:]
        ]
    return contract_cbc.check_records(outs, ins)


CASES = {
    "mockapi_background-agent_local-agent-frames": {
        "rev-vocabulary",
        "rev-task-type",
        "rev-background-agent",
        "rev-initialize-reply",
    },
    "mockapi_interrupt-during-foreground-bash_aborted-tools": {
        "rev-interrupted-turn",
        "rev-interrupt-marker",
        "rev-task-type",
    },
    "mockapi_permission-prompt-stdio_interrupt_cli-sends-control-cancel-request": {
        "rev-vocabulary"
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_raw_claude_breaks_it_and_the_bridge_mends_it(name: str) -> None:
    raw = rules(contract_cbc.check_records(*records(CLAUDE / f"{name}.transcript.jsonl")))
    assert CASES[name] <= raw
    assert bridged(name) == []


def test_the_clients_session_id_is_checked_when_given() -> None:
    recs = [Record(0.1, "stdout", b'{"type":"system","subtype":"init","session_id":"x"}', lineno=1)]
    assert rules(contract_cbc.check_records(recs, session_id="bot:1")) == {"rev-session-id"}
    assert contract_cbc.check_records(recs) == []
