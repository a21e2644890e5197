"""``api-error``: cbc's failed model requests and refusals end the turn as Claude's do. Fed
the raw cbc runs of the twins (captures/twins/*.cbc-raw.jsonl) and compared with the
Claude run of the same scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compat.stages.errors import CBC_REFUSAL, error_kind, parse_api_error

from .session_support import drive, full, line, transcript_events
from .tasks_support import SID

TWINS = Path(__file__).resolve().parents[2] / "captures" / "twins"


def run_of(name: str, rules: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return drive(full(list(rules)), transcript_events(TWINS / f"{name}.cbc-raw.jsonl")).frames()


def claude_of(name: str) -> list[dict[str, Any]]:
    from compat.capture import parse

    cap = parse((TWINS / f"{name}.claude.jsonl").read_bytes().splitlines())
    return [json.loads(r.data) for r in cap.records if r.kind == "stdout" and r.data.strip()]


def last(frames: list[dict[str, Any]], type_: str) -> dict[str, Any]:
    return [f for f in frames if f["type"] == type_][-1]


RESULT_KEYS = ("subtype", "is_error", "stop_reason", "terminal_reason", "api_error_status")


def test_a_failed_request_ends_as_claudes_api_error() -> None:
    got, want = run_of("api-error-exhausted"), claude_of("api-error-exhausted")
    res, cres = last(got, "result"), last(want, "result")
    assert {k: res.get(k) for k in RESULT_KEYS} == {k: cres.get(k) for k in RESULT_KEYS}
    assert "errors" not in res
    assert "user_message_uuid" not in res
    assert res["result"] == "API Error: 500 mock internal error"
    assert cres["result"].startswith(res["result"])  # Claude adds a hint about its gateway
    msg, cmsg = last(got, "assistant"), last(want, "assistant")
    for k in ("error", "is_api_error_message"):
        assert msg[k] == cmsg[k]
    for k in ("model", "stop_reason", "stop_sequence"):
        assert msg["message"][k] == cmsg["message"][k]
    assert msg["message"]["content"][0]["text"] == res["result"]
    # the line's command ends cancelled after an api_error turn, as Claude's
    states = [f["state"] for f in got if f["type"] == "command_lifecycle"]
    cstates = [f["state"] for f in want if f["type"] == "command_lifecycle"]
    assert states[-1] == cstates[-1] == "cancelled"


@pytest.mark.parametrize(("name", "status"), [("api-rate-limit", 429)])
def test_an_error_cbc_does_not_retry_keeps_its_status(name: str, status: int) -> None:
    res = last(run_of(name), "result")
    assert (res["is_error"], res["terminal_reason"], res["api_error_status"]) == (
        True,
        "api_error",
        status,
    )
    assert last(run_of(name), "assistant")["error"] == "rate_limit"


def test_a_refusal_is_an_error_result_as_claudes() -> None:
    got, want = run_of("stop-refusal"), claude_of("stop-refusal")
    res, cres = last(got, "result"), last(want, "result")
    assert {k: res.get(k) for k in RESULT_KEYS} == {k: cres.get(k) for k in RESULT_KEYS}
    notice, cnotice = last(got, "assistant"), last(want, "assistant")
    assert notice["message"]["content"][0]["text"] == CBC_REFUSAL == res["result"]
    for k in ("error", "is_api_error_message"):
        assert notice[k] == cnotice[k]
    assert notice["message"]["stop_reason"] == cnotice["message"]["stop_reason"] == "refusal"
    # the model's own words before the notice pass untouched
    model = [f for f in got if f["type"] == "assistant"][0]
    assert model["message"]["content"][0]["text"] == "I can't help with that."
    assert "is_api_error_message" not in model


def test_the_same_words_from_the_model_are_kept() -> None:
    """A model that answers with text shaped like cbc's error, or with the refusal notice,
    but produced output tokens (or names another session), is not rewritten."""
    eng = full()
    events = [(0.0, "client", line({"type": "user", "message": {"role": "user", "content": "x"}}))]
    for i, text in enumerate(
        (
            f"500 boom (0123456789abcdef0123456789abcdef/{SID})",
            "500 boom (0123456789abcdef0123456789abcdef/00000000-0000-4000-8000-000000000000)",
            CBC_REFUSAL,
        )
    ):
        tokens = 5 if i != 1 else 0
        events.append(
            (
                0.1 + i / 10,
                "backend",
                line(
                    {
                        "type": "assistant",
                        "uuid": f"a{i}",
                        "session_id": SID,
                        "parent_tool_use_id": None,
                        "message": {
                            "id": f"m{i}",
                            "role": "assistant",
                            "model": "m",
                            "type": "message",
                            "content": [{"type": "text", "text": text}],
                            "usage": {"input_tokens": 1, "output_tokens": tokens},
                        },
                    }
                ),
            )
        )
    frames = drive(eng, events).frames()
    assert not [f for f in frames if f.get("is_api_error_message")]


def test_the_error_text_is_read_exactly() -> None:
    sid = "01a231c6-a961-7db6-b126-e779833d28d5"
    text = f"529 mock 529 overloaded_error (01a231c6aa95793ca3b19368189865a4/{sid})"
    assert parse_api_error(text, sid) == (529, "mock 529 overloaded_error")
    assert parse_api_error(text, "another-session") is None
    assert parse_api_error("529 overloaded", sid) is None
    assert [error_kind(s) for s in (429, 529, 500, 503, 400, 401, 404)] == [
        "rate_limit",
        "overloaded",
        "server_error",
        "server_error",
        "invalid_request",
        "authentication_failed",
        "unknown",
    ]


def test_off_leaves_cbcs_frames() -> None:
    res = last(run_of("api-error-exhausted", ("api-error=off",)), "result")
    assert res["subtype"] == "error_during_execution"
    assert res.get("terminal_reason") != "api_error"


def test_the_refusal_notice_is_a_message_of_its_own() -> None:
    got = [f for f in run_of("stop-refusal") if f["type"] == "assistant"]
    assert got[0]["message"]["id"] != got[-1]["message"]["id"]
    assert (got[-1]["message"]["container"], got[-1]["message"]["stop_details"]) == (None, None)


def test_a_max_turns_result_names_no_line() -> None:
    frames = run_of("max-turns")
    res = last(frames, "result")
    assert res["subtype"] == "error_max_turns"
    assert "user_message_uuid" not in res
    assert "user_message_uuid" not in last(claude_of("max-turns"), "result")
    assert [f["state"] for f in frames if f["type"] == "command_lifecycle"][-1] == "completed"


def test_cbcs_aborted_message_after_a_cut_stream_is_dropped_when_the_answer_follows() -> None:
    eng = full()
    events = transcript_events(TWINS / "stream-cut.cbc-raw.jsonl")
    frames = drive(eng, events).frames()
    texts = [f["message"]["content"][0]["text"] for f in frames if f["type"] == "assistant"]
    assert texts == ["ok"]
    stats = eng.statistics()["rules"]["api-error"]
    assert (stats["held"], stats["dropped"]) == (1, 1)


def test_an_aborted_message_the_turn_ends_on_is_released() -> None:
    """No answer after it (the turn ends at once): the message is released in place."""
    events = transcript_events(TWINS / "stream-cut.cbc-raw.jsonl")
    cut = [
        e
        for e in events
        if not (e[1] == "backend" and b'"text":"ok"' in e[2] and b'"assistant"' in e[2])
    ]
    frames = drive(full(), cut).frames()
    texts = [f["message"]["content"][0]["text"] for f in frames if f["type"] == "assistant"]
    assert texts == ["aborted"]
    kinds = [f["type"] for f in frames if f["type"] in ("assistant", "result")]
    assert kinds == ["assistant", "result"]


def test_the_error_message_gets_a_frame_uuid_of_its_own() -> None:
    """cbc gives its error message one id as frame uuid and message id; Claude's differ."""
    msg = last(run_of("api-error-exhausted"), "assistant")
    assert msg["uuid"] != msg["message"]["id"]


def test_a_refusal_is_reported_before_the_notice_as_claude_reports_it() -> None:
    got, want = run_of("stop-refusal"), claude_of("stop-refusal")

    def order(frames: list[dict[str, Any]]) -> list[str]:
        return [
            f"{f['type']}/{f.get('subtype', '')}"
            for f in frames
            if f["type"] in ("assistant", "result")
            or f.get("subtype") == "model_refusal_no_fallback"
        ]

    assert order(got) == order(want)
    [report] = [f for f in got if f.get("subtype") == "model_refusal_no_fallback"]
    [creport] = [f for f in want if f.get("subtype") == "model_refusal_no_fallback"]
    assert set(report) == set(creport)
    events = transcript_events(TWINS / "stop-refusal.cbc-raw.jsonl")
    lines = [json.loads(e[2]) for e in events if e[1] == "client"]
    [line] = [x for x in lines if x.get("type") == "user"]
    assert report["refused_user_message_uuid"] == line["uuid"]
    assert report["request_id"] is None  # not on cbc's wire
