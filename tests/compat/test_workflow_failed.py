"""``progress-final`` on a workflow that failed (issue 12, ``scenarios/workflow-failed``).

cbc 2.163.0's snapshots keep every agent at ``start`` to the end, also when the script
throws after its agent finished: the raw cbc run's last snapshot before ``task_updated
{failed}`` still says ``start``; Claude 2.1.220's final snapshot says ``done`` (with
``resultPreview``) for that agent.
"""

from __future__ import annotations

from tests.compat.tasks_support import (
    EPOCH_MS,
    agent,
    line,
    lines,
    notification,
    out,
    phase,
    progress,
    tags,
    updated,
)
from tests.compat.test_workflow import WF_TASK, launch


def test_agents_of_a_failed_workflow_are_done_not_aborted() -> None:
    eng, _ = launch("progress-final")
    entries = [
        phase(1, "Scan"),
        agent(1, "scanner"),  # finished before the throw; cbc never says so
        agent(2, "own-error", "error", error="agent error: boom"),  # cbc ended it itself
    ]
    eng.feed("backend", line(progress(WF_TASK, entries)), 4.0)
    got = out(
        eng.feed(
            "backend",
            lines(
                updated(WF_TASK, "failed", EPOCH_MS + 5000),
                progress(WF_TASK, entries),  # cbc's stale copy after the update
                notification(WF_TASK, "failed", "Dynamic workflow failed"),
            ),
            4.5,
        )
    )
    assert tags(got) == ["task_progress", "task_updated:failed", "task_notification:failed"]
    scanner, own = got[0]["workflow_progress"][1:]
    assert scanner["state"] == "done"
    assert "error" not in scanner
    assert own == entries[2]


def test_a_failed_workflow_notification_carries_the_usage_of_its_last_progress() -> None:
    """Claude's failed-workflow notification has ``usage`` (as a completed one does); cbc's
    has none: task-fields takes it from the last progress, as for a completed workflow."""
    eng, _ = launch("progress-final", "task-fields")
    entries = [phase(1, "Scan"), agent(1, "scanner")]
    eng.feed("backend", line(progress(WF_TASK, entries)), 4.0)
    got = out(
        eng.feed(
            "backend",
            lines(
                updated(WF_TASK, "failed", EPOCH_MS + 5000),
                notification(WF_TASK, "failed", "Dynamic workflow failed"),
            ),
            4.5,
        )
    )
    note = got[-1]
    assert note["subtype"] == "task_notification"
    assert note["usage"] == {"total_tokens": 0, "tool_uses": 0, "duration_ms": 1}
