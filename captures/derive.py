"""Regenerate the derived captures in this folder from the reference captures.

    python captures/derive.py [SHARED_DIR]

Each output is a ccbridge capture (``compat.capture``) whose header says which reference
capture it was derived from and how: the session's working directory is replaced by the
``{CWD}`` placeholder (``ccbridge replay`` substitutes its own), the workflow scripts the
session ran by path are attached as ``files`` (``ccbridge replay --materialize`` writes
them), and every record is re-encoded (credentials redacted). Frames are otherwise
verbatim: the timestamps, the order and the bytes are cbc's own.

The scripts under ``files`` are not in the reference captures (only their effect is); they
are written to match what the captures show (meta name, phases and agent labels).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from compat import capture  # noqa: E402

MOCK_FLOW = """export const meta = {
  name: 'mock-flow',
  description: 'Mock two-phase workflow',
  phases: [ { title: 'Scan', detail: 'one agent' }, { title: 'Sum', detail: 'one agent' } ],
}
phase('Scan')
const a = await agent('say scan-result', {label: 'scanner'})
phase('Sum')
const b = await agent('say sum-result', {label: 'summer'})
log('finished both')
return {a, b}
"""

PAR_SLOW_FLOW = """export const meta = {
  name: 'par-slow-flow',
  description: 'Two slow agents in parallel',
  phases: [ { title: 'Fan', detail: 'two slow agents at once' } ],
}
phase('Fan')
const [a, b] = await Promise.all([
  agent('say slow-a result SLOW_AGENT', {label: 'slow-a'}),
  agent('say slow-b result SLOW_AGENT', {label: 'slow-b'}),
])
return {a, b}
"""

#: output name -> (reference capture, files to attach, what it shows)
DERIVED = {
    "cbc-workflow-inline": (
        "cbc-2.163.0/mockoai_workflow-inline.transcript.jsonl",
        {},
        "an inline workflow (script in the tool call) run to completion",
    ),
    "cbc-workflow-by-path": (
        "cbc-2.163.0/mockoai_workflow-by-path.transcript.jsonl",
        {"flows/mock-flow.js": MOCK_FLOW},
        "a workflow started by path, run to completion",
    ),
    "cbc-interrupt-idle-workflow": (
        "cbc-2.163.0/mockoai_interrupt-idle-workflow-2-running-agents.transcript.jsonl",
        {"flows/par-slow-flow.js": PAR_SLOW_FLOW},
        "an interrupt while idle, with a workflow of two running agents",
    ),
    "cbc-interrupt-midturn-workflow": (
        "cbc-2.163.0/mockoai_interrupt-midturn-workflow-2-running-agents.transcript.jsonl",
        {"flows/par-slow-flow.js": PAR_SLOW_FLOW},
        "an interrupt mid-turn (a slow foreground Bash), with a workflow of two agents",
    ),
    "cbc-bg-bash": ("cbc-2.163.0/mockoai_bg-bash.transcript.jsonl", {}, "a background shell"),
    "cbc-bg-agent": ("cbc-2.163.0/mockoai_bg-agent.transcript.jsonl", {}, "a background agent"),
}

_WD = re.compile(r"/home/user/probe/cbc/wd/[A-Za-z0-9_.\-]+")


def derive(shared: Path, name: str) -> Path:
    ref, files, what = DERIVED[name]
    src = shared / "reference" / "captures" / ref
    with src.open("rb") as f:
        cap = capture.parse(f)
    meta = cap.header.get("meta", {})
    out = HERE / f"{name}.jsonl"
    head = capture.header(
        f"derived from reference capture {ref} (real cbc {meta.get('cbc_version', '2.163.0')}"
        f" binary, {meta.get('exe', 'codebuddy-headless')}, scripted OpenAI-style model)",
        shows=what,
        derived={"from": ref, "how": "cwd -> {CWD}; workflow scripts attached as files"},
        argv=meta.get("args", []),
        files=files,
    )
    with out.open("wb") as f:
        f.write(capture.encode_header(head))
        for r in cap.records:
            text = _WD.sub("{CWD}", r.data.decode("utf-8", "replace"))
            f.write(capture.encode_record(r.t, r.kind, text.encode(), r.partial))
    return out


def main() -> int:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / "shared"
    if not (shared / "reference" / "captures").is_dir():
        print(f"reference captures not found under {shared}", file=sys.stderr)
        return 2
    for name in DERIVED:
        print(derive(shared, name).relative_to(HERE.parent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
