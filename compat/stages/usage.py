"""``turn-usage``: a turn's ``result.usage`` counts the turn's own model calls, as Claude
Code 2.1.220 counts them.

Claude's ``usage`` on a ``result`` is what the turn's main-thread model calls used: each
of its assistant messages once (twins long-session: 12/3 on every one-call turn, 24/6 on
the turn with a tool call; subagent-foreground: 24/6, the sub-agent's calls left out).
cbc 2.163.0 writes the session's running total instead (12, 24, … 132 input tokens over
ten turns) and counts a sub-agent's calls in it (48/12). A client that adds up the usage
of its turns, as billing and context meters do, overcounts it quadratically.

cbc's assistant frames carry each message's own final usage, so the rule sums them: the
main-thread assistant frames of the turn (no ``parent_tool_use_id``), one per message id
(``frame-fields`` writes a message as one frame per content block, each with the whole
message's usage). A turn with no such frame used nothing the client saw: zeros. Only the
four token counts are replaced (after ``result-shape``, which fills the rest of Claude's
shape and drops cbc's own notices).
Claude's ``modelUsage`` (every model's running total) is left as cbc writes it.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register

#: the counts Claude sums over the turn's messages
COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def _counts(usage: object) -> dict[str, int]:
    """A message's token counts (a missing, null or non-integer count is 0)."""
    given = usage if isinstance(usage, dict) else {}
    return {k: v if type(v) is int and v >= 0 else 0 for k in COUNTS for v in [given.get(k)]}


@register
@attrs.define
class TurnUsage(Stage):
    """A result's `usage` is the turn's own main-thread model calls, each message once,
    not cbc's running total of the session."""

    rule: ClassVar[str] = "turn-usage"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "result"})

    #: the turn's counts so far, and the id of its last main-thread message (the frames of
    #: one message come together)
    _sum: dict[str, int] = attrs.field(factory=lambda: dict.fromkeys(COUNTS, 0), init=False)
    _last: object = attrs.field(default=None, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.key() == "assistant":
            self._seen(frame.view(wire.Assistant))
            return None
        obj = frame.view(wire.Result)
        usage, total = obj.get("usage"), self._sum
        self._sum, self._last = dict.fromkeys(COUNTS, 0), None
        if not isinstance(usage, dict) or all(usage.get(k) == v for k, v in total.items()):
            return None
        ctx.count(self.rule, "turn-usage")
        return (frame.replace({**obj, "usage": {**usage, **total}}),)

    def _seen(self, obj: wire.Assistant) -> None:
        message = obj.get("message")
        if obj.get("parent_tool_use_id") is not None or not isinstance(message, dict):
            return
        mid = message.get("id")
        if isinstance(mid, str) and mid and mid == self._last:
            return  # another block of the message counted
        self._last = mid
        for k, v in _counts(message.get("usage")).items():
            self._sum[k] += v


__all__ = ["COUNTS", "TurnUsage"]
