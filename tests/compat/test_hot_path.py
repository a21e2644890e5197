"""The hot path (bench/throughput.py) gives what the parsing path gives: private-fields cuts
the line's bytes, lazy stages leave frames unparsed, and nothing else changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.engine import Log
from compat.frames import Frame
from compat.stage import Context, Direction, Output, Stage
from compat.stages.hygiene import PRIVATE_FIELDS

from ..conftest import REFERENCE
from .helpers import engine_for, stage_on, written

DATA = Path(__file__).parent / "data"


def cbc_lines() -> list[bytes]:
    """Every backend line of the cbc transcripts in tests/compat/data."""
    out = []
    for path in sorted(DATA.glob("mockoai_*.transcript.jsonl")):
        for rec in path.read_text().splitlines():
            r = json.loads(rec)
            if r.get("kind") == "stdout":
                out.append(r["text"].encode())
    return out


def stripped(raw: bytes) -> bytes:
    """What private-fields did before the byte path: parse, filter, re-serialize."""
    obj = orjson.loads(raw)
    content = (obj.get("message") or {}).get("content") if obj.get("type") == "user" else None
    inner = isinstance(content, list) and any(isinstance(b, dict) and "_meta" in b for b in content)
    if not any(k in obj for k in PRIVATE_FIELDS) and not inner:
        return raw
    out = {k: v for k, v in obj.items() if k not in PRIVATE_FIELDS}
    if inner:  # cbc's _meta inside tool_result blocks (private-fields strips it too)
        out["message"] = {
            **obj["message"],
            "content": [
                {k: v for k, v in b.items() if k != "_meta"}
                if isinstance(b, dict) and b.get("type") == "tool_result"
                else b
                for b in content or ()
            ],
        }
    return orjson.dumps(out)


def private_only(raw: bytes) -> tuple[bytes, list[Log]]:
    eng = engine_for("identity", down=[stage_on("private-fields")])
    cmds = eng.feed("backend", raw + b"\n", 0.0)
    return written(cmds).removesuffix(b"\n"), [c for c in cmds if isinstance(c, Log)]


def test_cbc_lines_are_cut_to_what_parsing_gives() -> None:
    lines = cbc_lines()
    assert len(lines) > 100
    for raw in lines:
        assert private_only(raw)[0] == stripped(raw)


def test_frames_of_one_message_share_the_run_and_still_all_lose_it() -> None:
    eng = engine_for("identity", down=[stage_on("private-fields")])
    run = b',"_requestId":"r1","_messageId":"m1","_meta":{"a":"b"}'
    lines = [
        b'{"type":"stream_event","event":{"i":%d}' % i
        + run
        + b',"__timestamp":"2026-11-29T10:53:11.%03dZ"}' % i
        for i in range(3)
    ]
    lines.append(b'{"type":"stream_event","event":{}' + run + b',"__timestamp":"x","x":1}')
    lines.append(b'{"type":"stream_event","event":{}' + run[:-2] + b'c"},"__timestamp":"t"}')
    out = written(eng.feed("backend", b"\n".join(lines) + b"\n", 0.0)).splitlines()
    assert out == [stripped(raw) for raw in lines]
    assert out[-2] == b'{"type":"stream_event","event":{},"x":1}'


@pytest.mark.parametrize(
    "raw",
    [
        # a private field before the trailing run, by name or spelled with escapes
        b'{"type":"result","errors_info":[1],"usage":{},"_requestId":"r"}',
        b'{"type":"user","\\u005fmeta":{},"message":{},"__timestamp":"t"}',
        b'{"type":"user","\\u005fmeta":{},"message":{}}',
        b'{"type":"user", "_meta":{}, "message":{}, "__timestamp":"t"}',
        # a run followed by another field, and an underscore string that is no key
        b'{"type":"user","_meta":{},"__timestamp":"t","uuid":"u"}',
        b'{"type":"system","subtype":"init","slash_commands":["_compact"],"__timestamp":"t"}',
        # nested private names stay
        b'{"type":"assistant","message":{"_meta":"kept","x":{"__timestamp":1}},"_meta":{}}',
        # non-canonical JSON: the parsing path, as before
        b'{"type":"user","n":1.50,"s":"\\u00e9","_requestId":"r"}',
    ],
)
def test_other_shapes_take_the_parsing_path(raw: bytes) -> None:
    assert private_only(raw)[0] == stripped(raw)


@attrs.define
class _Reader(Stage):
    """Parses every frame (as ``session`` or ``tool-errors`` do before private-fields)."""

    rule: ClassVar[str] = "test-reader"
    kinds: ClassVar[frozenset[str] | None] = None

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        return None


@attrs.define
class _Rewrite(Stage):
    """Writes every frame anew from its object (as a later rule that rewrites one does)."""

    rule: ClassVar[str] = "test-rewrite"
    kinds: ClassVar[frozenset[str] | None] = None

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        return (frame.replace(dict(frame.obj)),)


def parsed_then_rewritten(raw: bytes) -> bytes:
    """``raw`` through a stage that parses it, private-fields, and one that rewrites it."""
    eng = engine_for("identity", down=[_Reader(), stage_on("private-fields"), _Rewrite()])
    return written(eng.feed("backend", raw + b"\n", 0.0)).removesuffix(b"\n")


def test_a_frame_parsed_before_private_fields_loses_the_run_from_its_object_too() -> None:
    """A frame a stage before private-fields parsed leaves as the cut line, and its object is
    the cut line's too: a later rule that rewrites it writes no private field."""
    for raw in cbc_lines():
        assert parsed_then_rewritten(raw) == stripped(raw)


