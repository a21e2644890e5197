"""``ccbridge conformance [--captures DIR] [--markdown|--json] [--write-doc [FILE]]
[--regenerate [--only NAME...] [--jobs N] [--deadline S]]``: how close cbc through the
bridge comes to Claude Code 2.1.220, scenario by scenario, and why it is not closer.

The twin captures live in ``DIR`` (default ``captures/twins``) as
``<scenario>.claude.jsonl`` (the real Claude Code), ``<scenario>.cbc-bridged.jsonl``
(the real cbc behind ``--via cbc-to-claude``, as ``claude-on-cbc`` runs it) and
``<scenario>.cbc-raw.jsonl`` (the same cbc, no bridge: the "before" column).
``--regenerate`` runs them again (every ``scenarios/*.toml`` or ``--only`` those names;
at most ``--jobs`` CLIs at once, the whole under ``--deadline`` seconds) and records each
run's duration in ``DIR/index.json``; a run that does not finish keeps the old capture.

Every remaining difference and contract violation gets a reason from the known
differences (``analysis/data/known_differences.toml``, or ``--known FILE``; format and
policy in ``analysis.conformance``); one with no reason is "unexplained", never hidden.
``--write-doc`` puts the Markdown table between ``<!-- conformance:start -->`` and
``<!-- conformance:end -->`` in ``docs/conformance.md`` (or FILE), and every difference with
both values in ``DIR/CONFORMANCE.md`` (``--write-readme`` is an older name of the option).
Exit 0: nothing unexplained; 1: something is; 2: an error (bad known-differences file,
missing markers, a backend not installed).

``--profile claude-to-cbc``: the other direction (``analysis.conformance.REVERSE``). The
twins are ``captures/twins-reverse/<scenario>.cbc.jsonl`` (raw cbc 2.163.0: what a cbc
client expects), ``.claude-bridged.jsonl`` (Claude behind ``claude-to-cbc``, as
``cbc-on-claude`` runs it) and ``.claude-raw.jsonl`` (raw Claude), the client speaking a cbc
SDK's dialect on every side; the checker is cbc's contract, the known differences
``analysis/data/known_differences_reverse.toml``, the block the one between
``<!-- conformance-reverse:start -->`` and ``<!-- conformance-reverse:end -->`` of the same
page. Only the scenarios that speak stream-json (every one but the headless ones with text
or json output).
"""

from __future__ import annotations

import os
import sys
from argparse import SUPPRESS
from pathlib import Path
from typing import Any

import attrs

from analysis import ab_cmd, conformance
from analysis import conformance_render as render
from analysis.conformance_regen import regenerate
from analysis.progress import Progress as Tracker
from bridge import config
from bridge.cli import Parser, judged, parser
from compat.capture import Capture, CaptureError
from compat.exits import Exit
from compat.text import escape
from compat.versions import TARGET_CLAUDE_VERSION
from harness import corpus, runner, stop
from harness.scenario import Scenario, ScenarioError, load

EXIT_OK, EXIT_UNEXPLAINED, EXIT_ERROR = Exit.OK, Exit.FAILED, Exit.USAGE
TWINS = corpus.captures() / "twins"
#: the page the tables go into: the checkout's docs/conformance.md; installed, the same
#: path below the working directory
DOC = corpus.conformance_doc() or Path("docs", "conformance.md")
#: what each role runs (PROTOCOL.md: Claude directly; cbc as claude-on-cbc runs it; raw cbc)
SIDES = {
    "claude": ab_cmd.Side("claude", None, "claude"),
    "cbc-bridged": ab_cmd.Side("cbc", "cbc-to-claude", "cbc-bridged"),
    # what a Claude client sees on raw cbc: the client writes Claude's shapes
    "cbc-raw": ab_cmd.Side("cbc", None, "cbc-raw", client="claude"),
}
REGENERATE = "ccbridge conformance --regenerate --write-doc"
TWINS_REVERSE = corpus.captures() / "twins-reverse"
KNOWN_REVERSE = Path(__file__).resolve().parent / "data" / "known_differences_reverse.toml"
#: the reverse twins: the client is a cbc SDK on every side (raw Claude: what it would see)
SIDES_REVERSE = {
    "cbc": ab_cmd.Side("cbc", None, "cbc", client="cbc"),
    "claude-bridged": ab_cmd.Side("claude", "claude-to-cbc", "claude-bridged", client="cbc"),
    "claude-raw": ab_cmd.Side("claude", None, "claude-raw", client="cbc"),
}
REGENERATE_REVERSE = "ccbridge conformance --profile claude-to-cbc --regenerate --write-doc"
MARKS_REVERSE = ("<!-- conformance-reverse:start -->", "<!-- conformance-reverse:end -->")


