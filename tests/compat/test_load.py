"""Bounded output under load (issue 8): 10,000 live background tasks.

Claude's ``background_tasks_changed`` lists every live task, so one snapshot per task event
is quadratic in the live set: 10,000 shells made ``tasks-snapshot`` write ~920 MB for
~2.6 MB of cbc output, and past 1,024 live tasks the oldest silently vanished from the
snapshots. Now a snapshot is sent only while the live set is within ``max_tasks`` (256),
whole; above it, it is not sent (counted ``suppressed``, logged). Measured by bytes written
and tracemalloc's peak, not time.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compat.engine import Log, Write

from .tasks_support import SID, full_engine, init, line, started, tool_result, tool_use, updated

N = 10_000


def _stream(n: int) -> list[bytes]:
    """cbc starting ``n`` background shells in one turn, then ending them all."""
    out = [line(init())]
    for i in range(n):
        use = f"toolu_{i:06d}"
        out.append(
            line(
                tool_use(
                    use,
                    "Bash",
                    {
                        "command": f"sleep {i}",
                        "run_in_background": True,
                        "description": f"shell {i}",
                    },
                )
            )
        )
        out.append(line(started(f"b{i:06d}", "Bash", f"shell {i}", use_id=use)))
        out.append(line(tool_result(use, f"Command running in background with ID: b{i:06d}")))
    for i in range(n):
        out.append(line(updated(f"b{i:06d}", "completed", end_time=1_795_949_100_000 + i)))
    return out


def _run(n: int, rules: tuple[str, ...] = ()) -> tuple[int, int, list[dict[str, Any]], Any, int]:
    eng = full_engine(rules)
    data = _stream(n)
    size_in = sum(map(len, data))
    size_out = 0
    snapshots: list[dict[str, Any]] = []
    logs: list[Log] = []
    t = 0.0
    tracemalloc.start()
    try:
        for chunk_at in range(0, len(data), 64):
            t += 0.01
            for c in eng.feed("backend", b"".join(data[chunk_at : chunk_at + 64]), t):
                if isinstance(c, Write) and c.side == "client":
                    size_out += len(c.data)
                    for ln in c.data.splitlines():
                        if b'"background_tasks_changed"' in ln:
                            snapshots.append(json.loads(ln))
                elif isinstance(c, Log):
                    logs.append(c)
            deadline = eng.next_deadline()
            while deadline is not None and deadline <= t:
                eng.advance(deadline)
                deadline = eng.next_deadline()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return size_in, size_out, snapshots, (eng.statistics(), logs), peak


def test_ten_thousand_live_tasks_bound_the_output_and_no_snapshot_leaves_one_out() -> None:
    size_in, size_out, snapshots, (stats, logs), peak = _run(N)
    print(
        f"\n{N} live tasks: in {size_in:,} B, out {size_out:,} B "
        f"({size_out / size_in:.2f}x), {len(snapshots)} snapshots, "
        f"tracemalloc peak {peak / 2**20:.1f} MiB"
    )
    # (before: ~920 MB out of ~2.6 MB, peak ~547 MB)
    assert size_out < 12 * size_in
    assert peak < 64 * 2**20
    # every snapshot sent is the whole live set at that point, in start order
    live: list[str] = []
    seen = 0
    counts = stats["rules"]["tasks-snapshot"]
    for snap in snapshots:
        ids = [t["task_id"] for t in snap["tasks"]]
        assert len(ids) <= 256
        assert ids == sorted(ids)  # start order = id order here
        seen += 1
        live = ids
    assert seen == counts["synthesized"] == len(snapshots)
    assert counts["suppressed"] == 2 * N - seen
    assert live == []  # the last snapshot: every task ended
    warned = [c for c in logs if c.rule == "tasks-snapshot" and c.level == "warning"]
    assert len(warned) == 1  # once when it starts (and snapshots resume once back under)
    assert "max_tasks=256" in warned[0].message


def test_snapshots_are_whole_while_the_live_set_is_within_the_cap() -> None:
    n = 300
    _, _, snapshots, (stats, _), _ = _run(n)
    # starts 1..256 and the ends that leave 256 live or fewer are sent; the others are over
    sizes = [len(s["tasks"]) for s in snapshots]
    assert sizes[:256] == list(range(1, 257))
    assert sizes[256:] == list(range(256, -1, -1))  # (after the end: 256 live, then fewer)
    assert stats["rules"]["tasks-snapshot"]["suppressed"] == 2 * n - len(sizes)


def test_the_cap_is_an_option() -> None:
    _, _, snapshots, _, _ = _run(40, ("tasks-snapshot.max_tasks=10",))
    assert max(len(s["tasks"]) for s in snapshots) == 10


def test_a_session_id_is_on_every_snapshot() -> None:
    _, _, snapshots, _, _ = _run(3)
    assert snapshots
    assert all(s["session_id"] == SID for s in snapshots)


def test_live_tasks_past_the_session_cap_are_counted_and_logged(monkeypatch: Any) -> None:
    """The session's task registry has a cap (16,384); past it the oldest live task is
    forgotten, and that is never silent: counted (session forgotten-live-tasks) and logged
    once."""
    import compat.session

    monkeypatch.setattr(compat.session, "MAX_TASKS", 50)
    eng = full_engine(())
    logs: list[Log] = []
    for i, raw in enumerate(_stream(60)):
        logs += [c for c in eng.feed("backend", raw, i * 0.001) if isinstance(c, Log)]
    stats = eng.statistics()["rules"]["session"]
    # 10 when the 60 start; the ends of those 10 bring them back, pushing out others
    assert stats["forgotten-live-tasks"] >= 10
    assert stats["forgotten-live-tasks"] == eng.state.forgotten_live
    said = [lg for lg in logs if lg.rule == "session"]
    assert len(said) == 1
    assert said[0].level == "warning"


def test_finished_tasks_do_not_pile_up_in_the_session() -> None:
    """2,000 background shells, each started and ended in turn: the session remembers the
    last MAX_FINISHED finished ones (for their late frames), not all of them, so memory
    follows the live tasks, not the session's length."""
    from compat.session import MAX_FINISHED

    eng = full_engine(())
    t = 0.0
    for i in range(2_000):
        use = f"toolu_{i:06d}"
        call = tool_use(use, "Bash", {"command": "true", "run_in_background": True})
        call["message"]["id"] = f"msg_{i:06d}"  # a message per call, as a model writes them
        for obj in (
            call,
            started(f"b{i:06d}", "Bash", f"shell {i}", use_id=use),
            updated(f"b{i:06d}", "completed", end_time=1_795_949_100_000 + i),
        ):
            t += 0.001
            eng.feed("backend", line(obj), t)
        deadline = eng.next_deadline()
        while deadline is not None and deadline <= t:
            eng.advance(deadline)
            deadline = eng.next_deadline()
    eng.advance(t + 100)
    assert len(eng.state.tasks) <= MAX_FINISHED + 1
    assert eng.statistics()["rules"].get("session", {}).get("forgotten-live-tasks", 0) == 0


