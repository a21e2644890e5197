"""``ccbridge drift [--only claude|cbc] [--scenarios NAME,...] [--skip-install] [--json]``:
has Claude Code or cbc changed under the bridge? (issue 14)

For each backend: the newest version its registry offers (``npm view
@anthropic-ai/claude-code version``; ``pip index versions codebuddy-agent-sdk``) or the
one given (``--claude-version``, ``--cbc-version``: package versions), installed into the
backends cache (``<cache>/drift/<name>-<version>``; the verified version's own cache when it
is that one), or with ``--skip-install`` whatever ``ccbridge backends`` finds, or the binary
``--claude-bin`` / ``--cbc-bin`` names. Then the scenario corpus (``scenarios/*.toml``, or
``--scenarios``) runs on it (``analysis.ab_cmd.run_jobs``: Claude raw; cbc raw and through the
bridge) and ``analysis.drift`` compares what it wrote with the committed twins of the verified
versions (``captures/twins/<scenario>.claude.jsonl`` / ``.cbc-raw.jsonl``) and its ``--help``
with the verified one's (``captures/reference/<name>-<version>/help.txt``). The bridged cbc
runs get the contract check and the conformance diff against the Claude twin, each
difference given its reason from the known differences.

Exit 0: nothing new; 1: something the rules do not know appeared (a new frame kind, field,
value, order, option or subcommand; an unexplained difference or a contract violation of
the bridged cbc); 2: an error (a registry or an install failed, a run did not finish).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from analysis import drift
from analysis.ab_cmd import SCENARIOS, Job, Outcome, Side, run_jobs
from analysis.ab_report import load_known_default, read
from analysis.progress import Progress as Tracker
from bridge import backends
from bridge.cli import Parser, judged, parser
from bridge.files import private_dirs
from compat import versions
from compat.capture import Capture, CaptureError
from compat.exits import Exit
from compat.text import escape, escape_json
from harness import corpus, stop
from harness.scenario import Scenario, ScenarioError, load

EXIT_OK, EXIT_UNKNOWN, EXIT_ERROR = Exit.OK, Exit.FAILED, Exit.USAGE
TWINS = corpus.captures() / "twins"
REFERENCE = corpus.captures() / "reference"
#: the twin role that holds each backend's own output
TWIN_ROLE = {"claude": "claude", "cbc": "cbc-raw"}
BRIDGE_PROFILE = "cbc-to-claude"
#: a registry or --version/--help that has not answered by then has failed
COMMAND_TIMEOUT = 120.0

#: run a command, return (status, stdout); injectable for the tests
Command = Callable[[Sequence[str]], tuple[int, str]]


class DriftError(RuntimeError):
    pass


def _command(argv: Sequence[str]) -> tuple[int, str]:
    try:
        p = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            check=False,
            timeout=COMMAND_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return Exit.NOT_FOUND, str(e)
    return p.returncode, p.stdout


# -- the registries ----------------------------------------------------------------------


def newest(name: str, command: Command = _command) -> str:
    """The newest package version the registry offers for backend ``name``."""
    v = versions.BACKENDS[name]
    if v.registry == "npm":
        rc, out = command(["npm", "view", v.package, "version"])
        text = out.strip().splitlines()[-1].strip() if out.strip() else ""
    else:
        rc, out = command(
            [
                sys.executable,
                "-m",
                "pip",
                "index",
                "versions",
                v.package,
                "--disable-pip-version-check",
            ]
        )
        # "codebuddy-agent-sdk (0.3.274)" then "Available versions: ..."
        first = out.strip().splitlines()[0] if out.strip() else ""
        text = first.partition("(")[2].partition(")")[0].strip()
    if rc != 0 or not text or versions.parse_version(text) is None:
        raise DriftError(
            f"cannot read the newest {v.package} from {v.registry} "
            f"(status {rc}: {out.strip()[:200]!r})"
        )
    return text


def candidate_dir(name: str, package_version: str, cache: Path) -> Path:
    """Where a candidate is installed: the verified version's own cache, else a directory
    of its own under ``<cache>/drift`` (the verified install is never replaced)."""
    if package_version == versions.BACKENDS[name].package_version:
        return cache
    return cache / "drift" / f"{name}-{package_version}"


def provide(
    name: str, package_version: str, cache: Path, install: Callable[..., int] = backends.install
) -> list[str]:
    """The candidate's argv, installed first when its directory does not hold it."""
    d = candidate_dir(name, package_version, cache)
    found = backends.installed_in(name, d)
    if found is None:
        rc = install(d, (name,), version={name: package_version})
        found = backends.installed_in(name, d) if rc == 0 else None
        if found is None:
            spec = versions.spec_for(versions.BACKENDS[name], package_version)
            raise DriftError(f"installing {spec} into {d} failed (status {rc})")
    return found


