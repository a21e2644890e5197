"""The control protocol of profile ``claude-to-cbc``: a cbc 2.163.0 client (the CodeBuddy
SDKs) over Claude Code 2.1.220 (REVERSE.md gaps 6, 10-16).

Strategy: two bookkeeping rules, always on, record what the others need (``rev-requests``
upstream: the client's requests by id; ``rev-track`` downstream: prompts, Claude's
initialize reply, the model, turns, agent calls, in the ``rev`` facts); every other rule
answers a request or reshapes one reply so the client reads cbc's words and shapes, and
answers locally what Claude lacks, so no client request is left unanswered.
"""

from __future__ import annotations

from collections.abc import Callable
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
            return self._own_reply(frame, rs)
        rid, request = ck.request_of(frame.obj)
        body = cast("wire.ClientRequest", request)
        sub = str_at(body, "subtype")
        if rid is None or sub is None:
            return None
        init = cast("wire.InitializeReplyBody | None", rs.init_reply)
        if sub == "set_config":
            return self._set_config(frame, rid, body, ctx)
        if sub == "authenticate":
            self._authenticate(body, ctx)
            return self._answer(rid, {}, ctx)
        if sub == "subscribe":
            return self._subscribe(rid, body, init, ctx)
        answer = _LOCAL_ANSWERS.get(sub)
        if answer is None:
            return None  # Claude's own (or one neither knows)
        return self._answer(rid, answer(body, init), ctx)

    @staticmethod
    def _own_reply(frame: Frame, rs: rstate.ReverseState) -> Output:
        """The client's answer to a callback the bridge sent is dropped; others pass."""
        rid, _, _ = ck.response_of(frame.obj)
        if rid is not None and rid in rs.own:
            del rs.own[rid]
            return ()
        return None

    def _answer(self, rid: str, reply: dict[str, Any] | str, ctx: Context) -> Output:
        """The request answered here: ``reply`` a success body, or an error's message."""
        answer = ck.error(rid, reply) if isinstance(reply, str) else ck.success(rid, reply)
        ctx.emit("down", Frame.from_obj(answer), self.rule)
        return ()

    def _subscribe(
        self,
        rid: str,
        body: wire.ClientRequest,
        init: wire.InitializeReplyBody | None,
        ctx: Context,
    ) -> Output:
        """Subscribed at once; the ``commands`` channel gets its notification right after."""
        channel = str_at(body, "channel") or ""
        self._answer(rid, {"subscribed": True, "channel": channel}, ctx)
        if channel == "commands":
            notification = {
                "type": "control_notification",
                "channel": "commands",
                "data": {"commands": _slash_commands(init)},
            }
            ctx.emit("down", Frame.from_obj(notification), self.rule)
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


def _slash_commands(init: wire.InitializeReplyBody | None) -> list[dict[str, Any]]:
    """Claude's commands as cbc names them (``/name``)."""
    return [
        {**c, "name": "/" + str(cast("wire.Command", c).get("name", "")).lstrip("/")}
        for c in list_at(init, "commands")
        if isinstance(c, dict)
    ]


def _logout(body: wire.ClientRequest, init: wire.InitializeReplyBody | None) -> str:
    return (
        "logout: Claude Code keeps its own credentials (run `claude /logout`); "
        "ccbridge does not log it out"
    )


def _auth_methods(body: wire.ClientRequest, init: wire.InitializeReplyBody | None) -> str:
    return "get_auth_methods: Claude Code's login methods are not offered over stdio"


def _available_modes(
    body: wire.ClientRequest, init: wire.InitializeReplyBody | None
) -> dict[str, Any]:
    return {"availableModes": [{"id": i, "name": n, "description": d} for i, n, d in MODES]}


