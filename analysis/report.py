"""``--html FILE`` of ``ccbridge ab``, ``diff`` and ``conformance``: write the pages
``analysis.report_html`` renders.

One comparison: FILE is its report. Several (``ab`` with more than one scenario,
``conformance``): FILE is the table, with a link per scenario to its report in the directory
beside it named after FILE's stem (``out/conformance.html`` -> ``out/conformance/<scenario>
.html``), each report linking back. Every page is self-contained (no network, no asset).
"""

from __future__ import annotations

import re
import sys
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from analysis import conformance, report_html
from analysis.conformance import KnownError
from analysis.contract import Violation
from analysis.diff import DiffOptions
from bridge.files import private_dirs, write_private
from compat.capture import Capture
from compat.text import escape

if TYPE_CHECKING:
    from analysis.ab_cmd import Outcome
    from analysis.ab_report import Pair

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def write_text(path: Path, text: str) -> None:
    """``text`` at ``path``: 0600 in 0700 directories, never through a link (a link there
    is replaced: ``bridge.files.write_private``)."""
    private_dirs(str(path.parent))
    write_private(str(path), text)


def file_name(scenario: str) -> str:
    """A scenario name as a file name (anything but ``[A-Za-z0-9._-]`` becomes ``_``)."""
    name = _UNSAFE_NAME.sub("_", scenario).strip("._") or "scenario"
    return name + ".html"


@attrs.frozen
class Entry:
    """One scenario of an index: its row, and how to make its report (None: no report, e.g.
    a capture is missing or a run failed)."""

    scenario: str
    cells: tuple[str, ...]
    ok: bool | None
    report: Callable[[str | None], report_html.Report] | None  # given the link back


def write_index(
    path: Path,
    title: str,
    intro: str,
    columns: Sequence[str],
    entries: Sequence[Entry],
    notes: Sequence[str] = (),
    tally: tuple[str, str] = ("as expected", "not"),
) -> list[Path]:
    """The index at ``path`` and one report per entry beside it; the files written. The
    page opens with its verdict: the entries ``ok`` and not, in ``tally``'s words."""
    sub = path.with_suffix("") if path.suffix else path.with_name(path.name + "-reports")
    written, rows, used = [], [], set()
    for e in entries:
        href = None
        if e.report is not None:
            name = file_name(e.scenario)
            n = 1
            while name in used:
                n += 1
                name = file_name(f"{e.scenario}-{n}")
            used.add(name)
            target = sub / name
            back = "../" + urllib.parse.quote(path.name)
            write_text(target, report_html.render_report(e.report(back)))
            written.append(target)
            href = urllib.parse.quote(f"{sub.name}/{name}")
        rows.append(report_html.IndexRow(e.scenario, href, e.cells, e.ok))
    line = report_html.index_verdict(rows, *tally)
    write_text(path, report_html.render_index(title, intro, columns, rows, notes, line))
    return [path, *written]


def write_html_diff(
    path: str, a: Capture, b: Capture, names: tuple[str, str], options: DiffOptions | None = None
) -> bool:
    """``ccbridge diff A B --html FILE``: the report, reasons from the default known
    differences; False (said on stderr) when FILE cannot be written."""
    from analysis.ab_report import load_known_default

    try:
        known = load_known_default()
    except (OSError, KnownError) as e:
        print(escape(f"ccbridge diff: known differences: {e}"), file=sys.stderr)
        known = None
    rep = report_html.build(a, b, names, known=known, options=options)
    try:
        write_text(Path(path), report_html.render_report(rep))
    except OSError as e:
        print(escape(f"ccbridge diff: {path}: {e}"), file=sys.stderr)
        return False
    print(escape(f"ccbridge diff: wrote {path}"), file=sys.stderr)
    return True


def _read(path: Path) -> Capture:
    from analysis.ab_report import read

    return read(path)


