"""``initialize-request`` and ``initialize-reply``: the session's handshake the Claude way
(PROTOCOL.md §2 "Control protocol", ``initialize-reply``).

Strategy: the request is translated into what cbc 2.163.0 reads (and what it cannot take is
named in a warning, never dropped silently); the reply is rebuilt in Claude Code 2.1.220's
shape and key order, with no credential in it. Both read and build control frames with
``compat.controlkit``; the request registers the bridge's own ``set_config`` in
``ControlState.own``, the reply finds the request it answers in ``ControlState.requests``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, cast

import attrs

from compat import controlkit as ck
from compat import launch_init, wire
from compat.frames import Frame, list_at, loads
from compat.redact import redact_obj, strip_obj
from compat.session import MAX_OWN
from compat.stage import Context, Direction, Output, Stage, register
from compat.target import Target, target_of, values
from compat.taskkit import remember

#: Claude's marker between the static and the dynamic system prompt blocks (TS SDK
#: ``SYSTEM_PROMPT_DYNAMIC_BOUNDARY``)
PROMPT_BOUNDARY = "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__"
#: the initialize reply's flags of Claude-only features, as Claude 2.1.220 writes them off
#: (twins ``*.claude.jsonl``); true of cbc, which has none of these features
CLAUDE_ONLY_FLAGS: dict[str, Any] = {
    "remote_control_auto_enable": False,
    "remote_control_auto_on_by_default": False,
    "ide_rc_auto_enable_gate": False,
    "fast_mode_state": "off",
    "fast_mode_disabled_reason": "sdk_opt_in_required",
}
#: keys of cbc's reply Claude's has not (the information is kept elsewhere)
CBC_ONLY_KEYS = frozenset({"currentModelId"})
#: Claude's initialize fields (TS SDK 0.3.220 and 0.3.332, ``sdk.mjs``) that cbc 2.163.0's
#: initialize handler does not read (it reads ``hooks``, ``capabilities``,
#: ``sdkMcpServers``, ``systemPrompt``, ``appendSystemPrompt``, ``agents``,
#: ``environment``, ``endpoint``); ``settings`` is translated, the rest dropped. A field
#: in neither list passes: cbc ignores what it does not read (``hasPrompt`` from
#: codebuddy's own SDK, ``nomodel_unknown-stdin-types``), and it may be cbc's
CLAUDE_ONLY_INITIALIZE_KEYS = frozenset(
    {
        "settings",
        "disallowedTools",
        "additionalDirectories",
        "mcpServers",
        "managedSettings",
        "plugins",
        "skills",
        "title",
        "planModeInstructions",
        "systemPromptSnapshot",
        "appendSubagentSystemPrompt",
        "toolAliases",
        "codeRunningMcpTools",
        "excludeDynamicSections",
        "webSearchIsolationExemptMcpServers",
        "promptSuggestions",
        "agentProgressSummaries",
        "forwardSubagentText",
        "supportedDialogKinds",
        "perTaskStopAffordance",
        "rapidFollowupPreempt",
        "forwardNestedSubagentToolCalls",
        "offersBypassSwitchBack",
        "keepsBypassHeld",
        "workspaceTrust",
    }
)
#: the settings cbc 2.163.0's ``set_config`` control request takes (its handler's list)
CBC_CONFIG_KEYS = frozenset(
    {
        "model",
        "theme",
        "autoCompactEnabled",
        "autoCompactWindow",
        "alwaysThinkingEnabled",
        "includeCoAuthoredBy",
        "showTokensCounter",
        "showContextUsage",
        "showTurnDuration",
        "language",
        "cleanupPeriodDays",
        "ignoreGitIgnore",
        "autoUpdates",
        "enablePasteImageFromClipboard",
        "enableTerminalProgressBar",
        "fileCheckpointingEnabled",
        "promptSuggestionEnabled",
        "deferToolLoading",
        "imageHistoryRetainRounds",
        "reasoningEffort",
        "hookOutputCollapsed",
        "outputStyle",
        "contextWindow",
    }
)


#: the values an SDK leaves in a field the client did not set
_EMPTY: tuple[Any, ...] = ("", [], {})


def _carries(value: Any) -> bool:
    """A field the client set (not an SDK default left empty)."""
    return value is not None and value is not False and value not in _EMPTY


def _settings_object(value: Any) -> dict[str, Any] | None:
    """``settings`` as an object: itself, or a string holding a JSON object (Claude also
    takes a file path, which the pure core cannot read)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        return _json_object(value)
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    """The object a JSON text holds; None when it is not JSON or not an object."""
    try:
        obj = loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _joined_prompt(blocks: list[Any]) -> str | None:
    """``systemPrompt`` blocks as the one string cbc takes: joined with a blank line, the
    boundary marker left out; None when a block is not text."""
    if not all(isinstance(b, str) for b in blocks):
        return None
    return "\n\n".join(b for b in blocks if b != PROMPT_BOUNDARY)


