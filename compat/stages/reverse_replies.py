"""The replies of profile ``claude-to-cbc`` (REVERSE.md gaps 6, 10-16): Claude Code's
answers to a cbc client's requests in cbc's words and shapes (``rev-initialize-reply``,
``rev-resume-replay``, ``rev-mcp-status``, ``rev-control-replies``, ``rev-interrupt-reply``,
``rev-cancel-request``). The bookkeeping they read (``rev-requests``, ``rev-track``) and the
requests' own rules: ``compat/stages/reverse_control.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
from compat import reverse_state as rstate
from compat import wire
from compat.frames import Frame, dict_at, list_at, str_at
from compat.stage import Context, Output, Stage, register
from compat.stages.reverse_control import (
    cbc_account,
    claude_models,
    client_session,
    model_id,
    request_for,
    with_body,
)


@register
@attrs.define
class ReverseInitializeReply(Stage):
    """Claude's initialize reply in cbc's shape: `currentModelId`, models with `id`/`name`,
    an account the SDKs read as logged in (no secret).

    Adds ``currentModelId``, ``id``/``name`` on each model, and an account cbc's SDKs read as
    logged in (``userId``, ``userName``, a placeholder ``token``, never a secret) when Claude
    has a credential.
    """

    rule: ClassVar[str] = "rev-initialize-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.model", "rev.requests"})
    #: the model as the session left it (the initialize reply comes before any set_model)
    reads_earlier: ClassVar[frozenset[str]] = frozenset({"rev.model"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        got = request_for(frame, ctx, "initialize")
        if got is None:
            return None
        _, _, resp = got
        body = cast("wire.InitializeReplyBody", dict(ck.body_of(resp)))
        models = claude_models(body)
        current = self._current_model(body, models, ctx)
        if current:
            body["currentModelId"] = current
        if models:
            body["models"] = [_cbc_model(m) for m in models]
        if "account" in body:
            body["account"] = cbc_account(body)
        return (with_body(frame, resp, wire.plain(body)),)

    @staticmethod
    def _current_model(
        body: wire.InitializeReplyBody, models: list[wire.ClaudeModel], ctx: Context
    ) -> str | None:
        """The model the reply names, else the session's, else Claude's default one."""
        current = body.get("currentModelId")
        if isinstance(current, str) and current:
            return current
        model = rstate.of(ctx.state).model
        return model if model else _default_model(models)


def _default_model(models: list[wire.ClaudeModel]) -> str | None:
    """Claude's default model: the one listed as ``default``, else the first."""
    default = next(
        (m for m in models if m.get("value") == "default"), models[0] if models else None
    )
    return None if default is None else str(default.get("resolvedModel") or model_id(default))


def _cbc_model(m: wire.ClaudeModel) -> dict[str, Any]:
    """A model of Claude's list with cbc's ``id`` and ``name``."""
    return {
        **m,
        "id": model_id(m),
        "name": str(m.get("name") or m.get("displayName") or model_id(m)),
    }


#: transcript entry types that are conversation (the others: attachments, queue operations)
HISTORY_TYPES = frozenset({"user", "assistant"})


def history_frames(
    history: list[dict[str, Any]], session_id: str, cwd: str | None, model: str | None
) -> list[dict[str, Any]]:
    """cbc's replay of a resumed session (init, the conversation, a result) built from
    Claude's transcript entries; sidechains (sub-agents) and meta entries are left out."""
    turns = [e for e in cast("list[wire.TranscriptEntry]", history) if _is_conversation(e)]
    return [
        _replay_init(session_id, cwd, model),
        *(_replay_message(e, session_id) for e in turns),
        _replay_result(turns, session_id),
    ]


def _is_conversation(e: wire.TranscriptEntry) -> bool:
    """A user or assistant message of the main thread (no sub-agent's, no meta entry)."""
    return (
        e.get("type") in HISTORY_TYPES
        and dict_at(e, "message") is not None
        and not e.get("isSidechain")
        and not e.get("isMeta")
    )


def _replay_init(session_id: str, cwd: str | None, model: str | None) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "init",
        "session_id": session_id,
        "cwd": cwd or "",
        "model": model or "",
        "tools": [],
        "mcp_servers": [],
        "permissionMode": "default",
    }


def _replay_message(e: wire.TranscriptEntry, session_id: str) -> dict[str, Any]:
    frame: dict[str, Any] = {
        "type": e["type"],
        "message": e["message"],
        "parent_tool_use_id": None,
        "session_id": session_id,
    }
    if isinstance(e.get("uuid"), str):
        frame["uuid"] = e["uuid"]
    if e["type"] == "user":
        frame["isReplay"] = True
    return frame


def _text_of(message: Any) -> str:
    """The text blocks of a message, joined."""
    blocks = cast("list[wire.ContentBlock]", list_at(message, "content"))
    return "".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    )


def _replay_result(turns: list[wire.TranscriptEntry], session_id: str) -> dict[str, Any]:
    """The replay's closing result: the last assistant text that had any."""
    last = ""
    for e in turns:
        if e["type"] != "user":
            last = _text_of(e["message"]) or last
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": last,
        "session_id": session_id,
        "num_turns": sum(e["type"] == "user" for e in turns),
        "duration_ms": 0,
        "duration_api_ms": 0,
        "total_cost_usd": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


