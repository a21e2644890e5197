"""A scripted stand-in for the model APIs both CLIs call, on 127.0.0.1 (ephemeral port).

One server speaks both dialects, chosen by path, so any backend can point at it:
- Anthropic Messages (Claude Code: ``ANTHROPIC_BASE_URL``): ``POST /v1/messages`` streams
  ``message_start``, ``content_block_start/delta/stop`` (``text_delta``; ``tool_use`` with
  ``input_json_delta``), ``message_delta`` (stop_reason, usage), ``message_stop``; also
  ``/v1/messages/count_tokens``, ``GET /v1/models``, and ``HEAD /api/hello`` (reachability).
- OpenAI Chat Completions (cbc: ``CODEBUDDY_BASE_URL``, no ``/v1`` added):
  ``POST .../chat/completions`` streams ``chat.completion.chunk`` deltas (content or
  ``tool_calls``), ``finish_reason``, a usage chunk, ``[DONE]``.
Anything else gets a 404 in the Anthropic error shape, and is logged like every request.

A rule can script more than a text or one call (``harness.brain.Rule``): several
calls in one message, a thinking block (OpenAI: ``reasoning_content``), stop reasons
``max_tokens`` / ``refusal`` (OpenAI ``length`` / ``content_filter``), an HTTP error
(429 with ``retry-after``, 500, 529 ``overloaded_error``...) for ``times`` requests so the
CLI's retry gets the next rule, a stream cut mid-reply (the connection closed without the
body's last chunk), a stall in mid-stream, and a condition on images in the request.
What to answer is ``harness.brain``'s business; the bytes are ``sse``'s.

HTTP/1.1 is h11's state machine (keep-alive, chunked SSE bodies, a bounded request size).
Slow replies: headers go out at once, then (Anthropic) ``message_start``; during the delay
a ping is sent every ``PING_EVERY`` seconds (``event: ping`` / an SSE comment), which keeps
idle-stream watchdogs quiet and notices a client that hung up (an interrupt aborts the
request: that ends the handler quietly).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import h11
import orjson
import trio

from harness import sse
from harness.brain import Brain, Decision, ModelScript, Request, Rule, parse_request

__all__ = ["Brain", "Decision", "ModelScript", "ModelServer", "Request", "Rule"]

PING_EVERY = 5.0
MAX_BODY = 64 * 1024 * 1024
READ_SIZE = 64 * 1024


class ModelServer:
    """``await nursery.start(server.serve)`` returns the base URL; ``log`` lists every
    request. ``on_request`` (if set) is called with each log entry as it is made, and the
    parsed model request (None for other endpoints)."""

    def __init__(
        self,
        script: ModelScript | None = None,
        clock: Callable[[], float] = trio.current_time,
        keep_bodies: bool = False,
    ) -> None:
        self.brain = Brain(script or ModelScript())
        self.log: list[dict[str, Any]] = []
        #: with ``keep_bodies``: (log entry number, headers, parsed body) of model requests
        self.bodies: list[tuple[int, dict[str, str], dict[str, Any]]] = []
        self._keep_bodies = keep_bodies
        self.on_request: Callable[[dict[str, Any], Request | None], None] | None = None
        self.url = ""
        self.t0: float | None = None
        self._clock = clock
        self._ids = sse.Ids()

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        if self.t0 is None:
            self.t0 = self._clock()
        task_status.started(self.url)
        await trio.serve_listeners(self._connection, listeners)

    def _record(self, entry: dict[str, Any], req: Request | None = None) -> dict[str, Any]:
        entry = {"t": round(self._clock() - (self.t0 or 0.0), 3), "n": len(self.log) + 1, **entry}
        self.log.append(entry)
        if self.on_request is not None:
            self.on_request(entry, req)
        return entry

    async def _connection(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_BODY)
        try:
            while True:
                got = await _read_request(conn, stream)
                if got is None:
                    return
                await self._dispatch(conn, stream, *got)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            pass  # the client hung up, e.g. an interrupt aborted its request
        finally:
            await stream.aclose()

    async def _dispatch(
        self, conn: h11.Connection, stream: trio.SocketStream, req: h11.Request, body: bytes
    ) -> None:
        method = req.method.decode()
        target = req.target.decode()
        path = target.split("?", 1)[0].rstrip("/")
        headers = {k.decode().lower(): v.decode("latin-1") for k, v in req.headers}
        send = _Sender(conn, stream)
        if await self._other_endpoint(send, method, target, path, body):
            return
        dialect = _dialect(path)
        if method != "POST" or dialect is None:
            self._record({"method": method, "path": target, "status": 404})
            await send.json(404, sse.error_body(f"no such endpoint: {method} {target}"))
            return
        parsed = await self._json_body(send, method, target, body)
        if parsed is not None:
            await self._model(send, method, target, dialect, headers, parsed)

    async def _other_endpoint(
        self, send: _Sender, method: str, target: str, path: str, body: bytes
    ) -> bool:
        """Answer a request that asks no model (reachability, ``count_tokens``, the model
        list); False for any other."""
        if method == "HEAD" or path == "/api/hello":
            self._record({"method": method, "path": target})
            await send.whole(200, b"", "text/plain")
        elif method == "POST" and path.endswith("/count_tokens"):
            self._record({"method": method, "path": target})
            await send.json(200, {"input_tokens": max(1, len(body) // 4)})
        elif method == "GET" and path.endswith("/models"):
            self._record({"method": method, "path": target})
            await send.json(200, sse.models_list("openai" if "/v1/" not in target else "anthropic"))
        else:
            return False
        return True

    async def _json_body(
        self, send: _Sender, method: str, target: str, body: bytes
    ) -> dict[str, Any] | None:
        """The request's body, a JSON object; None when it is not (answered with a 400)."""
        try:
            parsed = orjson.loads(body)
            if not isinstance(parsed, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as e:
            self._record({"method": method, "path": target, "status": 400})
            await send.json(400, sse.error_body(f"bad request body: {e}", "invalid_request_error"))
            return None
        return parsed

    async def _model(
        self,
        send: _Sender,
        method: str,
        target: str,
        dialect: str,
        headers: dict[str, str],
        parsed: dict[str, Any],
    ) -> None:
        """Answer a model request (either dialect) as the brain decides."""
        r = parse_request(dialect, headers, parsed)
        decision = self.brain.decide(r)
        entry = self._record(
            {
                "method": method,
                "path": target,
                "dialect": r.dialect,
                "agent": r.agent,
                "model": r.model,
                "stream": r.stream,
                "n_messages": r.n_messages,
                "n_tools": len(r.tools),
                "latest": r.shown[-300:],
                "decision": decision.summary(),
                "delay": decision.delay,
                **({"images": r.images} if r.images else {}),
                **({"status": decision.status} if decision.status is not None else {}),
            },
            r,
        )
        if self._keep_bodies:
            self.bodies.append((entry["n"], headers, parsed))
        if decision.status is not None:
            await trio.sleep(decision.delay)
            body_, extra = sse.http_error(r.dialect, decision)
            await send.json(decision.status, body_, extra)
        elif not r.stream:
            await trio.sleep(decision.delay)
            await send.json(200, sse.whole_reply(r.dialect, r.model, decision, self._ids))
        else:
            await self._stream(send, r, decision)

    async def _stream(self, send: _Sender, r: Request, decision: Decision) -> None:
        """The reply as server-sent events: the delay and any stall with pings, a cut reply
        left without its end."""
        await send.start(200, "text/event-stream")
        events = sse.stream_reply(r.dialect, r.model, decision, self._ids)
        if r.dialect == "anthropic":
            await send.chunk(next(events))  # message_start before the wait, as the API does
        await self._wait(send, r.dialect, decision.delay)
        for event in events:
            if event is not sse.MIDDLE:
                await send.chunk(event)
            elif decision.cut:
                return  # no end of the body: the connection is closed mid-reply
            else:
                await self._wait(send, r.dialect, decision.stall)
        await send.end()

    async def _wait(self, send: _Sender, dialect: str, seconds: float) -> None:
        """Sleep, with a ping every ``PING_EVERY`` seconds."""
        remaining = seconds
        while remaining > 0:
            step = min(remaining, PING_EVERY)
            await trio.sleep(step)
            remaining -= step
            await send.chunk(sse.ping(dialect))


def _dialect(path: str) -> str | None:
    """The API a model request's path names (None: no model endpoint)."""
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "openai"
    return None


async def _read_request(
    conn: h11.Connection, stream: trio.SocketStream
) -> tuple[h11.Request, bytes] | None:
    req: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(READ_SIZE)
            conn.receive_data(data)  # b"" means EOF
            continue
        if isinstance(event, h11.Request):
            req = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_BODY:
                raise h11.RemoteProtocolError("request body too large")
        elif isinstance(event, h11.EndOfMessage):
            assert req is not None
            return req, bytes(body)
        elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None


class _Sender:
    def __init__(self, conn: h11.Connection, stream: trio.SocketStream) -> None:
        self.conn = conn
        self.stream = stream

    async def _send(self, event: Any) -> None:
        data = self.conn.send(event)
        if data:
            await self.stream.send_all(data)

    async def start(
        self,
        status: int,
        content_type: str,
        length: int | None = None,
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        headers = [
            ("content-type", content_type),
            ("cache-control", "no-cache"),
            ("request-id", "req_mock"),
            *(extra or []),
        ]
        if length is not None:
            headers.append(("content-length", str(length)))
        await self._send(h11.Response(status_code=status, headers=headers))

    async def chunk(self, data: bytes) -> None:
        await self._send(h11.Data(data=data))

    async def end(self) -> None:
        await self._send(h11.EndOfMessage())

    async def whole(
        self,
        status: int,
        body: bytes,
        content_type: str,
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        await self.start(status, content_type, len(body), extra)
        if body and self.conn.our_state is h11.SEND_BODY:
            await self.chunk(body)
        await self.end()

    async def json(self, status: int, obj: Any, extra: list[tuple[str, str]] | None = None) -> None:
        await self.whole(status, orjson.dumps(obj), "application/json", extra)
