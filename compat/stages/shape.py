"""``init-shape``, ``tool-parent``: the session frames a Claude client parses look the way
Claude Code 2.1.220 writes them (PROTOCOL.md §2 "Session, turns and results"; the
``result``: ``result_shape.py``, which shares the helpers here).

Strategy: each rule fills the keys Claude writes and cbc leaves out or null, with Claude's
values or the state a cbc session really has (the ``*_FEATURES`` tables), keeps what cbc
already wrote right, and recomputes what cbc counts differently. Each acts on the frame
the client will see (``init-shape`` after ``init-once``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

import attrs

from compat.frames import Frame, str_at
from compat.stage import Context, Output, Stage, register
from compat.target import Target, target_of, values
from compat.wire import (
    Default,
    SystemInit,
    User,
    as_dict,
    fill,
)


def is_block(block: Any, block_type: str) -> bool:
    """A content block of that type."""
    return isinstance(block, dict) and block.get("type") == block_type


def content_blocks(message: Any) -> list[Any]:
    """A message's ``content`` (``[]`` when it is not a list)."""
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


#: list keys of Claude's system/init that cbc may omit
INIT_LISTS = ("tools", "mcp_servers", "slash_commands", "agents", "skills", "plugins")
#: system/init keys of Claude-only features, as a cbc session has them (see module doc)
INIT_FEATURES: dict[str, Any] = {
    "analytics_disabled": True,
    "product_feedback_disabled": True,
    "memory_paths": {},
    "fast_mode_state": "off",
    "fast_mode_disabled_reason": "sdk_opt_in_required",
}
#: apiKeySource values Claude Code writes (SystemInitData); anything else is cbc's host
API_KEY_SOURCES = frozenset({"ANTHROPIC_API_KEY", "apiKeyHelper", "/login managed key", "none"})
#: result.usage as Claude fills it when nothing was used
ZERO_USAGE: dict[str, Any] = {
    "input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 0,
    "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
    "service_tier": "standard",
    "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
}
#: system/init keys cbc may leave out or give another type, as Claude fills them: its
#: lists, then (after ``capabilities``) its modes
_INIT_LISTS: tuple[Default, ...] = tuple((key, list, list) for key in INIT_LISTS)
_INIT_MODES: tuple[Default, ...] = (
    ("output_style", str, lambda: "default"),
    ("permissionMode", str, lambda: "default"),
)


def add_missing(new: dict[str, Any], table: Mapping[str, Any]) -> None:
    """The keys of ``table`` that ``new`` lacks, each with a fresh copy of its value."""
    for key, value in table.items():
        if key not in new:
            new[key] = dict(value) if isinstance(value, dict) else value


def add_defaults(new: dict[str, Any], pairs: list[tuple[str, Any]]) -> None:
    """The ``(key, value)`` pairs whose key ``new`` lacks."""
    for key, value in pairs:
        new.setdefault(key, value)


