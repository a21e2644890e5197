"""Run a CLI in one headless mode (``-p PROMPT``, a prompt on stdin, ``--output-format
text|json|stream-json``, ...) against the stand-in model and keep what it printed.

Unlike the scenario runner (a client script talking stream-json), a headless run is one
process: argv, maybe some stdin bytes, then stdout, stderr and the exit status. A *probe*
is one such run; ``run_probe`` starts the model server, a fresh HOME and working directory
(kept across the probes of one ``ProbeRoot``, so ``--continue``/``--resume`` find the
previous run's session), runs the command with the backend's environment and returns what
it printed with the run's paths, ids and times masked (``mask``), so a Claude run and a
bridged cbc run of the same probe can be compared field by field.

``python -m harness.headless --backend claude|cbc-via-bridge --out DIR [NAME...]``
runs the probes of ``PROBES`` (all, or those named) and writes ``DIR/NAME.json``: that is
how ``tests/bridge/data/headless/claude-2.1.220/`` was made (``--backend claude``).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs
import orjson
import trio

from bridge.files import private_dirs, write_private
from harness import stop
from harness.brain import ModelScript, Rule
from harness.model import ModelServer
from harness.runner import REPO, backend_env, make_root, resolve_target, sweep

#: what ``--json-schema`` runs ask for, and what the stand-in model answers with
SCHEMA = '{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}'
TIME_LIMIT = 90.0


@attrs.frozen
class Probe:
    name: str
    args: tuple[str, ...]
    stdin: bytes | None = None  # None: stdin is empty
    #: a probe that needs the session of the probe before it (``--continue``)
    after: str | None = None
    rules: tuple[Rule, ...] = ()


_STRUCTURED = Rule(
    when="TRIGGER_STRUCTURED", tool="StructuredOutput", input={"answer": "forty-two"}, times=1
)
_TOOL = Rule(
    when="TRIGGER_TOOL", tool="Bash", input={"command": "echo hi", "description": "Say hi"}
)

PROBES: tuple[Probe, ...] = (
    Probe("arg-text", ("-p", "hello")),
    Probe("stdin-text", ("-p",), stdin=b"hello from stdin\n"),
    Probe("arg-json", ("-p", "hello", "--output-format", "json")),
    Probe(
        "arg-stream-json-verbose", ("-p", "hello", "--output-format", "stream-json", "--verbose")
    ),
    Probe("arg-stream-json-no-verbose", ("-p", "hello", "--output-format", "stream-json")),
    Probe(
        "arg-partial",
        (
            "-p",
            "hello",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ),
    ),
    Probe(
        "arg-json-schema",
        ("-p", "TRIGGER_STRUCTURED answer", "--output-format", "json", "--json-schema", SCHEMA),
        rules=(_STRUCTURED,),
    ),
    Probe(
        "arg-max-turns",
        (
            "-p",
            "TRIGGER_TOOL run it",
            "--output-format",
            "json",
            "--max-turns",
            "1",
            "--allowedTools",
            "Bash",
        ),
        rules=(_TOOL,),
    ),
    Probe(
        "stream-max-turns",
        (
            "-p",
            "TRIGGER_TOOL run it",
            "--output-format",
            "stream-json",
            "--verbose",
            "--max-turns",
            "1",
            "--allowedTools",
            "Bash",
        ),
        rules=(_TOOL,),
    ),
    Probe(
        "stream-json-schema",
        (
            "-p",
            "TRIGGER_STRUCTURED answer",
            "--output-format",
            "stream-json",
            "--verbose",
            "--json-schema",
            SCHEMA,
        ),
        rules=(_STRUCTURED,),
    ),
    Probe(
        "arg-max-turns-text",
        ("-p", "TRIGGER_TOOL run it", "--max-turns", "1", "--allowedTools", "Bash"),
        rules=(_TOOL,),
    ),
    Probe("arg-and-stdin", ("-p", "review this"), stdin=b"diff --git a/x b/x\n+new line\n"),
    Probe("continue-first", ("-p", "first", "--output-format", "json")),
    Probe(
        "continue-second",
        ("-p", "second", "--continue", "--output-format", "json"),
        after="continue-first",
    ),
    Probe(
        "resume-second",
        ("-p", "third", "--resume", "{SESSION}", "--output-format", "json"),
        after="continue-first",
    ),
    Probe("no-prompt", ("-p",)),
    Probe("arg-json-verbose", ("-p", "hello", "--output-format", "json", "--verbose")),
    Probe("two-positionals", ("-p", "hello", "world")),
    Probe("dashdash-prompt", ("-p", "--output-format", "json", "--", "hello")),
    Probe("bad-input-format", ("-p", "hello", "--input-format", "yaml")),
    Probe("bad-output-format", ("-p", "hello", "--output-format", "yaml")),
    # an option Claude does not know: refused with commander's "Did you mean", or without
    Probe("unknown-option", ("--outptu-format", "json", "-p", "hello")),
    Probe("unknown-option-far", ("-p", "hello", "--frobnicate=1")),
    # an option whose value is missing: refused with commander's words
    Probe("missing-value", ("-p", "hello", "--model")),
    Probe("missing-value-variadic", ("-p", "hello", "--add-dir")),
    Probe(
        "stream-input-text-output",
        ("-p", "--input-format", "stream-json"),
        stdin=b'{"type":"user","message":{"role":"user","content":"hello"}}\n',
    ),
)


_SESSION = re.compile(rb'"session_id":"([0-9a-f-]{36})"')
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NUMBERS = re.compile(
    rb'"(duration_ms|duration_api_ms|total_cost_usd|costUSD|ttft_ms|'
    rb'ttft_stream_ms|time_to_request_ms|contextWindow|maxOutputTokens)"'
    rb":[0-9.e-]+"
)
_MSG_ID = re.compile(rb'"(id|request_id|requestId)":"(msg|req)_[A-Za-z0-9_]+"')


def mask(
    data: bytes, dirs: dict[str, str], url: str, sessions: dict[bytes, bytes] | None = None
) -> bytes:
    """Mask what differs from run to run: paths, uuids, durations, costs, message ids.
    Session ids become ``<session-N>`` by first appearance in ``sessions`` (shared by the
    probes of one root, so a resumed run shows the same N)."""
    if sessions is not None:
        for sid in _SESSION.findall(data):
            sessions.setdefault(sid, f"<session-{len(sessions) + 1}>".encode())
        for sid, name in sessions.items():
            data = data.replace(sid, name)
    for k, v in sorted(dirs.items(), key=lambda kv: -len(kv[1])):
        data = data.replace(v.encode(), b"{" + k.encode() + b"}")
    data = data.replace(url.encode(), b"{MODEL_URL}")
    data = _UUID.sub(b"<uuid>", data)
    data = _NUMBERS.sub(lambda m: b'"' + m.group(1) + b'":0', data)
    return _MSG_ID.sub(lambda m: b'"' + m.group(1) + b'":"' + m.group(2) + b'_x"', data)


@attrs.define
class ProbeResult:
    name: str
    argv: list[str]
    status: int
    stdout: str
    stderr: str
    #: the latest input of each main-agent model request (what the prompt became)
    model_inputs: list[str] = attrs.Factory(list)
    session_id: str | None = None

    def to_json(self) -> bytes:
        return orjson.dumps(attrs.asdict(self), option=orjson.OPT_INDENT_2)


def command(backend: str) -> tuple[list[str], str, dict[str, str]]:
    """(argv prefix, environment kind, extra environment) for ``claude``, ``cbc`` or
    ``cbc-via-bridge`` (``claude-on-cbc`` from this checkout in front of cbc)."""
    if backend == "cbc-via-bridge":
        cbc = resolve_target("cbc")
        return (
            [sys.executable, "-c", "import sys; from bridge.dropin import main; sys.exit(main())"],
            "cbc",
            {"CCBRIDGE_BACKEND": shlex.join(cbc.argv), "PYTHONPATH": str(REPO)},
        )
    target = resolve_target(backend)
    return list(target.argv), target.kind, {}


async def run_probe(
    probe: Probe,
    backend: str,
    dirs: dict[str, str],
    session: str | None = None,
    sessions: dict[bytes, bytes] | None = None,
) -> ProbeResult:
    prefix, kind, extra = command(backend)
    server = ModelServer(ModelScript(rules=probe.rules))
    mark = os.urandom(6).hex()
    args = [a.replace("{SESSION}", session or "") for a in probe.args]
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        env = backend_env(kind, url, dirs, mark)
        env.update(extra)
        with trio.move_on_after(TIME_LIMIT):
            done = await trio.run_process(
                [*prefix, *args],
                stdin=probe.stdin if probe.stdin is not None else b"",
                capture_stdout=True,
                capture_stderr=True,
                env=env,
                cwd=dirs["CWD"],
                check=False,
            )
        nursery.cancel_scope.cancel()
    await trio.to_thread.run_sync(sweep, mark)
    m = _SESSION.search(done.stdout)
    # the user's words: what follows Claude's context reminders (they carry the date)
    inputs = [
        str(e.get("latest", "")).rsplit("</system-reminder>\n\n\n", 1)[-1]
        for e in server.log
        if e.get("agent") == "main"
    ]
    return ProbeResult(
        probe.name,
        args,
        done.returncode,
        mask(done.stdout, dirs, url, sessions).decode("utf-8", "replace"),
        mask(done.stderr, dirs, url, sessions).decode("utf-8", "replace"),
        inputs,
        m.group(1).decode() if m else None,
    )


async def run_all(backend: str, names: Sequence[str] = ()) -> list[ProbeResult]:
    results: dict[str, ProbeResult] = {}
    sessions: dict[bytes, bytes] = {}
    dirs = make_root()
    try:
        for probe in PROBES:
            if names and probe.name not in names and probe.name not in _needed(names):
                continue
            prev = results.get(probe.after) if probe.after else None
            results[probe.name] = await run_probe(
                probe, backend, dirs, prev.session_id if prev else None, sessions
            )
    finally:
        shutil.rmtree(dirs["ROOT"], ignore_errors=True)
    return list(results.values())


def _needed(names: Sequence[str]) -> set[str]:
    by = {p.name: p for p in PROBES}
    return {by[n].after for n in names if n in by and by[n].after} - {None}  # type: ignore


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.headless")
    p.add_argument("--backend", default="claude")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("names", nargs="*")
    args = p.parse_args(argv)
    results = stop.run(lambda: run_all(args.backend, args.names), "harness.headless")
    private_dirs(str(args.out))
    for r in results:
        write_private(str(args.out / f"{r.name}.json"), r.to_json() + b"\n")
        print(
            f"{r.name}: exit {r.status}, {len(r.stdout)} bytes out, {len(r.stderr)} bytes err",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
