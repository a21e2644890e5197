"""``Frame.view``: a rule reads a frame as the ``compat.wire`` family it acts on, checked
against the frame's kind (no ``cast``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compat import wire
from compat.frames import Frame, wire_kind

ASSISTANT = b'{"type":"assistant","message":{"id":"m1","content":[]},"session_id":"s"}'
TASK = b'{"type":"system","subtype":"task_updated","task_id":"t1","patch":{"status":"completed"}}'


def wire_frame(raw: bytes) -> Frame:
    return Frame.wire(raw, wire_kind(raw), True)


def test_a_frame_of_the_familys_kind_is_its_object_typed() -> None:
    frame = wire_frame(ASSISTANT)
    view = frame.view(wire.Assistant)
    assert view is frame.obj
    assert view.get("message", {}).get("id") == "m1"
    assert frame.view(wire.Envelope)["type"] == "assistant"  # every frame is an envelope
    assert wire_frame(TASK).view(wire.TaskUpdated)["task_id"] == "t1"
    assert wire_frame(TASK).view(wire.ReverseTask)["task_id"] == "t1"


def test_another_kinds_view_is_a_bug_in_the_rule() -> None:
    with pytest.raises(TypeError, match="read as User"):
        wire_frame(ASSISTANT).view(wire.User)
    with pytest.raises(TypeError, match="read as TaskStarted"):
        wire_frame(TASK).view(wire.TaskStarted)
    with pytest.raises(TypeError, match="read as Envelope"):
        Frame(b"not json").view(wire.Envelope)
    with pytest.raises(KeyError):
        wire_frame(ASSISTANT).view(wire.Message)  # a nested shape, not a frame family


def test_every_family_names_kinds_of_the_protocol() -> None:
    for family, kinds in wire.FAMILIES.items():
        assert all(k.count("/") <= 1 and k for k in kinds), family


@given(st.sampled_from(sorted(wire.FAMILIES, key=lambda f: f.__name__)), st.text(max_size=8))
def test_a_view_is_given_exactly_for_the_kinds_its_family_covers(family: type, sub: str) -> None:
    kinds = wire.FAMILIES[family]
    for kind in sorted(kinds) or ["assistant"]:
        t, _, s = kind.partition("/")
        frame = Frame.synth({"type": t, **({"subtype": s} if s else {})}, "test")
        assert frame.view(family) is frame.obj
    other = Frame.synth({"type": f"x{sub}", "subtype": sub}, "test")
    if kinds:
        with pytest.raises(TypeError):
            other.view(family)
    else:
        assert other.view(family) is other.obj
