"""The whole corpus through the engine, as one digest per (capture, profile): what a
redesign of the pipeline or of a rule's code must leave unchanged.

Every capture in the repository (``captures/``, the reference captures, the twins, the
test data) is replayed into a deterministic engine of each profile that has rules
(``cbc-to-claude``, ``claude-to-cbc``): its client lines (``client_in``, or what the backend
read), its backend lines (``stdout``), the client's EOF and the backend's exit, in time
order, every timer fired at its deadline, as the driver runs it. What the
engine wrote to each side, with the moments it closed the backend's input or asked for its
end, is hashed. Logs and statistics are not: a redesign may word and count differently,
but never change a frame.

``tests/test_corpus_differential.py`` compares the digests with ``tests/data/corpus.json``.
A change that is meant to change output regenerates it, and says so in its commit:

    python -m tests.corpus_digest --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from compat.capture import CaptureError, parse
from compat.engine import CloseBackendInput, Command, Engine, TerminateBackend, Write
from compat.profiles import build, parse_rule_settings

from .compat.helpers import det_env

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "data" / "corpus.json"
PROFILES = ("cbc-to-claude", "claude-to-cbc")
#: where the captures are (every ``*.jsonl`` below them)
ROOTS = ("captures", "tests/bridge/data", "tests/compat/data")

Event = tuple[float, str, bytes]


def corpus() -> Iterator[Path]:
    for root in ROOTS:
        yield from sorted((REPO / root).rglob("*.jsonl"))


def events(path: Path) -> list[Event] | None:
    """The capture as replay events; None for a file that is no capture."""
    try:
        with path.open("rb") as f:
            cap = parse(f)
    except (CaptureError, ValueError):
        return None
    client = "client_in" if cap.lines("client_in") else "stdin"
    out: list[Event] = []
    for r in cap.records:
        if r.kind == client:
            out.append((r.t, "client", r.data + b"\n"))
        elif r.kind == "stdout":
            out.append((r.t, "backend", r.data + (b"" if r.partial else b"\n")))
        elif r.kind in ("note", "event") and "stdin closed" in r.text:
            out.append((r.t, "eof", b""))
        elif r.kind == "exit":
            status = cap.exit_status
            out.append((r.t, "exit", str(status if status is not None else 0).encode()))
    return out or None


def digest(evs: list[Event], profile: str) -> str:
    up, down = build(profile, parse_rule_settings(()))
    replay = _Replay(Engine(up, down, det_env(), strict=True))
    for t, kind, data in sorted(evs, key=lambda e: e[0]):
        replay.event(t, kind, data)
    replay.advance(max((t for t, _, _ in evs), default=0.0) + 700.0)  # past every timer
    return hashlib.sha256(b"".join(replay.out)).hexdigest()


class _Replay:
    """The engine driven as the driver drives it, with no I/O: every timer fired at its
    deadline, a ``CloseBackendInput`` carried out at once, a terminated backend silent."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.out: list[bytes] = []
        self.terminated: float | None = None

    def event(self, t: float, kind: str, data: bytes) -> None:
        self.advance(t)
        eng = self.engine
        if kind == "client":
            self.take(eng.feed("client", data, t), t)
        elif kind == "backend" and (self.terminated is None or t <= self.terminated):
            self.take(eng.feed("backend", data, t), t)
        elif kind == "eof":
            self.take(eng.eof("client", t), t)
        elif kind == "exit":
            self.take(eng.backend_exited(int(data or b"0"), t), t)

    def advance(self, t: float) -> None:
        deadline = self.engine.next_deadline()
        while deadline is not None and deadline <= t:
            self.take(self.engine.advance(deadline), deadline)
            deadline = self.engine.next_deadline()

    def take(self, cmds: list[Command], t: float) -> None:
        closed = False
        for c in cmds:
            if isinstance(c, Write):
                self.out.append(f"{c.side} {t:.6f} ".encode() + c.data)
            elif isinstance(c, (CloseBackendInput, TerminateBackend)):
                self.out.append(f"{type(c).__name__} {t:.6f}\n".encode())
                closed = closed or isinstance(c, CloseBackendInput)
                if isinstance(c, TerminateBackend) and self.terminated is None:
                    self.terminated = t
        if closed:
            self.take(self.engine.input_closed(t), t)


def digests() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for path in corpus():
        evs = events(path)
        if evs is not None:
            out[str(path.relative_to(REPO))] = {p: digest(evs, p) for p in PROFILES}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.corpus_digest")
    ap.add_argument("--write", action="store_true", help=f"write {GOLDEN.relative_to(REPO)}")
    args = ap.parse_args(argv)
    got = digests()
    if args.write:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"{len(got)} captures x {len(PROFILES)} profiles -> {GOLDEN}", file=sys.stderr)
        return 0
    print(json.dumps(got, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