@attrs.frozen
class Setup:
    """What one direction's table is made of."""

    direction: conformance.Direction
    twins: Path
    sides: dict[str, ab_cmd.Side]
    known: Path
    command: str
    marks: tuple[str, str] | None  # None: the forward markers (``render.MARK_*``)


def setup(profile: str) -> Setup:
    if profile == conformance.REVERSE.profile:
        return Setup(
            conformance.REVERSE,
            TWINS_REVERSE,
            SIDES_REVERSE,
            KNOWN_REVERSE,
            REGENERATE_REVERSE,
            MARKS_REVERSE,
        )
    return Setup(conformance.FORWARD, TWINS, SIDES, ab_cmd.KNOWN_DIFFERENCES, REGENERATE, None)


def twins_dir(target: str) -> Path:
    """Where a target's twins live: ``captures/twins/`` for the default, else
    ``captures/twins-<version>/``."""
    return TWINS if target == TARGET_CLAUDE_VERSION else TWINS.with_name(f"twins-{target}")


def known_file(target: str) -> Path | None:
    """The known differences for a target: ``known_differences-<version>.toml`` when there
    is one, else (None) the default file."""
    f = ab_cmd.KNOWN_DIFFERENCES.with_name(f"known_differences-{target}.toml")
    return f if target != TARGET_CLAUDE_VERSION and f.is_file() else None


def load_known(
    target: str, explicit: Path | None = None, how: Setup | None = None
) -> conformance.Known:
    """``explicit``, else the direction's file; forward, the target's entries
    (``known_file``) before the default's."""
    how = how or setup(conformance.FORWARD.profile)
    path = explicit or how.known
    default = conformance.load_known(path.read_text(encoding="utf-8"), str(path), how.direction)
    if explicit is not None or how.direction is not conformance.FORWARD:
        return default
    own = known_file(target)
    if own is None:
        return default
    mine = conformance.load_known(own.read_text(encoding="utf-8"), str(own))
    ids = {e.id for e in mine.entries}
    return conformance.Known(mine.entries + tuple(e for e in default.entries if e.id not in ids))


def sides(target: str, cache: Path | None = None) -> dict[str, ab_cmd.Side]:
    """What each role runs for a target: the default's ``SIDES``; for another version the
    Claude Code ``ccbridge drift`` installed (``<cache>/drift/claude-<version>``) and the
    bridge run with ``--target <version>`` (the raw cbc run is the default twins')."""
    if target == TARGET_CLAUDE_VERSION:
        return dict(SIDES)
    from analysis.drift_cmd import candidate_dir
    from bridge import backends

    d = candidate_dir("claude", target, cache or backends.cache_dir())
    exe = backends._claude_in(d)
    if exe is None:
        raise runner.BackendNotFound(
            f"Claude Code {target} not installed in {d}: run `ccbridge drift --only claude "
            f"--claude-version {target}` (it installs it there)"
        )
    return {
        "claude": ab_cmd.Side(str(exe), None, "claude"),
        "cbc-bridged": ab_cmd.Side("cbc", "cbc-to-claude", "cbc-bridged", ("--target", target)),
    }


def speaks_stream_json(scenario: Scenario) -> bool:
    """A session of the SDKs' protocol: not a headless run, or one printing stream-json."""
    if not scenario.headless:
        return True
    args = list(scenario.args)
    return any(
        a == "--output-format=stream-json"
        or (a == "--output-format" and args[i + 1 : i + 2] == ["stream-json"])
        for i, a in enumerate(args)
    )


#: every difference with both values, written next to the captures with --write-doc
DETAILS = "CONFORMANCE.md"


