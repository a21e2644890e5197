"""The mypy plugin of pyproject.toml (tests/mypy_wire_keys.py) reports a misspelled literal
key of ``.get`` on a wire TypedDict, which mypy alone types ``object`` silently."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent

SNIPPET = """
from compat import wire

def f(result: wire.Result, body: wire.CanUseTool) -> None:
    result.get("terminal_reason")
    body.get("tool_name")
    result.get("terminal_reasn")
    body.get("toolname")
    {"a": 1}.get("b")
"""


def test_a_misspelled_get_key_of_a_wire_type_is_a_mypy_error(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET)
    out, _, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--follow-imports",
            "silent",
            str(snippet),
        ]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1, out
    assert [e.split(": error: ")[1] for e in errors] == [
        'TypedDict has no key "terminal_reasn" (.get)  [typeddict-item]',
        'TypedDict has no key "toolname" (.get)  [typeddict-item]',
    ], out
