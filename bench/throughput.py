"""Throughput and memory of the bridge engine against a minimal line relay (issue "Core").

One run of ``python -m bench.throughput``:

1. generates, deterministically (``--seed``), a long cbc 2.163.0 stdout stream (``--frames``,
   default 200 000) into a temporary file. The frames are the real frames of
   ``captures/cbc-2.163.0`` (the reference set, ``--captures``) with fresh ids and text:
   mostly turns of ``stream_event`` / ``assistant`` / ``user`` frames (templated from
   ``mockoai_partial-messages`` and the tool-call frames, with cbc's private fields), and,
   between them, whole captured sessions with background shells, agents and workflows
   (``task_started/progress/updated/notification`` with their tool calls, the per-turn
   ``system/init`` pairs, sub-agent inits and ``result``s), replayed with every id renamed;
2. times (best of ``--runs``) a minimal relay (``for line in f_in: f_out.write(line)`` to
   /dev/null) and the engine (``build_engine("cbc-to-claude")``, every rule on, fed 64 KiB
   reads like ``bridge.driver``, each ``Write`` written to /dev/null, timers fired as the
   driver would);
3. measures the engine's peak memory (tracemalloc; RSS as a cross-check) on the stream and
   on a 4x shorter one, and says whether it grows with the stream's length.

It prints the ratio bridge/relay, both times, frames/s, the memory figures and the engine's
``statistics()`` (so a reader sees the rules fire). ``--json`` prints one JSON object
instead; ``--check`` exits 1 when the ratio is above ``--max-ratio`` (3.0, the issue's
target) or memory grows, so it can gate CI; ``--profile`` adds a cProfile of one engine run.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import gc
import io
import json
import os
import pstats
import random
import re
import resource
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from bridge.driver import READ_SIZE
from bridge.proxy import build_engine
from compat.engine import Engine, Write
from compat.session import MAX_TASKS, MAX_TOOL_USES

DEFAULT_CAPTURES = Path("/work/shared/reference/captures/cbc-2.163.0")
MAX_RATIO = 3.0
#: peak(N) may exceed peak(N/4) by this factor (plus MEM_SLACK bytes) before we call it growth
MEM_FACTOR = 1.25
MEM_SLACK = 1 << 20
#: engine seconds per 64 KiB read (~1000 frames/s from the backend): drives the timers
SECONDS_PER_READ = 0.05

# -- the stream ---------------------------------------------------------------------------

#: captured sessions replayed whole (every task they start also ends), with their weight
EPISODES = {
    "mockoai_bg-bash.jsonl": 3,
    "mockoai_bg-agent-then-user-turn.jsonl": 3,
    "mockoai_workflow-inline.jsonl": 3,
    "mockoai_taskstop-bg-bash.jsonl": 1,
    "mockoai_interrupt-idle-with-bg-workflow-and-bash.jsonl": 1,
    "mockoai_interrupt-midturn-workflow-2-running-agents.jsonl": 1,
    "mockoai_fg-agent.jsonl": 1,
}
#: one captured session among this many turns (the rest are templated turns)
EPISODE_EVERY = 6
TURN_TEMPLATE = "mockoai_partial-messages.jsonl"
TOOL_TEMPLATE = "mockoai_interrupt-midturn-workflow-2-running-agents.jsonl"

#: ids in cbc frames: uuids, 32-hex request/message ids, tool call ids, workflow names,
#: agent ids; bash task ids (``LRBVDP``) are added per capture from its task_id values
_ID = (
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    rb"|(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"
    rb"|call_mock_[0-9a-f]{12}|inline-[0-9a-f]{6}|v2:[0-9a-f]{64}"
)
_SHORT_TASK_ID = re.compile(rb'"task_id":"([A-Za-z0-9]{6})"')

WORDS = (
    "the function returns a list of frames and the bridge forwards every line it does not "
    "change byte for byte while the stages rewrite only what Claude Code would not send "
    "so a client sees one init per turn and every background task ends exactly once with "
    "its notification after the terminal update file path test module error value result"
).split()
TOOLS = ("Read", "Read", "Grep", "Glob", "Bash", "Edit", "Write")


def _read_frames(path: Path) -> list[bytes]:
    """The backend's stdout lines of a capture, without the control handshake."""
    lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    return [ln for ln in lines if not ln.startswith(b'{"type":"control_')]


