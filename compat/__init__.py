"""The protocol: pure, synchronous, no I/O. See ARCHITECTURE.md and PROTOCOL.md."""

__version__ = "0.1.0"
#: the Claude Code version the cbc-to-claude profile makes a stream look like (recorded,
#: with every other verified version, in compat.versions)
from compat.versions import TARGET_CLAUDE_VERSION as TARGET_CLAUDE_VERSION
