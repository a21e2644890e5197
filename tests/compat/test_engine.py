"""The engine: lossless, byte-identical unless a rule acts, counted when it does."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import pytest

from compat.engine import CloseBackendInput, Engine, Log, Write
from compat.frames import Frame
from compat.stage import Context, Output, Stage

from .helpers import det_env, engine_for, frames_out, line, written

ODD = (
    b'{"type":"assistant","message":{"content":[{"type":"text","text":"caf\xc3\xa9 \\u00e9"}]}}\n'
    b'{ "type" : "user" ,  "spaced": true }\n'
    b"not json at all\n"
    b'{"type":"assistant","broken":\n'
    b"\xff\xfe invalid utf-8\n"
    b"\n"
    b'{"type":"result","subtype":"success","n":1.50,"big":12345678901234567890}\n'
)


@pytest.mark.parametrize("profile", ["identity", "cbc-to-claude"])
def test_untouched_frames_are_byte_identical(profile: str) -> None:
    # result-shape completes every cbc-shaped result (usage, stop_reason...), frame-fields
    # stamps assistant/user frames: off here
    eng = engine_for(
        profile, rules=["result-shape=off", "frame-fields=off"] if profile != "identity" else ()
    )
    out = written(eng.feed("backend", ODD, 0.0))
    assert out == ODD


def test_byte_at_a_time_gives_the_same_output() -> None:
    eng = engine_for(rules=["result-shape=off", "frame-fields=off"])
    cmds = []
    for i in range(len(ODD)):
        cmds += eng.feed("backend", ODD[i : i + 1], 0.0)
    assert written(cmds) == ODD


def test_invalid_lines_are_logged_and_counted() -> None:
    eng = engine_for()
    cmds = eng.feed("backend", b"nope\n\xff\n", 0.0)
    logs = [c for c in cmds if isinstance(c, Log)]
    assert any("not valid JSON" in c.message for c in logs)
    assert any("not valid UTF-8" in c.message for c in logs)
    assert eng.statistics()["rules"]["framing"]["invalid-down"] == 2


def test_a_direction_without_stages_relays_blocks_of_lines_unread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """identity: no line is split out, parsed or looked at (the pipeline is never called);
    the complete lines of a chunk are one write, counted by their newlines, and the tail
    waits for its newline as on the staged path."""
    from compat.pipeline import Pipeline

    def no_pipeline(*args: object) -> None:
        raise AssertionError("a direction without stages ran its pipeline")

    monkeypatch.setattr(Pipeline, "run_lines", no_pipeline)
    eng = engine_for("identity")
    cmds = eng.feed("backend", b'nope\n\xff\n{"type":"user"}\n{"type":', 0.0)
    assert [c.data for c in cmds if isinstance(c, Write)] == [b'nope\n\xff\n{"type":"user"}\n']
    assert not [c for c in cmds if isinstance(c, Log)]  # not inspected, so not logged
    assert written(eng.feed("backend", b'"result"}\n', 1.0)) == b'{"type":"result"}\n'
    stats = eng.statistics()
    assert stats["frames"]["down"] == {"in": 4, "out": 4}
    assert "framing" not in stats["rules"]


def test_partial_last_line_and_oversize_pass_verbatim() -> None:
    eng = engine_for("identity", max_line=16)
    big = b'{"type":"user","x":"' + b"y" * 100 + b'"}\n'
    cmds = eng.feed("backend", big + b'{"tail":', 0.0)
    cmds += eng.eof("backend", 0.0)
    assert written(cmds) == big + b'{"tail":'
    stats = eng.statistics()["rules"]["framing"]
    assert stats["oversize-down"] == 1
    assert stats["partial-down"] == 1


def test_client_eof_closes_backend_input_after_pending_writes() -> None:
    eng = engine_for("identity")
    cmds = eng.feed("client", b'{"type":"user"}\n', 0.0) + eng.eof("client", 1.0)
    assert isinstance(cmds[-1], CloseBackendInput)
    assert written(cmds, "backend") == b'{"type":"user"}\n'


@attrs.define
class Doubler(Stage):
    rule: ClassVar[str] = "test-doubler"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
        if obj.get("drop"):
            return ()
        new = frame.replace({**obj, "seen": True})
        return (new, Frame.synth({"type": "system", "subtype": "status"}, self.rule))


@attrs.define
class Later(Stage):
    rule: ClassVar[str] = "test-later"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/status"})
    seen: list[Any] = attrs.Factory(list)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        self.seen.append(frame.obj)
        ctx.set_timer(self, "t", 5.0)
        return None

    def on_timer(self, key: str, ctx: Context) -> Output:
        return (Frame.synth({"type": "system", "subtype": "status", "late": ctx.now}, self.rule),)


def test_counts_rewrites_syntheses_drops_and_timers_fire_at_exact_times() -> None:
    later = Later()
    eng = Engine([], [Doubler(), later], det_env(), strict=True)
    cmds = eng.feed(
        "backend", line({"type": "assistant"}) + line({"type": "assistant", "drop": 1}), 10.0
    )
    out = frames_out(cmds)
    assert out == [{"type": "assistant", "seen": True}, {"type": "system", "subtype": "status"}]
    assert len(later.seen) == 1  # the synthesized frame ran through the later stage
    assert eng.next_deadline() == 15.0
    assert frames_out(eng.advance(14.999)) == []
    assert frames_out(eng.advance(15.0)) == [{"type": "system", "subtype": "status", "late": 15.0}]
    rules = eng.statistics()["rules"]
    assert rules["test-doubler"] == {"rewritten": 1, "synthesized": 1, "dropped": 1}
    assert rules["test-later"] == {"synthesized": 1}
    frames = eng.statistics()["frames"]["down"]
    assert frames == {"in": 2, "out": 3}


@attrs.define
class Echo(Stage):
    """Gives back the very frame it was given (the same as passing it)."""

    rule: ClassVar[str] = "test-echo"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"system/status"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        return [frame]


def test_a_rule_that_gives_back_the_frame_it_was_given_passes_it_uncounted() -> None:
    later = Later()
    eng = Engine([], [Echo(), later], det_env(), strict=True)
    raw = b'{"type":"system", "subtype":"status","n":1.50}\n'
    cmds = eng.feed("backend", raw, 0.0)
    assert written(cmds, "client") == raw  # byte for byte: nothing rewrote it
    assert later.seen == [{"type": "system", "subtype": "status", "n": 1.5}]
    assert "test-echo" not in eng.statistics()["rules"]


@attrs.define
class Boom(Stage):
    rule: ClassVar[str] = "test-boom"
    kinds: ClassVar[frozenset[str] | None] = None

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        raise RuntimeError("bad stage")


def test_failing_stage_fails_open_in_production_and_raises_in_tests() -> None:
    eng = Engine([], [Boom()], det_env(), strict=False)
    cmds = eng.feed("backend", b'{"type":"x"}\n', 0.0)
    assert written(cmds) == b'{"type":"x"}\n'
    assert any(isinstance(c, Log) and "test-boom" in c.rule for c in cmds)
    assert eng.statistics()["rules"]["test-boom"]["errors"] == 1
    strict = Engine([], [Boom()], det_env(), strict=True)
    with pytest.raises(RuntimeError):
        strict.feed("backend", b'{"type":"x"}\n', 0.0)
