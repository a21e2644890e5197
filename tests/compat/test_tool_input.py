"""``tool-input``: a tool call's input as Claude writes it, its schema's defaults filled in
(twins file-tools, file-tool-errors: Claude's every Edit has ``replace_all: false``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from compat.playbook import Count, Out, Playbook


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "parent_tool_use_id": None,
        "message": {"id": "m1", "role": "assistant", "content": list(blocks)},
    }


def _call(name: str, **given: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"t-{name}", "name": name, "input": given}


EDIT = {"file_path": "/w/a.txt", "old_string": "a", "new_string": "b"}


def test_an_edit_without_replace_all_gets_claudes_default_and_other_calls_pass() -> None:
    pb = Playbook("tool-input")
    frame = _assistant({"type": "text", "text": "editing"}, _call("Edit", **EDIT), _call("Bash"))
    want = _assistant(
        {"type": "text", "text": "editing"},
        _call("Edit", **EDIT, replace_all=False),
        _call("Bash"),
    )
    assert pb.frame(frame) == [Count("defaults-filled"), Out(want)]


def test_the_models_own_value_wins_and_a_frame_with_nothing_missing_passes_as_is() -> None:
    pb = Playbook("tool-input")
    frame = _assistant(_call("Edit", **EDIT, replace_all=True), _call("Read", file_path="/w/a"))
    assert pb.frame(frame) == [Out(frame)]
    assert pb.counts == {}


@given(
    st.recursive(
        st.none() | st.booleans() | st.text(max_size=5),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
        max_leaves=8,
    )
)
def test_any_content_is_taken_without_error(content: Any) -> None:
    pb = Playbook("tool-input")
    frame = {"type": "assistant", "message": {"role": "assistant", "content": content}}
    assert len(pb.frame(frame)) == 1
