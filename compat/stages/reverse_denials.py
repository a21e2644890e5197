"""``rev-denied-interrupt``: a call the cbc client denied with ``interrupt: true`` ends the
turn as cbc 2.163.0 ends it, over Claude Code 2.1.220 (twins-reverse
permission-deny-interrupt).

cbc writes no ``tool_result`` for such a call and ends the turn with
``result{subtype: error_during_execution, is_error: true, errors: ["Permission denied for
tool(s): <tool>"]}``. Claude writes its rejection (``The user doesn't want to proceed …``),
the marker ``[Request interrupted by user for tool use]`` and an ``aborted_tools`` result,
which ``rev-interrupt-marker`` and ``rev-interrupted-turn`` would give an interrupt's shape
(``Interrupted by user``, a success): a cbc SDK then reports an interrupt the client never
sent. The rule drops the rejection and the marker and writes cbc's result, the calls named
by their tools (no ``result``, ``terminal_reason`` or ``modelUsage``, as on cbc's).
``rev-permission-reply`` notes the denial (``rev.denied_interrupts``).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from compat import reverse_state as rstate
from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.stages.reverse_stream import marker_text
from compat.taskkit import remember

#: main-thread calls remembered for their tool's name (the oldest forgotten past this)
_MAX = 256
#: what cbc's error result does not carry (twins-reverse permission-deny-interrupt,
#: ``*.cbc.jsonl``): an answer, Claude's reason for the end, the models' usage
_NOT_ON_CBCS = frozenset({"result", "terminal_reason", "modelUsage"})


def _rejected(obj: wire.User, denied: dict[str, None]) -> list[str]:
    """The ids of the denied calls whose rejected ``tool_result`` ``obj`` holds (all its
    blocks such results), else none."""
    blocks = wire.blocks(obj)
    ids = [
        b.get("tool_use_id")
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("is_error") is True
    ]
    if not ids or len(ids) != len(blocks):
        return []
    named = [u for u in ids if isinstance(u, str) and (u in denied or "*" in denied)]
    return named if len(named) == len(ids) else []


@register
@attrs.define
class ReverseDeniedInterrupt(Stage):
    """A call the client denied with `interrupt: true` ends the turn as cbc ends it: no
    tool_result, no marker, `error_during_execution` naming the denied tools."""

    rule: ClassVar[str] = "rev-denied-interrupt"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.denied_interrupts"})
    writes: ClassVar[frozenset[str]] = frozenset({"rev.denied_interrupts"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "user", "result"})

    _names: dict[str, str] = attrs.field(factory=dict, init=False)  # call id -> tool
    _turn: list[str] = attrs.field(factory=list, init=False)  # the turn's denied tools

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        key = frame.key()
        if key == "assistant":
            self._calls(frame.view(wire.Assistant))
            return None
        if key == "result":
            return self._result(frame, ctx)
        obj = frame.view(wire.User)
        if obj.get("parent_tool_use_id") is not None:
            return None
        if self._turn and marker_text(obj) is not None:
            ctx.count(self.rule, "marker-dropped")
            return ()
        denied = rstate.of(ctx.state).denied_interrupts
        rejected = _rejected(obj, denied) if denied else []
        if not rejected:
            return None
        self._turn += [self._names.get(u, "unknown") for u in rejected]
        ctx.count(self.rule, "rejection-dropped")
        return ()

    def _calls(self, obj: wire.Assistant) -> None:
        if obj.get("parent_tool_use_id") is not None:
            return
        for b in wire.blocks_of(obj, "tool_use"):
            cid, name = b.get("id"), b.get("name")
            if isinstance(cid, str) and isinstance(name, str):
                remember(self._names, cid, name, cap=_MAX)

    def _result(self, frame: Frame, ctx: Context) -> Output:
        rstate.of(ctx.state).denied_interrupts.clear()  # (the turn's own)
        tools, self._turn = self._turn, []
        if not tools:
            return None
        obj = frame.view(wire.Result)
        new = {k: v for k, v in obj.items() if k not in _NOT_ON_CBCS}
        new.update(
            subtype="error_during_execution",
            is_error=True,
            errors=[f"Permission denied for tool(s): {', '.join(dict.fromkeys(tools))}"],
        )
        return (frame.replace(new),)


__all__ = ["ReverseDeniedInterrupt"]
