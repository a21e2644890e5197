"""``api-error``: a model request that failed, or a reply the model refused, ends the turn
as Claude Code 2.1.220 ends it.

Strategy: cbc's own messages for a failed request, a refusal and a cut stream are
recognized by their exact shape, never by their words alone, and each is rewritten into
the frames Claude writes for that case within the same turn (the line's uuid from
``ControlState.pending_user``); the model's own frames pass untouched.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, cast

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


def error_kind(status: int) -> str:
    """Claude's ``error`` for an HTTP status (its ``api_retry``/assistant vocabulary)."""
    if status == 429:
        return "rate_limit"
    if status == 529:
        return "overloaded"
    if status >= 500:
        return "server_error"
    if status in (401, 403):
        return "authentication_failed"
    return "invalid_request" if status == 400 else "unknown"


def _only_text(obj: Assistant) -> str | None:
    message = obj.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if (
        isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], dict)
        and content[0].get("type") == "text"
        and isinstance(content[0].get("text"), str)
    ):
        return str(content[0]["text"])
    return None


def _no_output(obj: Assistant) -> bool:
    message = obj.get("message")
    usage = message.get("usage") if isinstance(message, dict) else None
    return isinstance(usage, dict) and usage.get("output_tokens") in (0, None)


def _is_cut_stream_notice(obj: Assistant) -> bool:
    """cbc's own ``aborted`` message after a cut stream: that one word, zero output, on the
    main thread, its frame uuid its message id (cbc's mark of a message it wrote itself)."""
    message = obj.get("message")
    return (
        obj.get("parent_tool_use_id") is None
        and isinstance(message, dict)
        and _only_text(obj) == "aborted"
        and _no_output(obj)
        and obj.get("uuid") is not None
        and obj.get("uuid") == message.get("id")
    )


def parse_api_error(text: str, session_id: Any) -> tuple[int, str] | None:
    """``(status, message)`` of cbc's failed-request text, when it names this session."""
    m = _CBC_API_ERROR.fullmatch(text.strip())
    if m is None or (isinstance(session_id, str) and session_id and m.group(4) != session_id):
        return None
    return int(m.group(1)), m.group(2)


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
        obj = frame.obj
        if not isinstance(obj, dict):
            return None
        if obj.get("type") == "system":
            control = ctx.state.control
            if not control.turn_active:
                self._line = control.pending_user[0] if control.pending_user else None
            return None
        if obj.get("type") == "assistant":
            assistant = cast(Assistant, obj)
            if self._aborted is None and _is_cut_stream_notice(assistant):
                self._aborted = frame
                ctx.hold()
                return ()
            if self._aborted is not None and assistant.get("parent_tool_use_id") is None:
                self._aborted = None  # the recovered answer follows: Claude shows only it
                ctx.drop_held(self.rule)
            return self._assistant(frame, assistant, ctx)
        if obj.get("type") == "result":
            held, self._aborted = self._aborted, None
            out = self._result(frame, cast(Result, obj))
            if held is None:
                return out
            return (held, *(out if out is not None else (frame,)))
        return None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        held, self._aborted = self._aborted, None
        return (held,) if held is not None else None

    def _assistant(self, frame: Frame, obj: Assistant, ctx: Context) -> Output:
        if obj.get("parent_tool_use_id") is not None or not _no_output(obj):
            return None
        text = _only_text(obj)
        if text is None:
            return None
        parsed = parse_api_error(text, obj.get("session_id"))
        if parsed is not None:
            status, message = parsed
            claude = f"API Error: {status} {message}"
            self._error = (status, claude)
            notice = self._synthetic(frame, obj, claude, "stop_sequence", error_kind(status))
            if obj.get("uuid") == obj["message"].get("id"):  # cbc's one id for both
                notice = notice.replace({**notice.obj, "uuid": ctx.env.new_uuid()})
            return (notice,)
        if text.strip() == CBC_REFUSAL:
            self._refusal = text
            # Claude's notice is a message of its own; cbc's reuses the refused message's id
            notice = self._synthetic(frame, obj, text, "refusal", "invalid_request")
            typed = cast(Assistant, notice.obj)
            body: Message = {**typed["message"], "id": ctx.env.new_uuid()}
            new: Assistant = {**typed, "message": body}
            return (self._no_fallback(obj, ctx), notice.replace(as_dict(new)))
        return None

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
            errors = obj.get("errors")
            if (
                obj.get("subtype") == "error_during_execution"
                and isinstance(errors, list)
                and len(errors) == 1
                and isinstance(errors[0], str)
            ):
                parsed = parse_api_error(errors[0], obj.get("session_id"))
                if parsed is not None:
                    error = (parsed[0], f"API Error: {parsed[0]} {parsed[1]}")
        if error is not None:
            new = cast(Result, {k: v for k, v in obj.items() if k != "errors"})
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
            return (frame.replace(as_dict(new)),)
        if refusal is not None:
            refused: Result = {
                **obj,
                "is_error": True,
                "result": refusal,
                "stop_reason": "refusal",
                "terminal_reason": "api_error",
                "api_error_status": None,
            }
            return (frame.replace(as_dict(refused)),)
        return None
