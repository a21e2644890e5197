"""``ccbridge replay FILE``: a capture served as a backend.

It writes what the backend wrote (``stdout``/``stderr`` records), in order; before each
output it waits until the client has sent the input lines that preceded it in the
capture, matched by *signature* (frame type + control subtype), so a different client
that sends the same kinds of frames (the real SDKs) drives it. Control responses are
rewritten to carry the ``request_id`` the client actually used. A ``note: stdin closed``
makes it wait for EOF; at the end it waits for EOF like a real stream-json CLI, then exits
with the recorded status.

Also reads the reference transcripts (same records, no header) and plain stdout dumps
(where the expected inputs are inferred: a control request before each control response,
a user line before each turn's first frame).

``{CWD}`` and ``{HOME}`` placeholders in outputs become the real paths (JSON-escaped), and
with ``--materialize`` the header's ``files`` (e.g. workflow scripts) are written below
the working directory first, so rules that read them find them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import attrs
import orjson
import trio

from bridge.cli import Parser, parser
from bridge.driver import BACKEND_STDIN_CLOSED
from bridge.files import FILE_MODE, private_dirs
from bridge.log import Logger
from compat import capture
from compat.exits import Exit
from compat.framing import Line, LineSplitter
from compat.text import escape


@attrs.frozen
class Step:
    kind: str  # "out" | "err" | "expect" | "eof"
    data: bytes = b""
    sig: tuple[str, str] = ("", "")


def signature(line: bytes) -> tuple[str, str]:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return ("<non-json>", "")
    if not isinstance(obj, dict):
        return ("<non-json>", "")
    t = str(obj.get("type", ""))
    sub = ""
    if t in ("control_request", "control_response"):
        inner = obj.get("request") if t == "control_request" else obj.get("response")
        if isinstance(inner, dict):
            sub = str(inner.get("subtype", ""))
    return (t, sub)


def plan(cap: capture.Capture) -> list[Step]:
    steps: list[Step] = []
    if cap.flavor == "stdout":
        turn_open = False
        for r in cap.records:
            t, _ = signature(r.data)
            if t == "control_response":
                steps.append(Step("expect", sig=("control_request", "")))
            elif t not in ("control_request", "control_cancel_request") and not turn_open:
                steps.append(Step("expect", sig=("user", "")))
                turn_open = True
            if t == "result":
                turn_open = False
            steps.append(Step("out", r.data))
        return steps
    eof = _eof_note(cap)
    for r in cap.records:
        if r.kind == "stdout":
            steps.append(Step("out", r.data))
        elif r.kind == "stderr":
            steps.append(Step("err", r.data))
        elif r.kind == "stdin":
            steps.append(Step("expect", r.data, signature(r.data)))
        elif r.kind == "note" and r.text.strip() == eof:
            steps.append(Step("eof"))
    return steps


def _eof_note(cap: capture.Capture) -> str | None:
    """The note that marks the backend's EOF: the bridge's own note where it closed the
    backend's stdin; in a capture without one, "stdin closed" only when the capture has no
    client side (a reference transcript: the backend's stdin is the client's). A bridge
    capture's "stdin closed" is the client's EOF, which the bridge may hold back until the
    turn ends (eof-wind-down): waiting for it there would hang a ``-p`` replay."""
    notes = {r.text.strip() for r in cap.records if r.kind == "note"}
    if BACKEND_STDIN_CLOSED in notes:
        return BACKEND_STDIN_CLOSED
    if any(r.kind == "client_in" for r in cap.records):
        return None
    return "stdin closed"


class Replayer:
    def __init__(self, steps: Sequence[Step], log: Logger, subst: dict[bytes, bytes]) -> None:
        self.steps = steps
        self.log = log
        self.subst = subst
        self.id_map: dict[str, str] = {}  # recorded request_id -> the client's
        self._inbox: list[bytes] = []
        self._eof = False
        self._changed = trio.Event()

    async def _read(self, stream: trio.abc.ReceiveStream) -> None:
        sp = LineSplitter()
        while True:
            try:
                data = bytes(await stream.receive_some(65536))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                data = b""
            if not data:
                self._eof = True
                self._changed.set()
                return
            for ev in sp.feed(data):
                if type(ev) is Line and ev.data.strip():
                    self._inbox.append(ev.data)
            self._changed.set()

    async def _wait(self) -> None:
        self._changed = trio.Event()
        await self._changed.wait()

    async def _expect(self, step: Step) -> bool:
        """Consume client lines until one matches; False when the client hit EOF first."""
        while True:
            while self._inbox:
                line = self._inbox.pop(0)
                sig = signature(line)
                if sig[0] == step.sig[0] and (not step.sig[1] or not sig[1] or sig == step.sig):
                    self._learn_id(step.data, line)
                    return True
                self.log.debug(
                    f"ignored a client {sig[0]} line (waiting for "
                    f"{step.sig[0]} {step.sig[1]})".rstrip(),
                    rule="replay",
                )
            if self._eof:
                return False
            await self._wait()

    def _learn_id(self, recorded: bytes, received: bytes) -> None:
        try:
            rec, got = orjson.loads(recorded), orjson.loads(received)
        except orjson.JSONDecodeError:
            return
        if isinstance(got, dict) and isinstance(got.get("request_id"), str):
            if isinstance(rec, dict) and isinstance(rec.get("request_id"), str):
                self.id_map[rec["request_id"]] = got["request_id"]
            else:  # inferred expectation (stdout dump): map the next response's id
                self.id_map["*"] = got["request_id"]

    def _rewrite(self, line: bytes) -> bytes:
        for k, v in self.subst.items():
            if k in line:
                line = line.replace(k, v)
        if b'"control_response"' not in line or not self.id_map:
            return line
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return line
        resp = obj.get("response") if isinstance(obj, dict) else None
        if isinstance(resp, dict) and isinstance(resp.get("request_id"), str):
            rid = resp["request_id"]
            new = self.id_map.get(rid) or self.id_map.pop("*", None)
            if new and new != rid:
                obj = {**obj, "response": {**resp, "request_id": new}}
                return orjson.dumps(obj)
        return line

    async def run(self, stdin: trio.abc.ReceiveStream, stdout: trio.abc.SendStream) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read, stdin)
            for step in self.steps:
                if step.kind == "expect":
                    if not await self._expect(step):
                        self.log.debug(
                            "the client closed stdin before the capture's next input; "
                            "writing the rest",
                            rule="replay",
                        )
                elif step.kind == "eof":
                    while not self._eof:
                        await self._wait()
                elif step.kind == "out":
                    await stdout.send_all(self._rewrite(step.data) + b"\n")
                else:
                    sys.stderr.buffer.write(step.data + b"\n")
                    sys.stderr.buffer.flush()
            while not self._eof:
                await self._wait()
            nursery.cancel_scope.cancel()


def materialize(header: dict[str, Any], cwd: str, log: Logger) -> None:
    files = header.get("files") or {}
    root = os.path.realpath(cwd)
    for rel, text in files.items():
        target = os.path.realpath(os.path.join(root, rel))
        if not target.startswith(root + os.sep) or not isinstance(text, str):
            log.warning(f"not writing {rel!r} (outside the working directory)", rule="replay")
            continue
        private_dirs(os.path.dirname(target))
        try:  # a new file or nothing: never over a file, never through a link
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)


def _json_escaped(s: str) -> bytes:
    return orjson.dumps(s)[1:-1]


def build_parser() -> Parser:
    p = parser(
        "replay",
        "serve a recorded session as a backend: its output, paced by the client's input",
        usage="ccbridge replay [-h] [--materialize] [--status N] FILE [CLI ARGS...]",
        examples=[
            'CCBRIDGE_BACKEND="ccbridge replay $PWD/run.jsonl" claude-on-cbc -p hi',
            "ccbridge run --backend 'ccbridge replay --materialize run.jsonl' -- --verbose",
        ],
        exits={
            "N": "the recorded exit status (--status N: N; 0 when the capture has none)",
            Exit.USAGE: "a usage error, or FILE is not a capture (one line on stderr)",
        },
    )
    p.add_argument(
        "file",
        metavar="FILE",
        help="a ccbridge capture, a reference transcript or a stdout dump; the arguments "
        "after it (a client's CLI flags) are accepted and ignored",
    )
    p.add_argument(
        "--materialize",
        action="store_true",
        help="first write the capture's files (its header's 'files', e.g. workflow scripts) "
        "below the working directory",
    )
    p.add_argument(
        "--status",
        type=int,
        default=None,
        metavar="N",
        help="exit with N (default: the recorded exit status, else 0)",
    )
    return p


def main(argv: Sequence[str]) -> int:
    # a replay stands in for a CLI: the flags a client passes to that CLI are accepted
    args, ignored = build_parser().parse_known_args(argv)
    try:
        cap = capture.load(args.file)
    except capture.CaptureError as e:
        print(f"ccbridge replay: {escape(args.file)}: {escape(str(e))}", file=sys.stderr)
        return Exit.USAGE
    log = Logger.open(os.environ.get("CCBRIDGE_LOG"), os.environ.get("CCBRIDGE_LOG_LEVEL", "info"))
    if ignored:
        log.debug("ignoring the CLI arguments " + " ".join(ignored), rule="replay")
    cwd = os.getcwd()
    if args.materialize:
        materialize(cap.header, cwd, log)
    subst = {b"{CWD}": _json_escaped(cwd), b"{HOME}": _json_escaped(os.environ.get("HOME", cwd))}
    replayer = Replayer(plan(cap), log, subst)
    status = args.status if args.status is not None else cap.exit_status
    if status is None:
        status = 0

    async def go() -> None:
        stdin = trio.lowlevel.FdStream(os.dup(0))
        stdout = trio.lowlevel.FdStream(os.dup(1))
        try:
            await replayer.run(stdin, stdout)
        except (trio.BrokenResourceError, trio.ClosedResourceError, BrokenPipeError):
            log.debug("the reader went away", rule="replay")

    trio.run(go)
    return status
