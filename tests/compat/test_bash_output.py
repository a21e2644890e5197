"""``bash-output``: a successful Bash call's tool_result and ``tool_use_result`` as Claude
Code 2.1.220 writes them, on the real twins (cbc's raw run through the profile against
Claude's run of the same scenario) and on cbc reports no twin has."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from compat.stages.bash_output import NO_OUTPUT, claude_output, no_output_expected

from .test_fields import bridged, claude


def _bash_results(frames: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    """Each Bash call's (content, is_error, tool_use_result), in order."""
    bash = {
        b["id"]
        for f in frames
        if f.get("type") == "assistant"
        for b in f["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "Bash"
    }
    out = []
    for f in frames:
        content = f.get("message", {}).get("content") if f.get("type") == "user" else None
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("tool_use_id") in bash:
                out.append((b.get("content"), b.get("is_error"), f.get("tool_use_result")))
    return out


@pytest.mark.parametrize(
    "scenario", ["parallel-tools", "max-turns", "partial-tool-only", "thinking-partial"]
)
def test_a_successful_bash_call_reads_as_claudes(scenario: str) -> None:
    frames, _ = bridged(scenario)
    assert _bash_results(frames) == _bash_results(claude(scenario))


def test_a_failed_call_is_left_to_tool_errors() -> None:
    frames, _ = bridged("failing-tool")
    [(content, is_error, _)] = _bash_results(frames)
    assert content == "Exit code 3\nout-line\nerr-line"
    assert is_error is True


def _record_keys(record: Any) -> Any:
    """A background record with its task id made a placeholder (each CLI names its own)."""
    if not isinstance(record, dict) or "backgroundTaskId" not in record:
        return record
    return {**record, "backgroundTaskId": "<task>"}


@pytest.mark.parametrize("scenario", ["bg-bash", "shell-timeout", "bg-shell-kill"])
def test_a_call_run_in_the_background_has_claudes_record_and_cbcs_text(scenario: str) -> None:
    """Launched in the background, or moved there past its own timeout: Claude's record
    (``backgroundTaskId``, the task the client's task frames name; ``timedOutAfterMs``),
    cbc's words for the model."""
    frames, _ = bridged(scenario)
    got = [
        r for _, _, r in _bash_results(frames) if isinstance(r, dict) and "backgroundTaskId" in r
    ]
    want = [
        r
        for _, _, r in _bash_results(claude(scenario))
        if isinstance(r, dict) and "backgroundTaskId" in r
    ]
    assert [_record_keys(r) for r in got] == [_record_keys(r) for r in want]
    assert len(got) == 1
    started = [f["task_id"] for f in frames if f.get("subtype") == "task_started"]
    assert got[0]["backgroundTaskId"] in started


def report(out: str, err: str, code: str = "0", signal: str = "(none)") -> str:
    o = f"{out}\n" if out else "(empty)"
    e = f"{err}\n" if err else "(empty)"
    return f"Command: x\nStdout: {o}\nStderr: {e}\nExit Code: {code}\nSignal: {signal}"


def test_cbc_reports_become_the_output() -> None:
    assert claude_output(report("hi", "")) == ("hi", "")
    assert claude_output(report("", "")) == ("", "")
    assert claude_output(report("a\nb", "warn")) == ("a\nb", "warn")
    assert claude_output(report("x", "", code="1")) is None  # tool-errors'
    assert claude_output(report("x", "", code="(none)", signal="SIGTERM")) is None
    assert claude_output("Command: sleep 3\nStatus: Running in background") is None
    assert NO_OUTPUT == "(Bash completed with no output)"


@given(st.text(), st.text())
def test_any_output_comes_back_whole(out: str, err: str) -> None:
    """Whatever the streams hold (blank lines, control characters, text that looks like
    cbc's labels), the report parses back to them, each without its final newline; never
    an exception."""
    got = claude_output(report(out, err))
    ambiguous = "\nStderr: " in out or "(empty)" in (out.rstrip("\n"), err.rstrip("\n"))
    assume(not ambiguous)
    assert got == (out.rstrip("\n"), err.rstrip("\n"))


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("touch a", True),
        ("mkdir -p d && cd d && touch x", True),
        ("rm -f a; mv b c\ncp d e", True),
        ("touch a && echo done", False),
        ("printf 'x\\n' > a.txt && printf 'y' > b.txt", False),  # (twins file-tool-errors)
        ("FOO=1 touch a", False),  # Claude reads the first word as written
        ("", False),
        (None, False),
    ],
)
def test_no_output_is_expected_of_a_line_of_silent_commands_only(
    command: object, expected: bool
) -> None:
    assert no_output_expected(command) is expected