class Ids:
    """Fresh ids of cbc's shapes from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def hex(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def like(self, old: bytes) -> bytes:
        """A fresh id shaped like ``old``."""
        if old.startswith(b"call_mock_"):
            return b"call_mock_" + self.hex(12).encode()
        if old.startswith(b"inline-"):
            return b"inline-" + self.hex(6).encode()
        if old.startswith(b"v2:"):
            return b"v2:" + self.hex(64).encode()
        if len(old) == 36:
            return self.uuid().encode()
        if len(old) == 32:
            return self.hex(32).encode()
        alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "".join(self.rng.choice(alnum) for _ in old).encode()


class Episode:
    """A captured session as literal pieces and id slots; each replay renames every id
    (the main session's id becomes the stream's, so sub-agent inits stay foreign)."""

    def __init__(self, name: str, frames: list[bytes]) -> None:
        self.name = name
        short = {m.group(1) for f in frames for m in _SHORT_TASK_ID.finditer(f)}
        alts = [re.escape(s) for s in sorted(short)]
        pattern = re.compile(b"|".join([_ID, *alts]))
        first_init = next(f for f in frames if f.startswith(b'{"type":"system","subtype":"init"'))
        self.session = orjson.loads(first_init)["session_id"].encode()
        self.lines: list[list[bytes | tuple[bytes]]] = []
        for f in frames:
            parts: list[bytes | tuple[bytes]] = []
            pos = 0
            for m in pattern.finditer(f):
                parts.append(f[pos : m.start()])
                parts.append((m.group(0),))
                pos = m.end()
            parts.append(f[pos:] + b"\n")
            self.lines.append(parts)
        self.kinds = [_kind(f) for f in frames]

    def replay(self, ids: Ids, session: bytes) -> Iterator[bytes]:
        fresh: dict[bytes, bytes] = {self.session: session}
        for parts in self.lines:
            out = []
            for p in parts:
                if type(p) is tuple:
                    old = p[0]
                    new = fresh.get(old)
                    if new is None:
                        new = fresh[old] = ids.like(old)
                    out.append(new)
                else:
                    out.append(p)  # type: ignore[arg-type]
            yield b"".join(out)


def _kind(frame: bytes) -> str:
    o = orjson.loads(frame)
    return f"{o['type']}/{o['subtype']}" if o.get("type") == "system" else str(o.get("type"))


class Turns:
    """Templated turns: init, status, then model steps (streamed text, an assistant frame,
    often a tool call and its result), a closing answer, the result and cbc's second init."""

    def __init__(self, captures: Path, ids: Ids, session: str) -> None:
        frames = [orjson.loads(f) for f in _read_frames(captures / TURN_TEMPLATE)]
        by: dict[str, dict[str, Any]] = {}
        for o in frames:
            key = o["type"] if o["type"] != "stream_event" else o["event"]["type"]
            if o["type"] == "system":
                key = f"system/{o['subtype']}"
            by.setdefault(key, o)
        tool = [orjson.loads(f) for f in _read_frames(captures / TOOL_TEMPLATE)]
        self.user = next(o for o in tool if o["type"] == "user")
        self.t = by
        self.ids = ids
        self.rng = ids.rng
        self.session = session
        self.clock = datetime.datetime(2026, 11, 29, 10, 0, 0, tzinfo=datetime.UTC)
        self.init = {**by["system/init"], "uuid": session, "session_id": session}

    # small helpers -------------------------------------------------------------------
    def _stamp(self) -> str:
        self.clock += datetime.timedelta(milliseconds=self.rng.randint(1, 40))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def _text(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(lo, hi)))

    def _meta(self, request: str, message: str) -> dict[str, str]:
        trace = f"00-{self.ids.hex(32)}-{self.ids.hex(16)}-01"
        return {
            "codebuddy.ai/conversationRequestId": request,
            "codebuddy.ai/modelRequestId": message,
            "codebuddy.ai/llmMessageId": message,
            "traceparent": trace,
            "baggage": f"codebuddy.session_id={self.session},"
            f"codebuddy.conversation_request_id={request}",
        }

    def _private(self, request: str, message: str, meta: dict[str, str]) -> dict[str, Any]:
        return {
            "_requestId": request,
            "_messageId": message,
            "_meta": meta,
            "__timestamp": self._stamp(),
        }

    def _event(self, event: dict[str, Any], request: str, message: str, meta: Any) -> bytes:
        return (
            orjson.dumps(
                {
                    "type": "stream_event",
                    "event": event,
                    "session_id": self.session,
                    "parent_tool_use_id": None,
                    "uuid": self.ids.uuid(),
                    **self._private(request, message, meta),
                }
            )
            + b"\n"
        )

    def _message(self, content: list[Any], request: str, message: str, meta: Any) -> bytes:
        tmpl = self.t["assistant"]
        msg = {
            **tmpl["message"],
            "id": message,
            "content": content,
            "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else None,
        }
        return (
            orjson.dumps(
                {
                    "type": "assistant",
                    "uuid": self.ids.uuid(),
                    "session_id": self.session,
                    "message": msg,
                    "parent_tool_use_id": None,
                    **self._private(request, message, meta),
                }
            )
            + b"\n"
        )

    def _tool_input(self, name: str) -> dict[str, Any]:
        path = f"/work/src/{self.rng.choice(WORDS)}_{self.rng.choice(WORDS)}.py"
        if name == "Bash":
            return {
                "command": f"pytest -q tests/test_{self.rng.choice(WORDS)}.py",
                "description": self._text(2, 6),
            }
        if name in ("Grep", "Glob"):
            return {"pattern": self._text(1, 3), "path": "/work/src"}
        if name == "Edit":
            return {
                "file_path": path,
                "old_string": self._text(5, 40),
                "new_string": self._text(5, 40),
            }
        if name == "Write":  # a whole file: a few hundred bytes to a few KiB
            body = "\n".join(self._text(3, 12) for _ in range(self.rng.randint(5, 60)))
            return {"file_path": path, "content": body}
        return {"file_path": path}

    def _step(self, request: str, tool: bool) -> Iterator[bytes]:
        message = self.ids.hex(32)
        meta = self._meta(request, message)
        start = self.t["message_start"]["event"]
        yield self._event(
            {**start, "message": {**start["message"], "id": message}}, request, message, meta
        )
        if tool:
            name = self.rng.choice(TOOLS)
            use_id = "call_" + self.ids.hex(24)
            inp = self._tool_input(name)
            block = {"type": "tool_use", "id": use_id, "name": name, "input": {}}
            yield self._event(
                {"type": "content_block_start", "index": 0, "content_block": block},
                request,
                message,
                meta,
            )
            partial = orjson.dumps(inp).decode()
            for i in range(0, len(partial), 64):
                delta = {"type": "input_json_delta", "partial_json": partial[i : i + 64]}
                yield self._event(
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                    request,
                    message,
                    meta,
                )
            content: list[Any] = [{**block, "input": inp}]
        else:
            yield self._event(self.t["content_block_start"]["event"], request, message, meta)
            words = []
            for _ in range(self.rng.randint(1, 14)):
                piece = self._text(1, 6) + " "
                words.append(piece)
                delta = {"type": "text_delta", "text": piece}
                yield self._event(
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                    request,
                    message,
                    meta,
                )
            content = [{"type": "text", "text": "".join(words)}]
        for key in ("content_block_stop", "message_delta", "message_stop"):
            yield self._event(self.t[key]["event"], request, message, meta)
        yield self._message(content, request, message, meta)
        if tool:
            # a tool result: a few lines to a few KiB of output
            body = "\n".join(self._text(4, 14) for _ in range(self.rng.choice((1, 3, 8, 40))))
            result = {
                "type": "tool_result",
                "tool_use_id": use_id,
                "content": [{"type": "text", "text": body}],
                "is_error": False,
            }
            u = self.user
            yield (
                orjson.dumps(
                    {
                        "type": "user",
                        "uuid": self.ids.uuid(),
                        "session_id": self.session,
                        "message": {**u["message"], "content": [result]},
                        "parent_tool_use_id": None,
                        **self._private(request, message, meta),
                    }
                )
                + b"\n"
            )

    def turn(self) -> Iterator[bytes]:
        request = self.ids.hex(32)
        yield orjson.dumps(self.init) + b"\n"
        status = self.t["system/status"]
        yield (
            orjson.dumps(
                {
                    **status,
                    "uuid": self.ids.uuid(),
                    "session_id": self.session,
                    "_meta": self._meta(request, self.ids.hex(32)),
                    "__timestamp": self._stamp(),
                    "_requestId": request,
                }
            )
            + b"\n"
        )
        for _ in range(self.rng.randint(0, 4)):
            yield from self._step(request, tool=True)
        yield from self._step(request, tool=False)
        res = self.t["result"]
        yield (
            orjson.dumps(
                {
                    **res,
                    "uuid": self.ids.uuid(),
                    "session_id": self.session,
                    "result": self._text(2, 8),
                    "_requestId": request,
                    "_meta": self._meta(request, self.ids.hex(32)),
                    "__timestamp": self._stamp(),
                }
            )
            + b"\n"
        )
        yield orjson.dumps(self.init) + b"\n"  # cbc's second copy, after the result


