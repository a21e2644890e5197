"""analysis.drift on the vendored references: Claude Code 2.1.332 against the verified 2.1.220
(issue 14 lists what 2.1.332 changed; the report must find it), and on made-up sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis import drift
from compat.capture import Capture, parse

REF = Path(__file__).resolve().parents[2] / "captures" / "reference"


def cap(p: Path) -> Capture:
    return parse(p.read_bytes().split(b"\n"))


def transcript(*records: tuple[str, object]) -> Capture:
    lines = [
        json.dumps({"t": i, "kind": k, "text": json.dumps(o)}).encode()
        for i, (k, o) in enumerate(records)
    ]
    return parse(lines)


@pytest.fixture(scope="module")
def report_332() -> drift.Report:
    known = drift.merged(
        drift.vocabulary(cap(p))
        for p in sorted((REF / "claude-2.1.220").glob("*.transcript.jsonl"))
    )
    pairs = [
        (
            p.name.split(".")[0],
            drift.vocabulary(cap(REF / "claude-2.1.220" / p.name)),
            drift.vocabulary(cap(p)),
        )
        for p in sorted((REF / "claude-2.1.332").glob("*.transcript.jsonl"))
    ]
    helps = (
        drift.parse_help((REF / "claude-2.1.220/help.txt").read_text()),
        drift.parse_help((REF / "claude-2.1.332/help.txt").read_text()),
    )
    return drift.report("claude", "2.1.220", "2.1.332", pairs, known=known, help_pair=helps)


def items(r: drift.Report, category: str, change: str = "new") -> set[tuple[str, str]]:
    return {(c.kind, c.item) for c in r.changes if c.category == category and c.change == change}


def test_332_run_id_on_every_task_frame(report_332: drift.Report) -> None:
    fields = items(report_332, "field")
    for kind in ("task_started", "task_progress", "task_updated", "task_notification"):
        assert (f"system/{kind}", "run_id") in fields
    assert ("system/task_started", "is_backgrounded") in fields


def test_332_result_init_and_initialize_reply_keys(report_332: drift.Report) -> None:
    fields = items(report_332, "field")
    top = {f for k, f in fields if k == "result/success" and "." not in f}
    assert len(top) >= 8, top  # "about ten keys on result"
    init = {f for k, f in fields if k == "system/init" and "." not in f and "[]" not in f}
    assert len(init) >= 10, init  # "eleven on system/init"
    reply = {
        f
        for k, f in fields
        if k == "control_response/initialize"
        and f.count(".") == 2
        and f.startswith("response.response.")
    }
    assert len(reply) >= 13, reply  # "fifteen on the initialize reply"
    assert ("control_response/no_such_subtype", "response.error_code") in fields


def test_332_capabilities_model_tools(report_332: drift.Report) -> None:
    values = items(report_332, "value")
    caps = {v for k, v in values if k == "system/init" and v.startswith("capabilities[] = ")}
    assert len(caps) == 20  # 23 instead of 3
    assert ("system/init", "model = claude-opus-5-5") in values
    assert any(v.startswith("tools[] = ") for _, v in values)
    assert any(v.startswith("tools[] = ") for _, v in items(report_332, "value", "vanished"))


def test_332_background_tasks_changed_moves_after_the_end(report_332: drift.Report) -> None:
    new = {i for _, i in items(report_332, "order")}
    gone = {i for _, i in items(report_332, "order", "vanished")}
    assert "system/task_notification -> system/background_tasks_changed" in new
    assert "system/background_tasks_changed -> system/task_updated" in gone


def test_332_help_eight_options_seven_commands(report_332: drift.Report) -> None:
    assert len(items(report_332, "option")) == 8
    assert ("", "--autocompact") in items(report_332, "option")
    assert len(items(report_332, "command")) == 7
    assert ("", "project") in items(report_332, "command", "vanished")
    assert report_332.unknown
    text = drift.format_text([report_332])
    assert text.startswith("== claude 2.1.332 against verified 2.1.220: UNKNOWN")
    assert "+ field system/task_started: run_id" in text


def test_the_verified_version_against_itself_is_clean() -> None:
    pairs = [
        (p.name, drift.vocabulary(cap(p)), drift.vocabulary(cap(p)))
        for p in sorted((REF / "claude-2.1.220").glob("*.transcript.jsonl"))
    ]
    h = drift.parse_help((REF / "claude-2.1.220/help.txt").read_text())
    r = drift.report("claude", "2.1.220", "2.1.220", pairs, help_pair=(h, h))
    assert r.changes == ()
    assert not r.unknown
    assert len(h.options) > 50
    assert {"mcp", "doctor", "update"} <= h.commands
    assert "--input-format" in h.options
    assert "--print" in h.options


def test_a_changed_control_reply_is_found_by_what_it_answers() -> None:
    def session(reply: dict[str, object]) -> Capture:
        return transcript(
            (
                "stdin",
                {
                    "type": "control_request",
                    "request_id": "r1",
                    "request": {"subtype": "set_model", "model": "m"},
                },
            ),
            (
                "stdout",
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": "r1", "response": reply},
                },
            ),
        )

    old, new = drift.vocabulary(session({})), drift.vocabulary(session({"model": "m"}))
    changes = drift.compare(old, new)
    assert [c.text() for c in changes] == [
        "+ field control_response/set_model: response.response.model"
    ]
    assert drift.compare(new, old)[0].text() == (
        "- field control_response/set_model: response.response.model"
    )


def test_new_kinds_values_and_vanished_ones() -> None:
    a = drift.vocabulary(
        transcript(
            ("stdout", {"type": "system", "subtype": "task_started", "task_type": "local_bash"}),
            ("stdout", {"type": "result", "subtype": "success", "stop_reason": "end_turn"}),
        )
    )
    b = drift.vocabulary(
        transcript(
            ("stdout", {"type": "system", "subtype": "task_started", "task_type": "local_monitor"}),
            ("stdout", {"type": "system", "subtype": "brand_new", "x": 1}),
            ("stdout", {"type": "stream_event", "event": {"anything": 1}}),
            ("stdout", "not an object"),
            ("stdout", {"type": "result", "subtype": "success"}),
        )
    )
    got = {c.text() for c in drift.compare(a, b)}
    assert got == {
        "+ kind system/brand_new: system/brand_new",  # its fields are not listed again
        "+ kind stream_event: stream_event",  # counted, fields not profiled
        "+ value system/task_started: task_type = local_monitor",
        "- value system/task_started: task_type = local_bash",
        "- field result/success: stop_reason",
    }
    # a field known from another verified session is not new
    known = drift.merged([a, b])
    assert not [c for c in drift.compare(a, b, known=known) if c.change == "new"]


def test_open_maps_are_one_field() -> None:
    v = drift.vocabulary(
        transcript(
            (
                "stdout",
                {
                    "type": "result",
                    "subtype": "success",
                    "modelUsage": {"claude-x": {"inputTokens": 1}},
                },
            )
        )
    )
    assert v.fields["result/success"] == {"type", "subtype", "modelUsage"}


def test_cbc_help_parses() -> None:
    h = drift.parse_help((REF / "cbc-2.163.0/help.txt").read_text())
    assert {"--print", "--input-format", "--version"} <= h.options
    old = drift.parse_help((REF / "cbc-2.117.0/help.txt").read_text())
    assert drift.compare_help(old, h)  # cbc changed its options between 2.117 and 2.163
