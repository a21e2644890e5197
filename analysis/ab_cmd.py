"""``ccbridge ab FILE... --a SPEC --b SPEC [--via PROFILE] [--via-a PROFILE] [--via-b PROFILE]
[--out DIR]``:
run scenarios on two backends and compare what their clients saw.

SPEC is ``claude``, ``cbc`` (found by ``ccbridge backends``) or a command line. Each run has
its own HOME, working directory and stand-in model server (``harness.runner``), so
the two sides of a scenario run concurrently unless ``--sequential``; with several
scenarios (``--all``: every ``scenarios/*.toml``) at most ``--jobs`` CLIs run at once, the
longest scenarios first, under one overall ``--deadline``. Captures go to
``DIR/<scenario>.a.jsonl`` and ``.b.jsonl`` (default: a fresh temporary directory, printed).

The report: per scenario, the semantic diff (``analysis.diff``; ``--explain`` adds each
difference's reason from the known differences, see ``analysis.conformance_cmd``) and the
contract check (``analysis.contract``) of each side's client view (``analysis.contract_cbc``,
cbc's, when a side runs behind ``claude-to-cbc``: ``--via claude-to-cbc`` puts the claude
side behind it, so a cbc client sees cbc raw against Claude through the bridge). ``--json``
for programs.
Exit 0: every scenario equivalent; 1: some differ; 2: an error (bad scenario or usage, a
backend not installed, a run the harness could not finish).

``run_jobs`` (bounded concurrency, deadline, captures written only when a run completes) is
also what ``ccbridge conformance --regenerate`` uses for the twin captures.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from analysis.ab_report import (  # (what tests and the other commands import from here)
    EXIT_ERROR,
    KNOWN_DIFFERENCES,
    Pair,
    compare_pair,
    exit_status,
    load_known_default,
    read,
    report_json,
    report_text,
    summary_line,
)
from analysis.progress import Progress as Tracker
from bridge.cli import Parser, judged, parser
from bridge.colour import add_option, use_colour
from bridge.files import private_dirs
from compat.capture import CaptureError
from compat.text import escape
from harness import corpus, runner, stop
from harness.scenario import Scenario, ScenarioError, load

SCENARIOS = corpus.scenarios()
#: 2 cores: three CLIs at once keep them busy without starving the timing-sensitive ones
DEFAULT_JOBS = 3
DEFAULT_DEADLINE = 1800.0


@attrs.frozen
class Side:
    spec: str  # claude | cbc | a command line
    via: str | None = None  # a bridge profile the backend runs behind
    label: str = ""  # the capture's file stem suffix
    bridge_args: tuple[str, ...] = ()  # more ``ccbridge run`` options (``--target V``)
    #: the scenario client's dialect (claude | cbc); None: the served client's
    #: (``runner.client_dialect``)
    client: str | None = None

    def describe(self) -> str:
        return self.spec + (f" via {self.via}" if self.via else "")


@attrs.frozen
class Job:
    path: Path  # the scenario file
    scenario: Scenario
    side: Side
    out: Path


@attrs.frozen
class Outcome:
    job: Job
    result: runner.RunResult | None = None
    error: str | None = None  # the harness could not finish the run

    @property
    def ok(self) -> bool:
        return self.result is not None and self.error is None


Progress = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(escape(msg), file=sys.stderr, flush=True)  # it may quote a backend or a capture


async def run_jobs(
    jobs: Sequence[Job],
    *,
    limit: int = DEFAULT_JOBS,
    deadline: float = DEFAULT_DEADLINE,
    time_limit: float | None = None,
    progress: Progress = _stderr,
    tracker: Tracker | None = None,
    on_done: Callable[[int, Outcome], Awaitable[None]] | None = None,
) -> list[Outcome]:
    """Run every job, at most ``limit`` at once, the longest scenarios first, all within
    ``deadline`` seconds. A capture is written to ``job.out`` only when its run completes
    (into ``.partial`` first): an interrupted regeneration leaves the old capture in place.
    Outcomes come back in the order of ``jobs``. Each finished run is a ``progress`` line,
    or, with a ``tracker`` (``analysis.progress``), its status line (errors as lines);
    ``on_done(index, outcome)`` is awaited after each run."""
    limiter = trio.CapacityLimiter(max(1, limit))
    outcomes: dict[int, Outcome] = {}
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i].scenario.time_limit)
    done = 0

    async def one(i: int) -> None:
        nonlocal done
        job = jobs[i]
        async with limiter:
            if tracker is not None:
                tracker.started(i)
            outcomes[i] = await _run_one(job, time_limit)
        done += 1
        o = outcomes[i]
        r = o.result
        what = (
            f"exit {r.exit} after {r.duration:.1f}s, {len(r.frames)} frames"
            if r and not o.error
            else f"error: {o.error}"
        )
        if tracker is None:
            progress(f"[{done}/{len(jobs)}] {job.scenario.name} on {job.side.describe()}: {what}")
        else:
            tracker.done(i, o.ok)
            if o.error:
                tracker.line(f"{job.scenario.name} on {job.side.describe()}: {what}")
        if on_done is not None:
            await on_done(i, o)

    with trio.move_on_after(deadline) as cs:
        async with trio.open_nursery() as outer:
            if tracker is not None and tracker.live:
                outer.start_soon(tracker.ticker)
            async with trio.open_nursery() as nursery:
                for i in order:
                    nursery.start_soon(one, i)
            outer.cancel_scope.cancel()
    if cs.cancelled_caught:
        progress(
            f"deadline of {deadline:g}s reached: {len(jobs) - len(outcomes)} run(s) not finished"
        )
    return [
        outcomes.get(i, Outcome(jobs[i], error="not finished before the deadline"))
        for i in range(len(jobs))
    ]


async def _run_one(job: Job, time_limit: float | None) -> Outcome:
    try:
        target = runner.resolve_target(job.side.spec)
    except runner.BackendNotFound as e:
        return Outcome(job, error=str(e))
    partial = job.out.with_name(job.out.name + ".partial")
    completed = False
    try:
        res = await runner.run(
            job.scenario,
            target,
            partial,
            via=job.side.via,
            client=job.side.client,
            time_limit=time_limit,
            source=job.path.name,
            bridge_args=job.side.bridge_args,
        )
        completed = True
    except OSError as e:
        return Outcome(job, error=f"{type(e).__name__}: {e}")
    finally:
        _settle(partial, job.out, completed)
    if res.exit == "127" and not res.frames:
        return Outcome(job, res, error=f"could not start {target.argv[0]} (exit 127)")
    return Outcome(job, res)


def _settle(partial: Path, out: Path, completed: bool) -> None:
    """Keep a finished run's capture; drop an unfinished one (the old capture stays)."""
    if completed:
        os.replace(partial, out)
    else:
        partial.unlink(missing_ok=True)


