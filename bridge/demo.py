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
process's own statistics, as a table.

Everything shown from the stream is escaped first: backend strings are untrusted.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from importlib import resources
from typing import Any

import attrs
import orjson
import trio

from bridge.cli import Parser
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
        agents = [
            e.get("state")
            for e in obj.get("workflow_progress", [])
            if isinstance(e, dict) and e.get("type") == "workflow_agent"
        ]
        if agents:
            bits.append("agents=" + ",".join(map(str, agents)))
        if "prompt" in obj:
            bits.append("prompt=<script>")
    elif st == "background_tasks_changed":
        bits.append(f"tasks={len(obj.get('tasks', []))}")
    elif t == "control_request":
        req = obj.get("request") or {}
        bits.append(str(req.get("subtype")))
        if isinstance(req, dict):
            bits += [f"{k}={req[k]}" for k in ("session_id", "reason", "tool_name") if k in req]
    elif t == "control_response":
        resp = obj.get("response", {})
        inner = resp.get("response") or {}
        bits.append(f"{resp.get('subtype')} {', '.join(sorted(inner))}")
    elif t in ("assistant", "user"):
        content = (obj.get("message") or {}).get("content")
        if isinstance(content, str):
            bits.append(content)
        elif isinstance(content, list) and content:
            b = content[0]
            bits.append(str(b.get("name") or b.get("text") or b.get("type")))
    elif t == "result":
        bits.append(f"{obj.get('subtype')} is_error={obj.get('is_error')}")
    return escape(" ".join([label, *bits]))


# -- what the bridge did, frame by frame ------------------------------------------------


@attrs.define
class Row:
    """One frame of the session: who sent it, what it was, what the bridge did to it."""

    t: float
    direction: str  # "up" (client -> cbc) or "down" (cbc -> client)
    sent: str  # summary of what was sent ("" for a frame the bridge made)
    got: str | None = None  # summary of what the other side received, when it differs
    rules: list[str] = attrs.Factory(list)  # the rules that rewrote it, in order
    action: str = "passed"  # passed, rewritten, dropped, held, synthesized
    by: str | None = None  # the rule that dropped, held or synthesized it
    sent_on: bool = False  # it reached the other side (a held frame may never)


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
        pipe.use_fast = False
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
    def advance(t: float) -> None:
        deadline = engine.next_deadline()
        while deadline is not None and deadline <= t:
            now[0] = deadline
            engine.advance(deadline)
            deadline = engine.next_deadline()
        now[0] = t

    last_client = max((r.t for r in cap.records if r.kind == "client_in"), default=0.0)
    eof_at = next(
        (
            r.t
            for r in cap.records
            if r.kind == "note" and r.text == "stdin closed" and r.t >= last_client
        ),
        None,
    )
    eof_fed = False
    exit_t, status = 0.0, 0
    for rec in cap.records:
        if eof_at is not None and not eof_fed and rec.t >= eof_at:
            advance(eof_at)
            engine.eof("client", eof_at)
            eof_fed = True
        if rec.kind in ("client_in", "stdout"):
            advance(rec.t)
            engine.feed("client" if rec.kind == "client_in" else "backend", rec.data + b"\n", rec.t)
        elif rec.kind == "exit":
            exit_t, status = rec.t, capture.parse_exit(rec.text) or 0
    if not eof_fed:
        engine.eof("client", exit_t)
    advance(exit_t)
    now[0] = exit_t
    engine.backend_exited(status, exit_t)
    stats: dict[str, Any] = engine.statistics()
    return stats


_COLOURS = {
    "passed": "2",
    "rewritten": "33",
    "dropped": "31",
    "held": "35",
    "synthesized": "32",
    "rule": "36",
    "head": "1",
}
_ARROW = {"up": "client → cbc", "down": "cbc → client"}


def _paint(text: str, what: str, colour: bool) -> str:
    return f"\x1b[{_COLOURS[what]}m{text}\x1b[0m" if colour and text else text


def render_rows(rows: list[Row], width: int, colour: bool = False) -> str:
    """The timeline, wrapped (never cut) to ``width`` columns: each frame with who sent it,
    what it was and, when the bridge touched it, the rules that did and what it became."""
    indent = " " * 24
    text_w = max(20, width - len(indent))
    head = textwrap.wrap("what was sent (→ what the other side received)", text_w)
    out = [
        _paint(f"{'time':>6}  {'direction':<15} {head[0]}", "head", colour),
        *(_paint(indent + h, "head", colour) for h in head[1:]),
        "-" * min(width, 100),
    ]
    for r in rows:
        source = "bridge" if r.action == "synthesized" else r.direction
        arrow = {
            "up": "client → cbc",
            "down": "cbc → client",
            "bridge": "bridge → " + ("client" if r.direction == "down" else "cbc"),
        }[source]
        first = textwrap.wrap(r.sent or "(nothing)", text_w) or [""]
        shown = r.action if r.action != "held" or not r.sent_on else "rewritten"
        lines = [f"{r.t:6.2f}  {arrow:<15} " + _paint(first[0], shown, colour)]
        lines += [indent + _paint(x, shown, colour) for x in first[1:]]
        said = []
        if r.rules:
            said.append("rewritten by " + escape(", ".join(r.rules)))
        if r.action == "held":
            said.append(
                f"held by {escape(str(r.by))}" + (", sent later" if r.sent_on else ", never sent")
            )
        elif r.action in ("dropped", "synthesized"):
            said.append(f"{r.action} by {escape(str(r.by))}")
        if said:
            for x in textwrap.wrap("↳ " + "; ".join(said), text_w, subsequent_indent="  "):
                lines.append(indent + _paint(x, "rule", colour))
        if r.got is not None:
            for x in textwrap.wrap("→ " + r.got, text_w, subsequent_indent="  "):
                lines.append(indent + _paint(x, shown, colour))
        out += lines
    return "\n".join(out)


#: the statistics columns shown on their own; any other count goes in the last column
_MAIN = ("rewritten", "dropped", "synthesized", "held", "released")


def stats_table(stats: dict[str, Any]) -> str:
    """The bridge's statistics as a small table: frames per direction, then per rule the
    counts that are not zero. A counter's name can be a peer's (an unknown frame's type):
    every name and count is escaped (``compat.text.escape``)."""
    frames = stats.get("frames", {})
    lines = [f"{'frames':<8}{'in':>6}{'out':>6}"]
    for d in ("up", "down"):
        f = frames.get(d, {})
        lines.append(f"{d:<8}{escape(str(f.get('in', 0))):>6}{escape(str(f.get('out', 0))):>6}")
    rules = {
        escape(str(k)): v
        for k, v in (stats.get("rules") or {}).items()
        if isinstance(v, dict) and any(v.values())
    }
    if rules:
        w = max(len(r) for r in [*rules, "rule"])
        lines += ["", f"{'rule':<{w}}  " + " ".join(f"{c:>11}" for c in _MAIN) + "  other"]
        for rule, counts in sorted(rules.items()):
            lines.append(f"{rule:<{w}}  {_counts_row(counts)}".rstrip())
    return "\n".join(lines)


def _counts_row(counts: dict[Any, Any]) -> str:
    """One rule's counts: the main columns, then every other count by (escaped) name."""
    main = " ".join(f"{escape(str(counts.get(c, 0) or '')):>11}" for c in _MAIN)
    other = ", ".join(
        f"{escape(str(k))} {escape(str(n))}"
        for k, n in sorted(counts.items(), key=lambda kv: str(kv[0]))
        if k not in _MAIN and n
    )
    return f"{main}  {other}"


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
