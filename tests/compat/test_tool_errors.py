"""tool-errors: a failed tool call reaches the client the way Claude Code 2.1.220 writes it
(frames shaped as in the raw runs of scenarios failing-tool, failing-read, hooks-pre-tool-use,
interrupt-permission-prompt, 2026-12-01)."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compat.stages.hygiene import _tool_use_result, bash_layout, claude_error_text
from compat.stages.turns import REJECTED

from .helpers import engine_for, frames_out, line, stage_on

SID = "01a23167-da9c-7b15-84a0-d6ed2d372320"


def user(block: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": "01a23167-dcfc-7c18-a1f6-3b3fcb7bbb4a",
        "session_id": SID,
        "message": {"content": [block], "role": "user"},
        "parent_tool_use_id": None,
        "_requestId": "01a23167dbc37dd089e8f030da8e983d",
        **extra,
        "__timestamp": "2026-12-01T11:40:20.094Z",
    }


def bash_block(text: str, raw: dict[str, Any], use: str = "call_mock_0002") -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": use,
        "content": [{"type": "text", "text": text}],
        "is_error": False,
        "_meta": {"rawResponse": raw, "renderer": {"type": "text", "value": "x"}},
    }


EXIT3 = bash_block(
    "Command: echo out-line; echo err-line >&2; exit 3\nStdout: out-line\n\n"
    "Stderr: err-line\n\nExit Code: 3\nSignal: (none)",
    {
        "exitCode": 3,
        "signal": None,
        "interrupted": False,
        "tool_error_code": "8002",
        "is_error": True,
        "error": "err-line\n",
    },
)
KILLED = bash_block(
    "Command: kill -TERM $$\nStdout: (empty)\nStderr: (empty)\nExit Code: (none)\nSignal: SIGTERM",
    {"exitCode": None, "signal": "SIGTERM", "tool_error_code": "8013", "is_error": True},
    "call_mock_0003",
)


def run(*objs: dict[str, Any], private: bool = True) -> list[dict[str, Any]]:
    down = [stage_on("tool-errors")]
    if private:
        down.append(stage_on("private-fields"))
    eng = engine_for("identity", down=down)
    return frames_out(eng.feed("backend", b"".join(line(o) for o in objs), 0.0))


def test_bash_exit_status_only_in_meta_becomes_claude_error() -> None:
    (out,) = run(user(EXIT3))
    block = out["message"]["content"][0]
    assert block["is_error"] is True
    assert block["content"] == "Exit code 3\nout-line\nerr-line"
    assert "_meta" not in block  # private-fields still strips it
    assert "_meta" not in out
    assert out["tool_use_result"] == "Error: Exit code 3\nout-line\nerr-line"


def test_bash_killed_by_signal_is_an_error_with_cbc_text() -> None:
    (out,) = run(user(KILLED))
    block = out["message"]["content"][0]
    assert block["is_error"] is True
    assert block["content"].endswith("Signal: SIGTERM")  # Claude's own status is not on the wire
    assert out["tool_use_result"] == "Error: " + block["content"]


def test_tool_use_error_wrapper_removed() -> None:
    block = {
        "type": "tool_result",
        "tool_use_id": "call_mock_0002",
        "content": [
            {"type": "text", "text": "<tool_use_error>File does not exist.</tool_use_error>"}
        ],
        "is_error": True,
        "_meta": {"rawResponse": {"is_error": True, "tool_error_code": "1001"}},
    }
    (out,) = run(user(block))
    assert out["message"]["content"][0]["content"] == "File does not exist."
    assert out["tool_use_result"] == "Error: File does not exist."


def test_error_text_already_prefixed_and_rejection() -> None:
    hook = {
        "type": "tool_result",
        "tool_use_id": "call_mock_0002",
        "content": [{"type": "text", "text": "Error: blocked by the guard hook"}],
        "is_error": True,
    }
    (out,) = run(user(hook))
    assert out["tool_use_result"] == "Error: blocked by the guard hook"
    rejected = {**hook, "content": [{"type": "text", "text": REJECTED + " "}]}
    (out,) = run(user(rejected))
    assert out["message"]["content"][0]["content"] == REJECTED
    assert out["tool_use_result"] == "User rejected tool use"


def test_success_and_mcp_results_pass_byte_identical() -> None:
    ok = bash_block(
        "Command: echo allowed\nStdout: allowed\n\nStderr: (empty)\nExit Code: 0\nSignal: (none)",
        {"exitCode": 0, "signal": None, "interrupted": False, "tool_error_code": "0"},
    )
    mcp = {
        "type": "tool_result",
        "tool_use_id": "call_mock_0004",
        "content": [{"type": "text", "text": "the probe failed"}],
        "is_error": False,
    }
    for block in (ok, mcp):
        eng = engine_for("identity", down=[stage_on("tool-errors")])
        raw = line(user(block))
        cmds = eng.feed("backend", raw, 0.0)
        assert cmds[0].data == raw  # type: ignore[union-attr]


def test_existing_tool_use_result_kept_and_two_results_not_guessed() -> None:
    (out,) = run(user(EXIT3, tool_use_result="given"))
    assert out["tool_use_result"] == "given"
    two = user(EXIT3)
    two["message"]["content"].append(KILLED)
    (out,) = run(two)
    assert [b["is_error"] for b in out["message"]["content"]] == [True, True]
    assert "tool_use_result" not in out  # Claude writes one per result frame


def test_claude_error_text_cases() -> None:
    assert claude_error_text("plain failure") == "plain failure"
    assert (
        claude_error_text(
            "Command: false\nStdout: (empty)\nStderr: (empty)\nExit Code: 1\nSignal: (none)"
        )
        == "Exit code 1"
    )
    assert (
        claude_error_text(
            "Command: x\nStdout: a\nb\n\nStderr: (empty)\nExit Code: 2\nSignal: (none)"
        )
        == "Exit code 2\na\nb"
    )


def test_a_missing_file_gets_claudes_working_directory_note() -> None:
    from compat.session import ToolUse

    eng = engine_for("identity", down=[stage_on("tool-errors")])
    eng.state.cwd = "/w"
    eng.state.tool_uses["call_mock_0002"] = ToolUse("call_mock_0002", "Read", {})
    block = {
        "type": "tool_result",
        "tool_use_id": "call_mock_0002",
        "content": [
            {"type": "text", "text": "<tool_use_error>File does not exist.</tool_use_error>"}
        ],
        "is_error": True,
    }
    (out,) = frames_out(eng.feed("backend", line(user(block)), 0.0))
    text = "File does not exist. Note: your current working directory is /w."
    assert out["message"]["content"][0]["content"] == text
    assert out["tool_use_result"] == "Error: " + text


#: what cbc's Bash result layout was read with before (a backtracking regex)
_LAYOUT_REGEX = re.compile(
    r"Command: .*?\nStdout: (?P<out>.*?)\n\n?Stderr: (?P<err>.*?)\n\n?"
    r"Exit Code: (?P<code>[^\n]*)\nSignal: (?P<sig>[^\n]*)",
    re.DOTALL,
)
_LAYOUT_TOKENS = st.sampled_from(
    ["Command: ", "\n", "\n\n", "Stdout: ", "Stderr: ", "Exit Code: ", "Signal: ", "a", "1", " "]
)


_FILL = st.lists(_LAYOUT_TOKENS, max_size=4).map("".join)
_LINE = st.lists(st.sampled_from(["a", "1", " ", "Exit Code: ", "Signal: "]), max_size=3).map(
    "".join
)
_NL = st.sampled_from(["\n", "\n\n", ""])
#: cbc's layout with markers, blank lines and newlines inside its parts (and sometimes a
#: separator left out), and any mix of the tokens
_LAYOUTS = st.one_of(
    st.tuples(_FILL, _NL, _FILL, _NL, _FILL, _NL, _LINE, st.sampled_from(["\n", ""]), _LINE).map(
        lambda p: (
            f"Command: {p[0]}{p[1]}Stdout: {p[2]}{p[3]}Stderr: {p[4]}{p[5]}"
            f"Exit Code: {p[6]}{p[7]}Signal: {p[8]}"
        )
    ),
    st.lists(_LAYOUT_TOKENS, max_size=16).map("".join),
)


@settings(max_examples=3000, deadline=None)
@given(_LAYOUTS)
def test_the_bash_layout_is_read_as_the_regex_reads_it(text: str) -> None:
    m = _LAYOUT_REGEX.fullmatch(text)
    assert bash_layout(text) == (None if m is None else (m["out"], m["err"], m["code"], m["sig"]))


def test_a_long_bash_output_full_of_markers_is_read_at_once() -> None:
    """The output is the command's (the model's): the regex took 2.6 s on 44 KB of
    repeated blank-line ``Stderr:`` markers, growing with the cube of the length."""
    text = "Command: x\nStdout: " + "\n\nStderr: a" * 200_000 + "\n\nExit Code: 1\nSignal: none"
    out, err, code, sig = bash_layout(text) or ("", "", "", "")
    assert (out, code, sig) == ("", "1", "none")
    assert err.count("Stderr: ") == 199_999


def test_an_edits_string_not_found_is_claudes_sentence_and_the_string() -> None:
    """cbc adds advice for its model (in Chinese) and quotes the string; Claude writes its
    sentence, the string, in its ``<tool_use_error>`` wrapper, and the same without the
    wrapper as ``tool_use_result`` (twins file-tool-errors)."""
    cbc = (
        "Error: String to replace not found in file. "
        "\u5f53\u524d\u6587\u4ef6\u5185\u5bb9\u4e0e old_string \u4e0d\u4e00\u81f4.\n"
        'String: "not-in-the-file"'
    )
    text = claude_error_text(cbc)
    assert text == (
        "<tool_use_error>String to replace not found in file.\n"
        "String: not-in-the-file</tool_use_error>"
    )
    assert _tool_use_result(text) == (
        "Error: String to replace not found in file.\nString: not-in-the-file"
    )
