"""``ccbridge scenario from-capture REC``: a recorded session (``compat.capture``: a
``CCBRIDGE_RECORD``/``--record``/``ccbridge record`` capture, a scenario run, a reference
transcript; Claude Code or cbc, direct or through either profile, stream-json or ``-p``)
as a scenario (``harness.scenario``), so the same session can be run again, on either
CLI, against the stand-in model.

- The client's side (``harness.from_capture_client``): the launch arguments (the
  backend's executable, the stream-json base flags and what the runner adds itself left
  out; ``--resume``/``--continue`` too), the environment variables that shape the session
  (no credential, no URL, nothing the runner sets), ``initialize``, each line and the EOF,
  each step waiting for the frame the client had read before it; a scenario run's
  resumed second run (its ``[resume]``) as ``[resume]`` again.
- The model's side (``harness.from_capture_model``): each reply the recording shows, in
  order, per thread, with its stop reason; failed requests and cut streams.
- What a capture cannot hold: the files the session's tools read. The comment at the top
  lists the tool results that will differ; ``--files DIR`` adds a directory's text files.

The session's working directory (the ``cwd`` of its ``system/init``) and home become
``{CWD}`` and ``{HOME}`` before anything is read, as the runner writes its captures and
substitutes them back. Secrets never travel: every string of the scenario passes the
capture's redaction rules (``compat.redact``), and the scenario says so at its top.

Bad input is a ``FromCaptureError`` (one line; the command exits 2): a file that is not a
capture, a capture without the client's side (a stdout dump). A capture that was cut (its
last line incomplete: ``Capture.cut``) is converted from what is whole, with a warning.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import attrs
import orjson

from compat import capture
from compat.capture import Capture, Record
from compat.redact import redact_argv, redact_obj, redact_text
from harness import toml_write
from harness.from_capture_client import ClientWalk, answers_once
from harness.from_capture_files import (
    Differing,
    FilesError,
    differing,
    dir_files,
    header_files,
)
from harness.from_capture_launch import (
    backend_kind,
    client_args,
    client_dialect,
    launch_argv,
    launch_argv_of,
    places,
    scrubbed,
    session_env,
)
from harness.from_capture_model import Call, Item, ModelWalk
from harness.from_capture_rules import cbc_item, rules

#: the frames of Claude's ``-p --output-format json --verbose`` array the walk reads
CLAUDE_KINDS = frozenset({"assistant", "user", "system", "result"})


class FromCaptureError(ValueError):
    pass


@attrs.frozen
class Converted:
    doc: dict[str, Any]
    comments: tuple[str, ...]
    warnings: tuple[str, ...]
    n_rules: int
    n_steps: int

    def text(self) -> str:
        return toml_write.dumps(self.doc, self.comments)


def read(path: str | Path) -> tuple[Capture, int]:
    """The capture at ``path`` and its number of lines; ``FromCaptureError`` when it
    cannot be read, is not a capture (``compat.capture.read`` says why), or has no
    client side (a stdout dump)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise FromCaptureError(f"{path}: cannot be read ({e.strerror or e})") from None
    try:
        capture.read(data)  # (what every command calls a capture, and why not)
        cap = capture.parse(data.splitlines(keepends=True))  # (a cut last line kept apart)
    except capture.CaptureError as e:
        raise FromCaptureError(f"{path}: {e}") from None
    if cap.flavor == "stdout":
        raise FromCaptureError(
            f"{path}: a capture with no client side (a dump of what the CLI wrote; record "
            "the session with CCBRIDGE_RECORD, --record or `ccbridge record`)"
        )
    return cap, data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _frame(r: Record) -> dict[str, Any] | None:
    try:
        obj = orjson.loads(r.data)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


# -- the walk -----------------------------------------------------------------------------
@attrs.frozen
class Sides:
    client_in: str  # what the client wrote
    view: str  # what the client read
    backend: str  # what the backend wrote
    backend_in: str  # what the backend read