def generate(path: Path, frames: int, seed: int, captures: Path) -> dict[str, Any]:
    """Write at least ``frames`` frames (whole turns) to ``path``; return its composition."""
    rng = random.Random(seed)
    ids = Ids(rng)
    session = ids.uuid()
    episodes = [Episode(n, _read_frames(captures / n)) for n in EPISODES]
    weights = list(EPISODES.values())
    turns = Turns(captures, ids, session)
    kinds: Counter[str] = Counter()
    replayed: Counter[str] = Counter()
    n = 0
    size = 0
    with open(path, "wb") as f:
        handshake = (captures / TURN_TEMPLATE).read_bytes().split(b"\n", 1)[0] + b"\n"
        f.write(handshake)
        kinds["control_response"] += 1
        n, size = 1, len(handshake)
        while n < frames:
            if rng.randrange(EPISODE_EVERY) == 0:
                ep = rng.choices(episodes, weights)[0]
                for line, kind in zip(ep.replay(ids, session.encode()), ep.kinds, strict=True):
                    f.write(line)
                    size += len(line)
                    kinds[kind] += 1
                    n += 1
                replayed[ep.name.removesuffix(".jsonl")] += 1
            else:
                for line in turns.turn():
                    f.write(line)
                    size += len(line)
                    kinds[_fast_kind(line)] += 1
                    n += 1
    return {
        "frames": n,
        "bytes": size,
        "kinds": dict(sorted(kinds.items())),
        "episodes": dict(sorted(replayed.items())),
    }


