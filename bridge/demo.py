"""``ccbridge demo``: the main job on an embedded default, no backend install needed.

A bundled capture of a real cbc 2.163.0 session (a workflow of two agents, interrupted
while idle) is replayed as the backend (``ccbridge replay``); ``ccbridge run --profile
cbc-to-claude`` sits in front of it; a bundled example client speaks stream-json to the
bridge the way the Claude SDKs do (initialize, a user line, an interrupt once the turn has
ended with the workflow still running, stdin EOF). The session is recorded; what the
bridge did to each frame and which rule did it (rewritten, and into what; dropped; held;
synthesized) is found by feeding the recorded inputs again to an engine whose stages
report each frame they touch (``trace``), each frame at the time the replayed capture
recorded it (``recorded_time``; the replay itself takes a few milliseconds).

By default one screen: the frames the bridge changed, dropped, held or made, grouped,
each with its rules, the client's own lines for context, a legend, and the verdict (what
the client saw, checked with ``ccbridge check``'s contract: ``contract_violations``).
``--all``: every frame in both directions, then the bridge process's own statistics as a
table. Fitted to the terminal's width (``COLUMNS``; at most 100), coloured as ``--color``
and the environment say (``bridge.colour``); what is shown: ``bridge.demo_rows``, drawn by
``bridge.demo_render`` (with rich: ``bridge.render``).

Everything shown from the stream is escaped first: backend strings are untrusted.
"""

from __future__ import annotations

import bisect
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from importlib import resources
from typing import Any

import orjson
import trio

from bridge.cli import Parser, parser
from bridge.colour import add_option, use_colour
from bridge.demo_render import legend, render_summary, verdict
from bridge.demo_render import render_rows as render_rows
from bridge.demo_render import stats_table as stats_table
from bridge.demo_rows import Row as Row
from bridge.demo_rows import counts
from bridge.demo_rows import summarize as summarize
from bridge.files import private_dirs
from compat import capture
from compat.text import clip, escape
from compat.versions import CBC, TARGET_CLAUDE_VERSION

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


def trace(
    cap: capture.Capture, cwd: str | None = None, source: capture.Capture | None = None
) -> tuple[dict[str, Any], list[Row]]:
    """The recorded bridge session's inputs (the client's lines, cbc's lines, the exit), fed
    again to a cbc-to-claude engine whose pipelines note, for every frame, each rule that
    rewrote, dropped, held or synthesized it (the fast path is off, so every frame is seen).
    The capture's times are the clock; ``cwd`` is the directory the session ran in (where
    its workflow scripts are read, as the bridge read them). ``source``: the capture the
    session replayed; each row's time is then the time it recorded (``recorded_time``),
    not the replay's."""
    from bridge.proxy import build_engine

    engine = build_engine("cbc-to-claude", [], epoch_ms=0, cwd=cwd)
    shown = recorded_time(cap, source)
    rows: list[Row] = []
    by_lineage: dict[int, Row] = {}
    alive: list[Any] = []  # every frame keyed by id() stays alive: ids are never reused
    now = [0.0]

    def row_for(frame: Any, direction: str) -> Row:
        key = id(frame.lineage)
        if key not in by_lineage:
            alive.append(frame.lineage)
            r = Row(shown(now[0]), direction, "" if frame.synthesized_by else summarize(frame.obj))
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
                row_for(f, direction).t = shown(now[0])
        if not kept:
            _not_kept(r, rule, holding)

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


def _not_kept(r: Row, rule: str, holding: bool) -> None:
    """``rule`` held (or dropped) the frame of ``r``: a frame the bridge made stays one."""
    if r.action == "synthesized":
        if holding:
            r.held_by = rule
        else:
            r.dropped_by = rule
    else:
        r.action, r.by = ("held" if holding else "dropped"), rule
        r.held_by = rule if holding else r.held_by


def recorded_time(
    session: capture.Capture, source: capture.Capture | None
) -> Callable[[float], float]:
    """The session's time (the replay's) as the time ``source``, the capture replayed,
    recorded: its k-th ``stdout`` line is the session's k-th, its k-th client line (its
    ``stdin``) the session's k-th ``client_in``, its ``stdin closed`` the client's EOF, its
    exit the exit; between two of those the replay's own time passes. The identity without
    a source, or when it holds no times (a stdout dump)."""
    if source is None or not any(r.t for r in source.records):
        return lambda t: t
    inputs = "client_in" if source.lines("client_in") else "stdin"
    theirs: dict[str, list[float]] = {}
    for r in source.records:
        theirs.setdefault(_anchor_kind(r, inputs), []).append(r.t)
    anchors: list[tuple[float, float]] = []
    used: Counter[str] = Counter()
    for r in session.records:
        kind = _anchor_kind(r, "client_in")
        pool = theirs.get(inputs if kind == "client_in" else kind, [])
        if kind and used[kind] < len(pool):
            anchors.append((r.t, pool[used[kind]]))
        used[kind] += 1
    starts = [a for a, _ in anchors]

    def shown(t: float) -> float:
        i = bisect.bisect_right(starts, t) - 1
        if i < 0:
            return anchors[0][1] if anchors else t
        return anchors[i][1] + (t - anchors[i][0])

    return shown


