"""The versions the bridge was verified with: the one place that records them.

Every rule was written against the captures of these versions (``captures/reference/``,
``captures/twins/``); ``ccbridge backends install`` installs them, ``ccbridge drift``
compares newer ones against them, and the CI drift test (``tests/bridge/test_drift_ci.py``)
fails when an installed CLI is none of them. Pure data, no I/O.
"""

from __future__ import annotations

from typing import NamedTuple


class Verified(NamedTuple):
    """(A NamedTuple, not attrs: ``--version`` imports this module, and nothing heavy.)"""

    name: str  # "claude" | "cbc"
    version: str  # what the CLI's ``--version`` reports
    registry: str  # "npm" | "pypi"
    package: str  # the registry's package name
    package_version: str  # the package version that ships ``version``

    @property
    def spec(self) -> str:
        """The install spec for the registry's own client (npm / pip)."""
        return spec_for(self, self.package_version)


def spec_for(v: Verified, package_version: str) -> str:
    """``package@version`` (npm) or ``package==version`` (pip)."""
    sep = "@" if v.registry == "npm" else "=="
    return f"{v.package}{sep}{package_version}"


#: the Claude Code version the cbc-to-claude profile makes a stream look like by default
TARGET_CLAUDE_VERSION = "2.1.220"
#: the versions ``--target`` / ``CCBRIDGE_TARGET`` / ``target =`` may name (what each
#: changes: ``compat.target``); the first is the default
TARGET_VERSIONS = (TARGET_CLAUDE_VERSION, "2.1.332")
#: Claude Code versions a target may name (``--target``); the first is the default
CLAUDE = Verified(
    "claude", TARGET_CLAUDE_VERSION, "npm", "@anthropic-ai/claude-code", TARGET_CLAUDE_VERSION
)
#: cbc: the native ``codebuddy-headless`` that PyPI ``codebuddy-agent-sdk`` 0.3.274 ships
CBC = Verified("cbc", "2.163.0", "pypi", "codebuddy-agent-sdk", "0.3.274")
BACKENDS: dict[str, Verified] = {"claude": CLAUDE, "cbc": CBC}

#: the client SDKs the drop-in is proved against (tests/js/package.json, pyproject.toml)
TS_SDK = "0.3.220"  # @anthropic-ai/claude-agent-sdk, the 2.1.220 twin
TS_SDK_NEXT = "0.3.332"  # the newer one the replay tests also run (Claude Code 2.1.332)
LEGACY_PY_SDK = "0.0.25"  # claude-code-sdk, before the rename

#: Claude Code versions whose captures are vendored (captures/reference/claude-*): known,
#: not verified; a drift report names them
KNOWN_CLAUDE = ("2.1.197", "2.1.220", "2.1.332")
#: cbc versions whose captures are vendored (captures/reference/cbc-*)
KNOWN_CBC = ("2.117.0", "2.163.0")


def parse_version(text: str) -> str | None:
    """The version number in a CLI's ``--version`` output (``2.1.220 (Claude Code)``,
    ``2.163.0``), or None."""
    for word in text.split():
        parts = word.strip("v(),").split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts[:3]) and parts[0]:
            return ".".join(parts[:3]) if len(parts) >= 3 else ".".join(parts)
    return None


def version_key(v: str) -> tuple[int, ...]:
    """A sortable key for a dotted version (non-numeric parts sort as 0)."""
    out = []
    for p in v.split("."):
        digits = "".join(c for c in p if c.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def is_verified(name: str, version: str | None) -> bool:
    return version is not None and BACKENDS[name].version == version
