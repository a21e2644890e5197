"""``ccbridge``: one module per subcommand, and the one place that turns exceptions into
exit codes (``compat.exits.Exit``: 2 usage/config errors, 127 no backend, 130 interrupted,
141 closed stdout)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from bridge import stdfds
from compat import TARGET_CLAUDE_VERSION, __version__
from compat.exits import Exit
from compat.text import escape

EXIT_USAGE = Exit.USAGE


def _version() -> str:
    return f"ccbridge {__version__} (emulates Claude Code {TARGET_CLAUDE_VERSION})"


#: a subcommand: (its argv, the environment ``main`` was given) -> exit status
Command = Callable[[list[str], Mapping[str, str]], int]


def _lazy(module: str, *, session: bool = False) -> Command:
    """The command in ``module``, imported when run. ``session``: its ``main`` takes the
    environment too (the session commands read their settings and the backend's
    environment from it); the tools read only their argv."""

    def run(argv: list[str], env: Mapping[str, str]) -> int:
        import importlib

        main = importlib.import_module(module).main
        return int(main(argv, env) if session else main(argv))

    return run


#: command -> (what it does, in one line; its module, which has ``main`` and
#: ``build_parser``; whether its ``main`` takes the environment too)
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "run": ("relay a client and a backend through a profile", "bridge.run_cmd", True),
    "record": ("run a backend directly and record the session", "bridge.record_cmd", True),
    "replay": ("serve a capture as a backend", "bridge.replay", False),
    "rules": ("list the rules, their modes and profiles", "bridge.rules_cmd", False),
    "completion": (
        "print a shell completion script (bash, zsh or fish)",
        "bridge.completion_cmd",
        False,
    ),
}
#: subcommands contributed by modules that may not be present in every build
OPTIONAL = {
    "check": ("does a stream honour the Claude Code 2.1.220 contract?", "analysis.check_cmd"),
    "diff": ("semantic diff of two captures", "analysis.diff_cmd"),
    "scenario": ("run a scripted scenario against a backend", "harness.scenario_cmd"),
    "ab": ("run scenarios on two backends and compare", "analysis.ab_cmd"),
    "conformance": (
        "the Claude-vs-bridged-cbc conformance table (and its twin captures)",
        "analysis.conformance_cmd",
    ),
    "backends": ("install or list the real backends", "bridge.backends"),
    "drift": (
        "run the newest Claude Code and cbc on the scenarios: what changed against "
        "the verified versions",
        "analysis.drift_cmd",
    ),
    "demo": ("replay a bundled cbc capture through the bridge to an example client", "bridge.demo"),
}


def command_modules() -> dict[str, tuple[str, str, bool]]:
    """Every command present: name -> (its one line, its module, whether it takes the
    environment). Nothing is imported (an optional layer is looked for)."""
    import importlib.util

    cmds = dict(COMMANDS)
    for name, (help_, module) in OPTIONAL.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # its layer (analysis, harness) is not installed
            found = False
        if found:
            cmds[name] = (help_, module, False)
    return cmds


def _commands() -> dict[str, tuple[str, Command]]:
    return {
        name: (help_, _lazy(module, session=session))
        for name, (help_, module, session) in command_modules().items()
    }


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """``ccbridge``; ``argv`` defaults to ``sys.argv[1:]``, ``env`` to ``os.environ`` (tests
    call it in-process with both)."""
    stdfds.ensure()  # before anything opens a file: a closed 0-2 is /dev/null
    args = list(sys.argv[1:] if argv is None else argv)
    environ = os.environ if env is None else env
    cmds = _commands()
    if not args or args[0] in ("-h", "--help", "help"):
        lines = [f"usage: ccbridge COMMAND [ARGS...]   ({_version()})", "", "commands:"]
        lines += [f"  {name:<12} {help_}" for name, (help_, _) in cmds.items()]
        lines += ["", "ccbridge COMMAND --help for each command's options."]
        print("\n".join(lines), file=sys.stderr if not args else sys.stdout)
        return EXIT_USAGE if not args else 0
    if args[0] in ("--version", "-V", "version"):
        print(_version())
        return 0
    name, rest = args[0], args[1:]
    if name not in cmds:
        from compat.suggest import did_you_mean

        hint = did_you_mean(name, cmds).replace("\n(", " (")
        listed = hint or " (ccbridge --help lists them)"
        print(f"ccbridge: unknown command {name!r}{listed}", file=sys.stderr)
        return EXIT_USAGE
    return guarded(lambda: cmds[name][1](rest, environ), f"ccbridge {name}")


def entry() -> NoReturn:
    """``ccbridge``, the console script (``stdfds.run``: no traceback on an interrupt or a
    closed pipe, also outside a command)."""
    stdfds.run(main, "ccbridge")


def guarded(fn: Callable[[], int], prog: str | None = None) -> int:
    """Run a command; every error it raises becomes one line on stderr, never a traceback:
    an interrupt exits 130, a reader gone (``| head``) 141, a usage or configuration error
    2, anything else 1 (``CCBRIDGE_LOG_LEVEL=debug`` adds the traceback, for a bug report).
    trio's exception groups are looked into: an interrupt inside one is an interrupt.
    ``prog`` (``ccbridge check``) starts the line of a command's error; without it (a
    drop-in) the line starts ``ccbridge:``, as the session's log does."""
    try:
        return fn()
    except BaseException as e:  # noqa: BLE001 - the last line of defence, by design
        if stdfds.only(e, KeyboardInterrupt):
            print("ccbridge: interrupted", file=sys.stderr)
            return Exit.INTERRUPTED
        if stdfds.only(e, BrokenPipeError):
            stdfds.quiet_stdout()  # stdout closed under us (``ccbridge diff a b | head``)
            return Exit.CLIENT_GONE
        if not isinstance(e, Exception):
            raise  # SystemExit and the like
        return _failed(e, prog)