@register
@attrs.define
class ReverseResumeReplay(Stage):
    """On `--resume` with `initialize{hasPrompt:false}`, replay the session's history as cbc
    does (init, user/assistant, result), from Claude's transcript."""

    rule: ClassVar[str] = "rev-resume-replay"
    reads: ClassVar[frozenset[str]] = frozenset(
        {
            "rev.claude_session",
            "rev.client_session",
            "rev.cwd",
            "rev.history",
            "rev.model",
            "rev.requests",
            "rev.resumed",
        }
    )
    #: the model of the replayed init: what the launch or an earlier init named (the
    #: initialize reply it acts on comes before any system/init of the session)
    reads_earlier: ClassVar[frozenset[str]] = frozenset({"rev.model"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})
    _done: bool = attrs.field(default=False, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rs = rstate.of(ctx.state)
        if self._done or rs.history is None or rs.resumed is None:
            return None
        got = request_for(frame, ctx, "initialize")
        if got is None or got[1].get("hasPrompt") is not False:
            return None
        self._done = True
        sid = (
            rs.client_session
            if rs.claude_session == rs.resumed and rs.client_session
            else rs.resumed
        )
        frames = history_frames(rs.history, sid, rs.cwd, rs.model)
        ctx.log(self.rule, f"replayed {len(frames) - 2} message(s) of session {sid}", "info")
        return (frame, *(Frame.synth(f, self.rule) for f in frames))


@register
@attrs.define
class ReverseMcpStatus(Stage):
    """`mcp_status`: Claude's `mcpServers` also as `mcp_servers`, the key the SDKs read.

    ``mcpServers`` is also given as ``mcp_servers`` (what both SDKs read).
    """

    rule: ClassVar[str] = "rev-mcp-status"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.requests"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        got = request_for(frame, ctx, "mcp_status")
        if got is None:
            return None
        body = cast("wire.McpStatusReply", ck.body_of(got[2]))
        if "mcp_servers" in body or "mcpServers" not in body:
            return None
        return (with_body(frame, got[2], {**body, "mcp_servers": body["mcpServers"]}),)


@register
@attrs.define
class ReverseControlReplies(Stage):
    """`set_model` / `set_permission_mode` replies with cbc's bodies (`session_id`,
    `model`; `mode`, `previous_mode`).

    ``set_model`` -> ``{session_id, model}``, ``set_permission_mode`` -> ``{session_id, mode,
    previous_mode}``, as cbc answers.
    """

    rule: ClassVar[str] = "rev-control-replies"
    writes: ClassVar[frozenset[str]] = frozenset({"rev.model", "rev.permission_mode"})
    reads: ClassVar[frozenset[str]] = frozenset(
        {"rev.claude_session", "rev.client_session", "rev.requests", "session_id"}
    )
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        got = request_for(frame, ctx, "set_model", "set_config", "set_permission_mode")
        if got is None:
            return None
        sub, req, resp = got
        rs = rstate.of(ctx.state)
        body = dict(ck.body_of(resp))
        body["session_id"] = client_session(ctx)
        if sub == "set_permission_mode":
            mode = str_at(req, "mode") or str_at(body, "mode") or ""
            body.setdefault("mode", mode)
            body["previous_mode"] = rs.permission_mode
            rs.permission_mode = mode or rs.permission_mode
        else:
            model = str_at(req, "model")
            body["model"] = model
            if model:
                rs.model = model
        return (with_body(frame, resp, body),)


@register
@attrs.define
class ReverseInterruptReply(Stage):
    """The interrupt receipt with cbc's `{session_id, interrupted:true, reason}`.

    Claude's ``{still_queued}`` + cbc's ``{session_id, interrupted, reason}``.
    """

    rule: ClassVar[str] = "rev-interrupt-reply"
    reads: ClassVar[frozenset[str]] = frozenset(
        {"rev.claude_session", "rev.client_session", "rev.in_turn", "rev.requests", "session_id"}
    )
    writes: ClassVar[frozenset[str]] = frozenset({"rev.interrupted"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        got = request_for(frame, ctx, "interrupt")
        if got is None:
            return None
        _, req, resp = got
        if not rstate.of(ctx.state).in_turn:
            rstate.of(ctx.state).interrupted = False  # idle: no turn to end
        reason = str_at(req, "reason") or "SDK request"
        body = {
            **ck.body_of(resp),
            "session_id": client_session(ctx),
            "interrupted": True,
            "reason": reason,
        }
        return (with_body(frame, resp, body),)


@register
@attrs.define
class ReverseCancelRequest(Stage):
    """Drop Claude's `control_cancel_request` (cbc has none; its SDKs do not read it).

    Claude's ``control_cancel_request`` (a withdrawn permission prompt) is dropped: cbc has no
    such frame; an answer to it is harmless to Claude.
    """

    rule: ClassVar[str] = "rev-cancel-request"
    writes: ClassVar[frozenset[str]] = frozenset({"rev.permission_inputs"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_cancel_request"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid = str_at(frame.obj, "request_id")
        if rid:
            rstate.of(ctx.state).permission_inputs.pop(rid, None)
        return ()
