"""The client's answers to the control requests the CLI sends it, other than ``can_use_tool``:
what an SDK does for the hooks it registered in ``initialize`` (``hook_callback``) and for
its in-process MCP servers (``mcp_message``), or any other request the CLI asks a client.

A scenario's ``[[answers]]`` are tried in order on each such request the run reads:

    [[answers]]
    subtype = "mcp_message"                       # the request's subtype
    match = { server_name = "acp", "message.method" = "tools/call",
              "message.params.name" = "Write" }   # fields the request must have (dotted)
    response = { mcp_response = { jsonrpc = "2.0", id = "${message.id}", result = {} } }
    times = 1                                     # (absent: any number)
    delay = 0.013                                 # seconds before it is written

The first whose ``subtype`` and ``match`` fit and whose ``times`` are not used up answers
(``control_response`` ``success`` with ``response``, or ``error`` with ``error``); when
every fitting answer is used up the last fitting one answers again. A string that is
exactly ``${dotted.path}`` becomes the request's value there (any JSON type: the
JSON-RPC id of an MCP message); ``${...}`` inside a longer string is replaced by its text.
A request no answer fits is left unanswered, as a client that does not know it would.
Pure: no I/O (``harness.client`` writes the answer).
"""

from __future__ import annotations

import re
from typing import Any

import attrs

#: a string that is one ``${dotted.path}`` (replaced by the value, whatever its type)
_WHOLE = re.compile(r"^\$\{([A-Za-z0-9_.]+)\}$")
_PART = re.compile(r"\$\{([A-Za-z0-9_.]+)\}")
#: what ``at`` gives for a path the object does not have
MISSING = object()


def at(obj: Any, path: str) -> Any:
    """The value at a dotted ``path`` of ``obj`` (``MISSING`` when there is none)."""
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return MISSING
        obj = obj[key]
    return obj


def fill(value: Any, request: dict[str, Any]) -> Any:
    """``value`` with its ``${path}`` strings replaced from ``request``."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole is not None:
            found = at(request, whole.group(1))
            return value if found is MISSING else found
        return _PART.sub(lambda m: _text(at(request, m.group(1)), m.group(0)), value)
    if isinstance(value, dict):
        return {k: fill(v, request) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, request) for v in value]
    return value


def _text(found: Any, original: str) -> str:
    return original if found is MISSING else found if isinstance(found, str) else str(found)


@attrs.frozen
class Answer:
    """One scripted answer to a control request of the CLI (see the module docstring)."""

    subtype: str
    match: dict[str, Any] = attrs.field(factory=dict)
    response: dict[str, Any] = attrs.field(factory=dict)
    error: str | None = None
    times: int | None = None
    #: seconds before the answer is written (the recorded client's own pace)
    delay: float = 0.0

    def __attrs_post_init__(self) -> None:
        if self.delay < 0:
            raise ValueError("`delay` must be >= 0")
        if self.subtype == "can_use_tool":
            raise ValueError("can_use_tool is answered by `permission` steps")
        if self.times is not None and self.times < 1:
            raise ValueError("`times` must be >= 1")
        if self.error is not None and self.response:
            raise ValueError("an answer takes `response` or `error`, not both")

    def fits(self, request: dict[str, Any]) -> bool:
        return request.get("subtype") == self.subtype and all(
            at(request, path) == want for path, want in self.match.items()
        )

    def reply(self, request_id: str, request: dict[str, Any]) -> dict[str, Any]:
        """The ``control_response`` to the request."""
        if self.error is not None:
            body: dict[str, Any] = {
                "subtype": "error",
                "request_id": request_id,
                "error": fill(self.error, request),
            }
        else:
            body = {
                "subtype": "success",
                "request_id": request_id,
                "response": fill(self.response, request),
            }
        return {"type": "control_response", "response": body}


@attrs.define
class Answers:
    """The answers of a run, with how often each has answered."""

    script: tuple[Answer, ...]
    used: list[int] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.used = [0] * len(self.script)

    def pick(self, request: dict[str, Any]) -> Answer | None:
        """The answer for ``request`` (counted), or None when none fits."""
        fitting = [i for i, a in enumerate(self.script) if a.fits(request)]
        if not fitting:
            return None
        free = [i for i in fitting if self._left(i)]
        i = free[0] if free else fitting[-1]
        self.used[i] += 1
        return self.script[i]

    def _left(self, i: int) -> bool:
        times = self.script[i].times
        return times is None or self.used[i] < times
