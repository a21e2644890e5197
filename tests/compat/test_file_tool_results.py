"""``file-tool-results``: Read, Write and Edit results carry Claude's file record, built
from what the session's wire shows of the file (twins file-tools, file-tool-errors: the
records Claude wrote for the same calls)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compat.playbook import Out, Playbook
from compat.stages.file_tools import read_content, structured_patch

from .session_support import drive, full
from .test_task_tool_results import TWINS, _line, _records


def _bridged(name: str) -> tuple[list[Any], list[Any]]:
    raw = TWINS / f"{name}.cbc-raw.jsonl"
    events = [(t, "backend", _line(f)) for t, f in _records(raw, "stdout")]
    events += [(t, "client", _line(f)) for t, f in _records(raw, "stdin")]
    out = drive(full(), sorted(events, key=lambda e: e[0])).frames()
    claude = [f for _, f in _records(TWINS / f"{name}.claude.jsonl", "stdout")]
    return (
        [f.get("tool_use_result") for f in out if f.get("type") == "user"],
        [f.get("tool_use_result") for f in claude if f.get("type") == "user"],
    )


def test_write_edit_read_and_overwrite_records_are_claudes() -> None:
    got, want = _bridged("file-tools")
    assert got == want
    assert [r.get("type") for r in got] == ["create", None, "text", "update"]


def test_the_records_of_the_error_scenario_are_claudes_where_the_file_was_seen() -> None:
    """file-tool-errors: the files are made by a Bash call (what they hold is not on the
    wire), then Read: the Read and the Edit after it get Claude's records; the Edit of a
    file the session never saw gets none (Claude's has the file it read from disk)."""
    got, want = _bridged("file-tool-errors")
    for g, w in zip(got, want, strict=True):
        if isinstance(g, dict) and ("filePath" in g or "file" in g):
            assert g == w
    unseen = [w for g, w in zip(got, want, strict=True) if g is None and isinstance(w, dict)]
    assert [w.get("filePath", "").rsplit("/", 1)[-1] for w in unseen] == ["unread.txt"]


def _call(tid: str, name: str, **inp: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": tid, "name": name, "input": inp}
    return {"type": "assistant", "message": {"role": "assistant", "content": [block]}}


def _result(tid: str, text: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": text}]}
    return {
        "type": "user",
        "parent_tool_use_id": None,
        "message": {"role": "user", "content": [block]},
    }


def _record(pb: Playbook, frame: dict[str, Any]) -> Any:
    [out] = [o for o in pb.frame(frame) if isinstance(o, Out)]
    return out.frame.get("tool_use_result")


def test_a_bash_call_in_between_makes_the_rule_forget_what_the_file_held() -> None:
    pb = Playbook("file-tool-results")
    pb.frame(_call("w", "Write", file_path="/w/a", content="x\n"))
    assert _record(pb, _result("w", "Successfully created and wrote to new file: /w/a"))
    pb.frame(_call("b", "Bash", command="sed -i s/x/y/ /w/a"))
    pb.frame(_result("b", "Command: …"))
    pb.frame(_call("e", "Edit", file_path="/w/a", old_string="y", new_string="z"))
    assert _record(pb, _result("e", "Successfully edited file: /w/a")) is None


def test_a_write_too_large_to_keep_gets_no_record_and_the_file_is_forgotten() -> None:
    pb = Playbook("file-tool-results")
    pb.frame(_call("w", "Write", file_path="/w/a", content="x\n"))
    pb.frame(_result("w", "Successfully created and wrote to new file: /w/a"))
    pb.frame(_call("big", "Write", file_path="/w/a", content="y" * (2 << 20)))
    assert _record(pb, _result("big", "Successfully overwrote file: /w/a")) is None
    pb.frame(_call("e", "Edit", file_path="/w/a", old_string="y", new_string="z"))
    assert _record(pb, _result("e", "Successfully edited file: /w/a")) is None


@pytest.mark.parametrize(
    "text",
    ["   1\u2192a\n   3\u2192c", "line one\nline two", "   1\u2192a\n   2", ""],
)
def test_only_a_whole_numbered_layout_is_read(text: str) -> None:
    assert read_content(text) is None or text == ""


def test_a_patch_is_claudes_hunks() -> None:
    assert structured_patch("alpha\nbeta\ngamma\n", "alpha\nBETA\ngamma\n") == [
        {
            "oldStart": 1,
            "oldLines": 3,
            "newStart": 1,
            "newLines": 3,
            "lines": [" alpha", "-beta", "+BETA", " gamma"],
        }
    ]


@given(
    st.lists(st.sampled_from(["a", "b", "c", ""]), max_size=12),
    st.lists(st.sampled_from(["a", "b", "d"]), max_size=12),
)
def test_a_patch_takes_the_old_lines_to_the_new(old: list[str], new: list[str]) -> None:
    """Applying the hunks to the old lines gives the new ones."""
    before, after = "\n".join(old), "\n".join(new)
    lines = before.splitlines()
    out: list[str] = []
    at = 0
    for h in structured_patch(before, after):
        start = h["oldStart"] - 1 if h["oldLines"] else h["oldStart"]
        out += lines[at:start]
        at = start
        for line in h["lines"]:
            if line[0] in " +":
                out.append(line[1:])
            if line[0] in " -":
                at += 1
    out += lines[at:]
    assert out == after.splitlines()