@pytest.mark.parametrize(
    "raw",
    [
        # a run with a duplicate key, and duplicates of the members before it
        b'{"type":"user","a":1,"_meta":{},"_requestId":"r","_meta":2,"__timestamp":"t"}',
        b'{"type":"user","a":1,"b":2,"a":3,"_meta":{},"__timestamp":"t"}',
        b'{"type":"assistant","message":{"id":"m"},"_requestId":"r","_messageId":"m"}',
    ],
)
def test_a_parsed_frame_with_duplicate_keys_loses_exactly_the_run(raw: bytes) -> None:
    assert parsed_then_rewritten(raw) == stripped(raw)


def test_invalid_json_passes_verbatim_even_when_it_ends_in_a_private_run() -> None:
    broken = b'{"type":"assistant","message":{"content":[,"_requestId":"r"}'
    out, logs = private_only(broken)
    assert out == broken  # (the pipeline's proof parse: only JSON is cut)
    assert any("not valid JSON" in log.message for log in logs)
    broken = b'{"type":"assistant","message":{"content":["_requestId":"r"}'
    out, logs = private_only(broken)
    assert out == broken
    assert any("not valid JSON" in log.message for log in logs)


def test_broken_lines_pass_verbatim_and_are_logged() -> None:
    rules = ("session", "foreign-init", "init-once", "private-fields")
    eng = engine_for("identity", down=[stage_on(r) for r in rules])
    tool_call = b'{"type":"assistant","message":{"content":[{"type":"tool_use",\n'
    delta = b'{"type":"stream_event","event":{\n'  # no rule needs to look inside
    cmds = eng.feed("backend", tool_call + delta, 0.0)
    assert written(cmds) == tool_call + delta
    # (each is parsed once, the pipeline's proof of its kind: both are seen broken)
    assert eng.statistics()["rules"]["framing"]["invalid-down"] == 2


def test_session_still_sees_tool_calls_spelled_with_escapes() -> None:
    eng = engine_for()
    eng.feed(
        "backend",
        b'{"type":"assistant","message":{"content":[{"type":"tool\\u005fuse",'
        b'"id":"c1","name":"Agent","input":{}}]}}\n',
        0.0,
    )
    assert "c1" in eng.state.tool_uses


# -- memory: the registries are bounded and keep only what rules read ---------------------


def test_tool_calls_keep_only_the_input_fields_rules_read() -> None:
    from compat.session import MAX_TOOL_USES, SessionState, ToolUse

    state = SessionState()
    state.remember_tool_use(ToolUse("w", "Write", {"file_path": "a", "content": "x" * 10**5}))
    state.remember_tool_use(
        ToolUse(
            "a", "Agent", {"description": "d", "prompt": "p", "subagent_type": "s", "model": "m"}
        )
    )
    state.remember_tool_use(
        ToolUse(
            "x",
            "DeferExecuteTool",
            {"toolName": "Workflow", "params": {"scriptPath": "w.js", "blob": "y" * 999}},
        )
    )
    assert state.tool_uses["w"].input == {}
    assert state.tool_uses["a"].input == {"description": "d", "prompt": "p", "subagent_type": "s"}
    assert state.tool_uses["x"].input == {"toolName": "Workflow", "params": {"scriptPath": "w.js"}}
    for i in range(MAX_TOOL_USES + 5):
        state.remember_tool_use(ToolUse(f"c{i}", "Bash", {"command": "ls"}))
    assert len(state.tool_uses) == MAX_TOOL_USES
    assert "c4" not in state.tool_uses
    assert f"c{MAX_TOOL_USES + 4}" in state.tool_uses


