"""``ccbridge scenario run FILE --backend claude|cbc|CMD [--via PROFILE] --out CAPTURE``
(and ``ccbridge scenario check FILE...``, which only validates scenario files).

Runs a scripted client against a real CLI whose model API is the stand-in
(``harness``), and writes the whole session as a capture. The exit status says
whether the *harness* did its job (0: the capture is written, whatever the backend did;
2: a bad scenario or usage; 127: the backend is not installed), never the backend's
status, which is in the capture's ``exit`` record. One summary line goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bridge.cli import SIGNAL_EXIT, USAGE_EXIT, Parser, parser
from compat.exits import Exit
from harness import corpus, from_capture_cmd, runner, stop
from harness.scenario import ScenarioError, load

EXIT_USAGE = Exit.USAGE
EXIT_NO_BACKEND = Exit.NOT_FOUND


async def run_scenario(
    path: str | Path,
    backend: str,
    via: str | None,
    out: str | Path,
    *,
    time_limit: float | None = None,
    keep: bool = False,
    dump_requests: str | Path | None = None,
) -> int:
    try:
        scenario = load(path)
    except ScenarioError as e:
        print(f"ccbridge scenario: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        target = runner.resolve_target(backend)
    except runner.BackendNotFound as e:
        print(f"ccbridge scenario: {e}", file=sys.stderr)
        return EXIT_NO_BACKEND
    result = await runner.run(
        scenario,
        target,
        Path(out),
        via=via,
        time_limit=time_limit,
        source=Path(path).name,
        keep_root=keep,
        dump_requests=Path(dump_requests) if dump_requests else None,
    )
    ver = f" {result.backend_version}" if result.backend_version else ""
    through = f" via {via}" if via else ""
    print(
        f"ccbridge scenario: {scenario.name} on {target.kind}{ver}{through}: "
        f"exit {result.exit} after {result.duration:.1f}s, {len(result.frames)} frames, "
        f"{len(result.model_log)} model requests -> {out}",
        file=sys.stderr,
    )
    if result.root:
        print(f"ccbridge scenario: kept {result.root}", file=sys.stderr)
    if result.exit in ("126", "127"):  # the backend could not be started: nothing ran
        print(
            f"ccbridge scenario: the backend {target.argv[0]} could not be started", file=sys.stderr
        )
        return int(result.exit)
    return 0


def build_parser() -> Parser:
    p = parser(
        "scenario",
        "run a scripted scenario against a real CLI on a stand-in model, and record it",
        examples=[
            "ccbridge scenario run simple-success --backend cbc --via cbc-to-claude "
            "--out run.jsonl",
            "ccbridge scenario run scenarios/bg-bash.toml --backend claude --out claude.jsonl",
            "ccbridge scenario check scenarios/*.toml",
        ],
        exits={
            Exit.OK: "run: the capture is written, whatever the backend did (its status is "
            "in the capture); check: every file is valid",
            **USAGE_EXIT,
            Exit.NOT_EXECUTABLE: "run: the backend cannot be executed",
            Exit.NOT_FOUND: "run: the backend is not installed or could not be started",
            **SIGNAL_EXIT,
        },
    )
    _fill(p)
    return p


def _fill(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(
        dest="scenario_cmd",
        required=True,
        metavar="run|check|from-capture",
        help="run one scenario, or check scenario files (each has --help)",
    )
    r = sub.add_parser(
        "run",
        help="run one scenario and record it",
        description="run one scenario and record it (scenarios/README.md: the format)",
    )
    r.add_argument(
        "file",
        metavar="SCENARIO",
        help="a scenario: its name (simple-success: scenarios/simple-success.toml) or a .toml file",
    )
    r.add_argument(
        "--backend",
        required=True,
        metavar="SPEC",
        help="claude, cbc (found as ccbridge backends list shows), or a command line",
    )
    r.add_argument(
        "--via",
        metavar="PROFILE",
        default=None,
        help="run the backend behind ccbridge run --profile PROFILE (default: directly)",
    )
    r.add_argument("--out", required=True, metavar="CAPTURE", help="the capture to write")
    r.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="override the scenario's time_limit (default: the scenario's)",
    )
    r.add_argument(
        "--keep", action="store_true", help="keep the run's temporary HOME and working directory"
    )
    r.add_argument(
        "--dump-requests",
        metavar="DIR",
        default=None,
        help="write every model request (headers and body) to DIR/NNN.json",
    )
    c = sub.add_parser(
        "check",
        help="validate scenario files",
        description="validate scenario files: one line each on stderr",
    )
    c.add_argument("files", nargs="+", metavar="FILE", help="scenario .toml files")
    from_capture_cmd.fill(sub)


def main(argv: list[str]) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.scenario_cmd == "from-capture":
        return from_capture_cmd.main(args, p)
    if args.scenario_cmd == "check":
        bad = 0
        for f in args.files:
            try:
                s = load(f)
            except ScenarioError as e:
                print(f"ccbridge scenario: {e}", file=sys.stderr)
                bad += 1
            else:
                print(
                    f"{f}: ok ({s.name}, {len(s.steps)} steps, {len(s.model.rules)} rules)",
                    file=sys.stderr,
                )
        return EXIT_USAGE if bad else 0
    if args.time_limit is not None and args.time_limit <= 0:
        p.error("--time-limit must be > 0")
    try:
        scenario = corpus.scenario_file(args.file)
    except FileNotFoundError as e:
        print(f"ccbridge scenario: {e}", file=sys.stderr)
        return EXIT_USAGE
    from bridge import config

    config.check_out_file("--out", args.out)
    if args.dump_requests:
        config.check_out_dir("--dump-requests", args.dump_requests)
    return stop.run(
        lambda: run_scenario(
            scenario,
            args.backend,
            args.via,
            args.out,
            time_limit=args.time_limit,
            keep=args.keep,
            dump_requests=args.dump_requests,
        ),
        "ccbridge scenario",
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
