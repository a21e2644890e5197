"""``ccbridge completion bash|zsh|fish``: a shell completion script for ``ccbridge``, made by
``shtab`` from the commands' own argparse parsers, so it never disagrees with ``--help``.

The commands are dispatched lazily (``bridge.cli``: ``ccbridge`` imports a command's module
only to run it); this command alone imports them all, to put their parsers under one
``ccbridge`` parser (``combined``). Nothing else imports ``shtab``: not ``ccbridge`` at
start-up, never a drop-in."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from bridge.cli import USAGE_EXIT, Parser, command_modules, parser
from compat.exits import Exit

SHELLS = ("bash", "zsh", "fish")
#: where each shell's script goes (what the examples and the docs say)
INSTALL = {
    "bash": "ccbridge completion bash > ~/.local/share/bash-completion/completions/ccbridge",
    "zsh": "ccbridge completion zsh > ~/.zfunc/_ccbridge   # a directory on $fpath",
    "fish": "ccbridge completion fish > ~/.config/fish/completions/ccbridge.fish",
}
#: the metavars that name a file or a directory: completed as paths
FILES = frozenset({"FILE", "CAPTURE", "CAPTURE|-", "A", "B", "SCENARIO"})
DIRECTORIES = frozenset({"DIR"})


def build_parser() -> Parser:
    p = parser(
        "completion",
        "print a shell completion script for ccbridge (its commands, options and choices)",
        examples=[
            *INSTALL.values(),
            'eval "$(ccbridge completion bash)"   # this shell only',
        ],
        exits={Exit.OK: "the script is printed on stdout", **USAGE_EXIT},
    )
    p.add_argument("shell", choices=SHELLS, help="the shell: bash, zsh or fish")
    return p


def combined() -> argparse.ArgumentParser:
    """``ccbridge``'s whole command line: every command's parser as a subcommand of one
    ``ccbridge`` parser (each command's module is imported here)."""
    top = argparse.ArgumentParser(
        prog="ccbridge", description="make Claude Code and cbc stream-json CLIs interchangeable"
    )
    top.add_argument("--version", action="version", version="ccbridge", help="the version")
    sub = top.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_, module, _) in command_modules().items():
        own = command_parser(module)
        sub.add_parser(name, help=help_, description=own.description, parents=[own], add_help=False)
    _paths(top)
    return top


def command_parser(module: str) -> argparse.ArgumentParser:
    """The parser of the command in ``module``: its ``build_parser()`` (``_parser()`` in a
    module that keeps it private)."""
    mod = importlib.import_module(module)
    build = getattr(mod, "build_parser", None) or mod._parser
    own: argparse.ArgumentParser = build()
    return own


def _paths(p: argparse.ArgumentParser) -> None:
    """Files and directories complete as paths (shtab's ``complete`` attribute), in every
    subcommand."""
    import shtab

    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _paths(child)
            continue
        name = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
        hint: Any = (
            shtab.FILE if name in FILES else shtab.DIRECTORY if name in DIRECTORIES else None
        )
        if hint is not None:
            action.complete = hint  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    import shtab

    sys.stdout.write(shtab.complete(combined(), shell=args.shell))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
