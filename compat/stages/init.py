"""``foreign-init`` and ``init-once``: one ``system/init`` per turn, of this session only.

cbc writes ``system/init`` twice per turn, the second copy possibly after the turn's
``result`` and possibly a stub (``tools: []``, ``model: "unknown"``); a sub-agent's own
init (another ``session_id``) can also reach stdout (PROTOCOL.md §2, captures
``cbc-2.163.0/mockoai_workflow-inline``, ``mockoai_bg-agent``).

``init-once`` holds an init until the turn actually starts (the first assistant, user,
stream_event or result frame): a later init of the same session replaces the held one
when it is the fuller copy, and an init that no turn follows is dropped. Task frames do
not release it, which also matches Claude's order (notification, then the next turn's
init).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat.frames import Frame
from compat.stage import Context, Output, Stage, register

_TURN_CONTENT = frozenset({"assistant", "user", "stream_event", "result"})
#: system frames that belong to the turn itself (cbc: init, status, assistant, ...)
_TURN_SYSTEM = frozenset({"system/status"})


def _is_stub(obj: dict[str, Any]) -> bool:
    return not obj.get("tools") or obj.get("model") in (None, "", "unknown")


@register
@attrs.define
class ForeignInit(Stage):
    """Drop `system/init` frames of another session (a sub-agent's)."""

    rule: ClassVar[str] = "foreign-init"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/init"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        sid = frame.obj.get("session_id")
        if ctx.state.session_id is not None and sid != ctx.state.session_id:
            ctx.log(self.rule, f"dropped the system/init of session {sid!r}", "debug")
            return ()
        return None


@register
@attrs.define
class InitOnce(Stage):
    """Forward one `system/init` per turn (the fullest copy), drop the rest."""

    rule: ClassVar[str] = "init-once"
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {"system/init", *_TURN_CONTENT, *_TURN_SYSTEM}
    )

    #: most of a turn's frames need nothing from it: it reads their kind, not their JSON
    lazy: ClassVar[bool] = True
    cold_parsed: ClassVar[bool] = True  # its cold answer holds for a parsed frame too

    held: Frame | None = attrs.field(default=None, init=False)
    sent_this_turn: bool = attrs.field(default=False, init=False)

    def cold(self, kind: tuple[str | None, str | None], ctx: Context) -> bool:
        """``on_frame`` passes an unparsed frame of ``kind`` at once (the pipeline skips
        the call: ``compat.pipeline`` "Cold steps")."""
        t = kind[0]
        return (
            not (t == "system" and kind[1] == "init")
            and t != "result"
            and (self.sent_this_turn or self.held is None)
        )

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        kind = frame.kind()
        if kind is None:
            return None
        t, st = kind
        init = t == "system" and st == "init"
        if not init and t != "result" and (self.sent_this_turn or self.held is None):
            return None  # inside a turn, nothing held: the common frame, left unparsed
        obj = frame.obj
        if not isinstance(obj, dict):
            return None  # not valid JSON after all: passes, the engine logs it
        if init:
            if self.sent_this_turn:
                return ()  # a second copy inside a turn
            if self.held is not None:
                if _is_stub(obj) and not _is_stub(self.held.obj):
                    return ()  # keep the fuller copy held; this one is dropped
                ctx.drop_held(self.rule)  # the held copy is replaced
            self.held = frame
            ctx.hold()
            return ()
        if t == "result":
            out = self._release()
            self.sent_this_turn = False
            return (*out, frame) if out else None
        if not self.sent_this_turn and self.held is not None:
            out = self._release()
            return (*out, frame)
        return None

    def _release(self) -> tuple[Frame, ...]:
        held, self.held = self.held, None
        if held is None:
            return ()
        self.sent_this_turn = True
        return (held,)

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        if self.held is not None:
            ctx.drop_held(self.rule)
            self.held = None
        return None
