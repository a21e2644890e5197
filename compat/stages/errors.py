"""``api-error``: a model request that failed, or a reply the model refused, ends the turn
as Claude Code 2.1.220 ends it.

Strategy: cbc's own messages for a failed request, a refusal and a cut stream are
recognized by their exact shape, never by their words alone, and each is rewritten into
the frames Claude writes for that case within the same turn (the line's uuid from
``ControlState.pending_user``); the model's own frames pass untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, TypeGuard, cast

import attrs

from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.wire import Assistant, Message, Result, as_dict

#: cbc's text for a failed model request: status, message, (request id/session id)
_CBC_API_ERROR = re.compile(r"(\d{3}) (.+) \(([0-9a-fA-F-]{8,})/([0-9a-fA-F-]{36})\)", re.S)
#: cbc's notice after a reply the model refused (OpenAI finish_reason content_filter)
CBC_REFUSAL = (
    "This topic is currently outside the scope of my capabilities, "
    "so I'm unable to discuss it further."
)


#: Claude's ``error`` for the HTTP statuses it names (its ``api_retry``/assistant
#: vocabulary); another 5xx is a ``server_error``, anything else ``unknown``
_ERROR_KINDS = {
    429: "rate_limit",
    529: "overloaded",
    401: "authentication_failed",
    403: "authentication_failed",
    400: "invalid_request",
}


def error_kind(status: int) -> str:
    """Claude's ``error`` for an HTTP status (its ``api_retry``/assistant vocabulary)."""
    kind = _ERROR_KINDS.get(status)
    if kind is not None:
        return kind
    return "server_error" if status >= 500 else "unknown"


def _text_block(block: Any) -> str | None:
    """The text of a ``text`` content block."""
    if not isinstance(block, dict) or block.get("type") != "text":
        return None
    text = block.get("text")
    return text if isinstance(text, str) else None


