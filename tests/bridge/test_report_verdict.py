"""The HTML report (``ccbridge diff|ab|conformance --html``) opens with its verdict line, and
no reason it shows (nor any reason in the known-differences lists it reads) names a commit
hash: a reader of the report has no use for one (it belongs in the history)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis import ab_cmd, conformance_cmd, report_html
from analysis.conformance import REVERSE, load_known
from analysis.conformance_known import implemented_rules
from compat.capture import Capture

from ..conftest import CAPTURES

TWINS = CAPTURES / "twins"
DATA = Path(ab_cmd.__file__).resolve().parent / "data"
KNOWN = ab_cmd.load_known_default()
#: a commit hash: 7 to 40 hex digits, with a letter and a digit among them
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


def twin(name: str, role: str) -> Capture:
    return ab_cmd.read(TWINS / f"{name}.{role}.jsonl")


def main_opens_with(page: str) -> str:
    """The first element of the page's <main>: its verdict line (its text)."""
    m = re.search(r"<main><p class=\"verdict-line (same|differ)\" id=\"verdict\">([^<]*)</p>", page)
    assert m is not None, page[page.index("<main>") :][:300]
    return m.group(2)


def test_a_report_opens_with_its_verdict() -> None:
    rep = report_html.build(
        twin("bg-agent", "claude"), twin("bg-agent", "cbc-bridged"), ("a", "b"), known=KNOWN
    )
    n = len(rep.result.differences)
    assert n
    line = main_opens_with(report_html.render_report(rep))
    unexplained = sum(1 for i in rep.reasons if i is None or i.category == "unexplained")
    assert line == (
        f"Verdict: {n} differences between what A&#x27;s and B&#x27;s clients saw "
        f"({n - unexplained} explained, {unexplained} unexplained); no contract violations."
    )
    same = report_html.build(twin("bg-agent", "claude"), twin("bg-agent", "claude"), ("a", "a"))
    page = report_html.render_report(same)
    assert main_opens_with(page).startswith("Verdict: equivalent: B&#x27;s client saw what A")
    assert 'class="verdict-line same"' in page


def test_a_verdict_counts_violations_per_side() -> None:
    raw = report_html.build(
        twin("workflow-inline", "claude"), twin("workflow-inline", "cbc-raw"), ("a", "b")
    )
    text, tone = report_html.verdict(raw)
    assert tone == "differ"
    assert f"contract violations: A 0, B {len(raw.b.violations)}." in text
    assert raw.b.violations
    assert "explained" not in text  # no known-differences list: nothing said about reasons


def test_an_index_opens_with_its_verdict(tmp_path: Path) -> None:
    out = tmp_path / "conf.html"
    assert conformance_cmd.main(["--html", str(out)]) == 0
    line = main_opens_with(out.read_text())
    n = len(conformance_cmd.twin_files(TWINS))
    assert line.startswith(f"Verdict: {n} scenarios: ")
    assert "with every difference explained" in line
    rows = [
        report_html.IndexRow("a", None, (), True),
        report_html.IndexRow("b", None, (), False),
        report_html.IndexRow("c", None, (), None),
    ]
    assert report_html.index_verdict(rows, "equivalent", "with differences") == (
        "Verdict: 3 scenarios: 1 equivalent, 1 with differences, 1 without a result.",
        "differ",
    )
    page = report_html.render_index("t", "i", ["x"], rows)
    assert (
        main_opens_with(page) == "Verdict: 3 scenarios: 1 as expected, 1 not, 1 without a result."
    )


@pytest.mark.parametrize(
    ("name", "direction"),
    [
        ("known_differences.toml", None),
        ("known_differences-2.1.332.toml", None),
        ("known_differences_reverse.toml", REVERSE),
    ],
)
def test_no_reason_names_a_commit(name: str, direction: object) -> None:
    known = load_known((DATA / name).read_text(), name, direction)  # type: ignore[arg-type]
    implemented = implemented_rules()
    for e in known.entries:
        reason = e.reason(implemented)
        assert not HASH.search(reason), (e.id, HASH.findall(reason))


def test_no_report_shows_a_commit_in_a_reason(tmp_path: Path) -> None:
    out = tmp_path / "conf.html"
    assert conformance_cmd.main(["--html", str(out)]) == 0
    for page in (tmp_path / "conf").glob("*.html"):
        text = page.read_text()
        for why in re.findall(r'<td class="why">(.*?)</td>', text):
            assert not HASH.search(re.sub(r"<[^>]+>", "", why)), (page.name, why)
