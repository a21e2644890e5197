"""``ccbridge demo``: the main job on an embedded default, no backend install needed.

A bundled capture of a real cbc 2.163.0 session (a workflow of two agents, interrupted
while idle) is replayed as the backend (``ccbridge replay``); ``ccbridge run --profile
cbc-to-claude`` sits in front of it; a bundled example client speaks stream-json to the
bridge the way the Claude SDKs do (initialize, a user line, an interrupt once the turn has
ended with the workflow still running, stdin EOF). The session is recorded, and the
demo prints every frame of it in both directions (the client's own lines too) with what
the bridge did to it and which rule did it: rewritten (and into what), dropped, held,
synthesized, found by feeding the recorded inputs again to an engine whose stages report
each frame they touch (``trace``). The lines are wrapped to the terminal's width, never
cut; on a terminal they are coloured (unless ``NO_COLOR`` is set). Then the bridge
process's own statistics, as a table (the rendering: ``bridge.demo_render``).

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
from bridge.demo_render import Row as Row
from bridge.demo_render import render_rows as render_rows
from bridge.demo_render import stats_table as stats_table
from bridge.demo_render import summarize as summarize
from bridge.files import private_dirs
from compat import capture
from compat.text import escape

#: seconds the whole demo session may take (the bundled one takes about 3)
DEADLINE = 90.0
REQUESTS = {
    "init": {
        "type": "control_request",
        "request_id": "init",
        "request": {"subtype": "initialize", "hooks": {}},
    },
    "user": {
        "type": "user",
        "session_id": "",
        "parent_tool_use_id": None,
        "message": {"role": "user", "content": "use a workflow TRIGGER_WORKFLOW_PATH_PAR_SLOW"},
    },
    "interrupt": {
        "type": "control_request",
        "request_id": "stop-1",
        "request": {"subtype": "interrupt"},
    },
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


# -- what the bridge did, frame by frame ------------------------------------------------


def trace(cap: capture.Capture, cwd: str | None = None) -> tuple[dict[str, Any], list[Row]]:
    """The recorded bridge session's inputs (the client's lines, cbc's lines, the exit), fed
    again to a cbc-to-claude engine whose pipelines note, for every frame, each rule that
    rewrote, dropped, held or synthesized it (the fast path is off, so every frame is seen).
    The capture's times are the clock; ``cwd`` is the directory the session ran in (where
    its workflow scripts are read, as the bridge read them)."""
    from bridge.proxy import build_engine

    engine = build_engine("cbc-to-claude", [], epoch_ms=0, cwd=cwd)
    rows: list[Row] = []
    by_lineage: dict[int, Row] = {}
    alive: list[Any] = []  # every frame keyed by id() stays alive: ids are never reused
    now = [0.0]

    def row_for(frame: Any, direction: str) -> Row:
        key = id(frame.lineage)
        if key not in by_lineage:
            alive.append(frame.lineage)
            r = Row(now[0], direction, "" if frame.synthesized_by else summarize(frame.obj))
            if frame.synthesized_by:
                r.action, r.by = "synthesized", frame.synthesized_by
            by_lineage[key] = r
            rows.append(r)
        return by_lineage[key]

    def noted(rule: str, frame: Any, result: Any, direction: str, holding: bool) -> None:
        r = row_for(frame, direction)
        kept = False
        for f in result:
            if f is frame:
                kept = True
            elif f.lineage is frame.lineage:
                kept = True
                if rule not in r.rules:
                    r.rules.append(rule)
                if r.action == "passed":
                    r.action = "rewritten"
            elif f.synthesized_by == rule and f.root is None:
                row_for(f, direction).t = now[0]
        if not kept:
            r.action, r.by = ("held" if holding else "dropped"), rule

    originals: list[tuple[type, Any]] = []
    for pipe in engine.pipelines.values():
        for stage in pipe.stages:
            cls = type(stage)
            if any(c is cls for c, _ in originals):
                continue
            orig = cls.on_frame
            originals.append((cls, orig))

            def on_frame(self: Any, frame: Any, ctx: Any, orig: Any = orig) -> Any:
                result = orig(self, frame, ctx)
                if result is not None:
                    cur = engine.pipelines[self.direction]
                    noted(self.rule, frame, result, cur.direction, cur.holding)
                return result

            cls.on_frame = on_frame  # type: ignore[method-assign]
        one = pipe._one
        depth = [0]

        def traced_one(
            frame: Any,
            start: int,
            ctx: Any,
            out: list[Any],
            one: Any = one,
            direction: str = pipe.direction,
            depth: list[int] = depth,
        ) -> None:
            n = len(out)
            if depth[0] == 0:
                row_for(frame, direction)
            depth[0] += 1
            try:
                one(frame, start, ctx, out)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                for f in out[n:]:
                    r = row_for(f, direction)
                    r.sent_on = True
                    got = summarize(f.obj)
                    if r.sent and got != r.sent:
                        r.got = got
                    elif not r.sent:
                        r.sent = got

        pipe._one = traced_one  # type: ignore[method-assign]
    try:
        return _feed(engine, cap, now), rows
    finally:
        for cls, orig in originals:
            cls.on_frame = orig  # type: ignore[method-assign]


def _feed(engine: Any, cap: capture.Capture, now: list[float]) -> dict[str, Any]:
    eof_at = _client_eof(cap)
    eof_fed = False
    exit_t, status = 0.0, 0
    for rec in cap.records:
        if eof_at is not None and not eof_fed and rec.t >= eof_at:
            _advance(engine, eof_at, now)
            engine.eof("client", eof_at)
            eof_fed = True
        if rec.kind in ("client_in", "stdout"):
            _advance(engine, rec.t, now)
            engine.feed("client" if rec.kind == "client_in" else "backend", rec.data + b"\n", rec.t)
        elif rec.kind == "exit":
            exit_t, status = rec.t, capture.parse_exit(rec.text) or 0
    if not eof_fed:
        engine.eof("client", exit_t)
    _advance(engine, exit_t, now)
    now[0] = exit_t
    engine.backend_exited(status, exit_t)
    stats: dict[str, Any] = engine.statistics()
    return stats


def _client_eof(cap: capture.Capture) -> float | None:
    """When the client closed its stdin (after its last line), if the capture says."""
    last_client = max((r.t for r in cap.records if r.kind == "client_in"), default=0.0)
    return next(
        (
            r.t
            for r in cap.records
            if r.kind == "note" and r.text == "stdin closed" and r.t >= last_client
        ),
        None,
    )


def _advance(engine: Any, t: float, now: list[float]) -> None:
    """The clock to ``t``, every timer due fired at its deadline."""
    deadline = engine.next_deadline()
    while deadline is not None and deadline <= t:
        now[0] = deadline
        engine.advance(deadline)
        deadline = engine.next_deadline()
    now[0] = t


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
    raise ConfigError(
        f"{setting} {path}: not a capture of a backend session (no stream-json "
        "frame from the backend in it)"
    )


def main(argv: list[str]) -> int:
    p = Parser(prog="ccbridge demo", description=__doc__.split("\n")[0])
    p.add_argument("--capture", help="a cbc capture to replay instead of the bundled one")
    p.add_argument("--keep", metavar="DIR", help="keep the recorded session in DIR")
    args = p.parse_args(argv)
    src = (
        os.path.abspath(args.capture)
        if args.capture
        else str(resources.files("bridge") / "data" / "demo-session.jsonl")
    )
    if args.capture:
        check_capture("--capture", src)
    if args.keep:
        from bridge.config import check_out_dir

        check_out_dir("--keep", args.keep)
        private_dirs(args.keep)
    # the session's working directory (where the replay puts its workflow scripts); kept
    # with --keep, so that trace() can be run on the capture again
    if args.keep:
        work = os.path.join(args.keep, "work")
        os.makedirs(work, exist_ok=True)
    else:
        work = tempfile.mkdtemp(prefix="ccbridge-demo-")
    record = os.path.join(args.keep or work, "demo-session.capture.jsonl")
    backend = shlex.join([sys.executable, "-m", "bridge", "replay", "--materialize", src])
    cmd = [
        sys.executable,
        "-m",
        "bridge",
        "run",
        "--profile",
        "cbc-to-claude",
        "--backend",
        backend,
        "--record",
        record,
        "--",
    ]

    async def go() -> int:
        proc = await trio.lowlevel.open_process(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=work
        )
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
        print(
            f"Replayed {escape(src)}\nthrough: ccbridge run --profile cbc-to-claude "
            f"(exit status {status})\n"
        )
        tty = sys.stdout.isatty()
        width = shutil.get_terminal_size((100, 40)).columns if tty else 100
        colour = tty and "NO_COLOR" not in os.environ
        _, rows = trace(cap, work)
        print(render_rows(rows, width, colour))
        for r in cap.records:
            if r.kind == "stats":
                print(
                    "\nbridge statistics (the bridge process's own count):\n"
                    + stats_table(orjson.loads(r.data))
                )
        if args.keep:
            print(f"\nthe whole session is in {escape(record)}")
        return 0 if status == 0 else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
