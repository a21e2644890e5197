"""``frame-fields``, and the Claude-only keys ``init-shape``, ``initialize-reply`` and
``result-shape`` write, ``private-fields``' tool_result ``_meta``, ``vocabulary``'s null
``system/status``: checked on the real twins (``captures/twins/<scenario>.cbc-raw.jsonl``
replayed through the ``cbc-to-claude`` profile against ``<scenario>.claude.jsonl``, Claude
Code 2.1.220)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compat.frames import Frame
from compat.stages.fields import wire_timestamp

from .session_support import drive, full, line, transcript_events

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"


def twin(scenario: str, side: str) -> Path:
    path = TWINS / f"{scenario}.{side}.jsonl"
    if not path.is_file():
        pytest.skip(f"no twin capture {path.name}")
    return path


def claude(scenario: str) -> list[dict[str, Any]]:
    """Claude 2.1.220's stdout frames of the scenario."""
    return raw_frames(scenario, "claude")


def bridged(scenario: str, side: str = "cbc-raw") -> tuple[list[dict[str, Any]], Any]:
    """cbc 2.163.0's real stdout (and its stdin) of the scenario through the profile: what
    the client sees, and the engine."""
    eng = full()
    run = drive(eng, transcript_events(twin(scenario, side)))
    return run.frames(), eng


def raw_frames(scenario: str, side: str = "cbc-raw") -> list[dict[str, Any]]:
    """The stdout frames of one side's twin capture, as that side wrote them."""
    out = []
    for rec in twin(scenario, side).read_text().splitlines():
        r = json.loads(rec)
        if r.get("kind") == "stdout":
            try:
                out.append(json.loads(r["text"]))
            except json.JSONDecodeError:
                continue
    return out


def of(frames: list[dict[str, Any]], type_: str, subtype: str | None = None) -> list[Any]:
    return [
        f
        for f in frames
        if f.get("type") == type_ and (subtype is None or f.get("subtype") == subtype)
    ]


# -- init-shape ----------------------------------------------------------------------------

INIT_FEATURES = (
    "analytics_disabled",
    "product_feedback_disabled",
    "fast_mode_state",
    "fast_mode_disabled_reason",
)


@pytest.mark.parametrize("scenario", ["simple-success", "bg-agent"])
def test_init_has_every_key_of_claudes(scenario: str) -> None:
    got, _ = bridged(scenario)
    [want, *_] = of(claude(scenario), "system", "init")
    for init in of(got, "system", "init"):
        assert set(want) <= set(init), set(want) - set(init)
        assert {k: init[k] for k in INIT_FEATURES} == {k: want[k] for k in INIT_FEATURES}
        # Claude's auto-memory path is its own; cbc runs with CODEBUDDY_DISABLE_AUTO_MEMORY
        assert want["memory_paths"].get("auto")
        assert init["memory_paths"] == {}


# -- initialize-reply ----------------------------------------------------------------------


def test_initialize_reply_has_claudes_keys_only() -> None:
    got, eng = bridged("simple-success")
    [mine] = of(got, "control_response")
    [want] = of(claude("simple-success"), "control_response")
    body, claudes = mine["response"]["response"], want["response"]["response"]
    assert list(body) == list(claudes)
    for key in (
        "remote_control_auto_enable",
        "remote_control_auto_on_by_default",
        "ide_rc_auto_enable_gate",
        "fast_mode_state",
        "fast_mode_disabled_reason",
    ):
        assert body[key] == claudes[key]
    assert eng.state.control.default_model == "default-model"  # cbc's currentModelId, kept


# -- result-shape --------------------------------------------------------------------------

RESULT_KEYS = (
    "num_turns",
    "stop_reason",
    "origin",
    "fast_mode_state",
    "fast_mode_disabled_reason",
    "api_error_status",
)


@pytest.mark.parametrize(
    "scenario",
    [
        "simple-success",
        "bg-bash",
        "permission-allow",
        "workflow-inline",
        "stop-task-control",
        "interrupt-midturn-workflow",
    ],
)
def test_results_say_what_claudes_say(scenario: str) -> None:
    """num_turns: 1 + the turn's main-thread user messages (cbc: 2 per model call, across
    the session; 3 for the turn interrupted in its tool call); stop_reason end_turn after a
    text answer (cbc: null); origin on the turn a task notification started (bg-bash,
    workflow-inline: the second result)."""
    got, _ = bridged(scenario)
    mine, want = of(got, "result"), of(claude(scenario), "result")
    assert len(mine) == len(want)
    for m, w in zip(mine, want, strict=True):
        assert {k: m.get(k, "-") for k in RESULT_KEYS} == {k: w.get(k, "-") for k in RESULT_KEYS}


