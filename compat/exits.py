"""The exit statuses of every command and drop-in, in one place.

The drop-ins exit as the CLI they stand in for: the backend's own status, Claude's 1 for an
error result or a refused option, the shell's 126/127 for a backend that cannot be run, and
128 + N for a signal. The tools (``check``, ``diff``, ``ab``, ``conformance``, ``drift``)
say 0 "as expected", 1 "found something" (violations, differences, unexplained or unknown
ones), 2 "could not judge" (a usage error, a missing input, a run that failed)."""

from __future__ import annotations

import enum
import signal


class Exit(enum.IntEnum):
    OK = 0
    #: Claude's status for an error result or a usage error it refuses; a tool found something
    FAILED = 1
    #: a usage or configuration error (ours, not the backend's); a tool could not judge
    USAGE = 2
    #: the backend exists but cannot be executed (a shell's 126)
    NOT_EXECUTABLE = 126
    #: no backend (a shell's 127)
    NOT_FOUND = 127
    INTERRUPTED = 128 + signal.SIGINT  # 130
    #: the client closed its end (a shell's status for a broken pipe)
    CLIENT_GONE = 128 + signal.SIGPIPE  # 141
    TERMINATED = 128 + signal.SIGTERM  # 143


def of_returncode(rc: int) -> int:
    """A child's ``returncode`` as a shell reports it: 128 + N for a signal N."""
    return 128 - rc if rc < 0 else rc