def test_finished_tasks_are_forgotten_before_running_ones() -> None:
    from compat.session import MAX_TASKS, SessionState

    state = SessionState()
    state.task("running-old").start()
    for i in range(MAX_TASKS - 3):
        state.task(f"r{i}").start()
    for tid in ("t0", "t1"):  # (a task is notified by ``finished``, its one writer)
        info = state.task(tid)
        info.start()
        info.end("completed", 1)
        state.finished(info)
    assert len(state.tasks) == MAX_TASKS
    state.task("new")
    assert len(state.tasks) == MAX_TASKS
    assert "running-old" in state.tasks
    assert "t0" not in state.tasks  # the oldest finished one goes
    assert "t1" in state.tasks
    state.task("newer")
    assert "t1" not in state.tasks
    state.task("newest")
    assert "running-old" not in state.tasks  # none finished: the oldest goes
    assert state.forgotten_live == 1


def test_has_open_task_is_whether_open_tasks_has_one() -> None:
    """init-once asks it per status frame between turns; the notified tasks kept until
    forgotten make the list long, the answer is the same."""
    import itertools

    from compat.session import SessionState, TaskPhase

    for phases in itertools.product(list(TaskPhase), repeat=3):
        state = SessionState()
        for i, phase in enumerate(phases):
            state.task(f"t{i}").phase = phase
        assert state.has_open_task() == bool(state.open_tasks()), phases


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["task", "start", "end", "finished"]), st.integers(0, 11)),
        max_size=80,
    )
)
def test_has_open_task_follows_the_session_as_it_forgets(ops: list[tuple[str, int]]) -> None:
    """The open ids ``has_open_task`` reads stay ``open_tasks()`` through any order of
    lifecycle steps, with tasks forgotten past small caps (finished and live ones), and
    a forgotten task's ``TaskInfo`` still changed by the rule that holds it."""
    import compat.session as session
    from compat.session import SessionState, TaskPhase

    state = SessionState()
    held: dict[int, session.TaskInfo] = {}
    caps = (session.MAX_TASKS, session.MAX_FINISHED)
    session.MAX_TASKS, session.MAX_FINISHED = 5, 2
    try:
        for op, n in ops:
            info = held.get(n)
            if op == "task" or info is None:
                info = held[n] = state.task(f"t{n}")
            elif op == "start" and info.phase is TaskPhase.NEW:
                info.start()
            elif op == "end" and info.phase is TaskPhase.RUNNING:
                info.end("completed", 1)
            elif op == "finished" and info.phase in (TaskPhase.NEW, TaskPhase.ENDED):
                state.finished(info)
            assert state.has_open_task() == bool(state.open_tasks()), ops
    finally:
        session.MAX_TASKS, session.MAX_FINISHED = caps


# -- the fast paths give what the parsing path gives, on the reference captures ----------

CAPTURES = REFERENCE or Path("reference captures not found")
NO_CAPTURES = "reference captures not found (set CCBRIDGE_SHARED)"


def _capture_streams() -> list[Path]:
    out = []
    for d in ("cbc-2.163.0", "claude-2.1.220"):
        out += [
            p
            for p in sorted((CAPTURES / d).glob("*.jsonl"))
            if not p.name.endswith((".transcript.jsonl", ".mock-requests.jsonl"))
        ]
    return out


def _run_capture(
    data: bytes,
    step: int,
    slow: bool,
    monkeypatch: pytest.MonkeyPatch,
    fast: bool = True,
    client_eof: bool = False,
) -> bytes:
    """The engine's client-side output for ``data`` fed in ``step``-byte chunks; ``slow``:
    every stage non-lazy: frames parsed before any stage sees them, so private-fields
    re-serializes nothing but takes its parsed branch, and the shortcuts taken only for
    unparsed frames (interrupted-turn, eof-wind-down on stream_event), the skipped
    calls of stages that are ``cold`` for a kind and the fast lines (compat.pipeline) are
    not taken; ``fast=False``: every line becomes a frame (the cold steps still skip);
    ``client_eof``: the client's EOF first (a ``-p`` run: every line in the wind-down)."""
    from compat.stage import REGISTRY

    with monkeypatch.context() as m:
        if slow:
            for cls in REGISTRY.values():
                m.setattr(cls, "lazy", False, raising=False)
        eng = engine_for()
        eng.pipelines["down"].strict = False  # a capture may hold lines a rule rejects
        for p in eng.pipelines.values():
            p.use_cold = not slow
            p.use_fast = fast
        out = [written(eng.eof("client", 0.0))] if client_eof else []
        out += [
            written(eng.feed("backend", data[i : i + step], i / 1000))  # time moves
            for i in range(0, len(data), step)
        ]
        out.append(written(eng.eof("backend", len(data) / 1000)))
        return b"".join(out)


