"""Claude's session store as the tests compare it (``compat.claude_store``): the files real
Claude Code 2.1.220 wrote (``tests/bridge/data/claude-store``) and a store's structure,
comparable across runs whose ids and clocks differ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STORE_DATA = Path(__file__).resolve().parents[1] / "bridge/data/claude-store"
#: what the builder leaves out on purpose (docs/session-store.md): Claude's own agent and
#: skill listings, its permission-mode marker at the end of a resumed session
LEFT_OUT_TYPES = frozenset({"attachment", "mode"})
#: fields Claude writes that the bridged frames cannot give: the reasoning effort, and the
#: API request id (cbc's frames have none; written when a frame carries ``request_id``)
LEFT_OUT_FIELDS = {"assistant": frozenset({"effort", "requestId"})}

Record = dict[str, Any]


def read_store(path: Path) -> list[Record]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def claude_store(name: str) -> list[Record]:
    """What Claude wrote for scenario ``name``."""
    return read_store(STORE_DATA / f"{name}.ndjson")


def frames(name: str) -> list[list[tuple[str, Record]]]:
    """What the client of that run wrote and read, one list per run."""
    runs: list[list[tuple[str, Record]]] = [[]]
    for line in (STORE_DATA / f"{name}.frames.ndjson").read_text().splitlines():
        item = json.loads(line)
        if "run" in item:
            runs.append([])
        else:
            ((way, obj),) = item.items()
            runs[-1].append((way, obj))
    return runs


def structure(records: list[Record]) -> list[tuple[Any, ...]]:
    """Each record kept (``LEFT_OUT_TYPES`` dropped) as (type, operation or subtype, its
    field names less ``LEFT_OUT_FIELDS``, its parent, its leaf, its call's source), the
    last three as indexes into that list ("-": no such field; "?": a uuid not there), a
    parent that was dropped replaced by its own."""
    by_uuid = {r["uuid"]: r for r in records if isinstance(r.get("uuid"), str)}
    kept = [r for r in records if r.get("type") not in LEFT_OUT_TYPES]
    index = {r["uuid"]: i for i, r in enumerate(kept) if isinstance(r.get("uuid"), str)}

    def at(key: str, r: Record) -> Any:
        if key not in r:
            return "-"
        ref = r[key]
        while ref in by_uuid and by_uuid[ref].get("type") in LEFT_OUT_TYPES:
            ref = by_uuid[ref].get("parentUuid")
        return None if ref is None else index.get(ref, "?")

    return [
        (
            r.get("type"),
            r.get("operation") or r.get("subtype"),
            tuple(sorted(set(r) - LEFT_OUT_FIELDS.get(str(r.get("type")), frozenset()))),
            at("parentUuid", r),
            at("leafUuid", r),
            at("sourceToolAssistantUUID", r),
        )
        for r in kept
    ]