def _old_forget_task(state: Any) -> None:
    """How SessionState forgot a task before: a scan of ``tasks`` for the first notified
    one (16,384 steps per new task once that many were live)."""
    tasks = state.tasks
    for tid, t in tasks.items():
        if t.notified:
            del tasks[tid]
            return
    oldest = next(iter(tasks))
    if tasks.pop(oldest).started:
        state.forgotten_live += 1


_TASK_OPS = st.lists(
    st.tuples(st.sampled_from(["new", "start", "end", "notify"]), st.integers(0, 9)),
    max_size=60,
)


@settings(max_examples=1500, deadline=None)
@given(_TASK_OPS, st.integers(1, 5), st.integers(1, 4))
def test_the_task_forgotten_is_the_one_forgotten_before(
    ops: list[tuple[str, int]], cap: int, finished_cap: int
) -> None:
    """Past MAX_TASKS the task forgotten is the oldest notified one, else the oldest, as
    when every task was scanned for it (task ids come back after they were forgotten)."""
    from unittest import mock

    import compat.session
    from compat.session import SessionState

    def play(state: SessionState) -> list[Any]:
        seen = []
        for op, n in ops:
            tid = f"t{n}"
            info = state.tasks.get(tid)
            if op == "new" or info is None:
                info = state.task(tid)
            elif op == "start" and not info.started:
                info.start()
            elif op == "end" and info.phase.value == "running":
                info.end("completed", 1)
            elif op == "notify" and not info.notified and info.phase.value != "running":
                state.finished(info)
            seen.append(
                ([(k, t.phase.value) for k, t in state.tasks.items()], state.forgotten_live)
            )
        return seen

    with (
        mock.patch.object(compat.session, "MAX_TASKS", cap),
        mock.patch.object(compat.session, "MAX_FINISHED", finished_cap),
    ):
        new = play(SessionState())
        with mock.patch.object(SessionState, "_forget_task", _old_forget_task):
            old = play(SessionState())
    assert new == old


def test_many_live_tasks_are_taken_at_once() -> None:
    """A new task once MAX_TASKS (16,384) ran and none had finished scanned them all for
    a finished one to forget: 5-14 ms a frame (64,000 task_started took minutes); these
    return, the oldest live tasks forgotten and counted."""
    from compat.session import MAX_TASKS, SessionState

    state = SessionState()
    for k in range(MAX_TASKS + 100_000):
        state.task(f"t{k}").start()
    assert state.forgotten_live == 100_000
    assert next(iter(state.tasks)) == "t100000"


#: the registries that keep up to MAX_LIVE_TASKS (16,384) entries, by stage class
_BIG_REGISTRIES = {
    "InterruptTerminal": ("_ended", "_hidden"),
    "TerminalGuarantee": ("_done",),
    "LateProgress": ("_notified",),
    "TasksSnapshot": ("_live", "_owed"),
    "TaskCorrelation": ("_from_results", "_claimed"),
    "TaskNoise": ("_started", "_paused"),
    "TaskFields": ("_seen", "_usage"),
}


def test_registries_with_a_big_cap_forget_their_oldest_at_once() -> None:
    """A plain dict used as a FIFO finds its first key past the holes its deletions left
    (13 us an entry at 16,384; a session past that many tasks paid it in several registries
    per frame: 66 -> 250 us a frame); these are OrderedDicts (0.5 us), as is the session's
    task table."""
    from collections import OrderedDict

    eng = full_engine()
    stages = {type(s).__name__: s for p in eng.pipelines.values() for s in p.stages}
    for cls, fields in _BIG_REGISTRIES.items():
        for name in fields:
            assert type(getattr(stages[cls], name)) is OrderedDict, (cls, name)
    assert type(eng.state.tasks) is OrderedDict


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 12), max_size=40), st.integers(1, 6))
def test_an_ordered_registry_remembers_as_a_dict_does(keys: list[int], cap: int) -> None:
    from collections import OrderedDict

    from compat.taskkit import remember

    plain: dict[str, int] = {}
    ordered: dict[str, int] = OrderedDict()
    for i, k in enumerate(keys):
        assert remember(plain, f"k{k}", i, cap) == remember(ordered, f"k{k}", i, cap)
        assert list(plain.items()) == list(ordered.items())