@pytest.mark.skipif(not CAPTURES.is_dir(), reason=NO_CAPTURES)
def test_lazy_paths_give_the_parsing_paths_bytes_on_the_captures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    streams = _capture_streams()
    assert len(streams) > 50
    for path in streams:
        data = path.read_bytes()
        for step in (len(data) or 1, 7, 1) if len(data) < 200_000 else (len(data), 7):
            slow = _run_capture(data, step, True, monkeypatch)
            assert _run_capture(data, step, False, monkeypatch) == slow, (path.name, step)
            frames_only = _run_capture(data, step, False, monkeypatch, fast=False)
            assert frames_only == slow, (path.name, step)


def test_lazy_paths_give_the_parsing_paths_bytes_on_the_raw_twin_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same over what cbc wrote in the corpus's raw runs (captures/twins, in the
    repository: partial messages, renumbered blocks, interrupts, tasks), fed whole and in
    7-byte chunks."""
    from compat.capture import parse

    twins = sorted((Path(__file__).parents[2] / "captures" / "twins").glob("*.cbc-raw.jsonl"))
    assert len(twins) > 40
    for path in twins:
        cap = parse(path.read_bytes().splitlines())
        data = b"".join(r.data + b"\n" for r in cap.records if r.kind == "stdout")
        for step in (len(data) or 1, 7):
            slow = _run_capture(data, step, True, monkeypatch)
            assert _run_capture(data, step, False, monkeypatch) == slow, (path.name, step)


@pytest.mark.skipif(not CAPTURES.is_dir(), reason=NO_CAPTURES)
def test_after_the_client_eof_the_lazy_paths_give_the_parsing_paths_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same with the client's EOF first (a ``-p`` run: eof-wind-down decides a
    stream_event from its kind and is cold for it there too)."""
    for path in _capture_streams():
        data = path.read_bytes()
        for step in (len(data) or 1, 7) if len(data) < 200_000 else (len(data),):
            slow = _run_capture(data, step, True, monkeypatch, client_eof=True)
            fast = _run_capture(data, step, False, monkeypatch, client_eof=True)
            assert fast == slow, (path.name, step)
            frames_only = _run_capture(data, step, False, monkeypatch, False, True)
            assert frames_only == slow, (path.name, step)


def test_after_the_client_eof_stream_events_inside_a_turn_are_fast_lines() -> None:
    """eof-wind-down is cold for a stream_event of a running turn after the client's EOF,
    so those lines are not parsed (they were, every one, before)."""
    from compat.frames import Frame

    eng = _fast_engine()
    eng.eof("client", 0.0)
    parsed = 0
    obj = Frame.obj

    def counting(self: Frame) -> object:
        nonlocal parsed
        if not self.parsed and self.raw.startswith(b'{"type":"stream_event"'):
            parsed += 1
        return obj.fget(self)  # type: ignore[attr-defined]

    lines = stream_events(200)
    try:
        Frame.obj = property(counting)  # type: ignore[assignment,method-assign]
        out = written(eng.feed("backend", b"\n".join(lines) + b"\n", 1.0))
    finally:
        Frame.obj = obj  # type: ignore[method-assign]
    assert out.count(b"\n") == len(lines)
    assert b"__timestamp" not in out
    assert parsed <= 1  # (the first line of the turn may be read by another rule)


def _snapshot(stage: object, ctx: object) -> str:
    import attrs

    return repr(attrs.asdict(stage, recurse=False)) + repr(ctx.state)  # type: ignore[attr-defined,arg-type]


