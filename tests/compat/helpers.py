"""Test helpers: a deterministic engine and frame builders."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any

from compat.engine import Engine, Write
from compat.profiles import build, make_stage, parse_rule_settings
from compat.stage import Env, Stage


def stage_on(rule: str, options: dict[str, str] | None = None) -> Stage:
    """The stage of ``rule`` with ``options`` (a rule the options leave on)."""
    stage = make_stage(rule, options or {})
    assert stage is not None, f"{rule} is off"
    return stage


def det_env(scripts: dict[str, str] | None = None) -> Env:
    counter = itertools.count(1)
    files = scripts or {}
    return Env(
        new_uuid=lambda: f"00000000-0000-4000-8000-{next(counter):012d}",
        read_script=lambda cwd, path: files.get(path),
        epoch_ms=1_800_000_000_000,
    )


def engine_for(
    profile: str = "cbc-to-claude",
    rules: Sequence[str] = (),
    scripts: dict[str, str] | None = None,
    up: Sequence[Stage] | None = None,
    down: Sequence[Stage] | None = None,
    **kw: Any,
) -> Engine:
    if up is None and down is None:
        up, down = build(profile, parse_rule_settings(rules))
    return Engine(up or [], down or [], det_env(scripts), strict=True, **kw)


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def written(commands: Iterable[object], side: str = "client") -> bytes:
    return b"".join(c.data for c in commands if isinstance(c, Write) and c.side == side)


def frames_out(commands: Iterable[object], side: str = "client") -> list[dict[str, Any]]:
    return [json.loads(x) for x in written(commands, side).splitlines() if x.strip()]


def json_values(text: int = 6, leaves: int = 10) -> Any:
    """A hypothesis strategy for any JSON value (what a peer may put where a rule expects a
    shape): scalars, lists and objects of them, nested."""
    from hypothesis import strategies as st

    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=text),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
        max_leaves=leaves,
    )


def result_block(use_id: str, text: Any) -> dict[str, Any]:
    """A ``tool_result`` block whose content is one text block, as cbc writes one."""
    return {
        "type": "tool_result",
        "tool_use_id": use_id,
        "content": [{"type": "text", "text": text}],
    }
