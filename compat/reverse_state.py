"""What the ``claude-to-cbc`` rules know about the session (REVERSE.md), shared by the
stages of one engine.

The forward rules keep their facts in ``compat.session.SessionState``; the reverse ones
keep theirs here, one ``ReverseState`` per ``SessionState`` (``of(state)``), so neither
direction's bookkeeping leaks into the other's. Launch facts (``launch``) come from
``compat.argv_cbc.Translation``; the rest is written by the stages named in brackets.
Every registry is bounded (``CAP``).
"""

from __future__ import annotations

import weakref
from typing import Any

import attrs

from compat.session import SessionState

CAP = 1024


@attrs.define
class ReverseState:
    #: (client id, Claude UUID) when the client's session id is not a UUID [launch]
    client_session: str | None = None
    claude_session: str | None = None
    replay_user_messages: bool = False  # [launch] the client passed --replay-user-messages
    model: str | None = None  # [launch] --model; [rev-track] system/init's model
    #: client control requests by request_id: (subtype, request body) [rev-requests]
    requests: dict[str, tuple[str, dict[str, Any]]] = attrs.Factory(dict)
    #: request ids the bridge sent the client itself; their replies are not Claude's
    #: [rev-local-controls]
    own: dict[str, None] = attrs.Factory(dict)
    #: an interrupt was asked for since the last result [rev-requests, rev-interrupted-turn]
    interrupted: bool = False
    #: a turn runs (from Claude's system/init to its result; written by rev-track)
    in_turn: bool = False
    #: calls the cbc client denied with ``interrupt: true`` (their tool_use ids, ``*`` when
    #: the answer named none) [rev-permission-reply, rev-denied-interrupt]
    denied_interrupts: dict[str, None] = attrs.Factory(dict)
    #: open can_use_tool requests: request_id -> the tool input [rev-track]
    permission_inputs: dict[str, dict[str, Any]] = attrs.Factory(dict)
    #: Claude's initialize reply body, as Claude sent it [rev-track]
    init_reply: dict[str, Any] | None = None
    permission_mode: str = "default"  # [rev-control-replies] the mode last set
    #: tool_use ids of Agent calls made with run_in_background [rev-track]
    background_calls: dict[str, None] = attrs.Factory(dict)
    #: running local_agent tasks: task_id -> (description, tool_use_id) [rev-track]
    agent_tasks: dict[str, tuple[str, str | None]] = attrs.Factory(dict)
    #: the command of every Bash call: tool_use id -> command [rev-track]
    bash_calls: dict[str, str] = attrs.Factory(dict)
    #: background shells: task_id -> command [rev-task-words]
    bash_tasks: dict[str, str] = attrs.Factory(dict)
    #: workflows: task_id -> Claude's description [rev-task-words]
    workflow_tasks: dict[str, str] = attrs.Factory(dict)
    #: [launch] the resumed session's transcript entries (Claude's ``<session>.jsonl``,
    #: read by the I/O side), for ``rev-resume-replay``; None: not resuming or unreadable
    history: list[dict[str, Any]] | None = None
    resumed: str | None = None  # [launch] the Claude session id ``--resume`` named
    cwd: str | None = None  # [launch] the directory Claude runs in


_STATES: dict[int, ReverseState] = {}


def of(state: SessionState) -> ReverseState:
    """The reverse facts of the engine that owns ``state``."""
    key = id(state)
    rs = _STATES.get(key)
    if rs is None:
        rs = _STATES[key] = ReverseState()
        weakref.finalize(state, _STATES.pop, key, None)
    return rs


def remember(registry: dict[str, Any], key: str, value: Any) -> None:
    registry[key] = value
    if len(registry) > CAP:
        del registry[next(iter(registry))]


def launch(
    state: SessionState,
    tr: Any,
    history: list[dict[str, Any]] | None = None,
    cwd: str | None = None,
) -> None:
    """Copy a ``compat.argv_cbc.Translation``'s launch facts into ``state``'s reverse facts;
    ``history``: the resumed session's transcript entries, when the I/O side read them."""
    rs = of(state)
    rs.history, rs.resumed, rs.cwd = history, tr.resume, cwd
    if tr.session_map is not None:
        rs.client_session, rs.claude_session = tr.session_map
    rs.replay_user_messages = tr.replay_user_messages
    rs.model = tr.model