@pytest.mark.skipif(not CAPTURES.is_dir(), reason=NO_CAPTURES)
def test_a_cold_stage_would_have_passed_the_frame_and_changed_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What ``cold`` promises, checked at every frame of the captures (fed in 7-byte
    chunks, so the cold answers are asked often): for each stage that says it is cold for
    the frame's kind, ``on_frame`` on an unparsed copy (``cold_parsed``: also on a parsed
    and on a rewritten copy) returns None and changes neither the stage nor the session
    state."""
    from compat.frames import Frame
    from compat.pipeline import Pipeline

    checked = 0

    def check(pipeline: Pipeline, frame: Frame, ctx: Context) -> None:
        nonlocal checked
        kind = frame.kind()
        if kind is None or frame.parsed or not frame.raw:
            return
        for _, stage in pipeline._coolers:
            if stage.interested(*kind) and stage.cold(kind, ctx):
                copies = [Frame(frame.raw)]
                if stage.cold_parsed:  # also a parsed copy, and one an earlier rule rewrote
                    parsed = Frame(frame.raw)
                    if not isinstance(parsed.obj, dict):
                        continue
                    copies += [parsed, parsed.replace(dict(parsed.obj))]
                for copy in copies:
                    before = _snapshot(stage, ctx)
                    assert stage.on_frame(copy, ctx) is None, (stage.rule, frame.raw)
                    assert _snapshot(stage, ctx) == before, (stage.rule, frame.raw)
                checked += 1

    one = Pipeline._one

    def checked_one(
        self: Pipeline, frame: Frame, start: int, ctx: Context, out: list[Frame]
    ) -> None:
        if self.direction == "down":
            check(self, frame, ctx)
        one(self, frame, start, ctx, out)

    monkeypatch.setattr(Pipeline, "_one", checked_one)
    for path in _capture_streams():
        data = path.read_bytes()
        step = 7 if len(data) < 200_000 else len(data)
        _run_capture(data, step, False, monkeypatch, False)
        _run_capture(data, step, False, monkeypatch, False, client_eof=True)
    assert checked > 500


# -- fast lines (compat.pipeline "Fast lines") ----------------------------------------------


def _fast_engine(fast: bool = True):  # type: ignore[no-untyped-def]
    eng = engine_for()
    eng.pipelines["down"].use_fast = fast
    return eng


_RUN = (
    b',"_requestId":"f2bc081f","_messageId":"6e49d955","_meta":{"codebuddy.ai/modelRequestId":'
    b'"6e49d955","traceparent":"00-208a8a94-76d4fd08-01"}'
)


def stream_events(n: int) -> list[bytes]:
    """cbc 2.163.0 stream_event lines (shape of the reference captures, shortened ids)."""
    return [
        b'{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":'
        b'{"type":"text_delta","text":"word %d "}},"session_id":"bfdd0200","parent_tool_use_id"'
        b':null,"uuid":"4a1226f9-%d"'
        % (i, i)
        + _RUN
        + b',"__timestamp":"2026-11-29T10:00:00.%03dZ"}' % (i % 1000)
        for i in range(n)
    ]


def test_fast_lines_are_cut_and_counted_like_frames() -> None:
    lines = stream_events(50)
    data = b"\n".join(lines) + b"\n"
    outs, stats = [], []
    for fast in (True, False):
        eng = _fast_engine(fast)
        outs.append(written(eng.feed("backend", data, 0.0)))
        stats.append(eng.statistics())
    assert outs[0] == outs[1]
    assert b'"_requestId"' not in outs[0]
    assert b'"__timestamp"' not in outs[0]
    assert stats[0] == stats[1]
    assert stats[0]["rules"]["private-fields"]["rewritten"] == len(lines)


def test_a_line_fast_steps_cannot_settle_takes_the_frame_way_from_the_stage_that_said_so() -> None:
    from compat.pipeline import Pipeline

    taken: list[bytes] = []
    one = Pipeline._one

    def spy(self: Pipeline, frame, start, ctx, out):  # type: ignore[no-untyped-def]
        taken.append(frame.raw)
        one(self, frame, start, ctx, out)

    se, warm = stream_events(2)
    escaped = se.replace(b'"uuid":', b'"\\u0075uid":', 1)  # an escape: only a parse can tell
    assert escaped != se
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Pipeline, "_one", spy)
        eng = _fast_engine()
        eng.feed("backend", warm + b"\n", 0.0)  # (the first line of a session is a frame)
        taken.clear()
        out = written(eng.feed("backend", se + b"\n" + escaped + b"\n", 0.0))
    assert taken == [escaped]  # the first was a fast line, the second became a frame
    first, second = out.splitlines()
    assert first == stripped(se)
    assert orjson.loads(second) == orjson.loads(stripped(escaped))


def test_a_fast_line_a_later_step_sends_the_frame_way_is_not_cut_twice() -> None:
    """private-fields' ``on_raw`` cut the line, then stream-events' could not settle it (a
    message_start): the frame way goes on from stream-events with the cut line, and the
    output and counts are the calling path's."""
    from compat.pipeline import Pipeline
    from compat.stages.hygiene import PrivateFields

    start = stream_events(1)[0].replace(
        b'"event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
        b'"text":"word 0 "}}',
        b'"event":{"type":"message_start","message":{"id":"m1","content":[]}}',
    )
    assert start != stream_events(1)[0]
    lines = [*stream_events(3), start, *stream_events(2)]
    data = b"\n".join(lines) + b"\n"
    taken: list[tuple[bytes, int]] = []
    tails = 0
    one, tail = Pipeline._one, PrivateFields._tail

    def spy(self: Pipeline, frame, at, ctx, out):  # type: ignore[no-untyped-def]
        taken.append((frame.raw, at))
        one(self, frame, at, ctx, out)

    def counted(self: PrivateFields, raw: bytes):  # type: ignore[no-untyped-def]
        nonlocal tails
        tails += 1
        return tail(self, raw)

    outs, stats = [], []
    for fast in (True, False):
        eng = _fast_engine(fast)
        eng.feed("backend", stream_events(1)[0] + b"\n", 0.0)  # (a session's first line)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(Pipeline, "_one", spy)
            m.setattr(PrivateFields, "_tail", counted)
            taken.clear()
            tails = 0
            outs.append(written(eng.feed("backend", data, 0.0)))
        stats.append(eng.statistics())
        if fast:
            pipeline = eng.pipelines["down"]
            (raw, at), *_ = taken
            assert raw == stripped(start)  # already cut
            assert pipeline.stages[at].rule == "stream-events"
            assert tails == len(lines)  # one cut a line
    assert outs[0] == outs[1]
    assert stats[0] == stats[1]


