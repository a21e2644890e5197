"""The pipeline's own work on the wire lines (bench/throughput.py): private-fields' cut is
exactly what parsing gives, broken lines pass verbatim, plans and the task registry stay
bounded, triggers are found."""

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
from compat.linefilters import PRIVATE_FIELDS
from compat.stage import Context, Output, Stage

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


# -- private-fields on the wire lines -------------------------------------------------------


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