def _only_text(obj: Assistant) -> str | None:
    """The text of a message whose content is a single text block."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or len(content) != 1:
        return None
    return _text_block(content[0])


def _no_output(obj: Assistant) -> bool:
    message = obj.get("message")
    usage = message.get("usage") if isinstance(message, dict) else None
    return isinstance(usage, dict) and usage.get("output_tokens") in (0, None)


def _own_text(obj: Assistant) -> str | None:
    """The text of a message cbc wrote itself, not the model: a single text block with zero
    output, on the main thread."""
    if obj.get("parent_tool_use_id") is not None or not _no_output(obj):
        return None
    return _only_text(obj)


def _is_cut_stream_notice(obj: Assistant) -> bool:
    """cbc's own ``aborted`` message after a cut stream: that one word, zero output, on the
    main thread, its frame uuid its message id (cbc's mark of a message it wrote itself)."""
    if _own_text(obj) != "aborted":
        return False
    uuid = obj.get("uuid")
    return uuid is not None and uuid == obj["message"].get("id")


def parse_api_error(text: str, session_id: Any) -> tuple[int, str] | None:
    """``(status, message)`` of cbc's failed-request text, when it names this session."""
    m = _CBC_API_ERROR.fullmatch(text.strip())
    if m is None or (isinstance(session_id, str) and session_id and m.group(4) != session_id):
        return None
    return int(m.group(1)), m.group(2)


def _api_error_text(status: int, message: str) -> str:
    """Claude's text of a failed request."""
    return f"API Error: {status} {message}"


def _failed_request(result: Result) -> tuple[int, str] | None:
    """``(status, Claude's text)`` of a request cbc's result reports failed: an
    ``error_during_execution`` whose one error is cbc's failed-request text."""
    errors = result.get("errors")
    if result.get("subtype") != "error_during_execution" or not _one_text(errors):
        return None
    parsed = parse_api_error(errors[0], result.get("session_id"))
    return None if parsed is None else (parsed[0], _api_error_text(*parsed))


def _one_text(values: Any) -> TypeGuard[list[str]]:
    return isinstance(values, list) and len(values) == 1 and isinstance(values[0], str)


def _api_error_result(result: Result, error: tuple[int, str]) -> Result:
    """Claude's result of a turn whose request failed (cbc's ``errors`` dropped)."""
    new = cast(Result, {k: v for k, v in result.items() if k != "errors"})
    new.update(
        {
            "subtype": "success",
            "is_error": True,
            "result": error[1],
            "stop_reason": "stop_sequence",
            "terminal_reason": "api_error",
            "api_error_status": error[0],
        }
    )
    return new


def _refusal_result(result: Result, refusal: str) -> Result:
    """Claude's result of a turn the model refused, the notice as its ``result``."""
    return {
        **result,
        "is_error": True,
        "result": refusal,
        "stop_reason": "refusal",
        "terminal_reason": "api_error",
        "api_error_status": None,
    }


@register
@attrs.define
class ApiError(Stage):
    """cbc's failed model request and refusal as Claude's: a synthetic API-error assistant
    (`is_api_error_message`, `error`) and `result{is_error, terminal_reason: api_error,
    api_error_status}`.

    A failed request: cbc 2.163.0 reports a failed request (an HTTP error it does not retry,
    or retries out) as an assistant message of its own whose only text is ``<status> <message>
    (<request id>/<session id>)``, with zero usage, then ``error_during_execution`` with that
    text in ``errors``. Claude writes a synthetic assistant (``model: <synthetic>``,
    ``stop_reason: stop_sequence``, ``error``, ``is_api_error_message: true``) whose text
    starts ``API Error: <status> <message>``, then ``result{subtype: success, is_error: true,
    terminal_reason: api_error, api_error_status: <status>, result: <that text>}`` (twins
    api-error-exhausted, claude vs cbc-raw). A client that reads ``api_error_status`` or
    ``is_api_error_message`` to tell a failed request from a model's answer gets them.

    A refusal: cbc's refusal (OpenAI ``content_filter``) passes the model's text, then adds an
    assistant message ``This topic is currently outside the scope of my capabilities…`` of its
    own and ends ``success`` with ``is_error: false`` and the model's text as ``result``;
    Claude marks its own notice ``stop_reason: refusal`` (``error: invalid_request``,
    ``is_api_error_message``) and ends ``is_error: true``, ``stop_reason: refusal``,
    ``terminal_reason: api_error``, ``result`` the notice (twins stop-refusal). The notice's
    words stay cbc's (Claude's name its model and Anthropic's policy page). Claude reports the
    refusal first (``system/model_refusal_no_fallback``: the model, the refused line's uuid;
    no request id or refusal category, which cbc's wire lacks): synthesized before the notice.

    A reply stream cut mid-way: Claude retries the request and shows only the answer (and its
    ``system/api_retry``); cbc writes an assistant message ``aborted`` of its own (zero usage,
    its frame uuid the message id), then sends a recovery request and streams the answer in
    the same turn (twins stream-cut). That message is held; when an answer follows in the turn
    it is dropped (counted), otherwise (the turn ends, the backend exits) it is released in
    place.

    All three are recognized by their exact shape (the text pattern and the session id in it,
    or the notice's words with zero output tokens), so a model that says the same words keeps
    them. ``command-lifecycle`` then ends the line's command ``cancelled``, as Claude does
    after an ``api_error`` turn.
    """

    rule: ClassVar[str] = "api-error"
    reads: ClassVar[frozenset[str]] = frozenset(
        {"control.pending_user", "control.turn_active", "model"}
    )
    reads_earlier: ClassVar[frozenset[str]] = frozenset(
        {"control.pending_user", "control.turn_active"}
    )
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "result", "system/init"})

    #: the turn's failed request (status, Claude's text) or refusal notice, once seen
    _error: tuple[int, str] | None = attrs.field(default=None, init=False)
    _refusal: str | None = attrs.field(default=None, init=False)
    #: cbc's "aborted" message after a cut stream, held until the turn shows what follows
    _aborted: Frame | None = attrs.field(default=None, init=False)
    #: the uuid of the client line the running turn answers (read at the turn's init,
    #: before control-state takes it off ``pending_user``)
    _line: str | None = attrs.field(default=None, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        step = _STEPS.get(frame.obj.get("type"))
        return step(self, frame, ctx) if step is not None else None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        held, self._aborted = self._aborted, None
        return (held,) if held is not None else None

    def _turn_start(self, frame: Frame, ctx: Context) -> Output:
        """The init of a turn: the uuid of the line it answers (a turn already running
        keeps its own)."""
        control = ctx.state.control
        if not control.turn_active:
            self._line = control.pending_user[0] if control.pending_user else None
        return None

    def _on_assistant(self, frame: Frame, ctx: Context) -> Output:
        assistant = frame.view(Assistant)
        if self._aborted is None and _is_cut_stream_notice(assistant):
            self._aborted = frame
            ctx.hold()
            return ()
        if self._aborted is not None and assistant.get("parent_tool_use_id") is None:
            self._aborted = None  # the recovered answer follows: Claude shows only it
            ctx.drop_held(self.rule)
        return self._assistant(frame, assistant, ctx)

    def _on_result(self, frame: Frame, ctx: Context) -> Output:
        """The turn's result, after the cut-stream notice still held (no answer came)."""
        held, self._aborted = self._aborted, None
        out = self._result(frame, frame.view(Result))
        if held is None:
            return out
        return (held, *(out if out is not None else (frame,)))

    def _assistant(self, frame: Frame, obj: Assistant, ctx: Context) -> Output:
        text = _own_text(obj)
        if text is None:
            return None
        parsed = parse_api_error(text, obj.get("session_id"))
        if parsed is not None:
            return self._api_error(frame, obj, parsed, ctx)
        if text.strip() == CBC_REFUSAL:
            return self._refused(frame, obj, text, ctx)
        return None

    def _api_error(
        self, frame: Frame, obj: Assistant, parsed: tuple[int, str], ctx: Context
    ) -> Output:
        """cbc's failed-request message as Claude's synthetic API-error assistant."""
        status, message = parsed
        claude = _api_error_text(status, message)
        self._error = (status, claude)
        notice = self._synthetic(frame, obj, claude, "stop_sequence", error_kind(status))
        if obj.get("uuid") == obj["message"].get("id"):  # cbc's one id for both
            notice = notice.replace({**notice.obj, "uuid": ctx.env.new_uuid()})
        return (notice,)

    def _refused(self, frame: Frame, obj: Assistant, text: str, ctx: Context) -> Output:
        """cbc's refusal notice as Claude's, after Claude's report that no fallback model
        answers."""
        self._refusal = text
        # Claude's notice is a message of its own; cbc's reuses the refused message's id
        notice = self._synthetic(frame, obj, text, "refusal", "invalid_request")
        typed = notice.view(Assistant)
        body: Message = {**typed["message"], "id": ctx.env.new_uuid()}
        new: Assistant = {**typed, "message": body}
        return (self._no_fallback(obj, ctx), notice.replace(as_dict(new)))

    def _no_fallback(self, obj: Assistant, ctx: Context) -> Frame:
        """Claude's report that no fallback model answers the refused line: the session's
        model and the line's uuid (what the bridge knows); no request id or refusal category,
        which are not on cbc's wire (null, as Claude writes them when the API gives none)."""
        line = self._line
        return Frame.synth(
            {
                "type": "system",
                "subtype": "model_refusal_no_fallback",
                "original_model": ctx.state.model,
                "request_id": None,
                "api_refusal_category": None,
                "api_refusal_explanation": None,
                "refused_user_message_uuid": line,
                "content": "",
                "session_id": obj.get("session_id"),
                "uuid": ctx.env.new_uuid(),
            },
            self.rule,
        )

    @staticmethod
    def _synthetic(frame: Frame, obj: Assistant, text: str, stop: str, error: str) -> Frame:
        message: Message = {
            **obj["message"],
            "model": "<synthetic>",
            "container": None,
            "stop_details": None,
            "stop_reason": stop,
            "stop_sequence": "",
            "content": [{"type": "text", "text": text}],
        }
        new: Assistant = {**obj, "message": message, "error": error, "is_api_error_message": True}
        return frame.replace(as_dict(new))

    def _result(self, frame: Frame, obj: Result) -> Output:
        error, self._error = self._error, None
        refusal, self._refusal = self._refusal, None
        if error is None:
            error = _failed_request(obj)
        if error is not None:
            return (frame.replace(as_dict(_api_error_result(obj, error))),)
        if refusal is not None:
            return (frame.replace(as_dict(_refusal_result(obj, refusal))),)
        return None


#: what each type of frame the rule takes means to it
_STEPS: dict[Any, Callable[[ApiError, Frame, Context], Output]] = {
    "system": ApiError._turn_start,  # system/init
    "assistant": ApiError._on_assistant,
    "result": ApiError._on_result,
}
