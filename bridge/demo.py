"""``ccbridge demo``: the main job on an embedded default, no backend install needed.

A bundled capture of a real cbc 2.163.0 session (a workflow of two agents, interrupted
while idle) is replayed as the backend (``ccbridge replay``); ``ccbridge run --profile
cbc-to-claude`` sits in front of it; a bundled example client speaks stream-json to the
bridge the way the Claude SDKs do (initialize, a user line, an interrupt once the turn has
ended with the workflow still running, stdin EOF). The session is recorded, and the
demo prints what cbc sent next to what the client received, then the bridge's statistics.

Everything shown from the stream is escaped first: backend strings are untrusted.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from typing import Any

import orjson
import trio

from bridge.cli import Parser
from bridge.log import escape
from compat import capture

#: seconds the whole demo session may take (the bundled one takes about 3)
DEADLINE = 90.0
REQUESTS = {
    "init": {"type": "control_request", "request_id": "init",
             "request": {"subtype": "initialize", "hooks": {}}},
    "user": {"type": "user", "session_id": "", "parent_tool_use_id": None,
             "message": {"role": "user",
                         "content": "use a workflow TRIGGER_WORKFLOW_PATH_PAR_SLOW"}},
    "interrupt": {"type": "control_request", "request_id": "stop-1",
                  "request": {"subtype": "interrupt"}},
}


async def example_client(proc: trio.Process, deadline: float = 30.0) -> list[dict[str, Any]]:
    """A minimal Claude-protocol client; returns the frames it received."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    received: list[dict[str, Any]] = []
    buf = b""
    stdout = proc.stdout

    async def send(name: str) -> None:
        assert proc.stdin is not None
        await proc.stdin.send_all(orjson.dumps(REQUESTS[name]) + b"\n")

    async def until(pred: Any) -> None:
        nonlocal buf
        while not any(pred(f) for f in received):
            data = await stdout.receive_some(65536)
            if not data:
                return
            buf += data
            *lines, buf = buf.split(b"\n")
            for ln in lines:
                try:
                    received.append(orjson.loads(ln))
                except orjson.JSONDecodeError:
                    continue

    with trio.move_on_after(deadline):
        await send("init")
        await until(lambda f: f.get("type") == "control_response")
        await send("user")
        await until(lambda f: f.get("type") == "result")
        await send("interrupt")
        await until(lambda f: f.get("subtype") == "task_notification")
        await proc.stdin.aclose()
        await until(lambda f: False)  # read to EOF
    return received


def summarize(obj: Any) -> str:
    if not isinstance(obj, dict):
        return "(not JSON)"
    t, st = obj.get("type"), obj.get("subtype")
    label = f"{t}/{st}" if t == "system" else str(t)
    bits: list[str] = []
    if st in ("task_started", "task_progress", "task_updated", "task_notification"):
        for k in ("workflow_name", "task_type", "status"):
            if k in obj:
                bits.append(f"{k}={obj[k]}")
        if "patch" in obj:
            bits.append(f"patch.status={obj['patch'].get('status')}")
        agents = [e.get("state") for e in obj.get("workflow_progress", [])
                  if isinstance(e, dict) and e.get("type") == "workflow_agent"]
        if agents:
            bits.append("agents=" + ",".join(map(str, agents)))
        if "prompt" in obj:
            bits.append("prompt=<script>")
    elif st == "background_tasks_changed":
        bits.append(f"tasks={len(obj.get('tasks', []))}")
    elif t == "control_response":
        resp = obj.get("response", {})
        inner = resp.get("response") or {}
        bits.append(f"{resp.get('subtype')} {','.join(sorted(inner))[:40]}")
    elif t in ("assistant", "user"):
        content = (obj.get("message") or {}).get("content")
        if isinstance(content, list) and content:
            b = content[0]
            bits.append(str(b.get("name") or b.get("text") or b.get("type"))[:30])
    elif t == "result":
        bits.append(f"{obj.get('subtype')} is_error={obj.get('is_error')}")
    return escape(" ".join([label, *bits]))


def render(cap: capture.Capture, width: int) -> str:
    col = max(30, (width - 10) // 2)
    rows = [f"{'time':>6}  {'cbc sent':<{col}}  {'the client received':<{col}}",
            f"{'':->6}  {'':-<{col}}  {'':-<{col}}"]
    for r in cap.records:
        if r.kind not in ("stdout", "client_out"):
            continue
        try:
            text = summarize(orjson.loads(r.data))
        except orjson.JSONDecodeError:
            text = "(not JSON)"
        text = text[:col]
        left, right = (text, "") if r.kind == "stdout" else ("", text)
        rows.append(f"{r.t:6.2f}  {left:<{col}}  {right:<{col}}")
    return "\n".join(rows)


def check_capture(setting: str, path: str) -> None:
    """A capture of a backend session: a readable file holding stream-json frames the
    backend wrote (anything else would leave the example client waiting)."""
    from bridge.config import ConfigError

    if not os.path.isfile(path):
        raise ConfigError(f"{setting} {path}: no such file")
    try:
        with open(path, "rb") as f:
            cap = capture.parse(f)
    except OSError as e:
        raise ConfigError(f"{setting} {path}: cannot be read ({e.strerror})") from None
    for r in cap.records:
        if r.kind == "stdout":
            try:
                if isinstance(orjson.loads(r.data), dict):
                    return
            except orjson.JSONDecodeError:
                continue
    raise ConfigError(f"{setting} {path}: not a capture of a backend session (no stream-json "
                      "frame from the backend in it)")


def main(argv: list[str]) -> int:
    p = Parser(prog="ccbridge demo", description=__doc__.split("\n")[0])
    p.add_argument("--capture", help="a cbc capture to replay instead of the bundled one")
    p.add_argument("--keep", metavar="DIR", help="keep the recorded session in DIR")
    args = p.parse_args(argv)
    src = os.path.abspath(args.capture) if args.capture else str(
        resources.files("bridge") / "data" / "demo-session.jsonl")
    if args.capture:
        check_capture("--capture", src)
    if args.keep:
        from bridge.config import check_out_dir

        check_out_dir("--keep", args.keep)
        os.makedirs(args.keep, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ccbridge-demo-")
    record = os.path.join(args.keep or work, "demo-session.capture.jsonl")
    backend = shlex.join([sys.executable, "-m", "bridge", "replay", "--materialize", src])
    cmd = [sys.executable, "-m", "bridge", "run", "--profile", "cbc-to-claude",
           "--backend", backend, "--record", record, "--"]

    async def go() -> int:
        proc = await trio.lowlevel.open_process(cmd, stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, cwd=work)
        with trio.move_on_after(DEADLINE):
            await example_client(proc)
            return await proc.wait()
        proc.kill()
        await proc.wait()
        raise RuntimeError(f"the demo session did not end within {DEADLINE:g} s")

    try:
        status = trio.run(go)
        with open(record, "rb") as f:
            cap = capture.parse(f)
        print(f"Replayed {src}\nthrough: ccbridge run --profile cbc-to-claude "
              f"(exit status {status})\n")
        width = shutil.get_terminal_size((160, 40)).columns if sys.stdout.isatty() else 160
        print(render(cap, width))
        for r in cap.records:
            if r.kind == "stats":
                print("\nbridge statistics:", r.text)
        if args.keep:
            print(f"\nthe whole session is in {record}")
        return 0 if status == 0 else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
