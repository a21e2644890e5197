"""``ccbridge ab`` and ``ccbridge conformance`` without real CLIs.

The backends here are replays (``ccbridge replay --materialize``) of the cbc 2.163.0
captures in ``captures/`` and of the reference Claude Code 2.1.220 transcripts (skipped
when the shared reference folder is absent): the same runner, bridge and stand-in model
as the real A/B runs, in seconds. The known-differences logic is tested on small
synthetic captures; the committed twins (``captures/twins``) must be fully explained by
the committed known differences, and docs/conformance.md must carry their table.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from analysis import ab_cmd, conformance, conformance_cmd
from analysis import conformance_render as render
from analysis.conformance import KnownError, load_known
from analysis.contract import check
from analysis.diff import diff
from compat import capture

from ..conftest import CAPTURES, REPO

VARIANTS = Path(__file__).parent / "data" / "cbc-variants"

SCENARIOS = REPO / "scenarios"
TWINS = CAPTURES / "twins"
KNOWN = REPO / "analysis" / "data" / "known_differences.toml"


def replay(path: Path) -> str:
    return shlex.join([sys.executable, "-m", "bridge", "replay", "--materialize", str(path)])


def cap(*frames: dict[str, Any], kind: str = "stdout", **header: Any) -> capture.Capture:
    lines = [capture.encode_header(capture.header("test", **header))]
    lines += [
        capture.encode_record(0.1 * i, kind, json.dumps(f).encode()) for i, f in enumerate(frames)
    ]
    return capture.parse(b"".join(lines).split(b"\n"))


INIT = {
    "type": "system",
    "subtype": "init",
    "cwd": "/w",
    "session_id": "s1",
    "uuid": "u-1",
    "model": "m",
    "tools": [],
    "mcp_servers": [],
    "permissionMode": "default",
    "slash_commands": [],
    "apiKeySource": "none",
    "output_style": "default",
    "claude_code_version": "2.1.220",
    "capabilities": [],
    "agents": [],
    "skills": [],
    "plugins": [],
}
RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "duration_ms": 5,
    "duration_api_ms": 4,
    "num_turns": 1,
    "result": "ok",
    "session_id": "s1",
    "total_cost_usd": 0,
    "uuid": "u-2",
    "modelUsage": {},
    "permission_denials": [],
    "usage": {
        "input_tokens": 1,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    },
}


def known(text: str) -> conformance.Known:
    return load_known(text, "test.toml")


# -- the known-differences file ------------------------------------------------------------


def test_shipped_known_differences_load() -> None:
    k = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN))
    assert k.entries
    for e in k.entries:
        assert e.paths or e.violations
        assert e.reason(conformance.implemented_rules())


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[[difference]]\nid="x"\npaths=["a"]\n', "exactly one reason"),
        (
            '[[difference]]\nid="x"\npaths=["a"]\ncbc="c"\nmissing_rule="init-shape"\n',
            "exactly one reason",
        ),
        ('[[difference]]\nid="x"\npaths=["a"]\ncbc="c"\n', "needs its `evidence`"),
        (
            '[[difference]]\nid="x"\npaths=["a"]\nmissing_rule="no-such-rule"\n',
            "neither a PROTOCOL.md rule id",
        ),
        ('[[difference]]\nid="x"\nmissing_rule="init-shape"\n', "give `paths`"),
        (
            '[[difference]]\nid="x"\npaths=["a"]\nmissing_rule="init-shape"\nkind="gone"\n',
            "`kind` must be",
        ),
        (
            '[[difference]]\nid="x"\npaths=["a"]\nmissing_rule="init-shape"\ncolour=1\n',
            "unknown key",
        ),
        (
            '[[difference]]\nid="x"\npaths=["a"]\nmissing_rule="init-shape"\n'
            '[[difference]]\nid="x"\npaths=["b"]\nmissing_rule="init-shape"\n',
            "duplicate id",
        ),
        (
            '[[difference]]\nid="x"\nviolations=["init-once"]\nside="claude"\n'
            'missing_rule="init-once"\n',
            "side",
        ),
        ("[thing]\n", "unknown top-level"),
        ("[[difference]\n", "not valid TOML"),
    ],
)
def test_known_differences_are_strict(text: str, words: str) -> None:
    with pytest.raises(KnownError, match=None) as e:
        known(text)
    assert words in str(e.value)


# -- explaining one comparison -------------------------------------------------------------


def test_every_difference_gets_a_reason_or_is_unexplained() -> None:
    a = cap(INIT, RESULT)
    b = cap({**INIT, "apiKeySource": "host.example"}, {**RESULT, "num_turns": 3, "extra": True})
    k = known("""