# -- the kind of a wire line, and its plan (compat.pipeline "The proof") -------------------

NESTED_SUBTYPES = [
    b'{"type":"stream_event","event":{"subtype":"x"}}',  # deeper: not the frame's
    b'{"type":"user","m":{"subtype":"x"},"subtype":"init"}',
    b'{"type":"user","subtype":null}',
]

TRICKY_KINDS = [
    b'{"type":"stream_event","event":{}}',
    b'{"type":"stream_event","x":1,"type":"assistant"}',  # the last type counts
    b'{"type":"system","subtype":"init","subtype":"status"}',
    b'{"type":"system","subtype":"init"}',
    b'{"type":"system","x":1,"subtype":"init"}',  # the prefix cannot tell
    b'{"type":"system"}',
    b'{"type":"result","is_error":false,"subtype":"success"}',
    b'{"type":"result","subtype":"success"}',
    b'{"type":"user","subtype":null}',
    b'{"type":"a","subtype":"x","subtype":null}',
    b'{"type":"str\\u0065am_event"}',  # an escape: only a parse reads it
    b'{"type":"we ird"}',
    b'{"type":"x\\"y"}',
    b'{"type":1}',
    b'{"type":"user","m":"\\ud83d"}',  # a lone surrogate: not proved
    b'{"type":"user","m":"\xff"}',  # not UTF-8
    b'{"type":"user"} trailing',
    b'{"type":"user"',
    b'{ "type":"user"}',
    b'{"subtype":"x","type":"system"}',
    b"[]",
    b"",
]


def test_wire_kind_is_the_prefix_kind_the_proof_confirms() -> None:
    """``wire_kind`` (the proof first, then one prefix comparison) answers what the
    pipeline used to compute by reading the prefix and then proving the line: the kind when
    both agree, else UNKNOWN; on tricky lines and every cbc line of the test transcripts."""
    from compat.frames import UNKNOWN, prefix_kind, prove, wire_kind

    for raw in [*TRICKY_KINDS, *NESTED_SUBTYPES, *cbc_lines()]:
        expected = prefix_kind(raw)
        proof = prove(raw)
        if expected is UNKNOWN and proof is not None and proof[0] not in (None, "system"):
            # the prefix reading's scan for "subtype" could not tell; the proof can
            head = b'{"type":"%s"' % str(proof[0]).encode()
            readable = prefix_kind(head + b"}") == proof  # a name the prefix reading takes
            if readable and raw.startswith(head) and "subtype" not in orjson.loads(raw):
                expected = proof
        if expected is not UNKNOWN and proof != expected:
            expected = UNKNOWN
        assert wire_kind(raw) == expected, raw
    assert wire_kind(NESTED_SUBTYPES[0]) == ("stream_event", None)
    assert wire_kind(NESTED_SUBTYPES[1]) is UNKNOWN  # the last subtype counts


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from([b"\\", b"u", b"\\u", b"\\\\u", b'"', b"a", b"uu"]), max_size=12).map(
        b"".join
    ),
    st.integers(0, 14),
    st.one_of(st.none(), st.integers(0, 14)),
)
def test_has_u_escape_is_whether_the_bytes_hold_one(
    raw: bytes, start: int, end: int | None
) -> None:
    """``has_u_escape`` (a ``memchr`` for the backslash, then a regex from there) answers
    what ``b"\\u" in raw[start:end]`` does, for the positions in the line the hot path
    passes."""
    from compat.frames import has_u_escape

    assert has_u_escape(raw, start, end) == (b"\\u" in raw[start:end])
    assert has_u_escape(raw) == (raw.find(b"\\u") >= 0)


