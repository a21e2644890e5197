"""compat.headless: Claude 2.1.220's headless modes, checked against what the real binary
printed (``tests/bridge/data/headless/claude-2.1.220``) and, end to end, against cbc's own
stream (``cbc-2.163.0``) passed through the cbc-to-claude engine and the renderer."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from compat.engine import Engine, Write
from compat.headless import (
    NO_PROMPT,
    NO_RESULT,
    Mode,
    Renderer,
    is_message,
    mode_of,
    prompt_text,
    user_line,
)
from compat.profiles import build, parse_rule_settings

from .tasks_support import det_env

DATA = Path(__file__).resolve().parents[1] / "bridge/data/headless"


def probe(name: str, backend: str = "claude-2.1.220") -> dict[str, Any]:
    out: dict[str, Any] = json.loads((DATA / backend / f"{name}.json").read_text())
    return out


def render(mode: Mode, data: bytes, seed: int = 0) -> tuple[bytes, bytes, bytes, int]:
    """Feed ``data`` in random chunks; (bytes passed at once, stdout, stderr, status)."""
    r, rng, now, i = Renderer(mode), random.Random(seed), b"", 0
    while i < len(data):
        n = rng.randint(1, 700)
        now += r.feed(data[i : i + n])
        i += n
    done = r.finish()
    return now, done.stdout, done.stderr, done.status


def sessions(text: str) -> str:
    """Two runs' output with session numbers and timestamps masked."""
    text = re.sub(r'"timestamp":"[^"]*"', '"timestamp":"T"', text)
    return re.sub(r"<session-\d+>", "<session>", text)


# -- the command line --------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "arg-stream-json-no-verbose",
        "bad-output-format",
        "bad-input-format",
        "stream-input-text-output",
    ],
)
def test_usage_errors_are_claudes_words(name: str) -> None:
    p = probe(name)
    assert p["status"] == 1
    assert mode_of(p["argv"]).usage_error() == p["stderr"].rstrip("\n")


@pytest.mark.parametrize(
    "name",
    [
        "arg-text",
        "arg-json",
        "arg-json-verbose",
        "arg-partial",
        "arg-json-schema",
        "continue-second",
        "dashdash-prompt",
        "two-positionals",
        "no-prompt",
    ],
)
def test_accepted_command_lines(name: str) -> None:
    assert mode_of(probe(name)["argv"]).usage_error() is None


def test_modes() -> None:
    m = mode_of(["-p", "hi", "--output-format=json", "--verbose", "--max-turns", "3"])
    assert (m.output, m.input, m.verbose, m.print_mode, m.prompt, m.max_turns) == (
        "json",
        "text",
        True,
        True,
        "hi",
        "3",
    )
    assert not m.passthrough
    assert m.renders
    sdk = mode_of(["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"])
    assert sdk.passthrough
    assert sdk.prompt is None
    assert sdk.usage_error() is None
    # stream-json output with a text prompt: not rendered, but the prompt is written
    m = mode_of(["-p", "x", "--output-format", "stream-json", "--verbose"])
    assert not m.passthrough
    assert not m.renders


def test_prompt_joins_argument_and_stdin_as_claude_does() -> None:
    p = probe("arg-and-stdin")
    stdin = "diff --git a/x b/x\n+new line\n"
    assert prompt_text("review this", stdin) == p["model_inputs"][0]
    assert prompt_text(None, "hello from stdin\n") == probe("stdin-text")["model_inputs"][0]
    assert prompt_text("hello", "") == "hello"
    assert prompt_text(None, "") is None
    assert prompt_text(None, None) is None
    assert "stdin" in NO_PROMPT
    assert probe("no-prompt")["stderr"] == NO_PROMPT + "\n"


def test_user_line_is_a_stream_json_user_message() -> None:
    line = user_line('say "hi"\nnow')
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    obj = json.loads(line)
    assert obj["type"] == "user"
    assert obj["message"] == {"role": "user", "content": 'say "hi"\nnow'}


# -- rendering Claude's own stream as Claude does -------------------------------------------


def test_text_and_json_from_claudes_stream() -> None:
    stream = probe("arg-stream-json-verbose")["stdout"].encode()
    now, out, err, status = render(mode_of(["-p", "hello"]), stream)
    assert (now, out, err, status) == (b"", probe("arg-text")["stdout"].encode(), b"", 0)
    _, out, _, status = render(mode_of(["-p", "hello", "--output-format", "json"]), stream, 3)
    result = stream.splitlines()[-1]
    assert out == result + b"\n"
    assert status == 0
    # Claude's json output is its stream-json result frame, key for key
    assert list(json.loads(out)) == list(json.loads(probe("arg-json")["stdout"]))
    _, out, _, _ = render(mode_of(["-p", "x", "--output-format", "json", "--verbose"]), stream, 5)
    assert sessions(out.decode()) == sessions(probe("arg-json-verbose")["stdout"])