[[difference]]
id = "turns"
paths = ["* / result / num_turns"]
cbc = "cbc counts its turns its own way"
evidence = "test"

[[difference]]
id = "key-source"
paths = ["turn * / system/init / apiKeySource"]
a = "none"
missing_rule = "init-shape"
""")
    cmp = conformance.explain(conformance.compare(a, b), "s", k, frozenset())
    by = {i.path: i for i in cmp.items}
    assert by["turn 1 / result / num_turns"].category == "cbc"
    assert "cbc counts" in by["turn 1 / result / num_turns"].reason
    assert by["turn 1 / system/init / apiKeySource"].reason == "missing rule: init-shape"
    extra = by["turn 1 / result / extra"]
    assert (extra.category, extra.kind, extra.entry) == ("unexplained", "only-b", None)
    assert [i.path for i in cmp.unexplained] == ["turn 1 / result / extra"]
    assert cmp.counts() == {
        "missing-rule": 1,
        "cbc": 1,
        "design": 0,
        "timing": 0,
        "checker": 0,
        "unexplained": 1,
    }
    assert not cmp.equivalent_but_explained
    cbc_only = attrs.evolve(cmp, items=[by["turn 1 / result / num_turns"]])
    assert cbc_only.equivalent_but_explained
    assert not attrs.evolve(
        cmp, items=[by["turn 1 / system/init / apiKeySource"]]
    ).equivalent_but_explained  # a missing rule
    assert not attrs.evolve(
        cbc_only,
        violations_b=cmp.violations_a or [object()],  # type: ignore[list-item]
    ).equivalent_but_explained  # a violation


def test_value_scenario_and_kind_narrow_an_entry() -> None:
    a, b = cap(INIT, RESULT), cap(INIT, {**RESULT, "num_turns": 3})
    for extra in ("a = 2", "b = 4", 'scenarios = ["other"]', 'kind = "only-b"'):
        k = known(
            f'[[difference]]\nid="t"\npaths=["**num_turns"]\n{extra}\nmissing_rule="result-shape"\n'
        )
        cmp = conformance.explain(conformance.compare(a, b), "s", k, frozenset())
        assert [i.category for i in cmp.items] == ["unexplained"], extra


def test_path_patterns_and_value_substrings() -> None:
    e = conformance.Entry("x", paths=("* / system/init* / uuid",), missing_rule="init-shape")
    assert e.matches_difference("s", "turn 2 / system/init #2 / uuid", "changed", 1, 2)
    assert not e.matches_difference("s", "turn 2 / task x / system/init / uuid", "changed", 1, 2)
    deep = conformance.Entry("y", paths=("** / workflow_progress agent *.model",), cbc="c")
    assert deep.matches_difference(
        "s",
        'turn 1 / task local_workflow "f" / task_progress (final) / workflow_progress '
        'agent "a" (phase 1).model',
        "only-a",
        "<model>",
        None,
    )
    sub = conformance.Entry(
        "z",
        paths=("* / assistant*",),
        kind="only-a",
        cbc="c",
        a_contains='"parent_tool_use_id":"<tool_use#',
    )
    assert sub.matches_difference(
        "s", "turn 1 / assistant #2", "only-a", {"parent_tool_use_id": "<tool_use#1>"}, None
    )
    assert not sub.matches_difference(
        "s", "turn 1 / assistant #2", "only-a", {"parent_tool_use_id": None}, None
    )
    null = conformance.Entry("n", paths=("**",), a="<null>", cbc="c")
    assert null.matches_difference("s", "p", "changed", None, 1)
    assert not null.matches_difference("s", "p", "changed", 0, 1)


def test_a_rule_that_now_exists_is_reported_as_a_gap() -> None:
    a, b = cap(INIT, RESULT), cap(INIT, {**RESULT, "num_turns": 3})
    k = known('[[difference]]\nid="t"\npaths=["**num_turns"]\nmissing_rule="result-shape"\n')
    [item] = conformance.explain(
        conformance.compare(a, b), "s", k, frozenset({"result-shape"})
    ).items
    assert item.category == "missing-rule"
    assert "result-shape is in the profile but does not cover this" in item.reason


def test_violations_of_missing_rules_explain_themselves_but_not_of_existing_ones() -> None:
    stub = {k: v for k, v in INIT.items() if k != "claude_code_version"}
    a, b = cap(INIT, RESULT), cap(stub, RESULT)
    k = known("")
    [v] = [
        i
        for i in conformance.explain(conformance.compare(a, b), "s", k, frozenset()).items
        if i.what == "violation"
    ]
    assert (v.kind, v.category) == ("init-shape", "missing-rule")
    assert v.reason.startswith("missing rule: init-shape")
    [v] = [
        i
        for i in conformance.explain(
            conformance.compare(a, b), "s", k, frozenset({"init-shape"})
        ).items
        if i.what == "violation"
    ]
    assert v.category == "unexplained"


def test_a_claude_side_violation_needs_a_checker_entry() -> None:
    stub = {k: v for k, v in INIT.items() if k != "claude_code_version"}
    a = b = cap(stub, RESULT)
    cmp = conformance.compare(a, b)
    assert cmp.equivalent
    assert cmp.violations_a
    items = conformance.explain(cmp, "s", known(""), frozenset()).items
    assert {i.category for i in items if i.path.startswith("Claude side")} == {"unexplained"}
    k = known(
        '[[difference]]\nid="c"\nviolations=["init-shape"]\nside="claude"\n'
        'checker="too strict"\nevidence="test"\n'
    )
    items = conformance.explain(cmp, "s", k, frozenset()).items
    assert {i.category for i in items if i.path.startswith("Claude side")} == {"checker"}


# -- rendering -----------------------------------------------------------------------------


def _rows() -> tuple[list[conformance.Row], conformance.Known]:
    k = known(
        '[[difference]]\nid="t"\npaths=["**num_turns"]\ncbc="c|`x`"\nevidence="e"\n'
        '[[difference]]\nid="never"\npaths=["nothing"]\nmissing_rule="argv"\n'
    )
    claude = cap(
        INIT,
        RESULT,
        backend="claude",
        backend_version="2.1.220",
        created="2025-01-02T00:00:00+00:00",
    )
    bridged = cap(INIT, {**RESULT, "num_turns": 3}, backend="cbc", backend_version="2.163.0")
    raw = cap({**INIT, "uuid": "s1"}, {**RESULT, "num_turns": 3, "_meta": {}})
    rows = [
        conformance.row(
            "demo", {"claude": claude, "cbc-bridged": bridged, "cbc-raw": raw}, k, frozenset()
        ),
        conformance.row("lonely", {"claude": claude}, k, frozenset()),
    ]
    return rows, k


def test_markdown_table_lists_every_difference_with_its_reason() -> None:
    rows, k = _rows()
    md = render.render_markdown(rows, k, details="captures/twins/CONFORMANCE.md")
    assert "(Claude Code 2.1.220, cbc 2.163.0; captured 2025-01-02)" in md
    assert (
        "| `demo` | 3 differences, 2 violations | 1 difference, 0 violations "
        "| but for explained | 0 / 1 / 0 / 0 / 0 | 0 |" in md
    )
    assert (
        "| `lonely` | (no capture) | (no capture) | ? | 0 / 0 / 0 / 0 / 0 | 1 (no capture: "
        "cbc-bridged, cbc-raw) |" in md
    )
    # one line per reason; escaped for a table: a pipe cannot split the cell, a backtick
    # cannot end the code span
    assert (
        "| cbc behaviour the bridge cannot change: c\\|'x' (evidence: e) | 1 | demo (1) "
        "| `result / num_turns` |" in md
    )
    assert "[captures/twins/CONFORMANCE.md](captures/twins/CONFORMANCE.md)" in md
    assert "matched nothing in these runs (stale, or a race" in md
    assert "`never`" in md
    details = render.render_details(rows, k)
    assert "- **cbc behaviour the bridge cannot change: c\\|'x' (evidence: e)**" in details
    assert "  - `turn 1 / result / num_turns (Claude 1, cbc 3)`" in details
    assert rows[1].unexplained == 1  # a missing capture is never a silent pass
    text = render.render_text(rows, k, width=80)
    assert (
        "2 scenario(s), 0 equivalent, 1 equivalent but for explained differences, "
        "1 unexplained" in " ".join(text.split())  # wrapped to 80 columns
    )
    doc = json.loads(render.to_json(rows, k))
    assert doc["unexplained"] == 1
    assert doc["unused_entries"] == ["never"]
    [item] = doc["scenarios"][0]["bridged"]["items"]
    assert item["entry"] == "t"


def test_reasons_fold_turns_and_frame_numbers() -> None:
    item = conformance.Item("difference", "", "only-a", 1, None, "cbc", "why", "e")
    cmp = conformance.Comparison(
        diff(cap(INIT), cap(INIT)),
        [],
        [],
        [
            attrs.evolve(item, path="turn 1 / system/init / x"),
            attrs.evolve(item, path="turn 2 / system/init #2 / x"),
            attrs.evolve(item, path="after turn 2 / command_lifecycle #3"),
        ],
    )
    rows = [conformance.Row("s", cmp, None)]
    [(cat, reason, n, per, paths)] = render.reasons(rows)
    assert (cat, reason, n, dict(per)) == ("cbc", "why", 3, {"s": 3})
    assert paths == ["system/init / x", "command_lifecycle"]


def test_replace_block_keeps_the_rest_of_the_readme() -> None:
    text = f"intro\n{render.MARK_START}\nold\n{render.MARK_END}\noutro\n"
    out = render.replace_block(text, "new table\n")
    assert out == f"intro\n{render.MARK_START}\nnew table\n{render.MARK_END}\noutro\n"
    assert render.replace_block(out, "new table\n") == out
    with pytest.raises(ValueError, match="markers"):
        render.replace_block("no markers", "x")


# -- ab on replays -------------------------------------------------------------------------


def test_ab_raw_against_bridged_cbc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = replay(CAPTURES / "cbc-workflow-inline.jsonl")
    rc = ab_cmd.main(
        [
            str(SCENARIOS / "workflow-inline.toml"),
            "--a",
            r,
            "--b",
            r,
            "--via-b",
            "cbc-to-claude",
            "--out",
            str(tmp_path),
            "--json",
            "--time-limit",
            "30",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1  # the bridge changes what the client sees
    [s] = doc["scenarios"]
    assert s["scenario"] == "workflow-inline"
    assert s["equivalent"] is False
    assert (tmp_path / "workflow-inline.a.jsonl").is_file()
    assert (tmp_path / "workflow-inline.b.jsonl").is_file()
    assert s["a"]["via"] is None
    assert s["b"]["via"] == "cbc-to-claude"
    assert s["a"]["exit"] == s["b"]["exit"] == 0  # a number (the record: exit_text)
    assert s["a"]["exit_text"] == s["b"]["exit_text"] == "0"
    # what the bridge is for: raw cbc breaks the contract more than cbc through it
    assert len(s["a"]["contract"]["violations"]) > len(s["b"]["contract"]["violations"])
    assert s["a"]["contract"]["counts"].get("private-fields")
    assert not s["b"]["contract"]["counts"].get("private-fields")
    paths = [d["path"] for d in s["diff"]["differences"]]
    assert any("workflow_name" in p for p in paths)  # inline-<sha> vs meta.name
    assert not list(tmp_path.glob("*.partial"))


def test_ab_same_replay_twice_is_equivalent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = replay(CAPTURES / "cbc-bg-bash.jsonl")
    rc = ab_cmd.main(
        [
            str(SCENARIOS / "bg-bash.toml"),
            "--a",
            r,
            "--b",
            r,
            "--sequential",
            "--via-a",
            "cbc-to-claude",
            "--via-b",
            "cbc-to-claude",
            "--out",
            str(tmp_path),
            "--explain",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "equivalent (frames" in out
    assert "contract A:" in out
    assert "contract B:" in out


def test_ab_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = str(SCENARIOS / "simple-success.toml")
    assert (
        ab_cmd.main(
            [f, "--a", "/nonexistent/cli", "--b", "/nonexistent/cli", "--out", str(tmp_path)]
        )
        == 2
    )
    assert "could not start /nonexistent/cli" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nsteps = [{usr = "hi"}]\n')
    assert ab_cmd.main([str(bad), "--a", "x", "--b", "y"]) == 2
    assert "usr" in capsys.readouterr().err
    assert ab_cmd.main(["--a", "x", "--b", "y"]) == 2


def test_run_jobs_deadline_keeps_old_captures(tmp_path: Path) -> None:
    """A run cut by the overall deadline writes nothing: the previous capture stays."""
    from harness.scenario import load

    f = SCENARIOS / "interrupt-idle-workflow.toml"
    out = tmp_path / "x.cbc-raw.jsonl"
    out.write_text("old\n")
    job = ab_cmd.Job(
        f,
        load(f),
        ab_cmd.Side(replay(CAPTURES / "cbc-interrupt-idle-workflow.jsonl"), None, "cbc-raw"),
        out,
    )
    msgs: list[str] = []
    [o] = trio.run(lambda: ab_cmd.run_jobs([job], deadline=1.0, progress=msgs.append))
    assert o.error == "not finished before the deadline"
    assert not o.ok
    assert out.read_text() == "old\n"
    assert not list(tmp_path.glob("*.partial"))
    assert any("deadline" in m for m in msgs)


# -- twins derived from the reference captures -------------------------------------------

#: scenario -> (the reference Claude Code 2.1.220 session, the cbc 2.163.0 one in captures/)
REFERENCE_TWINS = {
    "bg-bash": (
        "claude-2.1.220/mockapi_background-bash_task-started-updated-notification.transcript.jsonl",
        "cbc-bg-bash.jsonl",
    ),
    "workflow-inline": (
        "claude-2.1.220/mockapi_workflow_local-workflow-task-progress.transcript.jsonl",
        "cbc-workflow-inline.jsonl",
    ),
}


def test_conformance_on_reference_derived_twins(
    tmp_path: Path, reference: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.scenario import load

    jobs = []
    for name, (claude, cbc) in REFERENCE_TWINS.items():
        f = SCENARIOS / f"{name}.toml"
        s = load(f)
        sides = {
            "claude": ab_cmd.Side(replay(reference / claude), None, "claude"),
            "cbc-bridged": ab_cmd.Side(replay(CAPTURES / cbc), "cbc-to-claude", "cbc-bridged"),
            "cbc-raw": ab_cmd.Side(replay(CAPTURES / cbc), None, "cbc-raw"),
        }
        jobs += [
            ab_cmd.Job(f, s, side, tmp_path / f"{name}.{role}.jsonl")
            for role, side in sides.items()
        ]
    outcomes = trio.run(
        lambda: ab_cmd.run_jobs(jobs, limit=3, deadline=120, time_limit=30, progress=lambda _: None)
    )
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    page = tmp_path / "conformance.md"
    page.write_text(f"# x\n{render.MARK_START}\n{render.MARK_END}\nend\n")
    rc = conformance_cmd.main(["--captures", str(tmp_path), "--write-doc", str(page)])
    assert rc in (0, 1)
    text = page.read_text()
    assert text.startswith("# x\n")
    assert text.endswith(f"{render.MARK_END}\nend\n")
    assert "| `bg-bash` |" in text
    assert "(CONFORMANCE.md)" in text  # the page links the details, written beside the twins
    assert "## `workflow-inline`" in (tmp_path / "CONFORMANCE.md").read_text()
    assert "| `workflow-inline` |" in text
    assert conformance_cmd.main(["--captures", str(tmp_path), "--json"]) == rc
    doc = json.loads(capsys.readouterr().out)
    assert [s["scenario"] for s in doc["scenarios"]] == sorted(REFERENCE_TWINS)
    for s in doc["scenarios"]:
        raw, bridged = s["raw"], s["bridged"]
        # the before/after columns: the bridge removes differences and violations
        assert bridged["differences"] < raw["differences"]
        assert len(bridged["violations_b"]) < len(raw["violations_b"])
        assert not bridged["violations_a"]  # real Claude output passes the contract
        assert s["meta"]["cbc-bridged"]["via"] == "cbc-to-claude"
        # nothing is silently dropped: every difference and violation is an item
        assert len(bridged["items"]) == bridged["differences"] + len(bridged["violations_b"])


def test_conformance_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert conformance_cmd.main(["--only", "no-such-scenario"]) == 2
    bad = tmp_path / "k.toml"
    bad.write_text("[[difference]]\nid='x'\n")
    assert conformance_cmd.main(["--known", str(bad), "--captures", str(tmp_path)]) == 2
    page = tmp_path / "conformance.md"
    page.write_text("no markers\n")
    assert conformance_cmd.main(["--captures", str(tmp_path), "--write-doc", str(page)]) == 2
    assert "markers" in capsys.readouterr().err
    # the option's older name still works
    assert conformance_cmd.main(["--captures", str(tmp_path), "--write-readme", str(page)]) == 2
    assert "markers" in capsys.readouterr().err


# -- the committed twins -------------------------------------------------------------------


def _twins_or_skip() -> dict[str, dict[str, Path]]:
    files = conformance_cmd.twin_files(TWINS)
    if not files:
        pytest.skip("captures/twins not generated yet (ccbridge conformance --regenerate)")
    return files


def test_committed_twins_cover_every_scenario_and_stay_small() -> None:
    files = _twins_or_skip()
    assert set(files) == set(conformance_cmd.scenario_names())
    for name, roles in files.items():
        assert set(roles) == set(conformance.ROLES), name
    total = sum(p.stat().st_size for p in TWINS.iterdir())
    # ~57 scenarios x 3 runs; large-write's 200 KB Write is 1.3 MB of it (Claude writes the
    # content twice, in the call's input and in its result's record)
    assert total < 11_000_000
    for p in TWINS.glob("*.jsonl"):
        c = ab_cmd.read(p)
        assert c.header["scenario"] == p.name.split(".")[0]
        text = p.read_text()
        # run paths were replaced by placeholders (a headless json run prints no cwd, but
        # its header's environment names HOME)
        assert "ccbscen-" not in text
        assert "{CWD}" in text or "{HOME}" in text
        assert not [v for v in check(c) if v.rule == "redact"], p


def test_committed_twins_are_fully_explained_and_in_the_docs() -> None:
    _twins_or_skip()
    k = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN))
    rows = conformance_cmd.load_rows(TWINS, k, sorted(conformance_cmd.scenario_names()))
    unexplained = [
        (r.scenario, i.path, i.reason) for r in rows if r.bridged for i in r.bridged.unexplained
    ]
    assert not unexplained
    page = (REPO / "docs" / "conformance.md").read_text(encoding="utf-8")
    start = page.index(render.MARK_START)
    block = page[start : page.index(render.MARK_END)]
    for r in rows:
        assert f"| `{r.scenario}` |" in block
    # the page links the details beside the twins, relative to docs/
    assert "(../captures/twins/CONFORMANCE.md)" in block
    # and the README's table says how many scenarios there are, none left unexplained
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"| `cbc-to-claude` | {len(rows)} | 0 |" in readme


def test_a_cbc_variant_run_is_explained_by_its_behaviour_entry() -> None:
    """A run of structured-output on which cbc offered its tool with the `data` wrapper and
    rejected its own call (tests/bridge/data/cbc-variants/structured-output-data-wrapper:
    the CI run of 2026-12-01 17:40): every difference is explained, the rejected call's
    tool_use_result by the entry that names that behaviour (the committed twin is a run
    where that did not show)."""
    k = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN))
    (row,) = conformance_cmd.load_rows(
        VARIANTS / "structured-output-data-wrapper", k, ["structured-output"]
    )
    assert row.bridged is not None
    assert not row.bridged.unexplained
    (item,) = [i for i in row.bridged.items if i.path.endswith("/ user / tool_use_result")]
    assert item.entry == "structured-output-data-wrapper"


def test_a_shell_that_outlives_its_grace_on_cbc_is_explained_turn_by_turn() -> None:
    """The order the CI run of 2026-12-01 18:40 met in eof-with-bg-work: cbc reported its
    agent's and workflow's ends late enough that the shell's `sleep 30` ended before its
    5 s grace, inside cbc's second answer to the agent (tests/bridge/data/cbc-variants/
    shell-outlives-grace: the committed Claude twin, and cbc through the bridge on the
    scenario with the third line sent 5 s after the second turn's result instead of 2,
    which gives that order on an idle machine). Claude's overlapping notification turns
    pair with cbc's two turns, and the shell's end one turn earlier is the race's (the five
    differences that run left unexplained)."""
    k = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN))
    (row,) = conformance_cmd.load_rows(VARIANTS / "shell-outlives-grace", k, ["eof-with-bg-work"])
    assert row.bridged is not None
    assert not row.bridged.unexplained
    by_path = {i.path: i.entry for i in row.bridged.items}
    # no turn holds an init the other side's turn lacks: the turns pair
    assert not [p for p in by_path if re.fullmatch(r"turn \d+ / system/init( #\d+)?", p)]
    shell = 'after turn 5 / task local_bash "Slow background sleep"'
    assert by_path[f"{shell} / task_updated (turn)"] == "eof-shell-outlives-grace-turn"
    assert by_path[f"{shell} / task_updated.patch.status"] == "eof-shell-outlives-grace"


def test_a_shell_killed_before_cbc_answers_its_agent_again_is_explained() -> None:
    """The first pair of the CI run of 2026-12-01 19:58 (tests/bridge/data/cbc-variants/
    shell-killed-before-second-answer): the wind-down killed the shell 5 s after cbc's last
    result, and cbc's second answer to its finished agent (a turn Claude does not run) came
    after the kill; both sides killed the shell, cbc's kill one turn earlier."""
    k = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN))
    variant = VARIANTS / "shell-killed-before-second-answer"
    (row,) = conformance_cmd.load_rows(variant, k, ["eof-with-bg-work"])
    assert row.bridged is not None
    assert not row.bridged.unexplained
    by_path = {i.path: i.entry for i in row.bridged.items}
    shell = 'after turn 5 / task local_bash "Slow background sleep"'
    assert by_path[f"{shell} / task_updated (turn)"] == "eof-shell-killed-before-cbc-second-answer"
    assert f"{shell} / task_updated.patch.status" not in by_path  # killed on both sides


