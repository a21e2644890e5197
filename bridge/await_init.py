"""A client that awaits initialize (``--await-initialize``; ``compat.launch_init`` says why):
its first line read before the backend starts, and the launch options inside it given to
cbc (``bridge.launch.plan`` calls ``with_initialize``).

The values the client sent inside the request rather than on a command line stay off cbc's
command line too: TypeScript SDK 0.3.337 moved its MCP servers there so that their
environment and headers (tokens, often) are not on a command line "where other users of
the machine can read them". cbc takes ``--mcp-config`` and ``--settings`` as a JSON text or
a file, so a JSON value from the request is written to a file in a new private directory
(0700, the file created exclusively, 0600) and cbc gets its path; the directory is removed
when the session ends, or when it never starts (``bridge.launch.discard_private``).

Light on purpose: it runs before the backend is spawned (no trio, no stage).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from bridge.files import FILE_MODE

if TYPE_CHECKING:
    from bridge.launch import Log
    from compat.argv import Translation

#: the cbc options whose JSON value is written to a private file, by the field it carries
PRIVATE = {"mcpServers": "--mcp-config", "settings": "--settings"}
_CHUNK = 64 * 1024


class Awaited(NamedTuple):
    forward: Translation
    preread: bytes = b""
    fields: frozenset[str] = frozenset()
    private_dir: str | None = None

    def plan_fields(self) -> dict[str, Any]:
        """The ``bridge.launch.Plan`` fields this decides."""
        return {
            "preread": self.preread,
            "launch_fields": self.fields,
            "private_dir": self.private_dir,
        }


def with_initialize(
    forward: Translation, client_argv: Sequence[str], first_line: Callable[[], bytes], log: Log
) -> Awaited:
    """When the client awaits initialize: its first line read, and when that is an
    ``initialize``, the client's argv translated again with the options its launch fields
    make (before the client's own words, under the same session pin), the values it kept
    off command lines written to private files."""
    from compat import launch_init

    if not launch_init.awaits_initialize(forward.options):
        return Awaited(forward)
    preread = first_line()
    body = launch_init.initialize_body(preread.split(b"\n", 1)[0])
    words, fields = launch_init.launch_options(body) if body is not None else ([], [])
    if not words:
        return Awaited(forward, preread, frozenset(fields))
    from compat.argv import translate_to_cbc

    sid = forward.session_id if forward.pinned else None
    again = translate_to_cbc([*words, *client_argv], session_id=sid, pin=forward.pinned)
    applied = launch_init.applied(fields, again.dropped)
    argv, private = _private_values(again.argv, [PRIVATE[f] for f in PRIVATE if f in applied], log)
    if applied:
        log.info(f"initialize {', '.join(sorted(applied))}: given to cbc at launch", "argv")
    return Awaited(dataclasses.replace(again, argv=argv), preread, applied, private)


def _private_values(
    argv: list[str], options: Sequence[str], log: Log
) -> tuple[list[str], str | None]:
    """``argv`` with the JSON values of ``options`` replaced by the paths of private files
    holding them; (that argv, the files' directory or None). A file that cannot be written
    leaves its value where it was, said in a warning."""
    spots = [(i, o) for i, o in _values(argv, options) if argv[i].lstrip().startswith("{")]
    if not spots:
        return argv, None
    where = None
    try:
        where = tempfile.mkdtemp(prefix="ccbridge-init-")  # 0700
        out = list(argv)
        for i, option in spots:
            out[i] = _write_private(where, option.lstrip("-") + ".json", argv[i])
    except OSError as e:
        if where is not None:
            shutil.rmtree(where, ignore_errors=True)
        log.warning(
            f"could not write the initialize's options to a private file ({e.strerror or e}): "
            "given to cbc on its command line",
            "argv",
        )
        return argv, None
    return out, where


def _values(argv: list[str], options: Sequence[str]) -> list[tuple[int, str]]:
    """Where the values of ``options`` are in a cbc command line: the word after the
    option (the translation writes ``--option=value`` only for a value that begins with a
    dash, which no JSON object does)."""
    return [(i + 1, word) for i, word in enumerate(argv[:-1]) if word in options]


def _write_private(directory: str, name: str, text: str) -> str:
    """``text`` in a new file ``name`` of ``directory`` (exclusive, 0600); its path."""
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        data = memoryview(text.encode())
        while data:
            data = data[os.write(fd, data[:_CHUNK]) :]
    finally:
        os.close(fd)
    return path


def read_first_line(fd: int = 0, limit: int | None = None) -> bytes:
    """The client's bytes up to its first newline, its EOF or ``limit`` bytes (default
    ``compat.DEFAULT_MAX_LINE``), whichever comes first: read before the backend starts,
    all of it given to the session first (``Plan.preread``)."""
    from compat import DEFAULT_MAX_LINE

    limit = limit or DEFAULT_MAX_LINE
    got = bytearray()
    while b"\n" not in got and len(got) <= limit:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        got += chunk
    return bytes(got)