def sides(cap: Capture) -> Sides:
    kinds = {r.kind for r in cap.records}
    view = "client_out" if "client_out" in kinds else "stdout"
    bridged = "client_in" in kinds or "client_out" in kinds
    client_in = "client_in" if bridged else "stdin"
    backend_in = "stdin" if "stdin" in kinds else client_in
    return Sides(client_in, view, "stdout" if "stdout" in kinds else view, backend_in)


#: the note a scenario run writes before the second run of its ``[resume]``
RESUME_NOTE = "resume: second run: "


def walk(
    records: list[Record], s: Sides, client: ClientWalk, model: ModelWalk, notes: list[str]
) -> int | None:
    """Feed one run's records to the walks; the index of the note that starts a resumed
    second run (``RESUME_NOTE``), if one does."""
    eof_seen = False
    for i, r in enumerate(records):
        if r.kind == "note" and r.text.startswith(RESUME_NOTE):
            return i
        if r.partial and r.kind in (s.client_in, s.view, s.backend):
            notes.append(f"line {r.lineno}: a partial {r.kind} line (no newline) is left out")
            continue
        frame = _frame(r)
        if r.kind == s.client_in:
            client.line(r.t, frame, r.data)
        if r.kind == s.backend_in:
            model.client(r.t, frame)
        if r.kind == s.view and frame is not None:
            client.frame(r.t, frame, r.data)
        if r.kind == s.backend:
            _backend_line(r, frame, model, client.headless)
        if r.kind == "note" and r.text.strip() == "stdin closed" and not eof_seen:
            eof_seen = True
            client.close(r.t)
    return None


def _backend_line(
    r: Record, frame: dict[str, Any] | None, model: ModelWalk, headless: bool
) -> None:
    if frame is not None:
        model.backend(r.t, frame)
    elif headless:
        model.printed.append(r.text)  # a -p run's text, or a JSON document over lines


def printed_output(model: ModelWalk, t: float) -> None:
    """What a ``-p`` run printed that was not stream-json: a JSON array of messages
    (Claude's ``--output-format json --verbose``; cbc's ``json``, its own log, over many
    lines) is fed to the walk; text stays the final answer (``printed``)."""
    try:
        doc = orjson.loads("\n".join(model.printed)) if model.printed else None
    except orjson.JSONDecodeError:
        return
    if not isinstance(doc, list):
        return
    model.printed = []
    for item in doc:
        is_claude = isinstance(item, dict) and item.get("type") in CLAUDE_KINDS
        frame = item if is_claude else cbc_item(item)
        if frame is not None:
            model.backend(t, frame)


# -- the scenario ---------------------------------------------------------------------------
@attrs.define
class Resumed:
    """The second run of a recorded scenario's ``[resume]``: its client's walk, and its
    args when they are not the first run's (``--resume <id>`` left out: the runner adds
    it)."""

    client: ClientWalk
    args: list[str] | None


@attrs.define
class Session:
    """A capture walked: the client's walk, the model's, and what the launch says."""

    client: ClientWalk
    model: ModelWalk
    args: list[str]
    headless: bool
    kind: str  # the backend: claude, cbc, unknown
    resume: Resumed | None = None


def _raw_cbc(kind: str, s: Sides) -> bool:
    """The client read cbc's own stdout (and so its init copies, in varying number)."""
    return kind == "cbc" and s.view == "stdout" and s.client_in == "stdin"


def read_session(
    cap: Capture, source: str, max_delay: float, n_lines: int, notes: list[str]
) -> Session:
    """Walk ``cap``, its machine's paths made placeholders first."""
    frames = [f for r in cap.records if r.kind in ("stdout", "client_out") if (f := _frame(r))]
    pairs = places(cap, frames)
    records = scrubbed(cap.records, pairs)
    args, headless = _args(cap, pairs, notes)
    s = sides(cap)
    eof = any(r.kind == "note" and r.text.strip() == "stdin closed" for r in records)
    if not headless and not eof and not any(r.kind == s.client_in for r in records):
        raise FromCaptureError(
            f"{source}: a capture with no client side (no line the client wrote)"
        )
    kind = backend_kind(cap, frames)
    client = ClientWalk(headless=headless, max_delay=max_delay, raw_cbc=_raw_cbc(kind, s))
    model = ModelWalk(max_delay)
    at = walk(records, s, client, model, notes)
    resume = None
    if at is not None:
        resume = _resumed(records, at, s, client, model, args, notes)
    if headless:
        printed_output(model, max((r.t for r in records), default=0.0))
    if cap.cut:
        _cut(cap, n_lines, resume.client if resume else client, notes)
    return Session(client, model, args, headless, kind, resume)