def test_an_interrupted_result_keeps_the_tool_use_stop_reason() -> None:
    got, _ = bridged("interrupt-midturn-workflow")
    last = of(got, "result")[-1]
    assert last["subtype"] == "error_during_execution"
    assert last["stop_reason"] == "tool_use"  # as Claude's
    assert "api_error_status" not in last  # Claude writes none on an error_* result


# -- frame-fields --------------------------------------------------------------------------


def test_assistant_and_user_frames_get_cbcs_stamp_as_claudes_timestamp() -> None:
    got, _ = bridged("permission-allow")
    stamps = [
        f["__timestamp"]
        for f in raw_frames("permission-allow")
        if f.get("type") in ("assistant", "user")
    ]
    mine = of(got, "assistant") + of(got, "user")
    assert mine
    assert sorted(f["timestamp"] for f in mine) == sorted(stamps)
    for f in of(got, "assistant"):
        assert "context_management" in f["message"]
        assert f["message"]["context_management"] is None
    for f in of(claude("permission-allow"), "assistant"):
        assert f["message"]["context_management"] is None


def cbc_message(
    *blocks: dict[str, Any], stop_reason: str | None = "tool_use", model: str = "default-model"
) -> dict[str, Any]:
    """One cbc 2.163.0 assistant frame holding a whole message (twins ``*.cbc-raw``)."""
    return {
        "type": "assistant",
        "uuid": "cbc-uuid",
        "session_id": "s",
        "message": {
            "id": "m1",
            "content": list(blocks),
            "model": model,
            "role": "assistant",
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "type": "message",
            "usage": {"input_tokens": 12, "output_tokens": 3},
        },
        "parent_tool_use_id": None,
        "__timestamp": "2026-11-29T12:56:47.374Z",
    }


THINK = {"type": "thinking", "thinking": "hm", "signature": "x"}
TEXT = {"type": "text", "text": "Let me look."}
CALL = {"type": "tool_use", "id": "call_1", "name": "Bash", "input": {"command": "ls"}}


def test_a_message_of_several_blocks_becomes_one_frame_per_block() -> None:
    """Claude's form (third-party/rust-code-agent-sdks/explore_count_files.jsonl: thinking,
    text, tool_use of one message id, three frames, stop_reason null on each, the same
    usage, one uuid each)."""
    eng = full()
    got = [
        f
        for f in drive(eng, [(0.0, "backend", line(cbc_message(THINK, TEXT, CALL)))]).frames()
        if f["type"] == "assistant"
    ]
    assert [f["message"]["content"] for f in got] == [[THINK], [TEXT], [CALL]]
    for f in got:
        assert f["message"]["id"] == "m1"
        assert f["message"]["stop_reason"] is None
        assert f["message"]["stop_sequence"] is None
        assert f["message"]["usage"] == {"input_tokens": 12, "output_tokens": 3}
        assert f["message"]["context_management"] is None
        assert f["timestamp"] == "2026-11-29T12:56:47.374Z"
        assert "__timestamp" not in f
    assert got[0]["uuid"] == "cbc-uuid"
    assert len({f["uuid"] for f in got}) == 3
    counts = eng.statistics()["rules"]["frame-fields"]
    assert counts["synthesized"] == 2
    assert counts["messages-split"] == 1
    # the tool call is still known to the rules after frame-fields (session saw it whole)
    assert "call_1" in eng.state.tool_uses


def test_one_block_message_gets_claudes_null_stop_reason() -> None:
    [got] = [
        f
        for f in drive(full(), [(0.0, "backend", line(cbc_message(CALL)))]).frames()
        if f["type"] == "assistant"
    ]
    assert got["message"]["stop_reason"] is None
    assert got["uuid"] == "cbc-uuid"


def test_split_off_keeps_one_frame_and_claudes_synthetic_messages_keep_their_reason() -> None:
    eng = full(["frame-fields.split=false"])
    got = [
        f
        for f in drive(eng, [(0.0, "backend", line(cbc_message(TEXT, CALL)))]).frames()
        if f["type"] == "assistant"
    ]
    assert [f["message"]["content"] for f in got] == [[TEXT, CALL]]
    assert got[0]["message"]["stop_reason"] is None
    synthetic = cbc_message(TEXT, stop_reason="stop_sequence", model="<synthetic>")
    [got1] = [
        f
        for f in drive(full(), [(0.0, "backend", line(synthetic))]).frames()
        if f["type"] == "assistant"
    ]
    assert got1["message"]["stop_reason"] == "stop_sequence"


