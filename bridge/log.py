"""Logging to stderr (or ``CCBRIDGE_LOG``): ``ccbridge: [rule] message``.

Never stdout (the protocol channel). Messages can quote backend strings, which are
untrusted: control, bidi and invisible characters are escaped (``compat.text.escape``)
before anything reaches a terminal or the file, and credential-looking values are
redacted here (``compat.redact.redact_text``) whatever the caller did (the launch line, a
backend error, a stage's message). A log file (``CCBRIDGE_LOG``, ``--log``) is created
0600, its missing directories 0700.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import IO

from bridge.files import open_named
from compat.redact import redact_text
from compat.text import escape

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


class Logger:
    def __init__(
        self, stream: IO[str] | None = None, level: str = "warning", path: str | None = None
    ) -> None:
        #: None: no stderr (a daemon started us with it closed); nothing is written
        self.stream = stream if stream is not None else sys.stderr
        self.threshold = LEVELS.get(level, 20)
        #: the log file (None: stderr); a write that fails stops it, said once on stderr
        self.path = path

    @classmethod
    def open(cls, path: str | None, level: str = "warning") -> Logger:
        """A logger to ``path`` (append, never through a link; default stderr); a bad path
        or level is a ``ConfigError`` naming the setting."""
        from bridge.config import ConfigError, check_log
        from bridge.config import level as check_level

        check_level("CCBRIDGE_LOG_LEVEL (or log_level =)", level)
        if path:
            setting = "CCBRIDGE_LOG (or log =)"
            check_log(setting, path)
            try:
                fd = open_named(path, append=True)
            except OSError as e:
                raise ConfigError(f"{setting}={path!r}: {e.strerror or e}") from None
            return cls(os.fdopen(fd, "a", encoding="utf-8", buffering=1), level, path)
        return cls(None, level)

    def log(self, level: str, rule: str, message: str) -> None:
        if LEVELS.get(level, 20) < self.threshold or self.stream is None:
            return
        tag = f"[{escape(rule)}] " if rule else ""
        prefix = "" if level == "info" else f"{level}: "
        try:
            self.stream.write(f"ccbridge: {prefix}{tag}{escape(redact_text(message))}\n")
            self.stream.flush()
        except (OSError, ValueError) as e:
            self._failed(e)  # a full disk or a closed stderr must not take the session down

    def _failed(self, e: OSError | ValueError) -> None:
        if self.path is None:
            return
        stream, self.stream = self.stream, None
        with contextlib.suppress(OSError, ValueError):
            assert stream is not None
            stream.close()
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        say(f"ccbridge: error: logging to {escape(self.path)} stopped: {escape(why)}\n")

    def info(self, message: str, rule: str = "") -> None:
        self.log("info", rule, message)

    def warning(self, message: str, rule: str = "") -> None:
        self.log("warning", rule, message)

    def error(self, message: str, rule: str = "") -> None:
        self.log("error", rule, message)

    def debug(self, message: str, rule: str = "") -> None:
        self.log("debug", rule, message)


def say(text: str) -> None:
    """``text`` on stderr, if there is one: never raises (a daemon may have closed it)."""
    with contextlib.suppress(OSError):
        os.write(2, text.encode("utf-8", "replace"))
