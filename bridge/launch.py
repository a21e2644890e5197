"""Start the backend first (issue 11): the launch line needs only light imports, the
process is spawned with the standard library, and trio, the proxy and the stages are
imported and built while the backend boots; the session then adopts the running process
(``bridge.driver.ProcessBackend``). Nothing here imports trio or a stage."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence


def spawn(argv: Sequence[str], env: dict[str, str] | None = None,
          cwd: str | None = None) -> subprocess.Popen[bytes]:  # fmt: skip
    """The backend with piped stdio, in a session of its own (its process group is
    signalled and killed as one). Raises FileNotFoundError / PermissionError."""
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
        bufsize=0,
    )