@register
@attrs.define
class InitShape(Stage):
    """Claude's `system/init` keys: claude_code_version, apiKeySource, capabilities, lists, a
    fresh uuid, Claude-only features' state.

    Runs after ``init-once``: only the init the client sees is touched. cbc's ``system/init``
    has ``apiKeySource`` = its endpoint host, ``uuid == session_id`` and no
    ``claude_code_version``, ``capabilities``, ``agents``, ``skills``, ``plugins``
    (``cbc-2.163.0/mockoai_simple-success-eof``). Claude sends them all
    (``claude-2.1.220/*``); the Python SDK warns without a version.

    ``capabilities`` lists only what the bridge delivers (option ``capabilities``): 2.1.220
    claims ``interrupt_receipt_v1`` (the ``{still_queued}`` receipt ``interrupt-reply``
    gives), ``interrupt_cancel_queued_v1`` (cbc cannot take back a queued line) and
    ``msg_lifecycle_v1`` (no rule writes ``command_lifecycle``), so the default claims the
    first only. Neither SDK reads the list today.

    Claude 2.1.220 also writes the state of its own features (twins ``*.claude.jsonl``:
    ``analytics_disabled``, ``product_feedback_disabled``, ``memory_paths``,
    ``fast_mode_state``, ``fast_mode_disabled_reason``); the bridge writes them as a cbc
    session has them (``INIT_FEATURES``): no Claude analytics and no feedback survey are sent
    through it, no auto-memory path (the bridge gives cbc ``CODEBUDDY_DISABLE_AUTO_MEMORY=1``,
    rule ``env``; Claude then has no ``auto`` entry), fast mode off with Claude's reason
    ``sdk_opt_in_required``.
    """

    rule: ClassVar[str] = "init-shape"
    reads: ClassVar[frozenset[str]] = frozenset({"control.pending_user", "cwd"})
    #: the line whose turn this init starts is still pending: control-state, after it,
    #: pops it at the turn's start (``turn_line_uuids`` of a newer target)
    reads_earlier: ClassVar[frozenset[str]] = frozenset({"control.pending_user"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/init"})

    #: comma-separated capabilities announced (only what the bridge delivers)
    capabilities: str = "interrupt_receipt_v1"
    #: what apiKeySource says when cbc's value is not one of Claude's
    api_key_source: str = "none"

    @property
    def _default_caps(self) -> bool:
        """``capabilities`` left at its default: the target's list applies (2.1.332's 23);
        a value given with ``--rule init-shape.capabilities=`` always wins."""
        return self.capabilities == "interrupt_receipt_v1"

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(SystemInit)
        new = cast(SystemInit, dict(obj))
        raw = as_dict(new)  # the same dict, for the keys the tables name
        new["claude_code_version"] = ctx.env.target_version
        if str_at(new, "apiKeySource") not in API_KEY_SOURCES:
            new["apiKeySource"] = self.api_key_source
        fill(raw, _INIT_LISTS)
        target = target_of(ctx)
        if not isinstance(new.get("capabilities"), list):
            new["capabilities"] = self._capabilities(target)
        fill(raw, _INIT_MODES)
        if _needs_uuid(new):
            new["uuid"] = ctx.env.new_uuid()
        add_missing(raw, INIT_FEATURES)
        if target.init_keys:  # the target's newer keys (compat.target), before none of ours
            add_defaults(raw, values(target.init_keys, _init_facts(new, ctx)))
        return None if new == obj else (frame.replace(raw),)

    def _capabilities(self, target: Target) -> list[str]:
        """The capabilities announced: the target's for the option's default, else the
        option's."""
        given = [c.strip() for c in self.capabilities.split(",") if c.strip()]
        caps = target.init_capabilities
        return list(caps) if caps is not None and self._default_caps else given


def _needs_uuid(init: SystemInit) -> bool:
    """cbc's init has no uuid of its own (none, or the session id)."""
    uuid = init.get("uuid")
    return not isinstance(uuid, str) or not uuid or uuid == init.get("session_id")


def _init_facts(init: SystemInit, ctx: Context) -> dict[str, Any]:
    """The session facts the target's newer init keys name: the working directory, and
    the line whose turn the init starts."""
    pending = ctx.state.control.pending_user
    facts: dict[str, Any] = {"cwd": ctx.state.cwd or str_at(init, "cwd") or ""}
    if pending and pending[0] is not None:
        facts["turn_line_uuids"] = [pending[0]]
    return facts


@register
@attrs.define
class ToolParent(Stage):
    """A main-thread `tool_result` never names its own tool call as parent.

    A main-thread ``tool_result`` whose frame names its own ``tool_use_id`` as
    ``parent_tool_use_id`` gets the parent of that tool call (``null`` on the main thread).
    """

    rule: ClassVar[str] = "tool-parent"
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(User)
        parent = obj.get("parent_tool_use_id")
        if parent is None or not _answers(obj, parent):
            return None
        use = ctx.state.tool_uses.get(parent)
        fixed = use.parent_tool_use_id if use is not None else None
        new: User = {**obj, "parent_tool_use_id": None if fixed == parent else fixed}
        return (frame.replace(as_dict(new)),)


def _answers(obj: User, call: Any) -> bool:
    """The frame holds a ``tool_result`` of the call ``call``."""
    return any(
        is_block(b, "tool_result") and b.get("tool_use_id") == call
        for b in content_blocks(obj.get("message"))
    )
