"""``private-fields`` and ``vocabulary``: nothing reaches a Claude client that Claude
Code 2.1.220 would not send.

``private-fields``: cbc stamps ``__timestamp``, ``_requestId``, ``_messageId``, ``_meta``,
``errors_info`` on most frames (top level). Mode ``keep`` leaves them (for debugging).

``vocabulary``: frame types and ``system`` subtypes outside the 2.1.220 vocabulary
(``compat.vocabulary``) are dropped and counted; cbc's top-level ``type:"error"`` frame
becomes a log line, because the Python SDK treats ``error``/``end`` as its own sentinels.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from compat.frames import Frame
from compat.redact import redact_obj
from compat.stage import Context, Output, Stage, register
from compat.vocabulary import in_vocabulary

PRIVATE_FIELDS = ("__timestamp", "_requestId", "_messageId", "_meta", "errors_info")


@register
@attrs.define
class PrivateFields(Stage):
    """Strip cbc's private top-level fields (`__timestamp`, `_requestId`, `_meta`, ...)."""

    rule: ClassVar[str] = "private-fields"
    modes: ClassVar[tuple[str, ...]] = ("strip", "keep")
    triggers: ClassVar[tuple[bytes, ...]] = tuple(
        b'"' + f.encode() + b'"' for f in PRIVATE_FIELDS
    )

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if self.mode == "keep":
            return None
        obj = frame.obj
        if not any(k in obj for k in PRIVATE_FIELDS):
            return None
        return (frame.replace({k: v for k, v in obj.items() if k not in PRIVATE_FIELDS}),)


@register
@attrs.define
class Vocabulary(Stage):
    """Drop frame types/subtypes outside the Claude Code 2.1.220 vocabulary."""

    rule: ClassVar[str] = "vocabulary"

    def interested(self, type_: str | None, subtype: str | None) -> bool:
        return not in_vocabulary(type_, subtype)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
        t, st = obj.get("type"), obj.get("subtype")
        label = f"{t}/{st}" if t == "system" else str(t)
        if t == "error":
            detail, _ = redact_obj(obj.get("error") or obj.get("message") or obj)
            text = str(detail)[:500]
            ctx.log(self.rule, f"backend error frame (not forwarded): {text}", "warning")
        else:
            ctx.log(self.rule, f"dropped a {label} frame (not in the 2.1.220 vocabulary)", "debug")
        ctx.count(self.rule, f"dropped:{label}")
        return ()