# -- comparison and report ----------------------------------------------------------------


#: the backend each profile runs behind it (``--via``)
VIA_BACKEND = {"claude-to-cbc": "claude", "cbc-to-claude": "cbc"}


def via_sides(a: Side, b: Side, via: str | None) -> tuple[Side, Side]:
    """``--via PROFILE``: the side(s) running the profile's backend run behind it (side B
    when neither does); ``--via-a``/``--via-b`` win."""
    if via is None:
        return a, b
    backend = VIA_BACKEND.get(via)
    hit = [s.spec == backend for s in (a, b)]
    if not any(hit):
        hit = [False, True]
    return tuple(
        attrs.evolve(s, via=s.via or via) if h else s  # type: ignore[return-value]
        for s, h in zip((a, b), hit, strict=True)
    )


def pair_jobs(files: Sequence[Path], a: Side, b: Side, out_dir: Path) -> list[Job]:
    """Two jobs per scenario file (A then B), captures ``DIR/<scenario>.<a|b>.jsonl``."""
    work: list[Job] = []
    private_dirs(str(out_dir))
    for f in files:
        s = load(f)
        work.append(Job(f, s, a, out_dir / f"{s.name}.{a.label or 'a'}.jsonl"))
        work.append(Job(f, s, b, out_dir / f"{s.name}.{b.label or 'b'}.jsonl"))
    return work