def _err(msg: str) -> None:
    print(f"ccbridge conformance: {escape(msg)}", file=sys.stderr, flush=True)


def scenario_names(scenarios_dir: Path = ab_cmd.SCENARIOS) -> dict[str, Path]:
    """Scenario name -> file, for every valid scenario file."""
    out: dict[str, Path] = {}
    for f in sorted(scenarios_dir.glob("*.toml")):
        out[load(f).name] = f
    return out


def twin_files(d: Path, roles: tuple[str, ...] = conformance.ROLES) -> dict[str, dict[str, Path]]:
    """``{scenario: {role: path}}`` for the captures in ``d``."""
    out: dict[str, dict[str, Path]] = {}
    # the longest role first: "claude-raw" is not role "raw" of scenario "x.claude"
    by_length = sorted(roles, key=len, reverse=True)
    for f in sorted(d.glob("*.jsonl")):
        stem = f.name[: -len(".jsonl")]
        for role in by_length:
            if stem.endswith("." + role):
                out.setdefault(stem[: -len(role) - 1], {})[role] = f
                break
    return out


def load_rows(
    d: Path,
    known: conformance.Known,
    names: list[str] | None = None,
    direction: conformance.Direction = conformance.FORWARD,
) -> list[conformance.Row]:
    """One row per scenario: those given (missing captures shown as such), else every
    scenario that has a capture in ``d``."""
    files = twin_files(d, direction.roles)
    if direction is conformance.FORWARD and d.resolve() != TWINS.resolve():
        # a target's twins: the raw cbc run is the default's
        for name, raw in twin_files(TWINS).items():
            if name in files and "cbc-raw" not in files[name] and "cbc-raw" in raw:
                files[name]["cbc-raw"] = raw["cbc-raw"]
    rows = []
    for name in names if names is not None else sorted(files):
        caps: dict[str, Capture] = {}
        for role, path in files.get(name, {}).items():
            caps[role] = ab_cmd.read(path)
        rows.append(conformance.row(name, caps, known, direction=direction))
    return rows


def twin_jobs(
    d: Path,
    scenarios: dict[str, Path],
    roles: tuple[str, ...] = conformance.ROLES,
    sides: dict[str, ab_cmd.Side] | None = None,
) -> list[ab_cmd.Job]:
    """One job per scenario and role, capture ``d/<scenario>.<role>.jsonl``."""
    d.mkdir(parents=True, exist_ok=True)
    by_role = SIDES if sides is None else sides
    return [
        ab_cmd.Job(path, load(path), by_role[role], d / f"{name}.{role}.jsonl")
        for name, path in scenarios.items()
        for role in roles
        if role in by_role
    ]


def build_parser() -> Parser:
    p = parser(
        "conformance",
        "how close cbc through the bridge comes to Claude Code, scenario by scenario, and why",
        examples=[
            "ccbridge conformance",
            "ccbridge conformance --profile claude-to-cbc --markdown",
            "ccbridge conformance --html out/conformance.html",
            "ccbridge conformance --regenerate --only simple-success --write-doc",
        ],
        exits=judged(
            "every difference has a known reason",
            "a difference has no known reason (unexplained)",
            "a bad known-differences file, missing markers, a backend not installed",
            runs=True,
        ),
    )
    p.add_argument(
        "--target",
        default=TARGET_CLAUDE_VERSION,
        metavar="VERSION",
        help="the Claude Code version compared with (default %(default)s; 2.1.332: the twins "
        "in captures/twins-2.1.332/, regenerated with that Claude and the bridge's --target)",
    )
    p.add_argument(
        "--profile",
        choices=sorted(conformance.DIRECTIONS),
        default=conformance.FORWARD.profile,
        help="the direction: cbc-to-claude (default; cbc through the bridge against Claude) "
        "or claude-to-cbc (Claude through the bridge against cbc, twins in "
        f"{TWINS_REVERSE.name}/, known differences {KNOWN_REVERSE.name})",
    )
    p.add_argument(
        "--captures",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"the twin captures (default {TWINS}, captures/twins-VERSION/ for --target, "
        f"{TWINS_REVERSE} for claude-to-cbc)",
    )
    p.add_argument(
        "--known",
        type=Path,
        default=None,
        metavar="FILE",
        help="the known differences (default analysis/data/known_differences.toml, "
        "or known_differences_reverse.toml)",
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="print the Markdown table")
    fmt.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--write-doc",
        nargs="?",
        const=DOC,
        default=None,
        type=Path,
        metavar="FILE",
        help=f"write the table between its markers in FILE (default {DOC})",
    )
    # the option's older name, before the tables left the README
    p.add_argument(
        "--write-readme", dest="write_doc", nargs="?", const=DOC, type=Path, help=SUPPRESS
    )
    p.add_argument(
        "--regenerate",
        action="store_true",
        help="run the scenarios on the real CLIs first (needs them installed)",
    )
    p.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="NAME",
        help="only this scenario (repeatable; default: every scenario)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=ab_cmd.DEFAULT_JOBS,
        metavar="N",
        help="with --regenerate: CLIs running at once (default: %(default)s)",
    )
    p.add_argument(
        "--deadline",
        type=float,
        default=ab_cmd.DEFAULT_DEADLINE,
        metavar="SECONDS",
        help="seconds for the whole regeneration (default: %(default)g)",
    )
    p.add_argument(
        "--html",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the table as a self-contained HTML page, each scenario "
        "linking to its side-by-side report (in FILE's stem directory)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress on stderr while regenerating")
    return p


