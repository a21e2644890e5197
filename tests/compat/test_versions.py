"""The verified versions live in one place (compat.versions) and everything reads them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import compat
from analysis import contract
from bridge import backends
from compat import stage, versions
from compat.versions import parse_version, version_key

REF = Path(__file__).resolve().parents[2] / "captures" / "reference"


def test_every_consumer_reads_the_one_record() -> None:
    assert compat.TARGET_CLAUDE_VERSION == versions.CLAUDE.version
    assert contract.TARGET_VERSION == versions.CLAUDE.version
    assert stage.Env(new_uuid=lambda: "u").target_version == versions.CLAUDE.version
    assert backends.CLAUDE_PACKAGE == f"@anthropic-ai/claude-code@{versions.CLAUDE.version}"
    assert backends.CBC_PACKAGE == f"codebuddy-agent-sdk=={versions.CBC.package_version}"


def test_the_verified_versions_have_their_reference_captures() -> None:
    # the record is about versions the repository holds evidence for
    assert (REF / f"claude-{versions.CLAUDE.version}").is_dir()
    assert (REF / f"cbc-{versions.CBC.version}").is_dir()
    got = parse_version((REF / f"claude-{versions.CLAUDE.version}/version.txt").read_text())
    assert got == versions.CLAUDE.version
    for v in versions.KNOWN_CLAUDE:
        assert (REF / f"claude-{v}").is_dir()


def test_parse_version() -> None:
    assert parse_version("2.1.220 (Claude Code)\n") == "2.1.220"
    assert parse_version("2.163.0") == "2.163.0"
    assert parse_version("codebuddy v2.163.0 (build x)") == "2.163.0"
    assert parse_version("no version here") is None
    assert parse_version("") is None


def test_version_key_orders_numerically() -> None:
    vs = ["2.1.99", "2.1.332", "2.1.220", "2.10.0"]
    assert sorted(vs, key=version_key) == ["2.1.99", "2.1.220", "2.1.332", "2.10.0"]


def test_install_takes_a_version(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def run(argv: Sequence[str]) -> int:
        calls.append(list(argv))
        return 0

    backends.install(
        tmp_path, ("claude", "cbc"), run=run, version={"claude": "2.1.332", "cbc": "0.3.280"}
    )
    joined = [" ".join(c) for c in calls]
    assert any(c.endswith("@anthropic-ai/claude-code@2.1.332") for c in joined), joined
    assert any(c.endswith("codebuddy-agent-sdk==0.3.280") for c in joined), joined
    calls.clear()
    backends.install(tmp_path, ("claude", "cbc"), run=run)
    joined = [" ".join(c) for c in calls]
    assert any(c.endswith(backends.CLAUDE_PACKAGE) for c in joined), joined
    assert any(c.endswith(backends.CBC_PACKAGE) for c in joined), joined