def test_plans_are_kept_for_a_bounded_number_of_kinds() -> None:
    """A stream naming ever new kinds (any string is a type) does not grow the pipeline:
    past MAX_PLANS a kind's plan is made for its line and not kept; the lines still pass."""
    from compat.pipeline import MAX_PLANS

    eng = engine_for("identity", down=[stage_on("private-fields")])
    n = MAX_PLANS + 200
    data = b"".join(b'{"type":"t%d","_requestId":"r"}\n' % i for i in range(n))
    out = written(eng.feed("backend", data, 0.0))
    assert out == b"".join(b'{"type":"t%d"}\n' % i for i in range(n))
    assert len(eng.pipelines["down"]._plans) == MAX_PLANS


def test_the_task_lifecycle_is_a_machine_and_an_illegal_step_raises() -> None:
    from compat.session import TaskInfo, TaskPhase

    info = TaskInfo("t")
    assert (info.started, info.notified) == (False, False)
    info.start()
    info.end("completed", 5)
    assert (info.phase, info.status, info.end_time) == (TaskPhase.ENDED, "completed", 5)
    info.phase = info.phase.to(TaskPhase.NOTIFIED)
    assert (info.started, info.notified) == (True, True)
    for bad in (TaskPhase.RUNNING, TaskPhase.ENDED, TaskPhase.NOTIFIED):
        with pytest.raises(ValueError, match="no transition notified"):
            info.phase.to(bad)
    with pytest.raises(ValueError, match="no transition new -> ended"):
        TaskInfo("u").end("completed", 1)  # an end the client never saw start
    assert TaskPhase.NEW.to(TaskPhase.NOTIFIED) is TaskPhase.NOTIFIED  # a notification alone


@attrs.define
class _Warmer(Stage):
    """Not pure: a "go" frame warms a listener up, a timer cools it down."""

    rule: ClassVar[str] = "test-warmer"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"go"})
    warm: bool = False

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self.warm = True
        return None

    def on_timer(self, key: str, ctx: Context) -> Output:
        self.warm = False
        return None


@attrs.define
class _UpWarmer(_Warmer):
    """The same on the client's lines."""

    direction: ClassVar[Direction] = "up"


@attrs.define
class _Listener(Stage):
    """Cold for "x" frames while its warmer is not warm; counts the questions."""

    rule: ClassVar[str] = "test-listener"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"x"})
    lazy: ClassVar[bool] = True
    warmer: _Warmer = attrs.field(factory=_Warmer)
    asked: int = 0
    seen: list[bytes] = attrs.field(factory=list)

    def cold(self, kind: tuple[str | None, str | None], ctx: Context) -> bool:
        self.asked += 1
        return not self.warmer.warm

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self.seen.append(frame.raw)
        return None


@attrs.define
class _RawListener(_Listener):
    """The same on fast lines: renames "x" to "y" on their bytes when warm."""

    pure: ClassVar[bool] = True
    raw_pass: ClassVar[bool] = True

    def on_raw(self, raw: bytes) -> bytes | None:
        return raw.replace(b'"x"', b'"y"')


def test_a_cold_answer_is_asked_again_after_a_stage_that_is_not_pure_ran() -> None:
    """The frame way keeps a cold answer only while no stage that is not ``pure`` has run
    (``Pipeline.generation``): a stage that warms another up in the middle of a block of
    lines is seen at once, and an answer is not asked twice when nothing could change it."""
    warmer = _Warmer()
    listener = _Listener(warmer=warmer)
    eng = engine_for("identity", down=[warmer, listener])
    eng.pipelines["down"].use_fast = False  # (the frame way only)
    lines = [b'{"type":"x","n":1}', b'{"type":"x","n":2}', b'{"type":"go"}', b'{"type":"x","n":3}']
    out = written(eng.feed("backend", b"\n".join(lines) + b"\n", 0.0))
    assert out.splitlines() == lines
    assert listener.seen == [lines[3]]  # cold for 1 and 2, warm at once after "go"
    assert listener.asked == 2  # once before "go", once after