def read_cli(argv: Sequence[str], command: Command = _command) -> tuple[str | None, str]:
    """(the version ``--version`` reports, the ``--help`` text) of a CLI."""
    rc, out = command([*argv, "--version"])
    version = versions.parse_version(out) if rc == 0 else None
    rc, help_text = command([*argv, "--help"])
    return version, help_text if rc == 0 else ""


# -- the verified baseline ---------------------------------------------------------------


def read_capture(path: Path) -> Capture:
    return read(path)


def verified_help(name: str) -> drift.Help:
    v = versions.BACKENDS[name]
    return drift.parse_help((REFERENCE / f"{name}-{v.version}" / "help.txt").read_text())


def known_vocabulary(name: str) -> drift.Vocabulary:
    """Everything the verified version was seen writing: its twins and its reference
    captures."""
    v = versions.BACKENDS[name]
    paths = sorted(TWINS.glob(f"*.{TWIN_ROLE[name]}.jsonl"))
    paths += sorted((REFERENCE / f"{name}-{v.version}").glob("*.transcript.jsonl"))
    return drift.merged(drift.vocabulary(read_capture(p)) for p in paths)


def twin(scenario: str, role: str) -> Path:
    return TWINS / f"{scenario}.{role}.jsonl"


# -- the analysis of the runs (no process) -----------------------------------------------


@attrs.frozen
class Bridged:
    scenario: str
    differences: int
    unexplained: list[str]
    violations: list[str]

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def analyse(
    name: str,
    candidate_version: str | None,
    captures: dict[str, Path],
    help_text: str | None,
    errors: Sequence[str] = (),
) -> drift.Report:
    """Backend ``name``'s drift: ``captures`` its raw runs, by scenario."""
    v = versions.BACKENDS[name]
    pairs = []
    notes = list(errors)
    if candidate_version is not None and not versions.is_verified(name, candidate_version):
        notes.append(
            f"{name} {candidate_version} is not a verified version (verified: {v.version})"
        )
    for scen, path in sorted(captures.items()):
        base = twin(scen, TWIN_ROLE[name])
        if not base.is_file():
            notes.append(f"{scen}: no committed twin {base.name} to compare with")
            continue
        pairs.append(
            (scen, drift.vocabulary(read_capture(base)), drift.vocabulary(read_capture(path)))
        )
    helps = (verified_help(name), drift.parse_help(help_text)) if help_text else None
    if not help_text:
        notes.append(f"{name} --help gave nothing to compare")
    return drift.report(
        name,
        v.version,
        candidate_version,
        pairs,
        known=known_vocabulary(name),
        help_pair=helps,
        notes=notes,
    )


def analyse_bridged(captures: dict[str, Path]) -> list[Bridged]:
    """The bridged cbc runs against the committed Claude twins: every difference without a
    known reason, every contract violation."""
    from analysis import conformance

    known = load_known_default()
    out = []
    for scen, path in sorted(captures.items()):
        claude = twin(scen, "claude")
        if not claude.is_file():
            continue
        cmp = conformance.explain(
            conformance.compare(read_capture(claude), read_capture(path)), scen, known
        )
        out.append(
            Bridged(
                scen,
                len(cmp.diff.differences),
                [f"{i.path}: {i.reason}" for i in cmp.unexplained],
                [f"[{v.rule}] {v.message}" for v in cmp.violations_b],
            )
        )
    return out


def exit_status(
    reports: Sequence[drift.Report], bridged: Sequence[Bridged], errors: Sequence[str]
) -> int:
    if errors:
        return EXIT_ERROR
    if any(r.unknown for r in reports) or any(b.unexplained or b.violations for b in bridged):
        return EXIT_UNKNOWN
    return EXIT_OK


