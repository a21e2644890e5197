"""The protocol: pure, synchronous, no I/O. See ARCHITECTURE.md and PROTOCOL.md."""

__version__ = "0.1.0"
#: the Claude Code version the cbc-to-claude profile makes a stream look like (recorded,
#: with every other verified version, in compat.versions)
from compat.versions import TARGET_CLAUDE_VERSION as TARGET_CLAUDE_VERSION

#: the longest line read as a line (64 MiB lines must pass as ordinary lines, issue "Core";
#: the default leaves headroom); here, not in compat.framing, so the settings read before
#: the backend is spawned import nothing more (bridge.config)
DEFAULT_MAX_LINE = 128 * 1024 * 1024
