"""Claude's control replies (``unsupported-control``, ``control-reply``:
``compat/stages/control.py``): a reply in the target's shape, a setter's success with the
side frames Claude writes, a result without the errors of the bridge's own deny.
"""

from __future__ import annotations

from typing import Any, cast

from compat import controlkit as ck
from compat import wire
from compat.frames import Frame
from compat.session import ControlRequest
from compat.stage import Context
from compat.stages.turns import iso_ms
from compat.target import Target, target_of


def for_target(ctx: Context, reply: dict[str, Any], req: ControlRequest | None) -> dict[str, Any]:
    """A control reply in the target's shape (compat.target): an error's ``error_code``
    (2.1.332), a successful ``set_model``'s body (2.1.332: ``{model}``, the model set);
    ``reply`` itself when nothing changes."""
    target = target_of(ctx)
    resp = cast("wire.ControlResponse", reply).get("response")
    if not isinstance(resp, dict):
        return reply
    if resp.get("subtype") == "error":
        return _with_error_code(target, reply, resp)
    return _with_set_model_body(target, reply, resp, req)


def _with_error_code(
    target: Target, reply: dict[str, Any], resp: wire.ControlResponseBody
) -> dict[str, Any]:
    message = resp.get("error")
    code = target.error_code(message) if isinstance(message, str) else None
    if code is None or "error_code" in resp:
        return reply
    return {**reply, "response": {**resp, "error_code": code}}


def _with_set_model_body(
    target: Target,
    reply: dict[str, Any],
    resp: wire.ControlResponseBody,
    req: ControlRequest | None,
) -> dict[str, Any]:
    keep = target.set_model_reply
    if keep is None or req is None or req.subtype != "set_model":
        return reply
    body = {k: req.request.get(k) for k in keep}
    if resp.get("response") == body:
        return reply
    return {**reply, "response": {**resp, "response": body}}


def _deny_error(e: Any) -> bool:
    return isinstance(e, str) and e.startswith("Permission denied for tool(s)")


def without_deny_errors(frame: Frame) -> Frame:
    """A result without the ``errors`` cbc writes for the bridge's own deny + interrupt
    (``Permission denied for tool(s): X``: the client denied nothing; ``interrupted-turn``
    writes Claude's)."""
    obj = frame.view(wire.Result)
    errors = obj.get("errors")
    if not isinstance(errors, list) or not errors or not all(_deny_error(e) for e in errors):
        return frame
    kept: dict[str, Any] = {k: v for k, v in obj.items() if k != "errors"}
    return frame.replace(kept)


def setter_reply(ctx: Context, rid: str, request: dict[str, Any]) -> list[Frame]:
    """What Claude Code 2.1.220 writes for a successful ``set_model`` /
    ``set_permission_mode`` (raw run midsession-controls, 2026-12-01): ``set_model``: the
    replayed ``<local-command-stdout>Set model to M</local-command-stdout>`` user frame
    (``isReplay``; also without ``--replay-user-messages``), then a success without a
    ``response`` body; ``set_permission_mode``: ``{mode}``, then a ``system/status``
    (``status: null``) with the new ``permissionMode``. The side frames need the session
    id: before cbc has told it, only the reply."""
    body = cast("wire.SetterBody", request)
    if body.get("subtype") == "set_model":
        return _set_model_reply(ctx, rid, body)
    return _set_permission_mode_reply(ctx, rid, body)


def _set_model_reply(ctx: Context, rid: str, body: wire.SetterBody) -> list[Frame]:
    out = []
    sid = ctx.state.session_id
    model = body.get("model")
    if sid is not None and isinstance(model, str):
        ctx.state.control.set_model = model
        replay = {
            "type": "user",
            "message": {
                "role": "user",
                "content": f"<local-command-stdout>Set model to {model}</local-command-stdout>",
            },
            "session_id": sid,
            "parent_tool_use_id": None,
            "uuid": ctx.env.new_uuid(),
            "timestamp": iso_ms(ctx.wall_ms()),
            "isReplay": True,
        }
        out.append(Frame.from_obj(replay))
    reply = {"type": "control_response", "response": {"subtype": "success", "request_id": rid}}
    return [*out, Frame.from_obj(reply)]


def _set_permission_mode_reply(ctx: Context, rid: str, body: wire.SetterBody) -> list[Frame]:
    sid = ctx.state.session_id
    mode = body.get("mode")
    out = [Frame.from_obj(ck.success(rid, {"mode": mode}))]
    if sid is not None and isinstance(mode, str):
        status = {
            "type": "system",
            "subtype": "status",
            "status": None,
            "permissionMode": mode,
            "uuid": ctx.env.new_uuid(),
            "session_id": sid,
        }
        out.append(Frame.from_obj(status))
    return out