def test_a_streamed_answer_cbc_wrote_no_frame_for_reaches_the_client_as_claudes() -> None:
    """A run of thinking-partial in which cbc streamed its answer 'done.' and wrote its
    result with no assistant frame for it (tests/bridge/data/cbc-variants/streamed-answer-
    without-frame, made by the bridge of this commit: 5 runs in 12 on an idle machine).
    final-answer writes the frame from the result under the streamed message's id, and
    stream-events places it after the text's last delta, before its content_block_stop,
    message_delta and message_stop, as Claude does: the frame pairs with Claude's, and the
    run has no difference from Claude's that the committed twin, where cbc wrote the frame,
    does not have."""
    k = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN))
    variant = VARIANTS / "streamed-answer-without-frame"
    cbc = ab_cmd.read(variant / "thinking-partial.cbc-bridged.jsonl")
    # cbc streamed the answer (its message_start id is on its stdout) but wrote no frame
    raw = [json.loads(r.text) for r in cbc.lines("stdout")]
    assert [f for f in raw if f["type"] == "stream_event" and "done." in json.dumps(f)]
    assert not [f for f in raw if f["type"] == "assistant" and "done." in json.dumps(f)]
    (stats,) = [json.loads(r.text) for r in cbc.records if r.kind == "stats"]
    assert stats["rules"]["final-answer"] == {"synthesized": 1}
    # the client: the frame under the message_start's id, right after the text's delta
    client = [json.loads(r.text) for r in cbc.records if r.kind == "client_out"]
    streamed = [f for f in client if f["type"] in ("stream_event", "assistant", "result")]
    (answer,) = [f for f in streamed if f["type"] == "assistant" and "done." in json.dumps(f)]
    at = streamed.index(answer)
    events = [f["event"] for f in streamed[at - 3 : at] + streamed[at + 1 : at + 4]]
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert answer["message"]["id"] == events[0]["message"]["id"]
    assert answer["message"]["model"] == events[0]["message"]["model"]
    assert answer["message"]["usage"] == events[0]["message"]["usage"]
    assert answer["message"]["content"] == [{"type": "text", "text": "done."}]
    assert streamed[at + 4]["type"] == "result"
    # Claude's run: the same order, so the two answer frames pair
    (row,) = conformance_cmd.load_rows(variant, k, ["thinking-partial"])
    assert row.bridged is not None
    assert not row.bridged.unexplained
    answer_diffs = {(i.path, i.kind) for i in row.bridged.items if "assistant #5" in i.path}
    assert answer_diffs == {("turn 1 / assistant #5 / request_id", "only-a")}
    assert not [i for i in row.bridged.items if i.entry and "final-answer" in i.entry]
    (twin,) = conformance_cmd.load_rows(TWINS, k, ["thinking-partial"])
    assert twin.bridged is not None
    assert {(i.path, i.kind, i.entry) for i in row.bridged.items} <= {
        (i.path, i.kind, i.entry) for i in twin.bridged.items
    }