async def run_ab(
    work: Sequence[Job],
    *,
    sequential: bool = False,
    jobs: int = DEFAULT_JOBS,
    deadline: float = DEFAULT_DEADLINE,
    time_limit: float | None = None,
    explain: bool = False,
    progress: Progress = _stderr,
    tracker: Tracker | None = None,
) -> list[Pair]:
    """Run ``pair_jobs`` (concurrently unless ``sequential``) and compare each pair as soon
    as both its runs are done (with a ``tracker``: a one-line summary of it)."""
    finished: dict[int, Outcome] = {}
    compared: dict[int, Pair] = {}

    async def on_done(i: int, o: Outcome) -> None:
        finished[i] = o
        k = i - i % 2
        if k in finished and k + 1 in finished:
            compared[k] = await trio.to_thread.run_sync(
                compare_pair, work[k].scenario.name, finished[k], finished[k + 1], explain
            )
            if tracker is not None:
                tracker.line(summary_line(compared[k]))

    outcomes = await run_jobs(
        work,
        limit=1 if sequential else jobs,
        deadline=deadline,
        time_limit=time_limit,
        progress=progress,
        tracker=tracker,
        on_done=on_done,
    )
    pairs = []
    for k in range(0, len(work), 2):
        pairs.append(
            compared.get(k)
            or compare_pair(work[k].scenario.name, outcomes[k], outcomes[k + 1], explain)
        )
    if tracker is not None:
        tracker.close()
    return pairs


def scenario_files(args_files: Sequence[str], all_: bool) -> list[Path]:
    """The scenarios, each a file or a name (``corpus.scenario_file``: ``simple-success``),
    a recorded session (a capture: made a scenario, ``scenario from-capture``) or a
    directory of recordings (its ``*.jsonl``); ``all_``: and every one of the corpus. A name
    the corpus lacks: ``FileNotFoundError``; a recording that cannot be made a scenario:
    ``RecordingError``."""
    made: list[Path] = []
    work = _Recordings()
    for spec in args_files:
        made += work.scenarios(spec)
    if all_:
        made += sorted(p for p in SCENARIOS.glob("*.toml") if p not in made)
    return made


class RecordingError(Exception):
    pass


class _Recordings:
    """Recorded sessions given to ``ab`` as scenarios: each converted once into a private
    temporary directory, its warnings said on stderr."""

    def __init__(self) -> None:
        self._dir: Path | None = None

    def scenarios(self, spec: str) -> list[Path]:
        path = Path(spec)
        if path.is_dir():
            return [self._convert(p) for p in sorted(path.glob("*.jsonl"))]
        if path.suffix != ".toml" and path.is_file():
            return [self._convert(path)]
        return [corpus.scenario_file(spec)]

    def _convert(self, path: Path) -> Path:
        from bridge.files import write_private
        from harness import from_capture

        try:
            cap, n_lines = from_capture.read(path)
            conv = from_capture.convert(cap, source=str(path), n_lines=n_lines)
        except from_capture.FromCaptureError as e:
            raise RecordingError(f"{path}: {e}") from None
        for w in conv.warnings:
            _stderr(f"ccbridge ab: {path.name}: warning: {w}")
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="ccbridge-ab-recordings-"))
        out = self._dir / f"{path.stem}.toml"
        write_private(str(out), conv.text())
        return out