def test_the_result_keeps_the_split_messages_stop_reason() -> None:
    """result-shape reads the stop_reason cbc gave the message from the wire frame, and
    counts the turn Claude's way (the split frames are one message)."""
    wire = cbc_message(TEXT, CALL, stop_reason="max_tokens")
    res = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "",
        "session_id": "s",
        "uuid": "r",
        "num_turns": 7,
        "usage": {},
    }
    got = drive(full(), [(0.0, "backend", line(wire) + line(res))]).frames()
    [result] = [f for f in got if f["type"] == "result"]
    assert result["stop_reason"] == "max_tokens"
    assert result["num_turns"] == 1


@pytest.mark.parametrize("scenario", ["permission-allow", "bg-bash", "interrupt-midturn-workflow"])
def test_assistant_frames_have_claudes_stop_reason(scenario: str) -> None:
    got, _ = bridged(scenario)
    mine = [f["message"]["stop_reason"] for f in of(got, "assistant")]
    assert mine
    assert set(mine) == {None}
    assert {f["message"]["stop_reason"] for f in of(claude(scenario), "assistant")} == {None}


def test_wire_timestamp_is_read_from_the_line_private_fields_cut() -> None:
    root = Frame(b'{"type":"user","x":1,"_requestId":"r","__timestamp":"2026-11-29T12:56:36.902Z"}')
    cut = root.replace_raw(b'{"type":"user","x":1}')
    assert wire_timestamp(cut) == "2026-11-29T12:56:36.902Z"
    assert wire_timestamp(Frame.synth({"type": "user"}, "r")) is None


@pytest.mark.parametrize(("scenario", "claude_has"), [("bg-agent", False), ("bg-bash", True)])
def test_is_error_false_only_where_claude_writes_it(scenario: str, claude_has: bool) -> None:
    """Claude omits is_error on an Agent call's result, writes false on a Bash one's."""

    def results(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            b
            for f in of(frames, "user")
            if f.get("parent_tool_use_id") is None
            for b in f["message"]["content"]
            if b.get("type") == "tool_result"
        ]

    got, _ = bridged(scenario)
    [mine], [want] = results(got), results(claude(scenario))
    assert ("is_error" in want) is claude_has
    assert ("is_error" in mine) is claude_has


# -- private-fields, vocabulary ------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["permission-allow", "user-line-during-first-turn"])
def test_no_private_meta_inside_tool_results(scenario: str) -> None:
    """(cbc's stdout as recorded in the bridged twin: the raw run's differ)"""
    assert any(
        "_meta" in b
        for f in of(raw_frames(scenario, "cbc-bridged"), "user")
        for b in f["message"]["content"]
        if isinstance(b, dict)
    )
    got, _ = bridged(scenario, "cbc-bridged")
    assert not any(
        "_meta" in b
        for f in of(got, "user")
        for b in f["message"]["content"]
        if isinstance(b, dict)
    )


@pytest.mark.parametrize("scenario", ["simple-success", "bg-bash", "interrupt-midturn-workflow"])
def test_null_status_frames_are_dropped_and_the_turns_keep_claudes_order(scenario: str) -> None:
    nulls = [f for f in of(raw_frames(scenario), "system", "status") if f.get("status") is None]
    assert nulls
    got, eng = bridged(scenario)
    assert of(got, "system", "status") == of(claude(scenario), "system", "status") == []
    assert eng.statistics()["rules"]["vocabulary"]["dropped:system/status-null"] == len(nulls)
    # init-once still releases each turn's init before the turn (the null status was its cue)
    turn = [
        f["type"] if f["type"] != "system" else f["subtype"]
        for f in got
        if f["type"] in ("assistant", "result") or f.get("subtype") == "init"
    ]
    for i, label in enumerate(turn):
        if label == "assistant" and (i == 0 or turn[i - 1] == "result"):
            pytest.fail(f"an assistant frame before its turn's init: {turn}")