def format_text(
    reports: Sequence[drift.Report], bridged: Sequence[Bridged], errors: Sequence[str]
) -> str:
    out = drift.format_text(reports) if reports else ""
    if bridged:
        bad = [b for b in bridged if b.unexplained or b.violations]
        out += (
            f"== cbc through the bridge against the Claude twins: "
            f"{'DOES NOT CONFORM' if bad else 'conforms'} "
            f"({len(bridged) - len(bad)}/{len(bridged)} scenarios with every difference "
            "explained and no contract violation)\n"
        )
        for b in bad:
            out += (
                f"  {escape(b.scenario)}: {len(b.unexplained)} unexplained, "
                f"{len(b.violations)} contract violation(s)\n"
            )
            for line in (b.unexplained + b.violations)[:10]:
                out += f"    {escape(line)}\n"
    for e in errors:
        out += f"error: {escape(e)}\n"
    status = exit_status(reports, bridged, errors)
    out += (
        "verdict: "
        + (
            "nothing the rules do not know"
            if status == EXIT_OK
            else "something the rules do not know appeared"
            if status == EXIT_UNKNOWN
            else "incomplete (errors above)"
        )
        + "\n"
    )
    return out


def to_json(
    reports: Sequence[drift.Report],
    bridged: Sequence[Bridged],
    errors: Sequence[str],
    out_dir: Path | None,
) -> str:
    doc = {
        "verified": {n: v.version for n, v in versions.BACKENDS.items()},
        "exit": exit_status(reports, bridged, errors),
        "backends": [r.to_dict() for r in reports],
        "bridged": [b.to_dict() for b in bridged],
        "errors": list(errors),
        "out": str(out_dir) if out_dir else None,
    }
    return escape_json(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())


# -- the command -------------------------------------------------------------------------


def scenario_files(names: str | None) -> list[Path]:
    """``--scenarios NAME,...``: each a name or a file (``corpus.scenario_file``, as ``ab``
    takes them); none: every scenario."""
    if not names:
        return sorted(SCENARIOS.glob("*.toml"))
    return [corpus.scenario_file(n) for n in (x.strip() for x in names.split(",")) if n]


def main(argv: list[str]) -> int:
    try:
        return _main(argv)
    except SystemExit as e:  # a usage error (Parser.error): its line is printed, exit 2
        return int(e.code or 0)


def build_parser() -> Parser:
    p = parser(
        "drift",
        "run the newest Claude Code and cbc on the scenarios: what changed against the "
        "verified versions",
        examples=[
            "ccbridge drift",
            "ccbridge drift --only cbc --scenarios simple-success,bg-bash --json",
            "ccbridge drift --skip-install --claude-bin /opt/claude/bin/claude",
        ],
        exits=judged(
            "nothing new",
            "something the rules do not know",
            "a usage error, a backend that could not be installed or run",
            runs=True,
        ),
    )
    p.add_argument(
        "--only",
        choices=backends.NAMES,
        action="append",
        default=None,
        help="only this backend (repeatable; default: both)",
    )
    p.add_argument(
        "--scenarios",
        metavar="NAME,...",
        default=None,
        help="scenario names or files (default: every scenarios/*.toml)",
    )
    p.add_argument(
        "--skip-install",
        action="store_true",
        help="install nothing: use what `ccbridge backends list` finds",
    )
    for n in backends.NAMES:
        p.add_argument(
            f"--{n}-version",
            metavar="VERSION",
            default=None,
            help=f"the {versions.BACKENDS[n].package} version (default: the registry's newest)",
        )
        p.add_argument(
            f"--{n}-bin",
            metavar="CMD",
            default=None,
            help=f"run this {n} binary (a command line) instead",
        )
    p.add_argument(
        "--dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the backends cache the candidates are installed into (default: "
        "$CCBRIDGE_BACKENDS_DIR, else ~/.cache/ccbridge/backends)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="where the captures go (default: a new temporary directory)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--jobs",
        type=int,
        default=2,
        metavar="N",
        help="CLIs running at once (default: %(default)s)",
    )
    p.add_argument(
        "--deadline",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="seconds for every run (default: %(default)g)",
    )
    return p


#: a backend's candidate: (argv, reported version, --help text)
Candidate = tuple[list[str], str | None, str]
#: what the runs wrote: role (claude, cbc, cbc-bridged) -> scenario -> capture
Done = dict[str, dict[str, Path]]