_KIND = re.compile(rb'\{"type":"([a-z_]+)"(?:,"subtype":"([a-z_]+)")?')


def _fast_kind(line: bytes) -> str:
    m = _KIND.match(line)
    assert m is not None
    t, st = m.group(1).decode(), m.group(2)
    return f"{t}/{st.decode()}" if t == "system" and st else t


# -- the measurements ---------------------------------------------------------------------


def relay(path: Path) -> int:
    """The floor: a synchronous Python line relay."""
    n = 0
    with open(path, "rb") as f_in, open(os.devnull, "wb") as f_out:
        for line in f_in:
            f_out.write(line)
            n += 1
    return n


def bridge(path: Path, sample: Callable[[], None] | None = None, out: str = os.devnull) -> Engine:
    """The engine over the same bytes, fed and drained the way ``bridge.driver`` does."""
    engine = build_engine("cbc-to-claude", epoch_ms=1_800_000_000_000)
    now = 0.0
    reads = 0
    with open(path, "rb", buffering=0) as f_in, open(out, "wb") as f_out:
        write = f_out.write
        while chunk := f_in.read(READ_SIZE):
            for cmd in engine.feed("backend", chunk, now):
                if type(cmd) is Write:
                    write(cmd.data)
            deadline = engine.next_deadline()
            now += SECONDS_PER_READ
            if deadline is not None and deadline <= now:
                for cmd in engine.advance(now):
                    if type(cmd) is Write:
                        write(cmd.data)
            reads += 1
            if sample is not None and reads % 64 == 0:
                sample()
        for cmd in engine.backend_exited(0, now):
            if type(cmd) is Write:
                write(cmd.data)
    return engine


