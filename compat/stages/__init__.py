"""One module per rule family of PROTOCOL.md. Importing this package registers them all."""

from compat.stage import REGISTRY
from compat.stages import hygiene, init, lifecycle, session, tasks, workflow  # noqa: F401

__all__ = ["REGISTRY"]