class _Failed(Exception):
    """The command cannot go on: the message goes to stderr, the exit is ``EXIT_ERROR``."""


@attrs.frozen
class _Table:
    """The table made: its rows, what explained them, and where its captures are."""

    how: Setup
    known: conformance.Known
    rows: list[conformance.Row]
    captures: Path
    source: str  # the captures as the table names them
    details: Path  # every difference with both values (``DETAILS``)


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        table = _table(args)
        _output(args, table)
    except _Failed as e:
        _err(str(e))
        return EXIT_ERROR
    return EXIT_UNEXPLAINED if any(r.unexplained for r in table.rows) else EXIT_OK


def _table(args: Any) -> _Table:
    """Check the options, regenerate the twins if asked, and read them into rows."""
    how = setup(args.profile)
    target = _target(args, how)
    known, all_names = _scenarios(args, target, how)
    if args.regenerate:
        _regenerate(args, target, how, known, all_names)
    rows = _rows(args, how, known, all_names)
    return _Table(how, known, rows, args.captures, _rel(args.captures), args.captures / DETAILS)


def _target(args: Any, how: Setup) -> str:
    """The Claude Code version compared with; ``args.captures`` defaults to its twins."""
    try:
        target = config.target("--target", args.target)
    except config.ConfigError as e:
        raise _Failed(str(e)) from e
    forward = how.direction is conformance.FORWARD
    if target != TARGET_CLAUDE_VERSION and not forward:
        raise _Failed(
            "--target compares cbc through the bridge with that Claude: cbc-to-claude only"
        )
    if args.captures is None:
        args.captures = how.twins if not forward else twins_dir(target)
    if args.write_doc and target != TARGET_CLAUDE_VERSION:
        raise _Failed("--write-doc writes the default target's table; use --markdown for --target")
    return target


def _scenarios(args: Any, target: str, how: Setup) -> tuple[conformance.Known, dict[str, Path]]:
    """The known differences, and the scenarios of the direction (``--only`` among them)."""
    try:
        known = load_known(target, args.known, how)
        all_names = scenario_names()
        if how.direction is conformance.REVERSE:
            all_names = {n: f for n, f in all_names.items() if speaks_stream_json(load(f))}
    except (OSError, conformance.KnownError, ScenarioError) as e:
        raise _Failed(str(e)) from e
    unknown = [n for n in args.only or [] if n not in all_names]
    if unknown:
        raise _Failed(f"unknown scenario(s) {', '.join(unknown)} (known: {', '.join(all_names)})")
    return known, all_names