def test_stream_json_passes_through_and_partial_events_are_not_messages() -> None:
    stream = probe("arg-partial")["stdout"].encode()
    mode = mode_of(["-p", "x", "--output-format", "stream-json", "--verbose"])
    now, out, err, status = render(mode, stream, 7)
    assert now == stream
    assert out == b""
    assert err == b""
    assert status == 0
    assert not is_message({"type": "stream_event"})
    assert not is_message({"type": "system", "subtype": "task_started"})
    assert is_message({"type": "system", "subtype": "init"})


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_settle_prints_then_and_nothing_after_it_counts(fmt: str) -> None:
    """``settle`` (the session settled: Claude prints and exits) gives the output at
    once; what cbc writes later is not read, ``finish`` prints nothing more and keeps the
    settled status. A stream-json run has nothing to print: its stream passes on."""
    first = b'{"type":"result","subtype":"success","is_error":false,"result":"fine"}\n'
    late = b'{"type":"result","subtype":"success","is_error":true,"result":"late"}\n'
    r = Renderer(mode_of(["-p", "x", "--output-format", fmt, "--verbose"]))
    passed = r.feed(first)
    printed = r.settle()
    assert r.settle() == b""  # once
    passed += r.feed(late)
    done = r.finish()
    if fmt == "stream-json":
        assert (passed, printed, r.printed) == (first + late, b"", b"")
        assert done.status == 1  # the last result's, as without settling
    else:
        assert passed == b""
        assert printed == r.printed == (b"fine\n" if fmt == "text" else b"[" + first[:-1] + b"]\n")
        assert (done.stdout, done.status) == (b"", 0)


def test_max_turns_error_result() -> None:
    stream = probe("stream-max-turns")["stdout"].encode()
    _, out, _, status = render(mode_of(["-p", "x", "--max-turns", "1"]), stream)
    assert (out, status) == (probe("arg-max-turns-text")["stdout"].encode(), 1)
    assert out == b"Error: Reached max turns (1)"  # no newline, as Claude prints it


def test_no_result_is_an_error_on_stderr() -> None:
    init = b'{"type":"system","subtype":"init","session_id":"s"}\n'
    for fmt in ("text", "json"):
        _, out, err, status = render(mode_of(["-p", "x", "--output-format", fmt]), init)
        assert (out, err, status) == (b"", NO_RESULT.encode() + b"\n", 1)
    # a task frame after the result is not a message: the result is still the last one
    tail = (
        b'{"type":"result","subtype":"success","is_error":false,"result":"fine"}\n'
        b'{"type":"system","subtype":"task_notification","task_id":"t"}\n'
    )
    assert render(mode_of(["-p", "x"]), init + tail)[1:] == (b"fine\n", b"", 0)
    # an error success (an API error) prints its text and exits 1
    err_result = b'{"type":"result","subtype":"success","is_error":true,"result":"API down\\n"}'
    assert render(mode_of(["-p", "x"]), err_result)[1:] == (b"API down\n", b"", 1)


def test_an_incomplete_answer_is_printed_after_the_one_before_it() -> None:
    inc = "The response above may be incomplete."

    def assistant(text: str) -> bytes:
        return json.dumps(
            {
                "type": "assistant",
                "parent_tool_use_id": None,
                "message": {"content": [{"type": "text", "text": text}]},
            }
        ).encode()

    result = json.dumps(
        {"type": "result", "subtype": "success", "is_error": True, "result": inc}
    ).encode()
    stream = b"\n".join([assistant("first part"), assistant(inc), result]) + b"\n"
    assert render(mode_of(["-p", "x"]), stream)[1] == f"first part\n{inc}\n".encode()


# -- end to end: cbc's stream through the engine, then rendered ------------------------------


def bridged(name: str) -> bytes:
    """cbc's stream-json for a probe, through the cbc-to-claude engine (client side)."""
    up, down = build("cbc-to-claude", parse_rule_settings([]))
    eng = Engine(up, down, det_env())
    out = b""
    data = probe(name, "cbc-2.163.0")["stdout"].encode()
    cmds = [
        *eng.feed("client", user_line("x"), 0.0),
        *eng.feed("backend", data, 0.1),
        *eng.backend_exited(0, 0.2),
    ]
    for c in cmds:
        if isinstance(c, Write) and c.side == "client":
            out += c.data
    return out


def test_cbc_max_turns_is_claudes_error_max_turns() -> None:
    stream = bridged("stream-max-turns")
    claude = json.loads(probe("stream-max-turns")["stdout"].splitlines()[-1])
    _, out, _, status = render(mode_of(["-p", "x", "--max-turns", "1"]), stream)
    assert (out, status) == (b"Error: Reached max turns (1)", 1)
    _, out, _, _ = render(mode_of(["-p", "x", "--output-format", "json"]), stream)
    got = json.loads(out)
    for key in ("subtype", "is_error", "errors", "terminal_reason", "stop_reason", "num_turns"):
        assert got[key] == claude[key], key


def test_cbc_structured_output_fills_result_as_claude() -> None:
    stream = bridged("stream-json-schema")
    claude = json.loads(probe("arg-json-schema")["stdout"])
    _, out, _, status = render(mode_of(["-p", "x", "--output-format", "json"]), stream)
    got = json.loads(out)
    assert status == 0
    assert got["structured_output"] == claude["structured_output"]
    assert got["result"] == claude["result"] == '{"answer":"forty-two"}'
