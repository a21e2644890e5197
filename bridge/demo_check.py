"""Whether ``ccbridge demo --capture FILE`` can show FILE, decided before anything starts.

The demo replays FILE as cbc (``ccbridge replay``) behind ``ccbridge run --profile
cbc-to-claude``, driven by its example client (``bridge.demo.example_client``), which sends
an ``initialize``, waits for a ``control_response``, sends one user message, waits for a
``result``, sends an interrupt, waits for a ``task_notification``, then closes its stdin.
The replay writes the recorded output in order, each part once the client has sent the
inputs that preceded it in the recording (``bridge.replay.plan``), and ends at the client's
EOF. A session the two cannot play through would leave both waiting until the demo's
deadline; ``why_not`` walks the replay's plan against the client's script instead, and says
at once who would wait for what.

FILE must be a capture (``compat.capture.load``) of a cbc session: a Claude Code session
has nothing for the bridge's cbc-to-claude rules to do. Every capture in the repository
this accepts is shown (``tests/bridge/test_first_hour.py`` runs them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from compat import capture

#: the example client's script: (what it sends, as the replay matches it: frame type and
#: control subtype; what it then waits for: a frame of that type or subtype)
CLIENT = (
    (("control_request", "initialize"), "control_response"),
    (("user", ""), "result"),
    (("control_request", "interrupt"), "task_notification"),
)
#: the client's script in words, for the reasons
SCRIPT = "initialize, one user message, an interrupt after the result, EOF"


def check(setting: str, path: str) -> capture.Capture:
    """The capture at ``path`` when the demo can show it, else a ``CaptureError``
    ``SETTING PATH: why`` (a usage error: one line, exit 2)."""
    try:
        cap = capture.load(path)
    except capture.CaptureError as e:
        raise capture.CaptureError(f"{setting} {path}: {e}") from None
    why = why_not(cap)
    if why is not None:
        raise capture.CaptureError(f"{setting} {path}: the demo cannot show it: {why}")
    return cap


def why_not(cap: capture.Capture) -> str | None:
    """Why the demo cannot play ``cap`` through, or None when it can."""
    if cap.backend == "claude":
        return (
            "a Claude Code session; the demo shows what the bridge does to a cbc session "
            "(profile cbc-to-claude)"
        )
    from bridge.replay import plan

    return _walk(plan(cap))


class _Client:
    """The example client as the replay sees it: what it has sent and not yet been
    matched, what it has received, whether it closed its stdin."""

    def __init__(self) -> None:
        self.sent = 0
        self.inbox: list[tuple[str, str]] = []
        self.seen: set[str] = set()
        self.closed = False
        self._go_on()

    @property
    def waits_for(self) -> str:
        return CLIENT[self.sent - 1][1]

    def _go_on(self) -> None:
        """Send the next line of the script (or close stdin) while what it waits for came."""
        while not self.closed and (self.sent == 0 or self.waits_for in self.seen):
            if self.sent == len(CLIENT):
                self.closed = True
            else:
                self.inbox.append(CLIENT[self.sent][0])
                self.sent += 1

    def receive(self, line: bytes) -> None:
        try:
            obj: Any = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if isinstance(obj, dict):
            self.seen.update(str(obj.get(k)) for k in ("type", "subtype"))
            self._go_on()

    def take(self, sig: tuple[str, str]) -> bool:
        """The replay waits for an input of signature ``sig``: the client's lines are
        consumed up to the first that matches (``bridge.replay.Replayer._expect``). False:
        none, and the client still has its stdin open (the replay would wait)."""
        while self.inbox:
            got = self.inbox.pop(0)
            if got[0] == sig[0] and (not sig[1] or not got[1] or got == sig):
                return True
        return self.closed  # at EOF the replay writes the rest


def _walk(steps: Sequence[Any]) -> str | None:
    client = _Client()
    asked: dict[str, int] = {}
    for step in steps:
        if step.kind == "out":
            client.receive(step.data)
        elif step.kind == "expect":
            what = _input(step.sig)
            asked[what] = asked.get(what, 0) + 1
            if not client.take(step.sig):
                return (
                    f"the session goes on only after its client's {_nth(asked[what])} {what}, "
                    f"while the demo's client ({SCRIPT}) waits for a {client.waits_for}"
                )
        elif step.kind == "eof" and not client.closed:
            return (
                "the session goes on only after its client's EOF, while the demo's client "
                f"({SCRIPT}) waits for a {client.waits_for}"
            )
    if not client.closed:
        return (
            f"the demo's client ({SCRIPT}) waits for a {client.waits_for}, which this "
            "session never sends"
        )
    return None


#: an input's signature in words
_WORDS = {"user": "user message", "control_response": "answer to a request", "<non-json>": "line"}


def _input(sig: tuple[str, str]) -> str:
    kind, sub = sig
    if kind in _WORDS:
        return _WORDS[kind]
    return f"{kind} {sub}" if sub else kind


def _nth(n: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(n, f"{n}th")
