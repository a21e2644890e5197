"""A small ACP client: the Agent Client Protocol (JSON-RPC 2.0, one JSON object per line)
spoken to an agent over its stdio, as Zed speaks it to Zed's Claude Code adapter
(``@zed-industries/claude-code-acp``, pinned in ``tests/js/package.json``).

The client sends requests (``initialize``, ``session/new``, ``session/prompt``,
``session/list``, ``session/load``) and notifications (``session/cancel``), and answers the
agent's requests: ``session/request_permission`` (with the option ``permission`` picks:
``"allow"``, ``"reject"``, or None for a cancelled outcome), ``fs/read_text_file`` and
``fs/write_text_file`` (on the real files; ``initialize`` advertises both, as Zed does; no
terminal, so Bash is the CLI's own). Every frame either way is kept in ``traffic``, every
``session/update`` in ``updates``.

``open_adapter`` starts the adapter (``node .../dist/index.js``) in a process group of its
own and ends the group on the way out (SIGTERM, then SIGKILL after a grace).
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import attrs
import trio

from .client_support import JS, group_alive, signal_group

PACKAGE = "@zed-industries/claude-code-acp"
ADAPTER_DIR = JS / "node_modules" / PACKAGE
ADAPTER = ADAPTER_DIR / "dist" / "index.js"
PROTOCOL_VERSION = 1
#: what ``initialize`` advertises: Zed's file system, no terminal
CLIENT_CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False}


def adapter_version() -> str | None:
    """The installed adapter's version; None: not installed."""
    try:
        meta = json.loads((ADAPTER_DIR / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = meta.get("version")
    return version if isinstance(version, str) and ADAPTER.is_file() else None


class AcpError(Exception):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, method: str, error: dict[str, Any]) -> None:
        self.method = method
        self.code = error.get("code")
        self.error_message = str(error.get("message", ""))
        self.data = error.get("data")
        super().__init__(f"{method}: error {self.code}: {self.error_message} {self.data or ''}")


#: picks the optionId to answer a permission request with (None: a cancelled outcome)
PermissionPolicy = Callable[[dict[str, Any]], str | None]


@attrs.define
class _Pending:
    method: str
    done: trio.Event = attrs.field(factory=trio.Event)
    result: Any = None
    error: dict[str, Any] | None = None


@attrs.define(eq=False)
class AcpClient:
    """The client side of one adapter process."""

    _stdin: trio.abc.SendStream
    _stdout: trio.abc.ReceiveStream
    permission: PermissionPolicy = lambda _req: "allow"
    #: (seconds since start, "out" (to the agent) / "in" (from it), the frame)
    traffic: list[tuple[float, str, dict[str, Any]]] = attrs.field(factory=list)
    updates: list[dict[str, Any]] = attrs.field(factory=list)
    permission_requests: list[dict[str, Any]] = attrs.field(factory=list)
    #: (method, params) of the agent's fs/* requests
    fs_requests: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    _next_id: int = 0
    _pending: dict[int, _Pending] = attrs.field(factory=dict)
    _send_lock: trio.Lock = attrs.field(factory=trio.Lock)
    _t0: float = attrs.field(factory=trio.current_time)
    closed: bool = False

    # -- the wire ------------------------------------------------------------------------
    async def _send(self, frame: dict[str, Any]) -> None:
        self.traffic.append((self._now(), "out", frame))
        async with self._send_lock:
            await self._stdin.send_all(json.dumps(frame).encode() + b"\n")

    def _now(self) -> float:
        return round(trio.current_time() - self._t0, 3)

    async def read_loop(self, nursery: trio.Nursery) -> None:
        buf = b""
        try:
            while True:
                chunk = await self._stdout.receive_some(65536)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._dispatch(line, nursery)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.closed = True
            for p in self._pending.values():
                p.error = {"code": None, "message": "the agent closed its stdout"}
                p.done.set()

    def _dispatch(self, line: bytes, nursery: trio.Nursery) -> None:
        try:
            frame = json.loads(line)
        except ValueError:
            frame = {"unparsed": line.decode(errors="replace")}
        if not isinstance(frame, dict):
            frame = {"unparsed": frame}
        self.traffic.append((self._now(), "in", frame))
        if "method" in frame and "id" in frame:
            nursery.start_soon(self._answer, frame)
        elif "method" in frame:
            if frame["method"] == "session/update":
                self.updates.append(frame.get("params") or {})
        elif "id" in frame and frame["id"] in self._pending:
            p = self._pending.pop(frame["id"])
            p.result, p.error = frame.get("result"), frame.get("error")
            p.done.set()

    # -- the agent's requests ---------------------------------------------------------------
    async def _answer(self, frame: dict[str, Any]) -> None:
        try:
            await self._answer_or_fail(frame)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the agent went away meanwhile

    async def _answer_or_fail(self, frame: dict[str, Any]) -> None:
        method, params = frame["method"], frame.get("params") or {}
        try:
            result = self._handle(method, params)
        except OSError as e:
            await self._send(
                {"jsonrpc": "2.0", "id": frame["id"], "error": {"code": -32603, "message": str(e)}}
            )
            return
        if result is None:
            await self._send(
                {
                    "jsonrpc": "2.0",
                    "id": frame["id"],
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )
            return
        await self._send({"jsonrpc": "2.0", "id": frame["id"], "result": result})

    def _handle(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "session/request_permission":
            self.permission_requests.append(params)
            option = self.permission(params)
            if option is None:
                return {"outcome": {"outcome": "cancelled"}}
            return {"outcome": {"outcome": "selected", "optionId": option}}
        if method == "fs/read_text_file":
            self.fs_requests.append((method, params))
            text = Path(params["path"]).read_text(encoding="utf-8")
            line, limit = params.get("line"), params.get("limit")
            if line is not None or limit is not None:
                lines = text.split("\n")
                start = max(0, int(line or 1) - 1)
                text = "\n".join(lines[start : start + int(limit) if limit else None])
            return {"content": text}
        if method == "fs/write_text_file":
            self.fs_requests.append((method, params))
            Path(params["path"]).write_text(params["content"], encoding="utf-8")
            return {}
        return None

    # -- the client's requests ------------------------------------------------------------
    async def request(self, method: str, params: dict[str, Any]) -> Any:
        if self.closed:
            raise AcpError(method, {"message": "the agent closed its stdout"})
        self._next_id += 1
        pending = self._pending[self._next_id] = _Pending(method)
        await self._send(
            {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        )
        await pending.done.wait()
        if pending.error is not None:
            raise AcpError(method, pending.error)
        return pending.result

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def initialize(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": CLIENT_CAPABILITIES,
                "clientInfo": {"name": "ccbridge-tests", "version": "0"},
            },
        )
        return result

    async def new_session(self, cwd: str | Path) -> str:
        result = await self.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
        )
        return result

    async def cancel(self, session_id: str) -> None:
        await self.notify("session/cancel", {"sessionId": session_id})

    # -- what the agent said ----------------------------------------------------------------
    def session_updates(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            u["update"]
            for u in self.updates
            if u.get("sessionId") == session_id
            and isinstance(u.get("update"), dict)
            and (kind is None or u["update"].get("sessionUpdate") == kind)
        ]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(
            str(u.get("content", {}).get("text", ""))
            for u in self.session_updates(session_id, kind)
            if isinstance(u.get("content"), dict)
        )

    def tool_calls(self, session_id: str) -> dict[str, list[dict[str, Any]]]:
        """Each tool call's ``tool_call`` and ``tool_call_update`` updates, by its id, in
        order."""
        calls: dict[str, list[dict[str, Any]]] = {}
        for u in self.session_updates(session_id):
            if u.get("sessionUpdate") in ("tool_call", "tool_call_update"):
                calls.setdefault(str(u.get("toolCallId")), []).append(u)
        return calls

    async def close(self) -> None:
        """Close the agent's stdin (the end of the connection)."""
        try:
            await self._stdin.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def describe(self, last: int = 60) -> str:
        lines = [f"{t:8.3f} {d:3} {json.dumps(f)[:700]}" for t, d, f in self.traffic[-last:]]
        return "ACP traffic (last frames):\n" + "\n".join(lines)


async def end_group(proc: trio.Process, grace: float = 5.0) -> None:
    """End the adapter's process group: SIGTERM to all of it (the bridge then flushes its
    recording and ends cbc), up to ``grace`` seconds for it to go, then SIGKILL."""
    signal_group(proc.pid, signal.SIGTERM)
    with trio.move_on_after(grace):
        await proc.wait()
        for _ in range(int(grace / 0.05)):
            if not group_alive(proc.pid):
                break
            await trio.sleep(0.05)
    signal_group(proc.pid, signal.SIGKILL)
    with trio.move_on_after(3):
        await proc.wait()


@asynccontextmanager
async def open_adapter(
    node: str,
    *,
    env: dict[str, str],
    cwd: str | Path,
    stderr: IO[bytes],
    permission: PermissionPolicy | None = None,
) -> AsyncIterator[AcpClient]:
    """The adapter running (``node dist/index.js``, a process group of its own: the CLI it
    starts and whatever that starts are in it), an ``AcpClient`` on its stdio; on the way
    out the group is killed."""
    proc = await trio.lowlevel.open_process(
        [node, str(ADAPTER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        cwd=str(cwd),
        start_new_session=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    client = AcpClient(proc.stdin, proc.stdout)
    if permission is not None:
        client.permission = permission
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.read_loop, nursery)
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await client.close()
            await end_group(proc)
