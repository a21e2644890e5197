"""``ccbridge record --out FILE -- CMD...``: run a backend directly (profile ``identity``:
nothing is changed) with our stdio as its client, and record the whole session."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from bridge import launch
from bridge.cli import parser
from compat.exits import Exit


def main(argv: list[str], env: Mapping[str, str] | None = None) -> int:
    p = parser("record", __doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, metavar="FILE")
    p.add_argument("--stats", action="store_true")
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