def write_html_ab(path: Path, pairs: Sequence[Pair]) -> list[Path]:
    """``ccbridge ab … --html FILE``: one scenario's report, or the table of several."""
    from analysis.ab_report import load_known_default, replay_differs

    known = load_known_default()

    def maker(p: Pair) -> Callable[[str | None], report_html.Report] | None:
        if p.result is None or p.error:
            return None

        def make(back: str | None) -> report_html.Report:
            names = (_side_name(p.a), _side_name(p.b))
            return report_html.build(
                _read(p.a.job.out),
                _read(p.b.job.out),
                names,
                scenario=p.name,
                known=known,
                back=back,
                differs=replay_differs(p.a),
            )

        return make

    if len(pairs) == 1 and (make := maker(pairs[0])) is not None:
        write_text(path, report_html.render_report(make(None)))
        return [path]
    entries = []
    for p in pairs:
        if p.result is None:
            cells: tuple[str, ...] = (p.error or "no result", "", "")
            ok = None
        else:
            n = p.differences
            replay = f" (+{len(p.replayed)} from the replay)" if p.replayed else ""
            cells = (
                ("equivalent" if not n else f"{n} difference{'s' * (n != 1)}") + replay,
                _violations_text(p.violations[0]),
                _violations_text(p.violations[1]),
            )
            ok = not n
        entries.append(Entry(p.name, cells, ok, maker(p)))
    a, b = pairs[0].a.job.side.describe(), pairs[0].b.job.side.describe()
    return write_index(
        path,
        f"A/B: {a} vs {b}",
        f"Each scenario run on A ({a}) and B ({b}); "
        "the diff of what their clients saw and each side's contract check.",
        ("diff", "contract A", "contract B"),
        entries,
        tally=("equivalent", "with differences"),
    )


def _side_name(o: Outcome) -> str:
    r = o.result
    ver = f" {r.backend_version}" if r and r.backend_version else ""
    return f"{o.job.side.describe()}{ver} ({o.job.out.name})"


def _violations_text(vs: Sequence[Violation]) -> str:
    return f"{len(vs)} violation{'s' * (len(vs) != 1)}" if vs else "no violations"


def write_html_conformance(
    path: Path,
    rows: Sequence[conformance.Row],
    files: dict[str, dict[str, Path]],
    known: conformance.Known,
    source: str,
) -> list[Path]:
    """``ccbridge conformance --html FILE``: the table, each scenario linking to its
    report (Claude against cbc through the bridge, every difference with its reason)."""
    from analysis import conformance_render as cr

    entries = []
    for r in rows:
        f = files.get(r.scenario, {})
        make = None
        if "claude" in f and "cbc-bridged" in f:

            def make(
                back: str | None, f: dict[str, Path] = f, name: str = r.scenario
            ) -> report_html.Report:
                return report_html.build(
                    _read(f["claude"]),
                    _read(f["cbc-bridged"]),
                    (
                        f"Claude ({f['claude'].name})",
                        f"cbc through the bridge ({f['cbc-bridged'].name})",
                    ),
                    scenario=name,
                    known=known,
                    title=f"Conformance: {name}",
                    back=back,
                )

        unexpl = str(r.unexplained) + (
            f" (no capture: {', '.join(r.missing)})" if r.missing else ""
        )
        cells = (
            cr._cell(r.raw),
            cr._cell(r.bridged),
            cr._eq(r),
            cr._explained_cell(cr._counts(r)),
            unexpl,
        )
        entries.append(
            Entry(r.scenario, cells, None if r.bridged is None else not r.unexplained, make)
        )
    unused = conformance.unused_entries(known, rows)
    notes = (
        [f"Known-difference entries that matched nothing: {', '.join(unused)}"] if unused else []
    )
    return write_index(
        path,
        "Conformance: cbc through the bridge vs Claude Code 2.1.220",
        f"From the twin captures in {source}. Each cbc run is compared with the Claude run of "
        "the same scenario (volatile values masked) and every run's client view is checked "
        "against the contract; the scenario's link shows Claude and cbc through the bridge "
        "side by side, every difference with its reason.",
        (
            "raw cbc vs Claude",
            "cbc through the bridge vs Claude",
            "equivalent",
            "explained: missing rule / cbc / by design / race / checker",
            "unexplained",
        ),
        entries,
        notes,
        tally=("with every difference explained", "with unexplained differences"),
    )