def _failed(e: Exception, prog: str | None) -> int:
    """One line for an error: a usage error, or the unexpected."""
    if _usage_error(e):
        print(f"{prog or 'ccbridge'}: {escape(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    return _unexpected(e, prog)


#: the exceptions that are usage or configuration errors, by module: looked up only where
#: the module is loaded (one not imported raised nothing), so a command imports no more
#: than it uses (``claude-on-cbc`` spawns its backend before the stages are imported)
USAGE_ERRORS = (
    ("bridge.configfile", "ConfigError"),
    ("compat.capture", "CaptureError"),
    ("compat.rulespec", "RuleError"),
)


def _usage_error(e: BaseException) -> bool:
    for module, name in USAGE_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(e, cls):
            return True
    return False


def _unexpected(e: BaseException, prog: str | None) -> int:
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    text = f"{e.strerror}: {e.filename}" if isinstance(e, OSError) and e.filename else str(e)
    print(f"{prog or 'ccbridge'}: error: {escape(text or type(e).__name__)}", file=sys.stderr)
    if os.environ.get("CCBRIDGE_LOG_LEVEL") == "debug":
        import traceback

        traceback.print_exception(e, file=sys.stderr)
    return Exit.FAILED


class Parser(argparse.ArgumentParser):
    """argparse with the one error style of every command: ``ccbridge CMD: what is wrong
    (try ccbridge CMD --help)`` on one line, exit 2; its description and epilog (examples,
    exit statuses) printed as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (try {self.prog} --help)\n")


#: a usage error, as every command may exit
USAGE_EXIT: dict[int | str, str] = {
    Exit.USAGE: "a usage error, or an input or a setting refused (one line on stderr)"
}
INTERRUPTED_EXIT: dict[int | str, str] = {Exit.INTERRUPTED: "interrupted (Ctrl-C)"}


#: a command that runs real CLIs, on a signal
SIGNAL_EXIT: dict[int | str, str] = {
    "128+N": "ended by signal N (SIGINT, SIGTERM, SIGHUP): every CLI it started killed, what "
    "was recorded written"
}


def judged(ok: str, found: str, error: str, *, runs: bool = False) -> dict[int | str, str]:
    """The statuses of a tool that judges (``check``, ``diff``, ``ab``, ``conformance``,
    ``drift``): 0 as expected, 1 found something, 2 could not judge (``compat.exits``);
    ``runs``: it runs real CLIs, and ends on a signal as ``SIGNAL_EXIT`` says."""
    return {
        Exit.OK: ok,
        Exit.FAILED: found,
        Exit.USAGE: f"could not judge: {error} (one line on stderr)",
        **(SIGNAL_EXIT if runs else INTERRUPTED_EXIT),
    }


def parser(
    prog: str,
    description: str,
    *,
    examples: Sequence[str] = (),
    exits: Mapping[int | str, str] | None = None,
    usage: str | None = None,
) -> Parser:
    """The parser of ``ccbridge PROG``: one line of description, then after the options
    the examples and the exit statuses (``epilog``)."""
    return Parser(
        prog=f"ccbridge {prog}",
        description=description,
        usage=usage,
        epilog=epilog(examples, exits or {}),
    )


def epilog(examples: Sequence[str], exits: Mapping[int | str, str]) -> str:
    """The examples (a line each) and the exit statuses, wrapped to 80 columns."""
    import textwrap

    lines = ["examples:", *(f"  {e}" for e in examples)] if examples else []
    if exits:
        lines += ["", "exit status:"] if lines else ["exit status:"]
        for status, what in exits.items():
            code = str(int(status)) if isinstance(status, int) else status
            lines += textwrap.wrap(
                what, 80, initial_indent=f"  {code:<6}", subsequent_indent=" " * 8
            )
    return "\n".join(lines)


def columns(rows: Sequence[tuple[str, str]], width: int = 100) -> list[str]:
    """Two-column help lines (``  NAME  what it does``), the second column wrapped under
    itself so that no line is longer than ``width`` (a drop-in's ``--help``)."""
    import textwrap

    left = max((len(k) for k, _ in rows), default=0) + 4
    out: list[str] = []
    for key, what in rows:
        head = f"  {key}".ljust(left)
        wrapped = textwrap.wrap(what, width - left) or [""]
        out.append((head + wrapped[0]).rstrip())
        out += [" " * left + more for more in wrapped[1:]]
    return out
