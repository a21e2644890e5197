"""``python -m bridge`` is ``ccbridge``."""

from bridge.cli import entry

entry()
