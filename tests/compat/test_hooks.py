"""``hook-once``/``hook-reply``: one PreToolUse per tool call, as Claude asks it; cbc's
repeat (after the permission prompt) is answered with the client's first answer.

Evidence: ``tests/bridge/data/acp/bash-allowed`` (Zed's ACP adapter, a Bash call allowed:
Claude asked PreToolUse once, cbc twice)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compat.capture import parse

from .session_support import Run, drive, full

ACP = Path(__file__).resolve().parents[1] / "bridge" / "data" / "acp" / "bash-allowed"


def _records(path: Path, kind: str) -> list[tuple[float, dict[str, Any]]]:
    cap = parse(path.read_bytes().splitlines())
    return [(r.t, json.loads(r.data)) for r in cap.records if r.kind == kind]


def _hooks(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        f
        for f in frames
        if f.get("type") == "control_request" and f["request"].get("subtype") == "hook_callback"
    ]


def _line(frame: dict[str, Any]) -> bytes:
    return (json.dumps(frame) + "\n").encode()


def _session() -> tuple[Run, list[dict[str, Any]]]:
    """The recorded session through the profile: cbc's lines, and the client's lines but
    its answer to a hook request it was not asked (the repeat the rule answers)."""
    eng = full()
    eng.state.stdio_permissions = True  # (the adapter passes --permission-prompt-tool stdio)
    cbc = _records(ACP / "bridge.ndjson", "stdout")
    client = _records(ACP / "bridge.ndjson", "client_in")
    repeat = _hooks([f for _, f in cbc])[1]["request_id"]
    events = [(t, "backend", _line(f)) for t, f in cbc]
    events += [
        (t, "client", _line(f))
        for t, f in client
        if f.get("response", {}).get("request_id") != repeat
    ]
    return drive(eng, events), [f for _, f in cbc]


def test_the_client_is_asked_once_per_call_and_event_as_on_claude() -> None:
    run, _ = _session()
    claude = [f for _, f in _records(ACP / "claude.ndjson", "client_out")]
    events = [h["request"]["input"]["hook_event_name"] for h in _hooks(run.frames())]
    assert events == [h["request"]["input"]["hook_event_name"] for h in _hooks(claude)]
    assert events == ["PreToolUse", "PostToolUse"]


def test_cbc_gets_an_answer_to_each_request_the_repeat_the_clients_first() -> None:
    run, cbc = _session()
    first, repeat, _post = (h["request_id"] for h in _hooks(cbc))
    answers = {
        f["response"]["request_id"]: f["response"]
        for f in run.to_backend()
        if f.get("type") == "control_response"
    }
    assert {first, repeat} <= set(answers)
    assert answers[repeat] == {**answers[first], "request_id": repeat}
    assert answers[repeat]["response"] == {"continue": True}


def test_a_repeat_before_the_first_answer_is_forwarded() -> None:
    """Nothing to answer it with yet: the client is asked, as cbc asked."""
    eng = full()
    cbc = _records(ACP / "bridge.ndjson", "stdout")
    events = [(t, "backend", _line(f)) for t, f in cbc]
    run = drive(eng, events)  # (the client never answers)
    assert len(_hooks(run.frames())) == 3


TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"


def _denied_session() -> tuple[Run, list[dict[str, Any]]]:
    """``scenarios/sdk-hooks`` through the profile: cbc's lines and the client's (its
    PreToolUse hook denies ``echo forbidden``), and what Claude wrote in the same run."""
    cbc = _records(TWINS / "sdk-hooks.cbc-raw.jsonl", "stdout")
    client = _records(TWINS / "sdk-hooks.cbc-raw.jsonl", "stdin")
    events = [(t, "backend", _line(f)) for t, f in cbc]
    events += [(t, "client", _line(f)) for t, f in client]
    claude = [f for _, f in _records(TWINS / "sdk-hooks.claude.jsonl", "stdout")]
    return drive(full(), sorted(events, key=lambda e: e[0])), claude


def test_a_call_the_clients_hook_denied_ends_as_on_claude() -> None:
    """The denied call's tool_result is the hook's reason (cbc: ``Error: <reason>``),
    marked ``permission-rule``, and the result lists the call in ``permission_denials``,
    as Claude's; the allowed call's output is Claude's, the hook's context for the model
    left out of it."""
    run, claude = _denied_session()
    out = run.frames()
    users = [f for f in out if f.get("type") == "user"]
    want = [f for f in claude if f.get("type") == "user"]
    got_denied, want_denied = users[0], want[0]
    block = got_denied["message"]["content"][0]
    assert block["content"] == want_denied["message"]["content"][0]["content"]
    assert block["content"] == "denied by the SDK hook"
    assert [m["non_execution_kind"] for m in got_denied["tool_result_meta"]] == ["permission-rule"]
    assert users[1]["message"]["content"][0]["content"] == "allowed"
    assert users[1]["tool_use_result"]["stdout"] == "allowed"
    [result] = [f for f in out if f.get("type") == "result"]
    [claude_result] = [f for f in claude if f.get("type") == "result"]
    strip = [
        {k: v for k, v in d.items() if k != "tool_use_id"} for d in result["permission_denials"]
    ]
    assert strip == [
        {k: v for k, v in d.items() if k != "tool_use_id"}
        for d in claude_result["permission_denials"]
    ]


def test_hook_requests_carry_claudes_prompt_id_own_ids_and_a_stops_answer() -> None:
    """One prompt id on every hook of the prompt's turn, a fresh tool_use_id on a request
    about no tool call, a Stop's last answer, crons and (no) background tasks, as in
    Claude's run of the same scenario."""
    run, claude = _denied_session()
    got = [f["request"] for f in run.frames() if f.get("type") == "control_request"]
    want = [f["request"] for f in claude if f.get("type") == "control_request"]
    assert [r["input"]["hook_event_name"] for r in got] == [
        r["input"]["hook_event_name"] for r in want
    ]
    assert len({r["input"]["prompt_id"] for r in got}) == 1
    assert all(isinstance(r.get("tool_use_id"), str) for r in got)
    stop, claude_stop = got[-1]["input"], want[-1]["input"]
    for key in ("last_assistant_message", "background_tasks", "session_crons"):
        assert stop[key] == claude_stop[key]


def test_a_hook_is_told_claudes_transcript_when_the_store_is_written() -> None:
    """With ``hook-input.transcripts`` (the drop-in sets it to the session store's project
    directory) every hook request names Claude's transcript of the session, as Claude's
    run does (``<projects>/<slug>/<session>.jsonl``); without it, cbc's own."""
    raw = TWINS / "sdk-hooks.cbc-raw.jsonl"
    events = [(t, "backend", _line(f)) for t, f in _records(raw, "stdout")]
    events += [(t, "client", _line(f)) for t, f in _records(raw, "stdin")]
    events.sort(key=lambda e: e[0])
    where = "/home/u/.claude/projects/-work-p"
    told = _hooks(drive(full([f"hook-input.transcripts={where}"]), events).frames())
    plain = _hooks(drive(full(), events).frames())
    sessions = {r["request"]["input"]["session_id"] for r in told}
    assert told
    assert len(sessions) == 1
    assert {r["request"]["input"]["transcript_path"] for r in told} == {
        f"{where}/{sessions.pop()}.jsonl"
    }
    claude = _hooks([f for _, f in _records(TWINS / "sdk-hooks.claude.jsonl", "stdout")])
    assert all("/.claude/projects/" in r["request"]["input"]["transcript_path"] for r in claude)
    assert all("/.claude/" not in r["request"]["input"]["transcript_path"] for r in plain)
