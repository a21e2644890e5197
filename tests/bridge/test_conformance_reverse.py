"""``ccbridge conformance --profile claude-to-cbc``: the reverse table (raw Claude and Claude
through ``claude-to-cbc`` against raw cbc 2.163.0, checked by cbc's contract), pure over the
committed reverse twins (``captures/twins-reverse/``) and small hand-made ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import ab_cmd, conformance, conformance_cmd, contract, contract_cbc
from analysis import conformance_render as render
from analysis.conformance import REVERSE, KnownError, load_known
from harness.scenario import load, loads

REPO = Path(__file__).resolve().parents[2]
TWINS = conformance_cmd.TWINS_REVERSE
KNOWN = conformance_cmd.KNOWN_REVERSE


def test_reverse_known_differences_name_reverse_rules_and_the_reference_side() -> None:
    ok = """
[[difference]]
id = "a"
paths = ["* / system/init* / x"]
missing_rule = "rev-initialize-reply"
[[difference]]
id = "b"
violations = ["rev-vocabulary"]
side = "reference"
checker = "cbc itself writes it"
evidence = "twins x"
"""
    k = load_known(ok, "k", REVERSE)
    assert [e.side for e in k.entries] == ["cbc", "claude"]  # bridged, reference
    # a forward-only rule id is no reason in this direction, and the reverse's is none forward
    with pytest.raises(KnownError, match="claude-to-cbc"):
        load_known(ok.replace("rev-initialize-reply", "task-type"), "k", REVERSE)
    with pytest.raises(KnownError, match="cbc-to-claude"):
        load_known(ok, "k")


def test_reverse_twin_files_and_stream_json_scenarios(tmp_path: Path) -> None:
    for name in (
        "s.cbc.jsonl",
        "s.claude-bridged.jsonl",
        "s.claude-raw.jsonl",
        "t.claude.jsonl",  # a forward role: not a reverse twin
    ):
        (tmp_path / name).write_text("")
    files = conformance_cmd.twin_files(tmp_path, REVERSE.roles)
    assert files == {
        "s": {
            "cbc": tmp_path / "s.cbc.jsonl",
            "claude-bridged": tmp_path / "s.claude-bridged.jsonl",
            "claude-raw": tmp_path / "s.claude-raw.jsonl",
        }
    }
    sj = conformance_cmd.speaks_stream_json
    assert sj(loads('name = "a"'))
    assert sj(
        loads(
            'name = "b"\nheadless = true\n'
            'args = ["-p", "x", "--output-format", "stream-json", "--verbose"]'
        )
    )
    assert sj(
        loads('name = "c"\nheadless = true\nargs = ["-p", "x", "--output-format=stream-json"]')
    )
    assert not sj(
        loads('name = "d"\nheadless = true\nargs = ["-p", "x", "--output-format", "json"]')
    )
    assert not sj(loads('name = "e"\nheadless = true\nargs = ["-p", "x"]'))


def test_the_reverse_sides_speak_cbc_and_run_claude_behind_the_profile() -> None:
    sides = conformance_cmd.SIDES_REVERSE
    assert set(sides) == set(REVERSE.roles)
    assert {s.client for s in sides.values()} == {"cbc"}
    assert sides["cbc"] == ab_cmd.Side("cbc", None, "cbc", client="cbc")
    assert sides["claude-bridged"].via == "claude-to-cbc"
    assert sides["claude-raw"].spec == "claude"
    assert sides["claude-raw"].via is None
    # the forward "before" column is what a Claude client sees on raw cbc
    assert conformance_cmd.SIDES["cbc-raw"].client == "claude"


def test_the_reverse_block_has_its_own_markers() -> None:
    start, end = conformance_cmd.MARKS_REVERSE
    text = f"a\n{render.MARK_START}\nF\n{render.MARK_END}\n{start}\nold\n{end}\nz\n"
    new = render.replace_block(text, "NEW\n", start, end)
    assert new == f"a\n{render.MARK_START}\nF\n{render.MARK_END}\n{start}\nNEW\n{end}\nz\n"


# -- the committed reverse twins -----------------------------------------------------------


def _rows() -> list[conformance.Row]:
    if not conformance_cmd.twin_files(TWINS, REVERSE.roles):
        pytest.skip("captures/twins-reverse not generated (ccbridge conformance --profile ...)")
    known = load_known(KNOWN.read_text(encoding="utf-8"), str(KNOWN), REVERSE)
    names = sorted(
        n
        for n, f in conformance_cmd.scenario_names().items()
        if conformance_cmd.speaks_stream_json(load(f))
    )
    return conformance_cmd.load_rows(TWINS, known, names, REVERSE)


def test_reverse_twins_cover_every_stream_json_scenario_and_are_cbc_clients() -> None:
    rows = _rows()
    assert rows
    for r in rows:
        assert not r.missing, r.scenario
        assert r.meta["claude-bridged"]["via"] == "claude-to-cbc"
        assert r.meta["cbc"]["backend"] == "cbc"
        assert r.meta["claude-raw"]["backend"] == "claude"
    for p in TWINS.glob("*.jsonl"):
        c = ab_cmd.read(p)
        assert c.header["client"] == "cbc", p
        assert "ccbscen-" not in p.read_text()  # run paths were replaced by placeholders
        assert not [v for v in contract.check(c) if v.rule == "redact"], p  # no secret


def test_reverse_twins_every_reference_and_bridged_run_passes_cbcs_contract() -> None:
    for r in _rows():
        assert r.bridged is not None
        assert not r.bridged.violations_a, (r.scenario, r.bridged.violations_a)  # raw cbc
        assert not r.bridged.violations_b, (
            r.scenario,
            contract_cbc.format_text(r.bridged.violations_b),
        )
        # the "before" column: raw Claude breaks what a cbc client relies on
        assert r.raw is not None


def test_reverse_twins_are_equivalent_but_for_explained_and_in_the_docs() -> None:
    rows = _rows()
    unexplained = [
        (r.scenario, i.path, i.reason) for r in rows if r.bridged for i in r.bridged.unexplained
    ]
    assert not unexplained, unexplained[:20]
    not_eq = [r.scenario for r in rows if r.bridged and not r.bridged.equivalent_but_explained]
    assert not not_eq
    page = (REPO / "docs" / "conformance.md").read_text(encoding="utf-8")
    start, end = conformance_cmd.MARKS_REVERSE
    block = page[page.index(start) : page.index(end)]
    for r in rows:
        assert f"| `{r.scenario}` |" in block
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"| `claude-to-cbc` | {len(rows)} | 0 |" in readme