def best_of(runs: int, fn: Callable[[], Any]) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), times


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: the high-water mark, coarser
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory(path: Path) -> dict[str, int]:
    """Peak traced allocation during one engine run, what the engine still holds after it,
    the RSS growth (sampled every 64 reads) of a run without tracing, and how full the
    session's bounded registries are (``compat.session``: tool calls and tasks)."""
    gc.collect()
    base_rss = _rss()
    peak_rss = base_rss

    def sample() -> None:
        nonlocal peak_rss
        peak_rss = max(peak_rss, _rss())

    engine = bridge(path, sample)
    sample()
    del engine
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    engine = bridge(path)
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    state = engine.state
    del engine
    return {
        "peak": peak - base,
        "retained": current - base,
        "rss_growth": peak_rss - base_rss,
        "tool_uses": len(state.tool_uses),
        "tasks": len(state.tasks),
    }


def profile(path: Path, top: int = 30) -> str:
    prof = cProfile.Profile()
    prof.runcall(bridge, path)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def verify(path: Path) -> dict[str, int]:
    """Contract violations of the engine's output, by rule (informational)."""
    from compat.contract import check_lines, counts

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "out.jsonl"
        bridge(path, out=str(out))
        with open(out, "rb") as f:
            return counts(check_lines(line.rstrip(b"\n") for line in f))


