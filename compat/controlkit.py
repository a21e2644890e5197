"""Shared vocabulary of the control-protocol rules (PROTOCOL.md §2 "Control protocol", §3).

The stages live in ``compat/stages/control.py`` (requests, replies), ``initialize.py``,
``user_line.py`` (stdin), ``sdk_mcp.py``, ``permissions.py`` and ``interrupts.py``; what
they must agree on is here: how a control frame is read and built, the two CLIs' error
wordings, and which client input types cbc can take at all.
"""

from __future__ import annotations

import re
from typing import Any

from compat.frames import Frame

#: Claude Code 2.1.220's wording (``nocreds_idle-interrupt_…_bad-json-exit1``)
UNSUPPORTED = "Unsupported control request subtype: "
#: cbc 2.163.0's wording for the same (``nomodel_controls-*``, ``mockoai_stop-task-…``)
CBC_UNKNOWN = "Unknown control request subtype: "
#: cbc's answer to interrupt/set_permission_mode/set_model before its first turn
#: (``nomodel_controls-before-session-then-eof``; also with ``--session-id``)
SESSION_NOT_FOUND = "Session not found"
#: input types cbc 2.163.0 handles; anything else makes it run an empty turn
#: (``nomodel_unknown-stdin-types``: ``bogus_type``, ``keep_alive``)
CBC_INPUT_TYPES = frozenset(
    {"user", "control_request", "control_response", "control_cancel_request"}
)
#: fields cbc reads in an interrupt request (``nomodel_controls-after-session``)
CBC_INTERRUPT_FIELDS = ("subtype", "session_id", "reason")
#: the reason cbc's own SDK sends (cbc answers ``SDK request`` when there is none)
INTERRUPT_REASON = "User interrupt"


def request_of(obj: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(request_id, request body) of a ``control_request``; body ``{}`` when malformed."""
    rid = obj.get("request_id")
    req = obj.get("request")
    return (rid if isinstance(rid, str) else None), (req if isinstance(req, dict) else {})


def response_of(obj: dict[str, Any]) -> tuple[str | None, str | None, dict[str, Any]]:
    """(request_id, subtype, the ``response`` object) of a ``control_response``."""
    resp = obj.get("response")
    if not isinstance(resp, dict):
        return None, None, {}
    rid, sub = resp.get("request_id"), resp.get("subtype")
    return (rid if isinstance(rid, str) else None), (sub if isinstance(sub, str) else None), resp


def body_of(resp: dict[str, Any]) -> dict[str, Any]:
    body = resp.get("response")
    return body if isinstance(body, dict) else {}


def success(request_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": body},
    }


def error(request_id: str, message: str) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": message},
    }


def request(request_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "control_request", "request_id": request_id, "request": body}


def with_response(frame: Frame, resp: dict[str, Any]) -> Frame:
    """``frame`` (a control_response) with its ``response`` object replaced."""
    return frame.replace({**frame.obj, "response": resp})


def reworded(message: str) -> str | None:
    """Claude's wording for cbc's unknown-subtype error, or None for any other error."""
    if message.startswith(CBC_UNKNOWN):
        return UNSUPPORTED + message[len(CBC_UNKNOWN) :]
    return None


def still_queued(pending: Any) -> list[str]:
    """The uuids of user lines written but not started (Claude's ``still_queued``)."""
    return [u for u in pending if isinstance(u, str)]


def tool_display_name(name: str) -> str:
    """Claude's label of a tool without a title (its ``a2e``; a permission prompt's
    ``display_name``, ``tool_use_meta``): the last ``__`` part of its name, ``_`` as
    spaces, each ASCII word capitalized (``mcp__probe__get_weather`` -> ``Get Weather``,
    ``Bash`` -> ``Bash``; JavaScript's ``\\b\\w`` is ASCII)."""
    last = name.split("__")[-1] or name
    return re.sub(r"\b\w", lambda m: m.group().upper(), last.replace("_", " "), flags=re.ASCII)