def _available_models(
    body: wire.ClientRequest, init: wire.InitializeReplyBody | None
) -> dict[str, Any]:
    """cbc's model list from Claude's initialize ``models`` (also given raw)."""
    models = claude_models(init)
    return {
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


def _unsubscribe(body: wire.ClientRequest, init: wire.InitializeReplyBody | None) -> dict[str, Any]:
    return {"unsubscribed": True, "channel": str_at(body, "channel") or ""}


#: the requests ``rev-local-controls`` answers with a body (a string: an error's message)
#: made from the request and Claude's initialize reply alone, by subtype
_LOCAL_ANSWERS: dict[
    str,
    Callable[[wire.ClientRequest, wire.InitializeReplyBody | None], dict[str, Any] | str],
] = {
    "logout": _logout,
    "get_auth_methods": _auth_methods,
    "get_available_modes": _available_modes,
    "get_available_models": _available_models,
    "unsubscribe": _unsubscribe,
}


@register
@attrs.define
class ReversePermissionReply(Stage):
    """cbc's permission answer `{allowed, updatedInput | reason}` -> Claude's `{behavior}`.

    cbc's ``{allowed, updatedInput, reason, interrupt, tool_use_id}`` -> Claude's
    ``{behavior:"allow", updatedInput}`` / ``{behavior:"deny", message, interrupt}`` (Claude
    rejects cbc's shape as an invalid permission result and denies the tool).
    """

    rule: ClassVar[str] = "rev-permission-reply"
    writes: ClassVar[frozenset[str]] = frozenset({"rev.denied_interrupts", "rev.permission_inputs"})
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
            reply = _claude_permission(body, original)
            if reply.get("interrupt") is True:
                use = body.get("tool_use_id")
                rstate.remember(rs.denied_interrupts, use if isinstance(use, str) else "*", None)
        else:
            return None
        return (frame.replace(ck.success(rid, reply)),)


def _claude_permission(
    body: wire.PermissionAnswer, original: dict[str, Any] | None
) -> dict[str, Any]:
    """cbc's ``{allowed, ...}`` as Claude's ``{behavior, ...}`` (``original``: the tool
    input Claude asked about, for an allow that names none)."""
    if body.get("allowed") is not True:
        reason = body.get("reason")
        deny: dict[str, Any] = {
            "behavior": "deny",
            "message": reason if isinstance(reason, str) else "",
        }
        if body.get("interrupt") is True:
            deny["interrupt"] = True
        return deny
    allow: dict[str, Any] = {"behavior": "allow"}
    updated = body.get("updatedInput")
    if isinstance(updated, dict):
        allow["updatedInput"] = updated
    elif original is not None:
        allow["updatedInput"] = original
    perms = body.get("updatedPermissions")
    if isinstance(perms, list):
        allow["updatedPermissions"] = perms  # Claude takes them with an allow
    return allow


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
        obj = frame.view(wire.Envelope)
        state = ctx.state
        t = obj.get("type")
        sid = str_at(obj, "session_id")
        if sid and state.session_id is None:
            state.session_id = sid
        track = _TRACK.get(f"system/{obj.get('subtype')}" if t == "system" else str(t))
        if track is not None:
            track(frame.obj, ctx)
        return None


def _track_permission(obj: dict[str, Any], ctx: Context) -> None:
    """An open ``can_use_tool`` prompt: its tool input, for the client's answer."""
    rid, request = ck.request_of(obj)
    body = cast("wire.CanUseTool", request)
    if rid is not None and body.get("subtype") == "can_use_tool":
        inp = body.get("input")
        rs = rstate.of(ctx.state)
        rstate.remember(rs.permission_inputs, rid, inp if isinstance(inp, dict) else {})


def _track_initialize(obj: dict[str, Any], ctx: Context) -> None:
    """Claude's reply to the client's ``initialize``, as Claude sent it."""
    rs = rstate.of(ctx.state)
    rid, sub, resp = ck.response_of(obj)
    req = rs.requests.get(rid or "")
    if req is not None and req[0] == "initialize" and sub == "success":
        rs.init_reply = ck.body_of(resp)


def _track_init(obj: dict[str, Any], ctx: Context) -> None:
    """A turn starts, with the model it names."""
    rstate.of(ctx.state).in_turn = True
    model = str_at(obj, "model")
    if model:
        ctx.state.model = model


def _track_result(obj: dict[str, Any], ctx: Context) -> None:
    rstate.of(ctx.state).in_turn = False


def _track_calls(obj: dict[str, Any], ctx: Context) -> None:
    """The model's Bash calls (their commands) and background Agent calls."""
    rs = rstate.of(ctx.state)
    for item in list_at(dict_at(obj, "message"), "content"):
        block = cast("wire.ContentBlock", item)
        if str_at(block, "type") != "tool_use":
            continue
        name = str_at(block, "name")
        args = cast("wire.ToolCallInput | None", dict_at(block, "input"))
        command = str_at(args, "command")
        if name == "Bash" and command is not None:
            rstate.remember(rs.bash_calls, str(block.get("id")), command)
        if name in ("Agent", "Task") and args is not None and args.get("run_in_background") is True:
            rstate.remember(rs.background_calls, str(block.get("id")), None)


def _track_task(obj: dict[str, Any], ctx: Context) -> None:
    """A ``local_agent`` task starts: its description and the call that started it."""
    tid = str_at(obj, "task_id")
    if tid and cast("wire.TaskStarted", obj).get("task_type") == "local_agent":
        rstate.remember(
            rstate.of(ctx.state).agent_tasks,
            tid,
            (str_at(obj, "description") or "", str_at(obj, "tool_use_id")),
        )


#: what ``rev-track`` records, by the kind of the frame
_TRACK: dict[str, Callable[[dict[str, Any], Context], None]] = {
    "control_request": _track_permission,
    "control_response": _track_initialize,
    "system/init": _track_init,
    "result": _track_result,
    "assistant": _track_calls,
    "system/task_started": _track_task,
}


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
        current = self._current_model(body, models, ctx)
        if current:
            body["currentModelId"] = current
        if models:
            body["models"] = [_cbc_model(m) for m in models]
        if "account" in body:
            body["account"] = cbc_account(body)
        return (_with_body(frame, resp, wire.plain(body)),)

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
