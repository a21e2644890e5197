"""Known differences describe behaviours, not scenarios (issue 12, "The corpus and the
table"): the matcher's behavioural conditions (the frames around a difference, the whole
run, the runs' turn counts, a pair of numbers, the client's command line), and that the
committed twins stay explained when their scenarios carry names nobody wrote an entry for."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from analysis import ab_cmd, conformance, conformance_cmd
from analysis.conformance import KnownError, load_known
from compat import capture

from ..conftest import REPO
from .test_ab import INIT, RESULT, cap

KNOWN = REPO / "analysis" / "data" / "known_differences.toml"


def known(text: str) -> conformance.Known:
    return load_known(text, "test")


def explain(a: Any, b: Any, text: str, scenario: str = "any-name") -> dict[str, conformance.Item]:
    cmp = conformance.explain(conformance.compare(a, b), scenario, known(text), frozenset())
    return {i.path: i for i in cmp.items}


NOTE = {"type": "result", "origin": {"kind": "task-notification"}}


def test_context_contains_looks_at_the_turn_of_the_difference() -> None:
    a = cap(INIT, {**RESULT, "num_turns": 2}, INIT, {**RESULT, **NOTE, "num_turns": 2})
    b = cap(INIT, {**RESULT, "num_turns": 3}, INIT, {**RESULT, "num_turns": 3})
    entry = """
[[difference]]
id = "n"
paths = ["* / result / num_turns"]
a_context_contains = '"origin":{"kind":"task-notification"}'
cbc = "c"
evidence = "e"
"""
    by = explain(a, b, entry)
    # only the notification turn's difference: turn 1 has no such frame on A's side
    assert by["turn 2 / result / num_turns"].entry == "n"
    assert by["turn 1 / result / num_turns"].entry is None
    lacks = entry.replace("a_context_contains", "b_context_lacks")
    assert explain(a, b, lacks)["turn 1 / result / num_turns"].entry == "n"
    on_b = entry.replace("a_context_contains", "b_context_contains")
    assert explain(a, b, on_b)["turn 2 / result / num_turns"].entry is None


def _task(sub: str, **kw: Any) -> dict[str, Any]:
    return {"type": "system", "subtype": sub, "task_id": "t1", "session_id": "s1", **kw}


def test_a_task_path_takes_the_task_lifecycle_as_its_context() -> None:
    started = _task("task_started", task_type="local_agent", description="Agent")

    def run(status: str, summary: str) -> Any:
        return cap(
            INIT,
            started,
            RESULT,
            _task("task_updated", patch={"status": status}),
            _task("task_notification", status=status, summary=summary),
        )

    a, b = run("completed", "ok"), run("killed", "Agent")
    text = """
[[difference]]
id = "never-released"
paths = ["* / task local_agent * / task_notification.summary"]
a_context_contains = '"status":"completed"'
b_context_contains = '"status":"killed"'
cbc = "c"
evidence = "e"
"""
    by = explain(a, b, text)
    [summary] = [p for p in by if p.endswith("task_notification.summary")]
    assert by[summary].entry == "never-released"
    # the same pair of summaries where the agent was not killed: not this behaviour
    by = explain(run("completed", "ok"), run("completed", "Agent"), text)
    [summary] = [p for p in by if p.endswith("task_notification.summary")]
    assert by[summary].entry is None


def test_session_and_turn_count_conditions() -> None:
    a = cap(INIT, RESULT, INIT, {**RESULT, **NOTE})
    b = cap(INIT, RESULT)
    text = """
[[difference]]
id = "extra"
paths = ["turn * / **"]
kind = "only-a"
turns = "more-a"
a_session_contains = '"kind":"task-notification"'
cbc = "c"
evidence = "e"
"""
    by = explain(a, b, text)
    assert {i.entry for p, i in by.items() if p.startswith("turn 2")} == {"extra"}
    # the other way round (cbc ran the turn more) is another behaviour
    rev = explain(b, a, text.replace('kind = "only-a"', 'kind = "only-b"'))
    assert {i.entry for p, i in rev.items() if p.startswith("turn 2")} == {None}
    for turns in ("more-b", "same"):
        by = explain(a, b, text.replace('"more-a"', f'"{turns}"'))
        assert {i.entry for p, i in by.items() if p.startswith("turn 2")} == {None}, turns
    by = explain(a, b, text.replace('"more-a"', '"differ"'))
    assert {i.entry for p, i in by.items() if p.startswith("turn 2")} == {"extra"}
    no_note = cap(INIT, RESULT, INIT, RESULT)
    by = explain(no_note, b, text)
    assert {i.entry for p, i in by.items() if p.startswith("turn 2")} == {None}


def test_delta_is_b_minus_a_of_two_numbers() -> None:
    a, b = cap(INIT, {**RESULT, "num_turns": 5}), cap(INIT, {**RESULT, "num_turns": 6})
    text = '[[difference]]\nid="d"\npaths=["**num_turns"]\ndelta = [1]\ncbc="c"\nevidence="e"\n'
    assert explain(a, b, text)["turn 1 / result / num_turns"].entry == "d"
    assert explain(b, a, text)["turn 1 / result / num_turns"].entry is None
    assert explain(a, b, text.replace("[1]", "-1"))["turn 1 / result / num_turns"].entry is None
    s = cap(INIT, {**RESULT, "num_turns": "x"})
    assert explain(a, s, text)["turn 1 / result / num_turns"].entry is None


def test_argv_matches_the_client_command_line_of_both_runs() -> None:
    text = """
