"""``ccbridge record --out FILE -- CMD...``: run a backend directly (profile ``identity``:
nothing is changed) with our stdio as its client, and record the whole session."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from bridge import launch
from bridge.cli import USAGE_EXIT, Parser, parser
from compat.exits import Exit


def build_parser() -> Parser:
    p = parser(
        "record",
        "run a backend directly (nothing changed), our stdio its client, and record the session",
        usage="ccbridge record [-h] --out FILE [--stats] -- CMD [ARGS...]",
        examples=[
            "ccbridge record --out cbc.jsonl -- codebuddy-headless -p --input-format "
            "stream-json \\",
            "    --output-format stream-json --verbose < client-lines.jsonl",
        ],
        exits={
            "N": "the backend's status (killed by signal N: 128 + N)",
            **USAGE_EXIT,
            Exit.NOT_EXECUTABLE: "the backend cannot be executed",
            Exit.NOT_FOUND: "the backend was not found",
            Exit.CLIENT_GONE: "the client stopped reading (its stdout closed)",
        },
    )
    p.add_argument("--out", required=True, metavar="FILE", help="the capture to write")
    p.add_argument(
        "--stats", action="store_true", help="print the frame statistics on stderr at exit"
    )
    return p


def main(argv: list[str], env: Mapping[str, str] | None = None) -> int:
    p = build_parser()
    k = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:k])  # (--help prints the help here)
    if "--" not in argv:
        p.error("the command to record goes after -- (ccbridge record --out FILE -- CMD...)")
    from bridge import config

    config.check_out_file("--out", args.out)
    cmd = argv[k + 1 :]
    if not cmd:
        print("ccbridge record: no command after --", file=sys.stderr)
        return Exit.USAGE
    environ = dict(os.environ if env is None else env)
    early = launch.DeferredLog()
    plan = launch.plan(
        "ccbridge record",
        "identity",
        cmd,
        (),
        environ,
        (),
        early,
        log_path=environ.get("CCBRIDGE_LOG"),
        record=args.out,
        stats=args.stats,
        eof_grace=None,
    )
    capture = launch.open_record(plan, "--out")
    return launch.serve(
        launch.start(plan.backend_argv, plan.backend_env), early, plan, capture=capture
    )
