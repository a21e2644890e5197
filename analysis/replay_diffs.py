"""Which differences of an A/B run the replay itself causes, not the backends.

A scenario made from a recording (``ccbridge scenario from-capture``) lists in its
``[replay]`` the calls whose results it cannot reproduce: what they read (a file, a
search of the working directory, the network, an MCP server) is not in a capture. Both
sides of ``ccbridge ab`` run such a call without what the recorded session had, so the
difference found in its result (its ``tool_result`` and ``tool_use_result``, in the user
frame that carries it) says nothing about how the two backends differ on the user's
session. ``replay_caused`` finds those differences by the diff's alignment: the frames of
each side that answer a listed call, by the call's masked id on that side. Timing (ids,
timestamps, durations, costs) is masked by the diff itself (``analysis.diff``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from analysis.diff import DiffResult
from analysis.diffside import Frame
from harness.scenario import Differs

#: what the reports say of a difference the replay causes
REASON = "the replay: this call reads what the recording does not carry"


def replay_caused(result: DiffResult, differs: Sequence[Differs]) -> frozenset[int]:
    """The indices (into ``result.differences``) of the differences found in the frames
    that answer a call of ``differs``."""
    al = result.alignment
    if al is None or not differs or not result.differences:
        return frozenset()
    ids_a = _call_ids((u.a for u in al.units), differs)
    ids_b = _call_ids((u.b for u in al.units), differs)
    out: set[int] = set()
    for u in al.units:
        if _answers(u.a, ids_a) or _answers(u.b, ids_b):
            out.update(u.diffs)
    return frozenset(out)


def _blocks(frame: Frame | None, kind: str) -> list[dict[str, Any]]:
    """The content blocks of type ``kind`` of a message frame."""
    if frame is None:
        return []
    message = frame.obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def _call_ids(frames: Iterable[Frame | None], differs: Sequence[Differs]) -> set[Any]:
    """The (masked) ids of one side's calls that ``differs`` lists."""
    return {
        b.get("id")
        for f in frames
        for b in _blocks(f, "tool_use")
        if any(d.covers(b.get("name"), b.get("input")) for d in differs)
    }


def _answers(frame: Frame | None, ids: set[Any]) -> bool:
    return bool(ids) and any(b.get("tool_use_id") in ids for b in _blocks(frame, "tool_result"))
