"""``frame-fields``: ``is_error: false`` only where Claude 2.1.220 writes it (shell and
Workflow results; not a Read's: twins parallel-tools, issue 12)."""

from __future__ import annotations

from tests.compat.tasks_support import full_engine, init, lines, out, result, tool_result, tool_use


def test_is_error_false_stays_on_a_bash_result_and_leaves_a_read_result() -> None:
    eng = full_engine()
    frames = [
        init(),
        tool_use("call_2", "Read", {"file_path": "notes.txt"}),
        tool_use("call_3", "Bash", {"command": "echo parallel-bash"}),
        tool_result("call_2", "   1→a note"),
        tool_result("call_3", "parallel-bash"),
        result(),
    ]
    got = out(eng.feed("backend", lines(*frames), 0.0))
    blocks = {
        f["message"]["content"][0]["tool_use_id"]: f["message"]["content"][0]
        for f in got
        if f["type"] == "user"
    }
    assert "is_error" not in blocks["call_2"]
    assert blocks["call_3"]["is_error"] is False
