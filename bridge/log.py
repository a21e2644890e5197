"""Logging to stderr (or ``CCBRIDGE_LOG``): ``ccbridge: [rule] message``.

Never stdout (the protocol channel). Messages can quote backend strings, which are
untrusted: control characters are escaped before anything reaches a terminal, and
credential-looking values are redacted here (``compat.redact.redact_text``) whatever the
caller did (the launch line, a backend error, a stage's message). A log file
(``CCBRIDGE_LOG``, ``--log``) is created 0600, its missing directories 0700.
"""

from __future__ import annotations

import os
import sys
from typing import IO

from bridge.files import open_private
from compat.redact import redact_text

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def escape(text: str) -> str:
    """Make a string safe for a terminal: no escape sequences, no control characters."""
    out = []
    for ch in text:
        o = ord(ch)
        if o < 0x20 or o == 0x7F or 0x80 <= o < 0xA0:
            out.append("\\n" if ch == "\n" else "\\t" if ch == "\t" else f"\\x{o:02x}")
        else:
            out.append(ch)
    return "".join(out)


class Logger:
    def __init__(self, stream: IO[str] | None = None, level: str = "warning") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.threshold = LEVELS.get(level, 20)

    @classmethod
    def open(cls, path: str | None, level: str = "warning") -> Logger:
        """A logger to ``path`` (append; default stderr); a bad path or level is a
        ``ConfigError`` naming the setting."""
        from bridge.config import check_log
        from bridge.config import level as check_level

        check_level("CCBRIDGE_LOG_LEVEL (or log_level =)", level)
        if path:
            check_log("CCBRIDGE_LOG (or log =)", path)
            fd = open_private(path, append=True)
            return cls(os.fdopen(fd, "a", encoding="utf-8", buffering=1), level)
        return cls(None, level)

    def log(self, level: str, rule: str, message: str) -> None:
        if LEVELS.get(level, 20) < self.threshold:
            return
        tag = f"[{rule}] " if rule else ""
        prefix = "" if level == "info" else f"{level}: "
        try:
            self.stream.write(f"ccbridge: {prefix}{tag}{escape(redact_text(message))}\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed stderr must not take the session down

    def info(self, message: str, rule: str = "") -> None:
        self.log("info", rule, message)

    def warning(self, message: str, rule: str = "") -> None:
        self.log("warning", rule, message)

    def error(self, message: str, rule: str = "") -> None:
        self.log("error", rule, message)

    def debug(self, message: str, rule: str = "") -> None:
        self.log("debug", rule, message)
