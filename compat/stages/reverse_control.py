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


def request_for(
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


def with_body(frame: Frame, resp: dict[str, Any], body: dict[str, Any]) -> Frame:
    return ck.with_response(frame, {**resp, "response": body})
