"""``ccbridge run [--profile P] --backend CMD [--record FILE] [--rule ID=VALUE ...]
[--stats] -- [client argv...]``: relay the client (our stdio) and a backend through a
profile's pipelines, and exit with the backend's status."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bridge import config, launch
from bridge.cli import USAGE_EXIT, parser
from compat import rulespec
from compat.exits import Exit

if TYPE_CHECKING:
    from bridge.headless import HeadlessIO


def main(argv: list[str], env: Mapping[str, str] | None = None) -> int:
    """Parse, compute the launch line, spawn the backend: then import trio, the proxy and
    the stages (``bridge.launch``: they load while the backend boots)."""
    if "--" in argv:
        k = argv.index("--")
        own, client_argv = argv[:k], argv[k + 1 :]
    else:
        own, client_argv = argv, []
    args = build_parser().parse_args(own)
    _check(args)
    env = dict(os.environ if env is None else env)
    settings = config.load(env)
    env = config.environment(settings, env)  # (the config file's [env] under the caller's)
    profile = args.profile or settings.profile
    backend = args.backend or settings.backend
    if not backend:
        print(
            "ccbridge run: --backend is required (or CCBRIDGE_BACKEND / backend = in "
            "ccbridge.toml)",
            file=sys.stderr,
        )
        return Exit.USAGE
    rules = rulespec.parse(args.rule, into=settings.rules)  # --rule over the settings
    headless: HeadlessIO | None = None
    prepared = False
    if profile == "cbc-to-claude":  # `-- -p PROMPT --output-format json`: as the drop-in
        headless, prepared, status = _print_mode(client_argv)
        if status is not None:
            return status
    early = launch.DeferredLog()
    options = _plan_options(args, settings)
    plan = launch.plan(
        "ccbridge run",
        profile,
        config.command_line("--backend" if args.backend else "CCBRIDGE_BACKEND", backend),
        client_argv,
        env,
        rules,
        early,
        first_line=launch.first_line_reader(options["max_line"]),
        **options,
    )
    try:
        capture = launch.open_record(plan, "--record" if args.record else "CCBRIDGE_RECORD")
        started = launch.start(plan.backend_argv, plan.backend_env)
        return launch.serve(
            started,
            early,
            plan,
            headless=headless,
            prepared=prepared,
            only_print=True,
            capture=capture,
        )
    finally:
        launch.discard_private(plan)


def build_parser() -> argparse.ArgumentParser:
    p = parser(
        "run",
        "relay a client (our stdio) and a backend through a profile's pipelines",
        usage="ccbridge run [options] -- [CLIENT ARGS...]",
        examples=[
            "ccbridge run --backend codebuddy-headless -- --input-format stream-json \\",
            "    --output-format stream-json --verbose",
            "ccbridge run --profile cbc-to-claude --backend 'ccbridge replay s.jsonl' \\",
            "    --record out.jsonl --rule late-progress=pass -- -p hi",
        ],
        exits={
            "N": "the backend's status (killed by signal N: 128 + N); after the client's EOF "
            "under cbc-to-claude, Claude Code's: 0, or 1 when the last result was an error",
            **USAGE_EXIT,
            Exit.NOT_EXECUTABLE: "the backend cannot be executed",
            Exit.NOT_FOUND: "the backend was not found",
            Exit.CLIENT_GONE: "the client stopped reading (its stdout closed)",
        },
    )
    p.add_argument(
        "--profile",
        choices=sorted(launch.PROFILE_NAMES),
        default=None,
        help="the pipelines between the two (default: profile = in ccbridge.toml, else "
        f"{config.Settings.profile})",
    )
    p.add_argument(
        "--backend",
        metavar="CMD",
        help="the backend command line, shlex-split, never run by a shell (default: "
        "CCBRIDGE_BACKEND, or backend = in ccbridge.toml)",
    )
    p.add_argument(
        "--record",
        metavar="FILE",
        help="record the session to a capture file (default: CCBRIDGE_RECORD's directory, if set)",
    )
    p.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="ID=VALUE",
        help="switch or tune a rule: late-progress=pass, tasks-snapshot=off, "
        "late-progress.grace=2 (repeatable; ccbridge rules lists them)",
    )
    p.add_argument(
        "--stats", action="store_true", help="print the frame statistics on stderr at exit"
    )
    p.add_argument(
        "--max-line",
        type=int,
        default=None,
        metavar="BYTES",
        help="the framing limit of one line (default: CCBRIDGE_MAX_LINE or max_line =, else "
        f"{config.Settings.max_line})",
    )
    p.add_argument(
        "--eof-grace",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds the backend may take to exit after the client's EOF (default: "
        f"CCBRIDGE_EOF_GRACE or eof_grace =, else {config.Settings.eof_grace:g})",
    )
    p.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        help="what the bridge logs on stderr (default: CCBRIDGE_LOG_LEVEL or log_level =, else "
        f"{config.Settings.log_level})",
    )
    p.add_argument(
        "--target",
        metavar="VERSION",
        default=None,
        help="the Claude Code version cbc-to-claude emulates: 2.1.220 or 2.1.332 (default: "
        "CCBRIDGE_TARGET or target = in ccbridge.toml, else 2.1.220)",
    )
    return p


def _check(args: argparse.Namespace) -> None:
    """The options' values, checked before anything is read or started."""
    if args.target is not None:
        config.target("--target", args.target)
    if args.record:
        config.check_out_file("--record", args.record)
    if args.eof_grace is not None:
        config.seconds("--eof-grace", args.eof_grace)
    if args.max_line is not None:
        config.positive_int("--max-line", args.max_line)


def _print_mode(client_argv: list[str]) -> tuple[HeadlessIO | None, bool, int | None]:
    """A print-mode client command line (``-p PROMPT``), as the drop-in takes it: (its
    headless I/O, whether ``bridge.headless.prepare`` read the prompt before the backend
    starts, the exit status when the run ends here: a usage error, or no prompt)."""
    from compat.headless import EXIT_ERROR, mode_of

    mode = mode_of(client_argv)
    print_mode = mode.print_mode or mode.prompt is not None
    error = mode.usage_error() if print_mode else None
    if error is not None:  # refused before the backend starts
        print(error, file=sys.stderr)
        return None, False, EXIT_ERROR
    if print_mode and mode.input == "text":  # the prompt first: none, no backend
        from bridge.headless import prepare

        headless, status = prepare(client_argv, only_print=True)
        return headless, status is None, status
    return None, False, None


def _plan_options(args: argparse.Namespace, settings: config.Settings) -> dict[str, Any]:
    """The ``Plan`` fields from the options, over the settings."""
    return {
        "log_path": settings.log,
        "log_level": args.log_level or settings.log_level,
        "record": args.record or settings.record,
        "stats": args.stats or settings.stats,
        "max_line": args.max_line or settings.max_line,
        "eof_grace": args.eof_grace if args.eof_grace is not None else settings.eof_grace,
        "script_roots": tuple(settings.script_roots),
        "target": args.target.strip() if args.target else settings.target,
    }