def _cut(cap: Capture, n_lines: int, client: ClientWalk, notes: list[str]) -> None:
    """A capture whose last line is incomplete: said, and its last run's client waits
    for the last frame recorded instead of closing its input early."""
    last = cap.records[-1]
    notes.append(
        f"the capture was cut: its last line (line {n_lines or last.lineno + 1}) is "
        f"incomplete and left out; the scenario ends with the last whole record "
        f"(t={last.t:.1f}s)"
    )
    if not client.closed:
        client.wait_for_last()


def _resumed(
    records: list[Record],
    at: int,
    s: Sides,
    first: ClientWalk,
    model: ModelWalk,
    args: list[str],
    notes: list[str],
) -> Resumed:
    """The second run, from the note at ``records[at]`` on: its own client walk (its
    conditions count from its start), the model's walk going on."""
    note = records[at]
    client = ClientWalk(headless=first.headless, max_delay=first.max_delay, raw_cbc=first.raw_cbc)
    client.last_action = note.t
    again = walk(records[at + 1 :], s, client, model, notes)
    if again is not None:
        notes.append("a third run of the recorded scenario is left out")
    argv = launch_argv_of(note.text.removeprefix(RESUME_NOTE))
    own, _ = client_args(argv, [])
    return Resumed(client, None if own == args else own)


def convert(
    cap: Capture,
    *,
    source: str,
    name: str | None = None,
    files_dir: str | Path | None = None,
    max_delay: float = 30.0,
    n_lines: int = 0,
) -> Converted:
    """The scenario of a session. ``source``: the capture's file name (for the texts)."""
    notes: list[str] = []
    ses = read_session(cap, source, max_delay, n_lines, notes)
    items = _with_answer(ses.model.finish(), ses.model, ses.headless, notes)
    files = header_files(cap)
    if files_dir is not None:
        try:
            files.update(dir_files(files_dir, notes))
        except FilesError as e:
            raise FromCaptureError(str(e)) from None
    doc, dropped = toml_write.clean(_doc(cap, source, name, ses, rules(items), files))
    if dropped:
        notes.append(f"{dropped} null value(s) left out (TOML has none): tool inputs may differ")
    doc["args"] = redact_argv(doc["args"])
    red, n_red = redact_obj(doc)
    notes += ses.model.notes + ses.client.notes
    if ses.model.skipped_blocks:
        notes.append(
            "content blocks the stand-in cannot send: "
            + ", ".join(sorted(ses.model.skipped_blocks))
        )
    found = differing(items, ses.model.results, files)
    red["replay"], _ = redact_obj(_replay(source, found))
    differ = [d["reason"] for d in red["replay"].get("differs", [])]
    comments = _comments(cap, source, ses, n_red, differ, notes)
    n_steps = len(red["steps"]) + len(red.get("resume", {}).get("steps", []))
    return Converted(red, tuple(comments), tuple(notes), len(red["model"]["rules"]), n_steps)


def _replay(source: str, found: list[Differing]) -> dict[str, Any]:
    """The scenario's ``[replay]``: the recording, the calls whose results will differ."""
    out: dict[str, Any] = {"source": os.path.basename(source)}
    if found:
        out["differs"] = toml_write.clean([d.table() for d in found])[0]
    return out


def _args(
    cap: Capture, pairs: list[tuple[bytes, bytes]], notes: list[str]
) -> tuple[list[str], bool]:
    argv = launch_argv(cap)
    if argv is None:
        notes.append("the capture does not say how the CLI was started: no args")
        return [], False
    profile = cap.header.get("profile")
    if isinstance(profile, str) and profile != "identity":
        notes.append(
            f"recorded through the bridge (profile {profile}): the client's own command line is "
            "not in the capture; args are the backend's, as the bridge started it"
        )
    for old, new in pairs:
        argv = [a.replace(old.decode(), new.decode()) for a in argv]
    return client_args(argv, notes)