def _cbc_options(new: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The Claude-only fields of an initialize (removed from ``new``): the settings cbc's
    ``set_config`` takes, and the names of the fields that carried a value and are dropped."""
    config: dict[str, Any] = {}
    dropped: list[str] = []
    for key in [k for k in new if k in CLAUDE_ONLY_INITIALIZE_KEYS]:
        taken, lost = _option(key, new.pop(key))
        config |= taken
        dropped += lost
    return config, dropped


def _option(key: str, value: Any) -> tuple[dict[str, Any], list[str]]:
    """What becomes of one Claude-only field: the settings for cbc's ``set_config`` in it,
    and the names dropped (its own when it carries a value; for ``settings``, each setting
    cbc cannot set)."""
    settings = _settings_object(value) if key == "settings" else None
    if settings is not None:
        return _cbc_settings(settings)
    return {}, [key] if _carries(value) else []


def _cbc_settings(settings: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The settings cbc's ``set_config`` takes, and the names of the others."""
    config = {k: v for k, v in settings.items() if k in CBC_CONFIG_KEYS}
    return config, [f"settings.{k}" for k in settings if k not in CBC_CONFIG_KEYS]


@register
@attrs.define
class InitializeRequest(Stage):
    """Give cbc the `initialize` it takes: `systemPrompt` blocks joined into one string.

    ``systemPrompt``: Claude Code 2.1.220 takes ``initialize.systemPrompt`` as an array of
    blocks (the TypeScript SDK always sends one: ``[""]`` for its default empty prompt,
    ``SYSTEM_PROMPT_DYNAMIC_BOUNDARY`` as a standalone element between the cacheable prefix
    and the rest); cbc 2.163.0 fails every turn on an array ("src must be a string or an object
    describing the source", before it asks the model) and takes a string, which it joins to
    ``appendSystemPrompt`` with a blank line (probed). So the blocks are joined with a blank
    line, the boundary marker left out.

    Options inside the request: newer TypeScript SDKs (0.3.332 when asked, 0.3.337 by
    default for ``mcpServers``, with ``--await-initialize`` on the command line) send
    options inside the request instead of as flags: ``settings``, ``disallowedTools``,
    ``additionalDirectories``, ``mcpServers``, ``managedSettings``, ``plugins``, ``skills``,
    ``title``, … (``CLAUDE_ONLY_INITIALIZE_KEYS``). Those that are launch options
    (``compat.launch_init``) cbc got on its command line when the client awaited
    initialize (the launch fact ``launch_fields``: the bridge read this request before it
    started cbc); they are removed, said at info, and their confirmations
    (``mcp_servers_applied``…: true for those, false for the others the request carried)
    kept for ``initialize-reply``. cbc 2.163.0's initialize handler reads only ``hooks``,
    ``capabilities``, ``sdkMcpServers``, ``systemPrompt``, ``appendSystemPrompt``, ``agents``,
    ``environment`` and ``endpoint`` (read in its binary) and ignores the rest; at run time it
    can change only the settings its ``set_config`` request takes (``CBC_CONFIG_KEYS``:
    ``model``, ``alwaysThinkingEnabled``, ``outputStyle``, …). So the ``settings`` keys cbc can
    set (an object, or a JSON object as a string) become a ``set_config`` request the bridge
    sends right after the initialize (its own request: ``ControlState.own``, the reply is not
    forwarded); every other field that carries a value (the rest of ``settings``, a settings
    file path, ``disallowedTools``, ``mcpServers``…: cbc has no run-time equivalent) is
    removed, named in one warning, so that nothing the client asked for is lost silently.
    Fields the bridge does not know pass (cbc ignores what it does not read; they may be its
    own).
    """

    rule: ClassVar[str] = "initialize-request"
    reads: ClassVar[frozenset[str]] = frozenset({"launch_fields"})
    writes: ClassVar[frozenset[str]] = frozenset({"control.own", "control.init_applied"})
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request"})

    _sent: int = attrs.field(default=0, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, request = ck.request_of(frame.obj)
        body = cast("wire.InitializeBody", request)
        if body.get("subtype") != "initialize":
            return None
        new: dict[str, Any] = dict(request)
        self._join_prompt(new, ctx)
        self._launched(new, ctx)
        config, dropped = _cbc_options(new)
        extra = self._set_config(config, ctx)
        self._say_dropped(rid, dropped, ctx)
        if new != body:
            return [frame.replace({**frame.obj, "request": new}), *extra]
        return [frame, *extra] if extra else None

    def _join_prompt(self, new: dict[str, Any], ctx: Context) -> None:
        """``systemPrompt`` blocks joined into the string cbc takes (blocks that are not all
        text passed as they are, said in a warning)."""
        blocks = new.get("systemPrompt")
        if not isinstance(blocks, list):
            return
        joined = _joined_prompt(blocks)
        if joined is None:
            ctx.log(
                self.rule, "initialize.systemPrompt holds non-text blocks; passed as is", "warning"
            )
            return
        new["systemPrompt"] = joined
        ctx.count(self.rule, "system-prompt-joined")

    def _launched(self, new: dict[str, Any], ctx: Context) -> None:
        """The launch fields (``compat.launch_init``): their confirmations kept for the
        reply; those cbc got on its command line removed, said at info."""
        launched = ctx.state.launch_fields
        ctx.state.control.init_applied = launch_init.confirmations(new, launched)
        given = [k for k in launch_init.FIELDS if k in new and k in launched]
        for key in given:
            del new[key]
        if given:
            ctx.count(self.rule, "fields-at-launch", len(given))
            ctx.log(self.rule, f"initialize {', '.join(given)}: cbc got them at launch")

    def _set_config(self, config: dict[str, Any], ctx: Context) -> list[Frame]:
        """The bridge's own ``set_config`` of the initialize's settings cbc can set."""
        if not config:
            return []
        self._sent += 1
        own = f"ccbridge-config-{self._sent}"
        remember(ctx.state.control.own, own, "set_config", cap=MAX_OWN)
        request = Frame.synth(
            ck.request(own, {"subtype": "set_config", "config": config}), self.rule
        )
        ctx.log(
            self.rule,
            f"initialize settings {', '.join(sorted(config))} sent to the backend as set_config",
            "info",
        )
        return [request]

    def _say_dropped(self, rid: str | None, dropped: list[str], ctx: Context) -> None:
        if not dropped:
            return
        ctx.count(self.rule, "fields-dropped", len(dropped))
        ctx.log(
            self.rule,
            f"initialize {rid!s}: the backend has no equivalent of {', '.join(dropped)}; dropped",
            "warning",
        )


@register
@attrs.define
class ResumeReplay(Stage):
    """A resumed session starts with nothing replayed, as Claude's does: cbc is told a
    prompt follows (`initialize.hasPrompt: true`) when the client did not say.

    cbc 2.163.0, started with ``--resume``, waits for the client's first line before it
    answers it: a user line, or an ``initialize`` whose ``hasPrompt`` is true, means a prompt
    follows and nothing is replayed; an ``initialize`` without ``hasPrompt`` (or false), or
    stdin closed first, makes it replay the session's history, an ``init``, the old user
    and assistant messages and a ``result`` (read in its binary: ``[ResumeReplay] skipped
    (hasPrompt=true, SDK will send a prompt)``). codebuddy's own SDKs send ``hasPrompt`` for
    that; the Claude Agent SDKs (Python and TypeScript) never send it, and Claude Code
    2.1.220 replays nothing on ``--resume``. So under a resumed launch (``--resume``,
    ``--continue``: the launch fact ``resumes``) an ``initialize`` without ``hasPrompt`` gets
    ``hasPrompt: true``. Without it the client reads the old exchange as if it were new,
    and its old ``result`` as the answer to the new prompt: a Python ``query()`` ends there
    (and the wind-down, seeing that ``result``, may end cbc while it starts the new turn).
    A ``hasPrompt`` the client sent is kept (``false``: a client that asks for the replay).

    Mode ``off`` forwards the ``initialize`` as the client wrote it (cbc replays).
    """

    rule: ClassVar[str] = "resume-replay"
    direction: ClassVar[Direction] = "up"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_request"})
    reads: ClassVar[frozenset[str]] = frozenset({"resumes"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if not ctx.state.resumes:
            return None
        obj = frame.obj
        _, request = ck.request_of(obj)
        body = cast("wire.InitializeBody", request)
        if body.get("subtype") != "initialize" or "hasPrompt" in body:
            return None
        ctx.log(self.rule, "resumed session: initialize.hasPrompt set, cbc replays nothing")
        return (frame.replace({**obj, "request": {**request, "hasPrompt": True}}),)


@register
@attrs.define
class InitializeReply(Stage):
    """Claude-shaped `initialize` reply; credentials never forwarded (redact | strip).

    cbc's reply (``{commands:[{name:"/x",…}], models:[{id,name}], account, currentModelId}``,
    ``nomodel_controls-*``) is reshaped to Claude's (``commands`` without ``/`` and with
    ``argumentHint``, ``agents``, ``models:[{value,displayName,description}]``, ``account``,
    ``pid``: ``nocreds_idle-interrupt_…``).

    Credentials are never forwarded (seed 000: ``account.token`` is a live access token; with
    an API key it is the key itself, and cbc's
    ``uid``/``nickname``/``userId``/``userName``/``userNickname`` carry its last 8 characters,
    probed): mode ``redact`` replaces them, ``strip`` removes them.

    cbc's ``currentModelId`` is remembered (``set_model(null)`` means it) and dropped: it is no
    key of Claude's reply, which names the model in ``system/init``'s ``model`` only (twins
    ``*.claude.jsonl``). Claude's reply ends with the flags of its own features (remote
    control, IDE, fast mode); cbc has none of them, so they are the off/false values Claude
    writes when they are off (``CLAUDE_ONLY_FLAGS``, twins ``*.claude.jsonl``). The
    confirmations of the launch fields the request carried (``initialize-request``) are
    added: a newer SDK ends the session without the one it needs.
    """

    rule: ClassVar[str] = "initialize-reply"
    reads: ClassVar[frozenset[str]] = frozenset({"control.requests", "pid", "control.init_applied"})
    writes: ClassVar[frozenset[str]] = frozenset({"control.default_model"})
    modes: ClassVar[tuple[str, ...]] = ("redact", "strip")
    kinds: ClassVar[frozenset[str] | None] = frozenset({"control_response"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        rid, sub, resp = ck.response_of(frame.obj)
        body = cast("wire.InitializeReplyBody", ck.body_of(resp))
        is_init = _answers_initialize(rid, body, ctx)
        if sub != "success" or not is_init:
            return None
        current = body.get("currentModelId")
        if isinstance(current, str) and current:
            ctx.state.control.default_model = current
        out = claude_initialize(body, ctx.state.pid)
        out.update(ctx.state.control.init_applied)
        outer = _target_keys(out, body, resp, target_of(ctx))
        out = self._scrubbed(out, ctx)
        return (ck.with_response(frame, {**resp, "response": out, **outer}),)

    def _scrubbed(self, out: dict[str, Any], ctx: Context) -> dict[str, Any]:
        """The reply without credentials (mode ``redact``: replaced; ``strip``: removed)."""
        scrub, done = _SCRUBS.get(self.mode, _REDACT)
        out, n = scrub(out)
        if n:
            ctx.count(self.rule, f"credentials-{self.mode}")
            ctx.log(self.rule, f"{n} credential(s) in the initialize reply {done}", "info")
        return out


#: how each mode scrubs credentials, and what it says it did
_REDACT = (redact_obj, "replaced")
_SCRUBS = {"strip": (strip_obj, "removed"), "redact": _REDACT}


def _answers_initialize(rid: str | None, body: Mapping[str, Any], ctx: Context) -> bool:
    """A reply to an ``initialize``: by the request it answers, or, for a request the
    bridge did not see, by its shape (``commands`` and ``output_style``)."""
    req = ctx.state.control.requests.get(rid) if rid is not None else None
    if req is not None:
        return req.subtype == "initialize"
    return "commands" in body and "output_style" in body


def _target_keys(
    out: dict[str, Any], body: wire.InitializeReplyBody, resp: dict[str, Any], target: Target
) -> dict[str, Any]:
    """The keys of a newer target added to the reply (``out``, in place; a key it has
    is kept) and to each of its models; returns those added around it."""
    if not target.initialize_keys and not target.model_keys:
        return {}
    facts = {"permission_mode": _text(_permission_mode(body), "default")}
    for key, value in values(target.initialize_keys, facts):
        out.setdefault(key, value)
    out["models"] = _with_keys(out["models"], values(target.model_keys, {}))
    return {k: v for k, v in values(target.initialize_outer_keys, {}) if k not in resp}


def _permission_mode(body: wire.InitializeReplyBody) -> Any:
    return body.get("permissionMode", body.get("currentPermissionMode"))


def _with_keys(models: list[dict[str, Any]], extra: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """Each model with the keys of ``extra`` it lacks."""
    return [{**m, **{k: v for k, v in extra if k not in m}} for m in models]


def _text(value: Any, default: str) -> str:
    """``value`` when it is a non-empty string, else ``default``."""
    return value if isinstance(value, str) and value else default


def _then_rest(
    out: dict[str, Any], source: Mapping[str, Any], skip: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``out`` followed by the keys of ``source`` it has not (but those in ``skip``)."""
    out.update((k, v) for k, v in source.items() if k not in out and k not in skip)
    return out


def claude_initialize(reply: Mapping[str, Any], pid: int) -> dict[str, Any]:
    """cbc's initialize reply in Claude Code 2.1.220's shape and key order (capture
    ``nocreds_idle-interrupt_…``, twins): Claude's off/false feature flags after ``pid``,
    unknown keys kept after Claude's, cbc's ``currentModelId`` dropped."""
    body = cast("wire.InitializeReplyBody", reply)
    out: dict[str, Any] = {
        "commands": _each(_command, body.get("commands")),
        "agents": _each(_agent, body.get("agents")),
        "output_style": _text(body.get("output_style"), "default"),
        "available_output_styles": _output_styles(body),
        "models": _each(_model, body.get("models")),
        "account": _account(body.get("account")),
        "pid": pid,
        **CLAUDE_ONLY_FLAGS,
    }
    return _then_rest(out, body, CBC_ONLY_KEYS)


#: cbc's names of output styles whose name in Claude differs
_STYLE_NAMES = {"Default": "default"}


def _output_styles(body: wire.InitializeReplyBody) -> list[str]:
    """cbc's output styles by Claude's names, ``default`` first when cbc lists none so."""
    styles = [
        _STYLE_NAMES.get(s, s)
        for s in list_at(body, "available_output_styles")
        if isinstance(s, str)
    ]
    if "default" not in styles:
        styles.insert(0, "default")
    return styles


def _each(shape: Callable[[dict[str, Any]], dict[str, Any]], value: Any) -> list[dict[str, Any]]:
    """Each object of a list (other values left out), reshaped; ``[]`` for a value that
    is no list."""
    return [shape(v) for v in _dicts(value)]


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _command(command: dict[str, Any]) -> dict[str, Any]:
    c = cast("wire.Command", command)
    name = c.get("name")
    out: dict[str, Any] = {
        "name": name.removeprefix("/") if isinstance(name, str) else str(name),
        "description": _text(c.get("description"), ""),
        "argumentHint": _text(c.get("argumentHint", c.get("argument_hint", "")), ""),
    }
    return _then_rest(out, c, frozenset({"argument_hint"}))


def _agent(agent: dict[str, Any]) -> dict[str, Any]:
    a = cast("wire.Agent", agent)
    out = {"name": str(a.get("name", "")), "description": str(a.get("description", ""))}
    return _then_rest(out, a)


def _model(model: dict[str, Any]) -> dict[str, Any]:
    m = cast("wire.ModelInfo", model)
    value = m.get("value", m.get("id"))
    shown = m.get("displayName", m.get("name", value))
    out: dict[str, Any] = {
        "value": str(value),
        "displayName": str(shown),
        "description": str(m.get("description", shown)),
    }
    return _then_rest(out, m, frozenset({"id", "name"}))


def _account(value: Any) -> dict[str, Any]:
    """Claude's ``{tokenSource, apiKeySource?, apiProvider}`` (captures ``claude-2.1.220/
    mockapi_*``: ``apiKeySource: ANTHROPIC_API_KEY`` with a key), then cbc's own fields.
    cbc names an API-key login ``anonymous_<key tail>``; its credentials are scrubbed by
    the caller."""
    acc = cast("wire.Account", value if isinstance(value, dict) else {})
    out: dict[str, Any] = {"tokenSource": acc.get("tokenSource", "none")}
    if _api_key_login(acc):
        out["apiKeySource"] = acc.get("apiKeySource", "CODEBUDDY_API_KEY")
    out["apiProvider"] = acc.get("apiProvider", "firstParty")
    return _then_rest(out, acc)


def _api_key_login(acc: wire.Account) -> bool:
    """An account with an API key: Claude's ``apiKeySource``, or cbc's ``anonymous_`` uid."""
    uid = acc.get("uid")
    return "apiKeySource" in acc or (isinstance(uid, str) and uid.startswith("anonymous_"))