def _regenerate(
    args: Any, target: str, how: Setup, known: conformance.Known, all_names: dict[str, Path]
) -> None:
    """``--regenerate``: run the scenarios (``--only`` those) on the real CLIs into
    ``args.captures``; a run that failed is said on stderr."""
    if args.jobs < 1 or args.deadline <= 0:
        raise _Failed("--jobs and --deadline must be positive")
    direction = how.direction
    run = _runnable_sides(target, how)
    todo = {n: all_names[n] for n in (args.only or all_names)}
    work = twin_jobs(args.captures, todo, direction.roles, run)
    tracker = Tracker([(j.scenario.name, j.side.label) for j in work], quiet=args.quiet)
    outcomes = stop.run(
        lambda: regenerate(
            args.captures,
            work,
            jobs=args.jobs,
            deadline=args.deadline,
            tracker=tracker,
            known=known,
            direction=direction,
        ),
        "ccbridge conformance",
    )
    failed = [o for o in outcomes if not o.ok]
    for o in failed:
        _err(f"{o.job.out.name}: {o.error}")


def _runnable_sides(target: str, how: Setup) -> dict[str, ab_cmd.Side]:
    """What each role runs, every backend found."""
    try:
        run = sides(target) if how.direction is conformance.FORWARD else how.sides
        for side in run.values():
            runner.resolve_target(side.spec)
    except runner.BackendNotFound as e:
        raise _Failed(str(e)) from e
    return run


def _rows(
    args: Any, how: Setup, known: conformance.Known, all_names: dict[str, Path]
) -> list[conformance.Row]:
    if not args.captures.is_dir():
        raise _Failed(
            f"{args.captures}: no such directory (ccbridge conformance --regenerate makes it)"
        )
    # the canonical twins list every scenario (a missing capture shows); another
    # directory only what it holds
    roles = how.direction.roles
    canonical = args.captures.resolve() == how.twins.resolve()
    everything = sorted(
        set(twin_files(args.captures, roles)) | (set(all_names) if canonical else set())
    )
    # the page always gets the whole table; --only narrows what is printed
    names = args.only if args.only and not args.write_doc else everything
    try:
        return load_rows(args.captures, known, names, how.direction)
    except (OSError, CaptureError) as e:
        raise _Failed(str(e)) from e


def _output(args: Any, t: _Table) -> None:
    """The table where the options send it: the page and details, HTML, stdout."""
    md = _markdown(args, t)
    if args.write_doc:
        _write_doc(args.write_doc, md, t)
    if args.html:
        _write_html(args.html, t)
    if args.json:
        print(render.to_json(t.rows, t.known))
    elif args.markdown:
        sys.stdout.write(md or "")
    elif not args.write_doc:
        sys.stdout.write(render.render_text(t.rows, t.known, direction=t.how.direction))


def _markdown(args: Any, t: _Table) -> str | None:
    """The Markdown table, when printed or written into the page."""
    if not (args.markdown or args.write_doc):
        return None
    link = _link(t.details, args.write_doc) if args.write_doc else None
    return render.render_markdown(
        t.rows,
        t.known,
        source=t.source,
        command=t.how.command,
        details=link,
        direction=t.how.direction,
    )


def _write_doc(doc: Path, md: str | None, t: _Table) -> None:
    try:
        text = doc.read_text(encoding="utf-8")
        new = render.replace_block(text, md or "", *(t.how.marks or ()))
        t.details.write_text(
            render.render_details(
                t.rows, t.known, source=t.source, command=t.how.command, direction=t.how.direction
            ),
            encoding="utf-8",
        )
        doc.write_text(new, encoding="utf-8")
    except (OSError, ValueError) as e:
        raise _Failed(f"{doc}: {e}") from e
    _err(f"wrote the table into {doc} and every difference into {t.details}")


def _write_html(html: Path, t: _Table) -> None:
    from analysis.report import write_html_conformance

    try:
        written = write_html_conformance(
            html, t.rows, twin_files(t.captures, t.how.direction.roles), t.known, t.source
        )
    except (OSError, CaptureError) as e:
        raise _Failed(f"{html}: {e}") from e
    _err(f"wrote {html} and {len(written) - 1} scenario report(s)")


def _link(target: Path, doc: Path) -> str:
    """``target`` relative to the page's directory (a link that works on GitHub:
    ``../captures/twins/CONFORMANCE.md`` from ``docs/``)."""
    return Path(os.path.relpath(target.resolve(), doc.resolve().parent)).as_posix()


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(runner.REPO)) + "/"
    except ValueError:
        return str(p)
