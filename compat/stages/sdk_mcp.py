"""``sdk-mcp`` and ``sdk-mcp-reply``: cbc's requests to the client's in-process MCP servers
(the SDK's ``create_sdk_mcp_server`` / ``createSdkMcpServer``) and their results, as Claude
Code shows them (their shapes: ``compat/stages/control_mcp.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from compat import controlkit as ck
from compat.frames import Frame
from compat.session import MAX_TOOL_USES, trim_input
from compat.stage import Context, Direction, Output, Stage, register
from compat.stages.control_mcp import (
    KEEP,
    cbc_copy,
    claude_initialize,
    claude_result,
    mcp_message,
    tool_use_meta,
    with_tool_use_id,
)
from compat.taskkit import remember

# -- in-process MCP servers (the SDK's create_sdk_mcp_server / createSdkMcpServer) -------
# (their shapes, Claude's and cbc's, and what is kept of them: compat/stages/control_mcp.py)


@register
@attrs.define
class SdkMcp(Stage):
    """cbc's requests to the client's in-process MCP servers, and their results, as
    Claude's.

    A Claude SDK's in-process server (``--mcp-config`` ``{"type": "sdk"}``) is reached
    through ``control_request{subtype: "mcp_message", server_name, message}``; cbc 2.163.0
    sends them, and both CLIs introduce themselves with an MCP ``initialize``, then
    ``notifications/initialized``, ``tools/list``, ``tools/call`` (raw runs, 2026-12-02).
    What differs, and is rewritten here:

    - ``initialize``: cbc's ``clientInfo`` is the server's own name and version
      (``{"name": "probe", "version": "1.0.0"}``); Claude's is ``claude-code`` with its
      version (``claude_client_info``).
    - ``tools/call``: Claude's ``params._meta`` has ``claudecode/toolUseId``, the id of the
      model's call; cbc's has none (its own ``traceparent``/``baggage`` are kept). It is the
      oldest ``mcp__<server>__<tool>`` call not yet sent (``_tool_use``).
    - the ``tool_result``: cbc writes the tool's content list as JSON in one text block
      (``[{"type":"text","text":"[{\\"type\\":\\"text\\",...}]"}]``) and drops ``isError``;
      Claude writes the content as the tool returned it, with ``tool_use_result`` the same
      list, and a failure as its text with ``is_error: true`` (``tool_use_result``
      ``Error: <text>``). The result is the one ``sdk-mcp-reply`` kept from the client's
      answer; a ``tool_result`` that is not cbc's copy of it passes unchanged.
    - the ``assistant`` frame of a call of such a server's tool: Claude adds
      ``tool_use_meta: [{id, display_name, server_display_name}]``, the tool's
      ``annotations.title`` or its name made a label (``tool_display_name``: ``Echo``) and
      the server's ``serverInfo.name`` (its ``initialize`` answer); cbc has none. (A stdio
      server's is left out: cbc's wire shows neither its tools' titles nor its
      ``serverInfo``.)

    cbc gives its model that JSON text too (a known gap: the model side is not the
    bridge's).
    """

    rule: ClassVar[str] = "sdk-mcp"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "control.sdk_mcp_calls",
            "control.sdk_mcp_results",
            "control.sdk_mcp_server_names",
            "control.sdk_mcp_tools",
            "tool_uses",
        }
    )
    writes: ClassVar[frozenset[str]] = frozenset(
        {"control.sdk_mcp_calls", "control.sdk_mcp_results"}
    )
    direction: ClassVar[Direction] = "down"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "control_request", "user"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        t, _ = frame.kind() or (None, None)
        if t == "user":
            return self._result(frame, frame.obj, ctx)
        if t == "assistant":
            return self._meta(frame, frame.obj, ctx)
        return self._request(frame, ctx)

    def _request(self, frame: Frame, ctx: Context) -> Output:
        """cbc's ``mcp_message``: remembered (for sdk-mcp-reply), its params Claude's."""
        obj = frame.obj
        rid, body = ck.request_of(obj)
        mcp = mcp_message(body)
        if rid is None or mcp is None:
            return None
        server, msg = mcp
        method: str = msg["method"]
        use_id, new = self._claude_params(ctx, server, method, msg.get("params"))
        # (kept longer than the calls session keeps: an id of a call still known is
        # never taken for one not yet sent)
        calls = ctx.state.control.sdk_mcp_calls
        remember(calls, rid, (server, method, use_id), cap=2 * MAX_TOOL_USES)
        if new is None:
            return None
        message = {**msg, "params": new}
        return (frame.replace({**obj, "request": {**body, "message": message}}),)

    def _claude_params(
        self, ctx: Context, server: str, method: str, params: Any
    ) -> tuple[str, dict[str, Any] | None]:
        """(the model's call a ``tools/call`` runs, else ``""``; the params as Claude sends
        them, None: unchanged)."""
        if not isinstance(params, dict):
            return "", None
        if method == "initialize":
            return "", claude_initialize(params, ctx.env.target_version)
        if method == "tools/call":
            use_id = self._tool_use(ctx, server, params)
            return use_id, with_tool_use_id(params, use_id)
        return "", None

    def _tool_use(self, ctx: Context, server: str, params: dict[str, Any]) -> str:
        """The model's call this ``tools/call`` runs: the oldest ``mcp__<server>__<tool>``
        call not yet sent whose input (as ``session`` keeps it, trimmed) is these
        arguments, else the oldest of that name (cbc runs a message's calls in order)."""
        name = f"mcp__{server}__{params.get('name')}"
        sent = {c[2] for c in ctx.state.control.sdk_mcp_calls.values()}
        args = params.get("arguments")
        args = trim_input(args) if isinstance(args, dict) else {}
        fallback = ""
        for use in ctx.state.tool_uses.values():
            if use.name != name or use.id in sent:
                continue
            if use.input == args:
                return use.id
            fallback = fallback or use.id
        if not fallback:
            ctx.log(self.rule, f"tools/call of {name}: no call of the model's matches", "debug")
        return fallback

    def _meta(self, frame: Frame, obj: dict[str, Any], ctx: Context) -> Output:
        control = ctx.state.control
        message = obj.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        if not control.sdk_mcp_tools or not isinstance(blocks, list) or "tool_use_meta" in obj:
            return None
        meta = tool_use_meta(blocks, control.sdk_mcp_tools, control.sdk_mcp_server_names)
        return (frame.replace({**obj, "tool_use_meta": meta}),) if meta else None

    def _result(self, frame: Frame, obj: dict[str, Any], ctx: Context) -> Output:
        """A user frame's ``tool_result`` blocks that are cbc's copies of the results
        sdk-mcp-reply kept, as Claude's (its ``tool_use_result`` too when it has one)."""
        results = ctx.state.control.sdk_mcp_results
        message = obj.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        if not results or not isinstance(message, dict) or not isinstance(blocks, list):
            return None
        out, use_results = self._claude_blocks(ctx, results, blocks)
        if not use_results:
            return None
        new: dict[str, Any] = {**obj, "message": {**message, "content": out}}
        if len(use_results) == 1 and _tool_results(out) == 1:
            new["tool_use_result"] = use_results[0]
        return (frame.replace(new),)

    def _claude_blocks(
        self, ctx: Context, results: dict[str, dict[str, Any]], blocks: list[Any]
    ) -> tuple[list[Any], list[Any]]:
        """The blocks, cbc's copies of kept results as Claude's, and those results'
        ``tool_use_result``s."""
        out: list[Any] = []
        use_results: list[Any] = []
        for b in blocks:
            claude = self._claude_result(ctx, results, b)
            if claude is None:
                out.append(b)
                continue
            out.append(claude[0])
            use_results.append(claude[1])
        return out, use_results

    def _claude_result(
        self, ctx: Context, results: dict[str, dict[str, Any]], b: Any
    ) -> tuple[dict[str, Any], Any] | None:
        """(the ``tool_result`` block as Claude writes it, its ``tool_use_result``) for one
        block, taking its call's kept result; None: the block stays."""
        uid = b.get("tool_use_id") if isinstance(b, dict) else None
        result = results.pop(uid, None) if isinstance(uid, str) else None
        content = result.get("content") if result is not None else None
        if result is None or not isinstance(content, list):
            return None
        if not cbc_copy(b.get("content"), content):
            ctx.log(self.rule, f"tool_result {uid}: not cbc's copy: kept", "debug")
            return None
        return claude_result(b, result)


def _tool_results(blocks: list[Any]) -> int:
    """How many of a message's blocks are ``tool_result``s."""
    return sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result")


@register
@attrs.define
class SdkMcpReply(Stage):
    """The client's answers to cbc's ``mcp_message`` requests (``sdk-mcp``): passed on
    unchanged; what they say is kept: each in-process server's ``serverInfo.name``
    (``initialize``) and ``tools/list`` (``mcp_status``'s ``tools``, ``unsupported-control``;
    ``tool_use_meta``, ``sdk-mcp``) and each ``tools/call`` result (for ``sdk-mcp`` to write
    that call's ``tool_result`` as Claude)."""

    rule: ClassVar[str] = "sdk-mcp-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.sdk_mcp_calls"})
    writes: ClassVar[frozenset[str]] = frozenset(
        {"control.sdk_mcp_results", "control.sdk_mcp_server_names", "control.sdk_mcp_tools"}
    )
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        control = ctx.state.control
        if not control.sdk_mcp_calls:
            return None
        rid, sub, resp = ck.response_of(frame.obj)
        call = control.sdk_mcp_calls.get(rid) if rid is not None else None
        if call is None or sub != "success":
            return None
        mcp = ck.body_of(resp).get("mcp_response")
        result = mcp.get("result") if isinstance(mcp, dict) else None
        if not isinstance(result, dict):
            return None
        server, method, use_id = call
        keep = KEEP.get(method)
        if keep is not None:
            keep(control, server, use_id, result)
        return None