def build_parser() -> Parser:
    p = parser(
        "ab",
        "run scenarios on two backends and compare what their clients saw",
        usage="ccbridge ab [options] --a SPEC --b SPEC (SCENARIO... | --all)",
        examples=[
            "ccbridge ab simple-success --a claude --b cbc --via cbc-to-claude",
            "ccbridge ab scenarios/bg-bash.toml workflow-inline --a claude --b cbc \\",
            "    --via-b cbc-to-claude --out ab/ --html ab.html",
            "ccbridge ab --all --a claude --b cbc --via cbc-to-claude --json > ab.json",
        ],
        exits=judged(
            "every scenario equivalent",
            "some differ",
            "a bad scenario or usage, a backend not installed, a run the harness could not finish",
            runs=True,
        ),
    )
    p.add_argument(
        "files",
        nargs="*",
        metavar="SCENARIO",
        help="a scenario: its name (simple-success: scenarios/simple-success.toml, as "
        "ccbridge drift --scenarios takes it), a .toml file, a recorded session (a capture: "
        "made a scenario as `ccbridge scenario from-capture` makes it) or a directory of them",
    )
    p.add_argument("--all", action="store_true", help=f"every scenario in {SCENARIOS}")
    p.add_argument("--a", required=True, metavar="SPEC", help="claude, cbc or a command line")
    p.add_argument("--b", required=True, metavar="SPEC", help="claude, cbc or a command line")
    p.add_argument(
        "--via-a",
        metavar="PROFILE",
        default=None,
        help="run side A behind `ccbridge run --profile PROFILE`",
    )
    p.add_argument(
        "--via-b",
        metavar="PROFILE",
        default=None,
        help="run side B behind `ccbridge run --profile PROFILE`",
    )
    p.add_argument(
        "--via",
        metavar="PROFILE",
        default=None,
        help="run the side with the profile's backend behind it (claude-to-cbc: "
        "the claude side, checked with the cbc contract; cbc-to-claude: the cbc "
        "side)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="where the captures go (default: a new temporary directory)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument(
        "--explain",
        action="store_true",
        help="give each difference its reason from the known differences",
    )
    p.add_argument("--sequential", action="store_true", help="one run at a time")
    p.add_argument(
        "--html",
        metavar="FILE",
        default=None,
        help="also write the report as a self-contained HTML page (several "
        "scenarios: a table, with each scenario's page in FILE's stem directory)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (the status line, the per-scenario lines)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        metavar="N",
        help="CLIs running at once (default: %(default)s)",
    )
    p.add_argument(
        "--deadline",
        type=float,
        default=DEFAULT_DEADLINE,
        metavar="SECONDS",
        help="seconds for everything (default: %(default)g)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="override each scenario's time_limit (default: the scenario's)",
    )
    add_option(p)
    return p


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        files = scenario_files(args.files, args.all)
    except (FileNotFoundError, RecordingError) as e:
        _stderr(f"ccbridge ab: {e}")
        return EXIT_ERROR
    a, b = via_sides(Side(args.a, args.via_a, "a"), Side(args.b, args.via_b, "b"), args.via)
    problem = _usage_problem(args, files) or _backend_problem(a, b)
    if problem is not None:
        _stderr(f"ccbridge ab: {problem}")
        return EXIT_ERROR
    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="ccbridge-ab-"))
    if not args.quiet:
        _stderr(f"ccbridge ab: captures in {out_dir}")
    pairs = _run(args, pair_jobs(files, a, b, out_dir))
    if args.html and not _write_html(args.html, pairs):
        return EXIT_ERROR
    if args.json:
        print(report_json(pairs, out_dir))
    else:
        sys.stdout.write(report_text(pairs, color=use_colour(sys.stdout, choice=args.color)))
    return exit_status(pairs)


def _run(args: Any, work: list[Job]) -> list[Pair]:
    tracker = Tracker([(j.scenario.name, j.side.describe()) for j in work], quiet=args.quiet)
    return stop.run(
        lambda: run_ab(
            work,
            sequential=args.sequential,
            jobs=args.jobs,
            deadline=args.deadline,
            time_limit=args.time_limit,
            explain=args.explain,
            tracker=tracker,
        ),
        "ccbridge ab",
    )


def _usage_problem(args: Any, files: list[Path]) -> str | None:
    """What is wrong with the scenarios or the numbers asked for, if anything."""
    if not files:
        return "give a SCENARIO (a name, as simple-success, or a .toml file) or --all"
    if (
        args.jobs < 1
        or args.deadline <= 0
        or (args.time_limit is not None and args.time_limit <= 0)
    ):
        return "--jobs, --deadline and --time-limit must be positive"
    for f in files:
        try:
            load(f)
        except ScenarioError as e:
            return str(e)
    return None


def _backend_problem(*sides: Side) -> str | None:
    """Why a side's backend cannot run (not installed), if it cannot."""
    for s in sides:
        try:
            runner.resolve_target(s.spec)
        except runner.BackendNotFound as e:
            return str(e)
    return None


def _write_html(html: str, pairs: list[Pair]) -> bool:
    from analysis.report import write_html_ab

    try:
        written = write_html_ab(Path(html), pairs)
    except (OSError, CaptureError) as e:
        _stderr(f"ccbridge ab: {html}: {e}")
        return False
    _stderr(
        f"ccbridge ab: wrote {', '.join(map(str, written[:1]))}"
        + (f" and {len(written) - 1} report(s)" if len(written) > 1 else "")
    )
    return True


__all__ = [
    "KNOWN_DIFFERENCES",
    "SCENARIOS",
    "Job",
    "Outcome",
    "Pair",
    "Side",
    "compare_pair",
    "exit_status",
    "load_known_default",
    "main",
    "read",
    "report_json",
    "report_text",
    "run_jobs",
    "scenario_files",
    "via_sides",
]


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