def _with_answer(
    items: list[Item], model: ModelWalk, headless: bool, notes: list[str]
) -> list[Item]:
    """A ``-p`` run that printed text or one JSON result shows only its final answer: one
    reply with it."""
    if not headless or any(i.thread is None and i.kind == "reply" for i in items):
        return items
    notes.append("a -p run's output (text or json) shows only the final answer: one reply with it")
    if model.structured is not None:
        return [*items, Item("reply", None, calls=[Call("", "StructuredOutput", model.structured)])]
    answer = "\n".join(model.printed) if model.printed else model.final
    return items if answer is None else [*items, Item("reply", None, texts=[answer])]


def _doc(
    cap: Capture,
    source: str,
    name: str | None,
    ses: Session,
    model_rules: list[dict[str, Any]],
    files: dict[str, str],
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": name or _name(source),
        "description": f"converted from {os.path.basename(source)}",
        "time_limit": _time_limit(cap),
    }
    if ses.headless:
        doc["headless"] = True
    elif not ses.client.initialize:
        doc["initialize"] = False
    if not ses.client.closed and not cap.cut:
        doc["keep_stdin_open"] = True
    doc["args"] = ses.args
    dialect = client_dialect(cap)
    if dialect is not None:
        doc["client"] = dialect
    env = session_env(cap)
    if env:
        doc["env"] = env
    if files:
        doc["files"] = files
    doc["model"] = {"rules": model_rules}
    doc["steps"] = ses.client.steps
    answers = ses.client.answers + (ses.resume.client.answers if ses.resume else [])
    if answers:
        doc["answers"] = answers_once(answers)
    if ses.resume is not None:
        doc["resume"] = _resume_doc(ses.resume)
    return doc


def _resume_doc(resume: Resumed) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if resume.args is not None:
        out["args"] = resume.args
    if not resume.client.closed:
        out["keep_stdin_open"] = True
    out["steps"] = resume.client.steps
    return out


def _name(source: str) -> str:
    stem = os.path.basename(source)
    for suffix in (".jsonl", ".json", ".transcript", ".stdout"):
        stem = stem.removesuffix(suffix)
    return stem or "converted"


def _time_limit(cap: Capture) -> float | int:
    limit = cap.header.get("time_limit")
    if isinstance(limit, int | float) and not isinstance(limit, bool) and limit > 0:
        return limit
    last = max((r.t for r in cap.records), default=0.0)
    return max(60, math.ceil(last) + 30)


def _comments(
    cap: Capture, source: str, ses: Session, n_red: int, differ: list[str], notes: list[str]
) -> list[str]:
    h = cap.header
    meta: dict[str, Any] = h["meta"] if isinstance(h.get("meta"), dict) else {}
    version = h.get("backend_version") or meta.get("cbc_version") or meta.get("claude_version")
    how = h.get("via") or h.get("profile")
    what = f"{ses.kind}{' ' + str(version) if version else ''}, "
    what += f"through {how}" if how else "direct"
    out = [
        f"Converted by `ccbridge scenario from-capture` from {os.path.basename(source)}",
        f"({redact_text(str(h.get('source', cap.flavor)))[:80]}; {what}; "
        f"{'-p' if ses.headless else 'stream-json'}).",
        "Credentials: none. Every string here passed the capture redaction rules",
        f"(compat/redact.py: {n_red} value(s) redacted); the runner gives the CLI dummy keys.",
        "The model's replies are the recorded ones, in order (each `times = 1`); a request",
        'the recording does not show gets the stand-in\'s default ("ok", "done.").',
    ]
    if differ:
        out += [
            "Tool results that will differ (what the session's tools read is not in a",
            "capture; add a directory's files with --files DIR):",
            *(f"  - {d}" for d in differ),
        ]
    else:
        out.append("Tool results that will differ: none found.")
    if notes:
        out += ["Warnings:", *(f"  - {n}" for n in notes)]
    return out