def test_an_mcp_calls_successful_result_has_no_is_error_false() -> None:
    """Claude writes none on an MCP tool's result (raw run mcp-tool, 2026-12-01)."""
    from compat.session import ToolUse
    from tests.compat.helpers import engine_for, frames_out, line, stage_on

    eng = engine_for("identity", down=[stage_on("frame-fields")])
    eng.state.tool_uses["c1"] = ToolUse("c1", "mcp__probe__lookup", {})
    eng.state.tool_uses["c2"] = ToolUse("c2", "Bash", {})
    blocks = [
        {"type": "tool_result", "tool_use_id": u, "content": "x", "is_error": False}
        for u in ("c1", "c2")
    ]
    frame = {"type": "user", "timestamp": "t", "message": {"role": "user", "content": blocks}}
    (out,) = frames_out(eng.feed("backend", line(frame), 0.0))
    assert ["is_error" in b for b in out["message"]["content"]] == [False, True]


def test_a_sub_agents_frames_get_claudes_subagent_type_and_task_description(
    reference: Path,
) -> None:
    """cbc writes a foreground sub-agent's frames with its Agent call as parent_tool_use_id
    and neither key (cbc-2.163.0/mockoai_fg-agent); Claude writes both on each, from the
    call's subagent_type and description (third-party/rust-code-agent-sdks/
    explore_count_files: the agent's assistant and user frames)."""
    claude_keys = [
        (f["type"], f["subagent_type"], f["task_description"])
        for f in map(
            json.loads,
            (reference / "third-party/rust-code-agent-sdks/explore_count_files.jsonl")
            .read_text()
            .splitlines(),
        )
        if f.get("parent_tool_use_id")
    ]
    assert claude_keys == [
        ("user", "Explore", "Count .rs files in directory"),
        ("assistant", "Explore", "Count .rs files in directory"),
        ("user", "Explore", "Count .rs files in directory"),
    ]
    capture = reference / "cbc-2.163.0/mockoai_fg-agent.transcript.jsonl"
    raw = [f for f in raw_lines(capture) if f.get("parent_tool_use_id")]
    assert raw
    assert not [f for f in raw if "subagent_type" in f or "task_description" in f]
    got = drive(full(), transcript_events(capture)).frames()
    calls = {
        b["id"]: b["input"]
        for f in of(got, "assistant")
        for b in f["message"]["content"]
        if b.get("type") == "tool_use" and b.get("name") == "Agent"
    }
    agent_frames = [f for f in got if f.get("parent_tool_use_id")]
    assert len(agent_frames) == len(raw)
    for f in agent_frames:
        call = calls[f["parent_tool_use_id"]]
        assert f["subagent_type"] == call["subagent_type"]
        assert f["task_description"] == call["description"]
        assert list(f)[-2:] == ["subagent_type", "task_description"]  # (Claude's place)


@pytest.mark.parametrize(
    ("name", "inp", "expected"),
    [
        ("Agent", {"subagent_type": "Explore", "description": "d"}, ("Explore", "d")),
        ("Task", {"description": "d"}, (None, "d")),  # no subagent_type named: none made up
        ("Bash", {"description": "d", "subagent_type": "x"}, (None, None)),  # not an agent
        ("Agent", {"subagent_type": 3, "description": ""}, (None, None)),  # not a name
        (None, {}, (None, None)),  # a call the bridge never saw
    ],
)
def test_agent_keys_come_from_an_agent_call_only(
    name: str | None, inp: dict[str, Any], expected: tuple[str | None, str | None]
) -> None:
    from compat.session import ToolUse
    from tests.compat.helpers import engine_for, frames_out, stage_on

    eng = engine_for("identity", down=[stage_on("frame-fields")])
    if name is not None:
        eng.state.tool_uses["c1"] = ToolUse("c1", name, inp)
    frame = cbc_message(TEXT, stop_reason=None) | {"parent_tool_use_id": "c1"}
    (out,) = frames_out(eng.feed("backend", line(frame), 0.0))
    assert (out.get("subagent_type"), out.get("task_description")) == expected
    # a key the frame has already is kept as it is
    eng.state.tool_uses["c2"] = ToolUse("c2", "Agent", {"subagent_type": "E", "description": "d"})
    mine = frame | {"parent_tool_use_id": "c2", "subagent_type": "own"}
    (out,) = frames_out(eng.feed("backend", line(mine), 0.0))
    assert (out["subagent_type"], out["task_description"]) == ("own", "d")


def raw_lines(capture: Path) -> list[dict[str, Any]]:
    """The backend's stdout frames of a reference transcript, as cbc wrote them."""
    return [
        json.loads(data)
        for _, kind, data in transcript_events(capture)
        if kind == "backend" and data.strip()
    ]
