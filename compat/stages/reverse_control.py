"""The control protocol of profile ``claude-to-cbc``: a cbc 2.163.0 client (the CodeBuddy
SDKs) over Claude Code 2.1.220 (REVERSE.md gaps 6, 10-16).

Strategy: two bookkeeping rules, always on, record what the others need (``rev-requests``
upstream: the client's requests by id; ``rev-track`` downstream: prompts, Claude's
initialize reply, the model, turns, agent calls, in the ``rev`` facts); every other rule
answers a request or reshapes one reply so the client reads cbc's words and shapes, and
answers locally what Claude lacks, so no client request is left unanswered.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
from compat import reverse_state as rstate
from compat import wire
from compat.frames import Frame, dict_at, list_at, str_at
from compat.stage import Context, Direction, Output, Stage, register

#: cbc's permission modes as its SDK lists them (``get_available_modes``), Claude's names
MODES: tuple[tuple[str, str, str], ...] = (
    ("default", "Default", "Ask before running tools that change things"),
    ("acceptEdits", "Accept edits", "Apply file edits without asking"),
    ("plan", "Plan", "Plan only: no tool that changes anything runs"),
    ("bypassPermissions", "Bypass permissions", "Run every tool without asking"),
    ("dontAsk", "Don't ask", "Deny what is not allowed instead of asking"),
    ("auto", "Auto", "Let the model's classifier decide"),
)
#: an account placeholder token: cbc's SDK checks that one is there; it is not a secret
TOKEN_PLACEHOLDER = "ccbridge-claude-credential"
NOT_LOGGED_IN = (
    "Claude Code has no credential (set ANTHROPIC_API_KEY or run `claude "
    "/login`); ccbridge cannot log it in for a cbc client"
)


def client_session(ctx: Context) -> str:
    """The session id as the client knows it."""
    rs = rstate.of(ctx.state)
    sid = ctx.state.session_id or ""
    if rs.client_session is not None and sid in ("", rs.claude_session):
        return rs.client_session
    return sid


def logged_in(init: dict[str, Any] | wire.InitializeReplyBody | None) -> bool:
    account = cast("wire.Account", dict_at(init, "account") or {})
    return any(account.get(k) not in (None, "", "none") for k in ("apiKeySource", "tokenSource"))


def cbc_account(init: dict[str, Any] | wire.InitializeReplyBody | None) -> wire.CbcAccount:
    """Claude's account as cbc's SDKs read one (``userId`` and ``token`` mean logged in)."""
    account = cast("wire.CbcAccount", dict(dict_at(init, "account") or {}))
    if logged_in(init):
        who = str(account.get("apiProvider") or "claude")
        name = f"claude-{who}"
        account.setdefault("uid", name)
        account.setdefault("userId", name)
        account.setdefault("userName", name)
        account.setdefault("userNickname", name)
        account.setdefault("nickname", name)
        account.setdefault("type", "personal")
        account.setdefault("token", TOKEN_PLACEHOLDER)
    return account


def claude_models(
    init: dict[str, Any] | wire.InitializeReplyBody | None,
) -> list[wire.ClaudeModel]:
    return [cast("wire.ClaudeModel", m) for m in list_at(init, "models") if isinstance(m, dict)]


def model_id(m: wire.ClaudeModel) -> str:
    return str(m.get("id") or m.get("value") or m.get("resolvedModel") or "")


@register
@attrs.define
class ReverseRequests(Stage):
    """Remember the client's control requests (for the reply rules); bookkeeping.

    Always on: every client ``control_request`` by id, for the reply rules; an ``interrupt``
    marks the turn interrupted.
    """

    rule: ClassVar[str] = "rev-requests"
    writes: ClassVar[frozenset[str]] = frozenset({"rev.interrupted", "rev.requests"})
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, body = ck.request_of(frame.obj)
        sub = str_at(body, "subtype")
        if rid is None or sub is None:
            return None
        rs = rstate.of(ctx.state)
        rstate.remember(rs.requests, rid, (sub, body))
        if sub == "interrupt":
            rs.interrupted = True
        return None


@register
@attrs.define
class ReverseLocalControls(Stage):
    """Answer the control requests Claude lacks (authenticate, logout, set_config,
    get_available_modes/models, subscribe...) the way cbc does.

    Claude answers them ``Unsupported control request subtype`` otherwise, and the SDK hangs
    or crashes. Answered here: ``authenticate`` (the ``auth_url_callback`` /
    ``auth_result_callback`` pair cbc sends, its result from the account Claude reports),
    ``logout`` and ``get_auth_methods`` (errors that say why), ``set_config{model}`` (->
    ``set_model``), ``get_available_modes``, ``get_available_models`` (from Claude's
    initialize ``models``), ``subscribe`` / ``unsubscribe`` (the ``commands`` channel gets its
    ``control_notification`` at once). The client's replies to the callbacks the bridge sent
    are not passed to Claude.
    """

    rule: ClassVar[str] = "rev-local-controls"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.init_reply", "rev.own"})
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request", "control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rs = rstate.of(ctx.state)
        if frame.kind() == ("control_response", None):
            rid, _, _ = ck.response_of(frame.obj)
            if rid is not None and rid in rs.own:
                del rs.own[rid]
                return ()  # the client's answer to a callback the bridge sent
            return None
        rid, request = ck.request_of(frame.obj)
        body = cast("wire.ClientRequest", request)
        sub = str_at(body, "subtype")
        if rid is None or sub is None:
            return None
        init = cast("wire.InitializeReplyBody | None", rs.init_reply)
        if sub == "set_config":
            return self._set_config(frame, rid, body, ctx)
        reply: dict[str, Any] | str
        if sub == "authenticate":
            self._authenticate(body, ctx)
            reply = {}
        elif sub == "logout":
            reply = (
                "logout: Claude Code keeps its own credentials (run `claude /logout`); "
                "ccbridge does not log it out"
            )
        elif sub == "get_auth_methods":
            reply = "get_auth_methods: Claude Code's login methods are not offered over stdio"
        elif sub == "get_available_modes":
            reply = {
                "availableModes": [{"id": i, "name": n, "description": d} for i, n, d in MODES]
            }
        elif sub == "get_available_models":
            models = claude_models(init)
            reply = {
                "availableModels": [
                    {
                        "modelId": model_id(m),
                        "name": str(m.get("displayName") or model_id(m)),
                        "description": str(m.get("description") or ""),
                    }
                    for m in models
                ],
                "rawModels": models,
            }
        elif sub == "subscribe":
            channel = str_at(body, "channel") or ""
            reply = {"subscribed": True, "channel": channel}
            ctx.emit("down", Frame.from_obj(ck.success(rid, reply)), self.rule)
            if channel == "commands":
                commands = [
                    {**c, "name": "/" + str(cast("wire.Command", c).get("name", "")).lstrip("/")}
                    for c in list_at(init, "commands")
                    if isinstance(c, dict)
                ]
                ctx.emit(
                    "down",
                    Frame.from_obj(
                        {
                            "type": "control_notification",
                            "channel": "commands",
                            "data": {"commands": commands},
                        }
                    ),
                    self.rule,
                )
            return ()
        elif sub == "unsubscribe":
            reply = {"unsubscribed": True, "channel": str_at(body, "channel") or ""}
        else:
            return None
        answer = ck.error(rid, reply) if isinstance(reply, str) else ck.success(rid, reply)
        ctx.emit("down", Frame.from_obj(answer), self.rule)
        return ()

    def _set_config(self, frame: Frame, rid: str, body: wire.ClientRequest, ctx: Context) -> Output:
        # the JS SDK sends ``{subtype, session_id, config: {...}}``
        config = dict_at(body, "config")
        if config is None:
            config = {k: v for k, v in body.items() if k not in ("subtype", "session_id")}
        other = sorted(k for k in config if k != "model")
        model = cast("wire.ClientConfig", config).get("model")
        if other or not isinstance(model, str):
            what = ", ".join(other) if other else "model (missing)"
            ctx.emit(
                "down",
                Frame.from_obj(
                    ck.error(rid, f"set_config: Claude Code takes only a model here, not {what}")
                ),
                self.rule,
            )
            return ()
        return (frame.replace(ck.request(rid, {"subtype": "set_model", "model": model})),)

    def _authenticate(self, body: wire.ClientRequest, ctx: Context) -> None:
        rs = rstate.of(ctx.state)
        n = len(rs.own)
        url_id, result_id = f"ccbridge_auth_url_{n}", f"ccbridge_auth_result_{n}"
        rstate.remember(rs.own, url_id, None)
        rstate.remember(rs.own, result_id, None)
        ctx.emit(
            "down",
            Frame.from_obj(
                ck.request(
                    url_id,
                    {
                        "subtype": "auth_url_callback",
                        "authState": {"authUrl": "", "methodId": body.get("methodId")},
                    },
                )
            ),
            self.rule,
        )
        if logged_in(rs.init_reply):
            result: dict[str, Any] = {
                "subtype": "auth_result_callback",
                "success": True,
                "userinfo": wire.plain(cbc_account(rs.init_reply)),
            }
        else:
            result = {
                "subtype": "auth_result_callback",
                "success": False,
                "error": {"type": "auth_failed", "message": NOT_LOGGED_IN},
            }
        ctx.emit("down", Frame.from_obj(ck.request(result_id, result)), self.rule)


@register
@attrs.define
class ReversePermissionReply(Stage):
    """cbc's permission answer `{allowed, updatedInput | reason}` -> Claude's `{behavior}`.

    cbc's ``{allowed, updatedInput, reason, interrupt, tool_use_id}`` -> Claude's
    ``{behavior:"allow", updatedInput}`` / ``{behavior:"deny", message, interrupt}`` (Claude
    rejects cbc's shape as an invalid permission result and denies the tool).
    """

    rule: ClassVar[str] = "rev-permission-reply"
    writes: ClassVar[frozenset[str]] = frozenset({"rev.permission_inputs"})
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, sub, resp = ck.response_of(frame.obj)
        if rid is None:
            return None
        rs = rstate.of(ctx.state)
        pending = rid in rs.permission_inputs
        original = rs.permission_inputs.pop(rid, None)
        body = cast("wire.PermissionAnswer", ck.body_of(resp))
        if sub == "error" and pending:
            message = cast("wire.ControlResponseBody", resp).get("error")
            reply: dict[str, Any] = {"behavior": "deny", "message": str(message or "")}
        elif "allowed" in body and "behavior" not in body:
            if body.get("allowed") is True:
                reply = {"behavior": "allow"}
                updated = body.get("updatedInput")
                if isinstance(updated, dict):
                    reply["updatedInput"] = updated
                elif original is not None:
                    reply["updatedInput"] = original
                perms = body.get("updatedPermissions")
                if isinstance(perms, list):
                    reply["updatedPermissions"] = perms  # Claude takes them with an allow
            else:
                reason = body.get("reason")
                reply = {"behavior": "deny", "message": reason if isinstance(reason, str) else ""}
                if body.get("interrupt") is True:
                    reply["interrupt"] = True
        else:
            return None
        return (frame.replace(ck.success(rid, reply)),)


@register
@attrs.define
class ReverseTrack(Stage):
    """Track permission prompts, Claude's initialize reply, turns and agent calls for the
    other reverse rules; bookkeeping.

    Always on: open ``can_use_tool`` inputs, Claude's initialize reply, the model, whether a
    turn runs, background Agent calls and agent tasks.
    """

    rule: ClassVar[str] = "rev-track"
    reads: ClassVar[frozenset[str]] = frozenset({"rev.requests"})
    writes: ClassVar[frozenset[str]] = frozenset(
        {
            "model",
            "rev.agent_tasks",
            "rev.background_calls",
            "rev.bash_calls",
            "rev.in_turn",
            "rev.init_reply",
            "rev.permission_inputs",
            "session_id",
        }
    )
    kinds: ClassVar[frozenset[str] | None] = frozenset(
        {
            "control_request",
            "control_response",
            "system/init",
            "assistant",
            "result",
            "system/task_started",
            "system/task_notification",
        }
    )

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = cast("wire.Envelope", frame.obj)
        rs = rstate.of(ctx.state)
        state = ctx.state
        t = obj.get("type")
        sid = str_at(obj, "session_id")
        if sid and state.session_id is None:
            state.session_id = sid
        if t == "control_request":
            rid, request = ck.request_of(frame.obj)
            body = cast("wire.CanUseTool", request)
            if rid is not None and body.get("subtype") == "can_use_tool":
                inp = body.get("input")
                rstate.remember(rs.permission_inputs, rid, inp if isinstance(inp, dict) else {})
        elif t == "control_response":
            rid, sub, resp = ck.response_of(frame.obj)
            req = rs.requests.get(rid or "")
            if req is not None and req[0] == "initialize" and sub == "success":
                rs.init_reply = ck.body_of(resp)
        elif t == "system" and obj.get("subtype") == "init":
            rs.in_turn = True
            model = str_at(obj, "model")
            if model:
                state.model = model
        elif t == "result":
            rs.in_turn = False
        elif t == "assistant":
            for item in list_at(dict_at(obj, "message"), "content"):
                block = cast("wire.ContentBlock", item)
                args = cast("wire.ToolCallInput | None", dict_at(block, "input"))
                command = str_at(args, "command")
                if str_at(block, "type") == "tool_use" and str_at(block, "name") == "Bash":
                    if command is not None:
                        rstate.remember(rs.bash_calls, str(block.get("id")), command)
                if (
                    str_at(block, "type") == "tool_use"
                    and str_at(block, "name") in ("Agent", "Task")
                    and args is not None
                    and args.get("run_in_background") is True
                ):
                    rstate.remember(rs.background_calls, str(block.get("id")), None)
        elif obj.get("subtype") == "task_started":
            tid = str_at(obj, "task_id")
            if tid and cast("wire.TaskStarted", obj).get("task_type") == "local_agent":
                rstate.remember(
                    rs.agent_tasks,
                    tid,
                    (str_at(obj, "description") or "", str_at(obj, "tool_use_id")),
                )
        return None


def _request_for(
    frame: Frame, ctx: Context, *subtypes: str
) -> tuple[str, wire.ClientRequest, dict[str, Any]] | None:
    """(subtype, request body, response object) when ``frame`` answers a client request
    of one of ``subtypes`` with success."""
    rid, sub, resp = ck.response_of(frame.obj)
    if rid is None or sub != "success":
        return None
    req = rstate.of(ctx.state).requests.get(rid)
    if req is None or req[0] not in subtypes:
        return None
    return req[0], cast("wire.ClientRequest", req[1]), resp


def _with_body(frame: Frame, resp: dict[str, Any], body: dict[str, Any]) -> Frame:
    return ck.with_response(frame, {**resp, "response": body})


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
        got = _request_for(frame, ctx, "initialize")
        if got is None:
            return None
        _, _, resp = got
        body = cast("wire.InitializeReplyBody", dict(ck.body_of(resp)))
        models = claude_models(body)
        out_models = [
            {
                **m,
                "id": model_id(m),
                "name": str(m.get("name") or m.get("displayName") or model_id(m)),
            }
            for m in models
        ]
        current = body.get("currentModelId")
        if not isinstance(current, str) or not current:
            current = rstate.of(ctx.state).model
            default = next(
                (m for m in models if m.get("value") == "default"), models[0] if models else None
            )
            if not current and default is not None:
                current = str(default.get("resolvedModel") or model_id(default))
        if current:
            body["currentModelId"] = current
        if models:
            body["models"] = out_models
        if "account" in body:
            body["account"] = cbc_account(body)
        return (_with_body(frame, resp, wire.plain(body)),)


#: transcript entry types that are conversation (the others: attachments, queue operations)
HISTORY_TYPES = frozenset({"user", "assistant"})


def history_frames(
    history: list[dict[str, Any]], session_id: str, cwd: str | None, model: str | None
) -> list[dict[str, Any]]:
    """cbc's replay of a resumed session (init, the conversation, a result) built from
    Claude's transcript entries; sidechains (sub-agents) and meta entries are left out."""
    turns = [
        e
        for e in cast("list[wire.TranscriptEntry]", history)
        if e.get("type") in HISTORY_TYPES
        and dict_at(e, "message") is not None
        and not e.get("isSidechain")
        and not e.get("isMeta")
    ]
    init: dict[str, Any] = {
        "type": "system",
        "subtype": "init",
        "session_id": session_id,
        "cwd": cwd or "",
        "model": model or "",
        "tools": [],
        "mcp_servers": [],
        "permissionMode": "default",
    }
    out = [init]
    last = ""
    for e in turns:
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
        else:
            blocks = list_at(e["message"], "content")
            texts = [
                str(b.get("text", ""))
                for b in cast("list[wire.ContentBlock]", blocks)
                if isinstance(b, dict) and b.get("type") == "text"
            ]
            last = "".join(texts) or last
        out.append(frame)
    out.append(
        {
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
    )
    return out


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
        got = _request_for(frame, ctx, "initialize")
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
        got = _request_for(frame, ctx, "mcp_status")
        if got is None:
            return None
        body = cast("wire.McpStatusReply", ck.body_of(got[2]))
        if "mcp_servers" in body or "mcpServers" not in body:
            return None
        return (_with_body(frame, got[2], {**body, "mcp_servers": body["mcpServers"]}),)


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
        got = _request_for(frame, ctx, "set_model", "set_config", "set_permission_mode")
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
        return (_with_body(frame, resp, body),)


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
        got = _request_for(frame, ctx, "interrupt")
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
        return (_with_body(frame, resp, body),)


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