[[difference]]
id = "v"
violations = ["framing"]
message = "*not a JSON line*"
argv = '(^| )-p( |$)(?!.*--output-format[ =](stream-)?json)'
design = "text output"
"""
    k = known(text)

    def plain(*argv: str) -> Any:
        lines = [
            capture.encode_header(capture.header("test", argv=list(argv))),
            capture.encode_record(0.1, "stdout", b"ok"),
        ]
        return capture.parse(b"".join(lines).split(b"\n"))

    def reasons(a: Any, b: Any) -> list[str | None]:
        cmp = conformance.explain(conformance.compare(a, b), "x", k, frozenset({"framing"}))
        return [i.entry for i in cmp.items if not i.path.startswith("Claude side")]

    assert reasons(plain("claude", "-p", "hi"), plain("py", "run", "--", "-p", "hi")) == ["v"]
    json_a = plain("claude", "-p", "hi", "--output-format", "json")
    json_b = plain("py", "run", "--", "-p", "hi", "--output-format", "json")
    assert reasons(json_a, json_b) == [None]


def test_context_conditions_are_checked_when_loading() -> None:
    for bad, why in (
        ('violations=["x"]\na_context_contains="y"\ndesign="d"', "goes with `paths`"),
        ('paths=["**"]\nturns="more"\ndesign="d"', "`turns`"),
        ('paths=["**"]\ndelta="1"\ndesign="d"', "`delta`"),
        ('paths=["**"]\nargv="("\ndesign="d"', "`argv`"),
        ('paths=["**"]\nb_session_contains=""\ndesign="d"', "b_session_contains"),
    ):
        with pytest.raises(KnownError, match=why):
            known(f'[[difference]]\nid="e"\n{bad}\n')


# -- the shipped list against the committed twins -----------------------------------------


def test_no_shipped_entry_names_a_scenario() -> None:
    data = tomllib.loads(KNOWN.read_text(encoding="utf-8"))
    assert [d["id"] for d in data["difference"] if "scenarios" in d] == []


def _rows(names: dict[str, str]) -> list[conformance.Row]:
    k = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN))
    files = conformance_cmd.twin_files(conformance_cmd.TWINS)
    if not files:
        pytest.skip("captures/twins not generated yet")
    rows = []
    for scenario, roles in sorted(files.items()):
        caps = {role: ab_cmd.read(path) for role, path in roles.items()}
        rows.append(conformance.row(names.get(scenario, scenario), caps, k))
    return rows


def _summary(rows: list[conformance.Row]) -> list[tuple[str | None, ...]]:
    return [(i.path, i.category, i.entry) for r in rows if r.bridged for i in r.bridged.items]


def test_the_twins_explain_the_same_under_names_nobody_wrote_an_entry_for() -> None:
    """A scenario written by someone else, with the behaviours of the committed ones, comes
    out "equivalent but for explained" without editing the list: the committed twin sets,
    renamed, get the same reasons from the same entries."""
    files = conformance_cmd.twin_files(conformance_cmd.TWINS)
    renamed = {name: f"written-elsewhere-{i}" for i, name in enumerate(sorted(files))}
    original, other = _rows({}), _rows(renamed)
    assert _summary(other) == _summary(original)
    assert [r.unexplained for r in other] == [r.unexplained for r in original]
    fine = [r.scenario for r in original if r.bridged and r.bridged.equivalent_but_explained]
    assert len(fine) >= 18


def test_a_new_behaviour_in_a_renamed_scenario_is_still_unexplained() -> None:
    """The other half: the list explains known behaviours only. A twin set with a
    difference no entry describes (a key cbc never wrote, a result that says error) keeps it
    unexplained under any name."""
    files = conformance_cmd.twin_files(conformance_cmd.TWINS)
    if "simple-success" not in files:
        pytest.skip("captures/twins not generated yet")
    k = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN))
    roles = files["simple-success"]
    caps = {role: ab_cmd.read(path) for role, path in roles.items()}
    raw = roles["cbc-bridged"].read_bytes()
    mutated = raw.replace(b'\\"is_error\\":false', b'\\"is_error\\":true,\\"surprise\\":1')
    assert mutated != raw
    caps["cbc-bridged"] = capture.parse(mutated.split(b"\n"))
    row = conformance.row("someone-elses-scenario", caps, k)
    assert row.bridged is not None
    paths = {i.path for i in row.bridged.unexplained}
    assert any(p.endswith("result / is_error") for p in paths), paths
    assert any(p.endswith("result / surprise") for p in paths), paths
