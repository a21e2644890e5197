"""The wire shapes of ``compat.wire`` check keys: strict mypy, run on small snippets, reports
a misspelled key read from or written into a typed frame (issue 10). If the ``TypedDict``s
stop checking keys (an ``Any`` slipped into a family, a class turned into a plain dict),
these tests fail."""

from __future__ import annotations

import tomllib
from pathlib import Path

import mypy.api
import pytest

import compat

#: the checkout whose ``compat`` this test imported (a worktree, not an installed copy)
_ROOT = Path(compat.__file__).resolve().parent.parent
#: the project's plugin that makes ``.get`` of an undeclared key an error (tests/mypy_wire.py)
_PLUGIN = "tests/mypy_wire.py"

_HEAD = """\
from typing import Any, cast
from compat import wire
"""


def _mypy(code: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[int, str]:
    monkeypatch.setenv("MYPYPATH", str(_ROOT))
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nstrict = True\nplugins = {_ROOT / _PLUGIN}\n")
    out, err, status = mypy.api.run(
        ["--no-incremental", "--config-file", str(config), "-c", _HEAD + code]
    )
    return status, out + err


def test_the_project_runs_the_plugin() -> None:
    mypy_options = tomllib.loads((_ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert _PLUGIN in mypy_options.get("plugins", [])


def test_well_spelled_keys_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    status, out = _mypy(
        """
def read(o: Any) -> bool | None:
    init = cast(wire.SystemInit, o)
    done = cast(wire.TaskUpdated, o)
    if init["cwd"] and done["patch"]["status"]:
        return cast(wire.Result, o).get("is_error")
    return None

def write(sid: str) -> wire.Result:
    return {"type": "result", "is_error": True, "session_id": sid}

def union(o: Any) -> object:
    return cast(wire.TaskFrame, o).get("tool_use_id") or cast(wire.User, o).get("isReplay")

def reverse(o: Any) -> object:
    if cast(wire.ClientRequest, o).get("hasPrompt") is False:
        return cast(wire.ReverseTask, o).get("task_type") or cast(wire.CbcAccount, o)["token"]
    return cast(wire.ContentBlock, o).get("tool_use_id")
""",
        monkeypatch,
        tmp_path,
    )
    assert status == 0, out


#: a function whose body returns the expression of each case
_DEF = "def f(o: Any) -> object:\n    return "


@pytest.mark.parametrize(
    ("expr", "key"),
    [
        # a misspelled key read from a frame
        ("cast(wire.Result, o)['is_eror']", "is_eror"),
        # ... read with .get (mypy alone types it object and says nothing: tests/mypy_wire.py)
        ("cast(wire.SystemInit, o).get('permission_mode')", "permission_mode"),
        # ... on a union of families: a key one of them lacks
        ("cast(wire.TaskFrame, o).get('task_type')", "task_type"),
        # a wrong nesting level: end_time is the patch's, not the frame's
        ("cast(wire.TaskUpdated, o)['end_time']", "end_time"),
        # a misspelled key in a nested shape
        ("cast(wire.Assistant, o)['message']['stop_reasn']", "stop_reasn"),
        # a misspelled key written into a frame a rule builds
        ("wire.Assistant(is_api_eror_message=True)", "is_api_eror_message"),
        ("wire.Result(**cast(wire.Result, o), api_eror_status=1)", "api_eror_status"),
        # the reverse profile's shapes (a cbc client's requests, Claude's frames to it)
        ("cast(wire.ClientRequest, o).get('hasprompt')", "hasprompt"),
        ("cast(wire.ReverseTask, o)['task_typ']", "task_typ"),
        ("cast(wire.ToolCallInput, o).get('run_in_backgrund')", "run_in_backgrund"),
        ("wire.CbcAccount(userID='x')", "userID"),
    ],
)
def test_a_misspelled_key_is_a_type_error(
    expr: str, key: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    status, out = _mypy(f"{_DEF}{expr}\n", monkeypatch, tmp_path)
    assert status == 1, out
    assert "[typeddict-" in out, out
    assert key in out, out