def _main(argv: list[str]) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.jobs < 1 or args.deadline <= 0:
        p.error("--jobs and --deadline must be positive")
    names = tuple(args.only or backends.NAMES)
    try:
        scenarios = [(f, load(f)) for f in scenario_files(args.scenarios)]
    except (ScenarioError, OSError) as e:
        p.error(escape(str(e)))
    cache = args.dir if args.dir is not None else backends.cache_dir()

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"ccbridge drift: {escape(msg)}", file=sys.stderr, flush=True)

    errors: list[str] = []
    cands = _candidates(names, args, cache, say, errors)
    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="ccbridge-drift-"))
    private_dirs(str(out_dir))
    say(f"captures in {out_dir}")
    done = _run(args, _jobs(cands, scenarios, out_dir), errors)
    reports, bridged = _analyse_all(cands, done, errors)
    if args.json:
        print(to_json(reports, bridged, errors, out_dir))
    else:
        sys.stdout.write(format_text(reports, bridged, errors))
    return exit_status(reports, bridged, errors)


def _candidates(
    names: Sequence[str], args: Any, cache: Path, say: Callable[[str], None], errors: list[str]
) -> dict[str, Candidate]:
    """The candidate of each backend that has one (why not goes to ``errors``)."""
    cands: dict[str, Candidate] = {}
    for n in names:
        try:
            cands[n] = _candidate(n, args, cache, say)
        except DriftError as e:
            errors.append(str(e))
    return cands


def _jobs(
    cands: dict[str, Candidate], scenarios: list[tuple[Path, Scenario]], out_dir: Path
) -> list[Job]:
    """Every scenario on every candidate (cbc: raw, and behind the bridge too)."""
    jobs: list[Job] = []
    for n, (cmd, _, _) in cands.items():
        spec = shlex.join(cmd)
        # the verified twins it is compared with were written by a Claude client
        sides = [Side(spec, None, n, client="claude")]
        if n == "cbc":
            sides.append(Side(spec, BRIDGE_PROFILE, "cbc-bridged"))
        for f, s in scenarios:
            for side in sides:
                jobs.append(Job(f, s, side, out_dir / f"{s.name}.{side.label}.jsonl"))
    return jobs


def _run(args: Any, jobs: list[Job], errors: list[str]) -> Done:
    """Run the jobs; the captures of those that finished (the others go to ``errors``)."""
    tracker = Tracker([(j.scenario.name, j.side.label) for j in jobs], quiet=args.quiet)
    outcomes: list[Outcome] = (
        stop.run(
            lambda: run_jobs(jobs, limit=args.jobs, deadline=args.deadline, tracker=tracker),
            "ccbridge drift",
        )
        if jobs
        else []
    )
    tracker.close()
    done: Done = {}
    for o in outcomes:
        if o.ok:
            done.setdefault(o.job.side.label, {})[o.job.scenario.name] = o.job.out
        else:
            errors.append(f"{o.job.scenario.name} on {o.job.side.label}: {o.error}")
    return done


def _analyse_all(
    cands: dict[str, Candidate], done: Done, errors: list[str]
) -> tuple[list[drift.Report], list[Bridged]]:
    reports: list[drift.Report] = []
    try:
        for n, (_, ver, help_text) in cands.items():
            reports.append(analyse(n, ver, done.get(n, {}), help_text))
        bridged = analyse_bridged(done.get("cbc-bridged", {}))
    except (OSError, CaptureError) as e:
        errors.append(f"cannot read a capture: {e}")
        bridged = []
    return reports, bridged


def _candidate(name: str, args: Any, cache: Path, say: Callable[[str], None]) -> Candidate:
    """(argv, reported version, --help text) of backend ``name``'s candidate."""
    explicit = getattr(args, f"{name}_bin")
    if explicit:
        cmd = shlex.split(explicit)
    elif args.skip_install:
        found = backends.find_backend(name, dir=cache)
        if found is None:
            raise DriftError(
                f"{name} not found (--skip-install: run `ccbridge backends "
                f"install`, or give --{name}-bin)"
            )
        cmd = found
    else:
        pv = getattr(args, f"{name}_version") or newest(name)
        say(
            f"{name}: {versions.BACKENDS[name].package} {pv} "
            f"(verified: {versions.BACKENDS[name].package_version})"
        )
        cmd = provide(name, pv, cache)
    if not cmd or not os.path.exists(cmd[0]) and not _on_path(cmd[0]):
        raise DriftError(f"{name}: {cmd[0] if cmd else '(empty)'} not found")
    version, help_text = read_cli(cmd)
    say(f"{name}: {shlex.join(cmd)} reports {version or '(no version)'}")
    return cmd, version, help_text


def _on_path(exe: str) -> bool:
    import shutil

    return shutil.which(exe) is not None


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