def test_a_background_agent_cbc_ends_inside_a_turn_is_explained_and_labelled() -> None:
    """What both pairs of bg-agent met in the CI run of bdf09cc (turn 2 / assistant #2 only on
    cbc's side): cbc's agent ended after the second line had started a turn, and cbc wrote
    the agent's message (parent_tool_use_id = the Agent call) at that turn's end, with its
    answer (tests/bridge/data/cbc-variants/bg-agent-ends-in-a-turn: the scenario with the
    agent's answer late, bg-agent.scenario.toml; Claude's committed twin). The bridge gives
    the agent's frame Claude's subagent_type and task_description (frame-fields), and the
    rest is cbc's timing (bg-agent-messages-in-a-turn)."""
    k = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN))
    variant = VARIANTS / "bg-agent-ends-in-a-turn"
    cbc = ab_cmd.read(variant / "bg-agent.cbc-bridged.jsonl")
    raw = [json.loads(r.text) for r in cbc.lines("stdout")]
    (agent_raw,) = [f for f in raw if f["type"] == "assistant" and f["parent_tool_use_id"]]
    assert "subagent_type" not in agent_raw
    assert "task_description" not in agent_raw
    client = [json.loads(r.text) for r in cbc.records if r.kind == "client_out"]
    (agent,) = [f for f in client if f["type"] == "assistant" and f["parent_tool_use_id"]]
    assert (agent["subagent_type"], agent["task_description"]) == (
        "general-purpose",
        "Mock subagent",
    )
    turns = [f["type"] for f in client if f["type"] in ("assistant", "result")]
    assert turns == ["assistant", "assistant", "result", "assistant", "assistant", "result"]
    (row,) = conformance_cmd.load_rows(variant, k, ["bg-agent"])
    assert row.bridged is not None
    assert not row.bridged.unexplained
    by_path = {i.path: i.entry for i in row.bridged.items}
    assert by_path["turn 2 / assistant #2"] == "bg-agent-messages-in-a-turn"
    # Claude's own agent frame has the same two keys with the same values
    claude = [
        json.loads(r.text) for r in ab_cmd.read(variant / "bg-agent.claude.jsonl").lines("stdout")
    ]
    (mine,) = [f for f in claude if f["type"] == "assistant" and f.get("parent_tool_use_id")]
    assert (mine["subagent_type"], mine["task_description"]) == ("general-purpose", "Mock subagent")


def test_a_recording_is_taken_where_a_scenario_is(tmp_path: Path) -> None:
    """``ab REC`` and ``ab DIR`` (recorded sessions): each made a scenario as ``scenario
    from-capture`` makes it; a file that is no capture is refused, naming it."""
    from analysis.ab_cmd import RecordingError, scenario_files
    from harness.scenario import load

    twins = REPO / "captures" / "twins"
    rec = twins / "permission-deny.cbc-raw.jsonl"
    (made,) = scenario_files([str(rec)], False)
    assert made.suffix == ".toml"
    assert load(made).name == "permission-deny.cbc-raw"
    folder = tmp_path / "recordings"
    folder.mkdir()
    for name in ("simple-success.cbc-raw.jsonl", "permission-deny.claude.jsonl"):
        (folder / name).write_bytes((twins / name).read_bytes())
    assert [p.stem for p in scenario_files([str(folder)], False)] == [
        "permission-deny.claude",
        "simple-success.cbc-raw",
    ]
    bogus = tmp_path / "notes.txt"
    bogus.write_text("hello\n")
    with pytest.raises(RecordingError, match="notes.txt"):
        scenario_files([str(bogus)], False)