def test_kept_cold_answers_are_forgotten_when_the_other_direction_or_a_timer_ran() -> None:
    """Cold answers and fast lines' steps are kept from one block of lines to the next of
    the same direction (a backend that writes a line per read pays no rebuild per line), but
    a client line, a timer or a hook may change what they were read from: the next backend
    line asks again."""
    warmer = _UpWarmer()
    listener = _RawListener(warmer=warmer)
    eng = engine_for("identity", up=[warmer], down=[listener])

    def line(n: int, now: float) -> bytes:
        return written(eng.feed("backend", b'{"type":"x","n":%d}\n' % n, now))

    assert [line(n, n / 10) for n in range(3)] == [b'{"type":"x","n":%d}\n' % n for n in range(3)]
    assert listener.asked == 1  # one answer for the three reads
    eng.feed("client", b'{"type":"go"}\n', 0.5)
    assert line(3, 0.6) == b'{"type":"y","n":3}\n'  # warm at once
    assert line(4, 0.7) == b'{"type":"y","n":4}\n'
    assert listener.asked == 2
    eng.set_timer(warmer, "cool", 1.0)
    eng.advance(1.0)
    assert line(5, 1.1) == b'{"type":"x","n":5}\n'  # the timer cooled it down
    assert listener.asked == 3


@attrs.define
class _Rewriter(Stage):
    """Rewrites every "x" frame (a new object: no bytes until it is encoded)."""

    rule: ClassVar[str] = "test-rewriter"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"x"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        return (frame.replace({**frame.obj, "seen": True}),)


@attrs.define
class _Triggered(Stage):
    """Looks for U+2028 like line-separators; counts its calls."""

    rule: ClassVar[str] = "test-triggered"
    triggers: ClassVar[tuple[bytes, ...]] = ("\u2028".encode(),)
    lazy: ClassVar[bool] = True
    pure: ClassVar[bool] = True
    calls: list[bool] = attrs.field(factory=list)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self.calls.append(bool(frame.raw))
        return None


@attrs.define
class _RawTriggered(_Triggered):
    raw_triggers: ClassVar[bool] = True


def test_a_raw_triggers_stage_is_not_called_for_a_frame_a_rule_rewrote() -> None:
    """A triggered stage sees a rewritten frame (no bytes to search yet), unless its triggers
    are about the bytes written (``raw_triggers``: line-separators, whose escapes ``dumps``
    writes itself); a wire line that holds a trigger reaches both. The output is the same."""
    sep = "\u2028".encode()
    lines = [b'{"type":"x","t":"a' + sep + b'b"}', b'{"type":"y","t":"c' + sep + b'd"}']
    outs = []
    for cls in (_Triggered, _RawTriggered):
        stage = cls()
        eng = engine_for("identity", down=[_Rewriter(), stage, stage_on("line-separators")])
        outs.append(written(eng.feed("backend", b"\n".join(lines) + b"\n", 0.0)))
        assert stage.calls == ([False, True] if cls is _Triggered else [True])
    assert outs[0] == outs[1]
    assert outs[0].splitlines() == [
        b'{"type":"x","t":"a\\u2028b","seen":true}',
        lines[1].replace(sep, b"\\u2028"),
    ]


def test_triggers_are_found_whether_or_not_they_share_a_first_byte() -> None:
    """A plan looks for a stage's triggers only in a line holding their common first byte
    (``_lead``); triggers that start differently have none, and each is still looked for."""
    from compat.pipeline import _lead

    assert _lead((b"\xe2\x80\xa8", b"\xe2\x80\xa9")) == b"\xe2"
    assert _lead((b"abc", b"xyz")) == b""

    @attrs.define
    class Mixed(Stage):
        rule: ClassVar[str] = "test-mixed-triggers"
        kinds: ClassVar[frozenset[str] | None] = frozenset()
        triggers: ClassVar[tuple[bytes, ...]] = (b"abc", b"xyz")
        seen: list[bytes] = attrs.Factory(list)

        def on_frame(self, frame: Frame, ctx: Context) -> Output:
            self.seen.append(frame.raw)
            return None

    stage = Mixed()
    eng = engine_for("identity", down=[stage])
    lines = [b'{"type":"x","t":"abc"}', b'{"type":"x","t":"xyz"}', b'{"type":"x","t":"no"}']
    for raw in lines:
        eng.feed("backend", raw + b"\n", 0.0)
    assert stage.seen == lines[:2]


def test_raw_triggers_needs_triggers() -> None:
    with pytest.raises(TypeError, match="raw_triggers needs triggers"):

        @attrs.define
        class NoTriggers(Stage):
            rule: ClassVar[str] = "test-no-triggers"
            raw_triggers: ClassVar[bool] = True
