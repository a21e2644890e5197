"""private-fields, vocabulary, init-once, foreign-init (PROTOCOL.md §2)."""

from __future__ import annotations

from compat.engine import Log

from .helpers import engine_for, frames_out, line, stage_on

SID = "01a226f1-054d-775d-a993-0bab94fddfcb"


def init(sid: str = SID, tools: list[str] | None = None, model: str = "default-model") -> bytes:
    return line(
        {
            "type": "system",
            "subtype": "init",
            "session_id": sid,
            "cwd": "/w",
            "tools": ["Bash"] if tools is None else tools,
            "model": model,
        }
    )


def test_private_fields_stripped_only_at_top_level() -> None:
    eng = engine_for("identity", down=[stage_on("private-fields")])
    out = frames_out(
        eng.feed(
            "backend",
            line(
                {
                    "type": "assistant",
                    "_requestId": "r",
                    "__timestamp": "t",
                    "_meta": {"a": 1},
                    "message": {"_meta": "kept"},
                }
            ),
            0.0,
        )
    )
    assert out == [{"type": "assistant", "message": {"_meta": "kept"}}]


def test_private_fields_keep_mode() -> None:
    eng = engine_for("identity", down=[stage_on("private-fields", {"mode": "keep"})])
    raw = line({"type": "assistant", "_requestId": "r"})
    assert eng.feed("backend", raw, 0.0)[0].data == raw  # type: ignore[union-attr]


def test_vocabulary_drops_foreign_types_and_logs_error_frames() -> None:
    eng = engine_for("identity", down=[stage_on("vocabulary")])
    cmds = eng.feed(
        "backend",
        b"".join(
            [
                line({"type": "file-history-snapshot"}),
                line({"type": "system", "subtype": "keepalive"}),
                line({"type": "error", "error": "boom"}),
                line({"type": "end"}),
                line({"type": "system", "subtype": "task_started"}),
                line({"type": "assistant"}),
            ]
        ),
        0.0,
    )
    assert [f.get("subtype", f["type"]) for f in frames_out(cmds)] == ["task_started", "assistant"]
    assert any(isinstance(c, Log) and c.level == "warning" and "boom" in c.message for c in cmds)
    counts = engine_stats = eng.statistics()["rules"]["vocabulary"]
    assert engine_stats["dropped"] == 4
    assert counts["dropped:error"] == 1


def test_one_init_per_turn_fullest_copy_and_trailing_stub_dropped() -> None:
    eng = engine_for(
        "identity",
        down=[
            stage_on("session"),
            stage_on("foreign-init"),
            stage_on("init-once"),
        ],
    )
    stream = b"".join(
        [
            init(tools=[], model="unknown"),  # a stub first
            init(),  # the full copy replaces it
            init("another-session"),  # a sub-agent's
            line({"type": "assistant", "session_id": SID}),
            init(),  # a second copy inside the turn
            line({"type": "result", "subtype": "success", "session_id": SID}),
            init(),  # trailing copy after the result: nothing follows
        ]
    )
    out = frames_out(eng.feed("backend", stream, 0.0))
    out += frames_out(eng.backend_exited(0, 1.0))
    assert [(f["type"], f.get("subtype")) for f in out] == [
        ("system", "init"),
        ("assistant", None),
        ("result", "success"),
    ]
    assert out[0]["tools"] == ["Bash"]
    rules = eng.statistics()["rules"]
    assert rules["foreign-init"]["dropped"] == 1
    assert rules["init-once"]["dropped"] == 3  # the stub, the in-turn copy, the trailing one


def test_init_of_a_later_turn_comes_before_that_turn() -> None:
    eng = engine_for("identity", down=[stage_on("session"), stage_on("init-once")])
    out = frames_out(
        eng.feed(
            "backend",
            b"".join(
                [
                    init(),
                    line({"type": "result"}),
                    init(),
                    line({"type": "system", "subtype": "task_notification"}),
                    line({"type": "assistant"}),
                    line({"type": "result"}),
                ]
            ),
            0.0,
        )
    )
    kinds = [f.get("subtype") or f["type"] for f in out]
    assert kinds == ["init", "result", "task_notification", "init", "assistant", "result"]


def test_line_separators_reach_the_client_escaped_as_claude_writes_them() -> None:
    """U+2028/U+2029 raw inside a cbc string: the client gets ``\\u2028``/``\\u2029`` (the
    same JSON), so ``str.splitlines()`` sees one line; on the fast path and on a frame a
    rule rewrote alike."""
    import json

    from compat.engine import Engine, Write
    from compat.profiles import build

    from .tasks_support import det_env

    text = "one\u2028two\u2029three"
    lines = [
        json.dumps(
            {
                "type": "stream_event",
                "uuid": "u",
                "session_id": "s",
                "parent_tool_use_id": None,
                "event": {"delta": {"text": text}},
            },
            ensure_ascii=False,
            separators=(",", ":"),
        ),
        json.dumps(
            {
                "type": "assistant",
                "session_id": "s",
                "parent_tool_use_id": None,
                "message": {
                    "id": "m",
                    "role": "assistant",
                    "model": "m",
                    "content": [{"type": "text", "text": text}],
                },
            },
            ensure_ascii=False,
        ),
    ]
    eng = Engine(*build("cbc-to-claude", {}), det_env())
    out = b"".join(
        c.data
        for c in eng.feed("backend", "\n".join(lines).encode() + b"\n", 0.0)
        if isinstance(c, Write) and c.side == "client"
    )
    assert "\u2028".encode() not in out
    assert "\u2029".encode() not in out
    got = out.decode().splitlines()
    assert len(got) == 2
    assert b"one\\u2028two\\u2029three" in out
    assert json.loads(got[1])["message"]["content"][0]["text"] == text
    assert eng.statistics()["rules"]["line-separators"]["rewritten"] >= 1