def run(args: argparse.Namespace) -> dict[str, Any]:
    captures = Path(args.captures)
    if not (captures / TURN_TEMPLATE).is_file():
        raise SystemExit(f"no cbc 2.163.0 captures in {captures} (use --captures DIR)")
    with tempfile.TemporaryDirectory(prefix="ccbridge-bench-") as d:
        full, short = Path(d) / "full.jsonl", Path(d) / "quarter.jsonl"
        t0 = time.perf_counter()
        stream = generate(full, args.frames, args.seed, captures)
        quarter = generate(short, args.frames // 4, args.seed, captures)
        gen_s = time.perf_counter() - t0
        mem_q = memory(short)
        mem_f = memory(full)
        relay_best, relay_times = best_of(args.runs, lambda: relay(full))
        holder: list[Engine] = []
        bridge_best, bridge_times = best_of(args.runs, lambda: holder.append(bridge(full)))
        stats = holder[-1].statistics()
        holder.clear()
        prof = profile(full) if args.profile else None
        violations = verify(full) if args.verify else None
    n = stream["frames"]
    grows = mem_f["peak"] > MEM_FACTOR * mem_q["peak"] + MEM_SLACK
    ratio = bridge_best / relay_best
    result: dict[str, Any] = {
        "python": sys.version.split()[0],
        "seed": args.seed,
        "generate_s": round(gen_s, 2),
        "stream": stream,
        "relay": {"best_s": relay_best, "runs_s": relay_times, "frames_per_s": n / relay_best},
        "bridge": {"best_s": bridge_best, "runs_s": bridge_times, "frames_per_s": n / bridge_best},
        "ratio": ratio,
        "max_ratio": args.max_ratio,
        "memory": {
            "frames": {"full": n, "quarter": quarter["frames"]},
            "full": mem_f,
            "quarter": mem_q,
            "grows": grows,
        },
        "statistics": stats,
        "ok": ratio <= args.max_ratio and not grows,
    }
    if violations is not None:
        result["contract_violations"] = violations
    if prof is not None:
        result["profile"] = prof
    return result


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def report(r: dict[str, Any]) -> str:
    s, m = r["stream"], r["memory"]
    lines = [
        f"stream: {s['frames']} frames, {_mib(s['bytes'])} (seed {r['seed']}, "
        f"generated in {r['generate_s']} s)",
        "  frames: " + ", ".join(f"{k} {v}" for k, v in s["kinds"].items()),
        "  captured sessions replayed: " + ", ".join(f"{k} {v}" for k, v in s["episodes"].items()),
        f"relay : {r['relay']['best_s']:.3f} s  ({r['relay']['frames_per_s']:,.0f} frames/s)"
        f"  runs {', '.join(f'{t:.3f}' for t in r['relay']['runs_s'])}",
        f"bridge: {r['bridge']['best_s']:.3f} s  ({r['bridge']['frames_per_s']:,.0f} frames/s)"
        f"  runs {', '.join(f'{t:.3f}' for t in r['bridge']['runs_s'])}",
        f"ratio bridge/relay: {r['ratio']:.2f}  (target <= {r['max_ratio']:g})",
        "memory (engine run)        quarter ({q} frames)   full ({f} frames)".format(
            q=m["frames"]["quarter"], f=m["frames"]["full"]
        ),
    ]
    for key, label in (
        ("peak", "tracemalloc peak"),
        ("retained", "held after the run"),
        ("rss_growth", "RSS growth"),
    ):
        lines.append(f"  {label:<24} {_mib(m['quarter'][key]):>22} {_mib(m['full'][key]):>18}")
    q, f = m["quarter"], m["full"]
    fill_q = f"tool calls {q['tool_uses']}, tasks {q['tasks']}"
    fill_f = f"{f['tool_uses']}, {f['tasks']}"
    lines.append(
        f"  {'session registries':<24} {fill_q:>22} {fill_f:>18}"
        f"  (caps {MAX_TOOL_USES}, {MAX_TASKS})"
    )
    lines.append(
        f"peak memory grows with stream length: {'YES' if m['grows'] else 'no'} "
        f"(growth = full peak > {MEM_FACTOR:g} x quarter peak + {_mib(MEM_SLACK)})"
    )
    st = r["statistics"]
    lines.append(
        "engine statistics: frames "
        + "; ".join(
            f"{d} " + ", ".join(f"{k} {v}" for k, v in c.items())
            for d, c in st["frames"].items()
            if c
        )
        + f"; peak buffer {st['peak_buffer']} B"
    )
    for rule, counts in st["rules"].items():
        lines.append(f"  {rule:<20} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if "contract_violations" in r:
        v = r["contract_violations"]
        lines.append(
            "contract violations of the output: "
            + (", ".join(f"{k} {n}" for k, n in sorted(v.items())) or "none")
        )
    lines.append(
        "OK"
        if r["ok"]
        else "NOT OK: "
        + "; ".join(
            w
            for w, bad in (
                ("ratio above target", r["ratio"] > r["max_ratio"]),
                ("memory grows", m["grows"]),
            )
            if bad
        )
    )
    if "profile" in r:
        lines.append(r["profile"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.throughput",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--frames", type=int, default=200_000, help="frames in the stream (>= this)")
    p.add_argument("--runs", type=int, default=3, help="timed runs of each side (best is kept)")
    p.add_argument("--seed", type=int, default=2163)
    p.add_argument(
        "--captures",
        default=os.environ.get("CCBRIDGE_CBC_CAPTURES", str(DEFAULT_CAPTURES)),
        help="the cbc-2.163.0 reference captures",
    )
    p.add_argument("--max-ratio", type=float, default=MAX_RATIO)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the ratio is above --max-ratio or memory grows",
    )
    p.add_argument("--profile", action="store_true", help="add a cProfile of one engine run")
    p.add_argument(
        "--verify",
        action="store_true",
        help="check the engine's output with compat.contract (informational)",
    )
    args = p.parse_args(argv)
    if args.frames < 4 or args.runs < 1:
        p.error("--frames must be >= 4 and --runs >= 1")
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 1 if args.check and not result["ok"] else 0


if __name__ == "__main__":
    sys.exit(main())