def _anchor_kind(r: capture.Record, inputs: str) -> str:
    """The kind of record that anchors the two clocks ("" for the others)."""
    if r.kind in ("stdout", inputs, "exit"):
        return r.kind
    return "eof" if r.kind == "note" and r.text == "stdin closed" else ""


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
    """A capture of a cbc session the example client can play through, or a usage error
    saying why not, at once (``bridge.demo_check``)."""
    from bridge.demo_check import check

    check(setting, path)


def _parser() -> Parser:
    p = parser(
        "demo",
        "replay a recorded cbc session through the bridge; show what the bridge did",
        examples=["ccbridge demo", "ccbridge demo --all --color never", "ccbridge demo --keep out"],
        exits={
            0: "the client saw a session that honours Claude Code's contract",
            1: "the bridge failed, or the client saw contract violations",
            2: "a usage error, or --capture is not a capture (one line on stderr)",
        },
    )
    p.add_argument("--capture", help="a cbc capture to replay instead of the bundled one")
    p.add_argument("--keep", metavar="DIR", help="keep the recorded session in DIR")
    p.add_argument(
        "--all",
        action="store_true",
        help="every frame, both ways, and the bridge's statistics (default: a one-screen "
        "summary of what the bridge changed)",
    )
    add_option(p)
    return p


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code or 0)
    bundled = not args.capture
    src = (
        str(resources.files("bridge") / "data" / "demo-session.jsonl")
        if bundled
        else os.path.abspath(args.capture)
    )
    if not bundled:
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
    try:
        status = trio.run(_session, src, record, work)
        with open(record, "rb") as f:
            cap = capture.parse(f)
        with open(src, "rb") as f:
            source = capture.parse(f)
        violations = contract_violations(cap)
        print(_report(args, cap, source, src, status, work, violations))
        if args.keep:
            print(f"\nthe whole session is in\n{escape(record)}")
        return 0 if status == 0 and not violations else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


async def _session(src: str, record: str, work: str) -> int:
    """The bridge (recording to ``record``) in front of the replayed ``src``, the example
    client in front of it; the bridge's exit status."""
    backend = shlex.join([sys.executable, "-m", "bridge", "replay", "--materialize", src])
    cmd = [sys.executable, "-m", "bridge", "run", "--profile", "cbc-to-claude"]
    cmd += ["--backend", backend, "--record", record, "--"]
    proc = await trio.lowlevel.open_process(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=work
    )
    with trio.move_on_after(DEADLINE):
        await example_client(proc)
        return await proc.wait()
    proc.kill()
    await proc.wait()
    raise RuntimeError(f"the demo session did not end within {DEADLINE:g} s")


def contract_violations(cap: capture.Capture) -> int | None:
    """How many violations of the Claude Code contract ``ccbridge check`` finds in what the
    client received; None where that command is not installed (the analysis layer is
    optional, as for ``bridge.cli``: looked up by name)."""
    import importlib
    import importlib.util

    try:
        found = importlib.util.find_spec("analysis.contract") is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        return None
    return len(importlib.import_module("analysis.contract").check(cap))


def _report(
    args: Any,
    cap: capture.Capture,
    source: capture.Capture,
    src: str,
    status: int,
    work: str,
    violations: int | None,
) -> str:
    """Everything the demo prints about the session, at the terminal's width (``COLUMNS``
    first; at most 100), coloured as ``--color`` and the environment say."""
    from bridge.render import columns
    from compat.profiles import describe

    width = columns(100)
    colour = use_colour(sys.stdout, choice=args.color)
    _, rows = trace(cap, work, source)
    intro = _intro(source, src, status, not args.capture, args.all, width)
    parts = [intro, legend(width, colour)]
    if args.all:
        parts.append(render_rows(rows, width, colour))
        for r in cap.records:
            if r.kind == "stats":
                table = stats_table(orjson.loads(r.data), width, colour)
                parts.append("bridge statistics (the bridge process's own count):\n" + table)
    else:
        about = {rule: _sentence(what) for rule, what, _ in describe()}
        parts.append(render_summary(rows, width, colour, about))
    counted = counts(rows, len(cap.lines("client_out")))
    parts.append(verdict(counted, TARGET_CLAUDE_VERSION, violations, width, colour))
    return "\n\n".join(parts)


def _sentence(text: str) -> str:
    """A rule's summary inside a sentence: lower case first, no full stop."""
    return (text[:1].lower() + text[1:]).rstrip(".")


def _intro(
    source: capture.Capture, src: str, status: int, bundled: bool, every: bool, width: int
) -> str:
    what = source.header.get("shows")
    shows = f" ({clip(escape(str(what)), 100)})" if isinstance(what, str) and what else ""
    name = f"a real cbc {CBC.version} session" if bundled else escape(src)
    timed = any(r.t for r in source.records)
    exited = f" (exit status {status})" if status else ""
    text = (
        f"Replayed {name}{shows} through `ccbridge run --profile cbc-to-claude`{exited} "
        "to an example client. "
        + ("What the bridge did" if not every else "Every frame, both ways")
        + (", at the recording's times" if timed else "")
        + (" (--all: every frame):" if not every else ":")
    )
    from bridge.render import render

    return render(text, width=width)
