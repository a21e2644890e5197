"""The CI drift check (issue 14): the installed Claude Code and cbc, read at zero model
cost (``--version``, ``--help``, the frames of one scripted session on the stand-in model),
must be the versions the bridge was verified with (``compat.versions``) and show no frame
type, field, value or flag their verified captures do not. When this fails: run ``ccbridge
drift`` (docs/drift.md) and update the rules before the verified versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import drift, drift_cmd
from bridge.backends import find_backend
from compat import versions
from compat.vocabulary import in_vocabulary
from harness import runner
from harness.scenario import load

pytestmark = pytest.mark.real_backend
SCENARIO = runner.REPO / "scenarios" / "simple-success.toml"
ADVICE = "(run `ccbridge drift` before upgrading; see docs/drift.md)"


@pytest.fixture(params=["claude", "cbc"])
def installed(request: pytest.FixtureRequest) -> tuple[str, list[str]]:
    argv = find_backend(request.param)
    if argv is None:
        pytest.skip(f"{request.param} not installed: run `ccbridge backends install`")
    return request.param, argv


def test_the_installed_cli_is_a_verified_version(installed: tuple[str, list[str]]) -> None:
    name, argv = installed
    version, help_text = drift_cmd.read_cli(argv)
    v = versions.BACKENDS[name]
    assert versions.is_verified(name, version), (
        f"{argv[0]} reports {name} {version}; the bridge was verified with {v.version} "
        f"({v.package} {v.package_version}) {ADVICE}"
    )
    changes = drift.compare_help(drift_cmd.verified_help(name), drift.parse_help(help_text))
    new = [c.text() for c in changes if c.unknown]
    assert not new, (
        f"{name} --help shows options or commands the rules do not know: {', '.join(new)} {ADVICE}"
    )


async def test_one_scripted_session_shows_nothing_unknown(
    installed: tuple[str, list[str]], tmp_path: Path
) -> None:
    name, argv = installed
    res = await runner.run(
        load(SCENARIO),
        runner.Target(name, tuple(argv)),
        tmp_path / "run.jsonl",
        source=SCENARIO.name,
        client="claude",  # as the verified twin's client wrote
    )
    assert res.frames, f"{name}: no frame from the scripted session (exit {res.exit})"
    cap = drift_cmd.read_capture(tmp_path / "run.jsonl")
    verified = drift.vocabulary(
        drift_cmd.read_capture(drift_cmd.twin("simple-success", drift_cmd.TWIN_ROLE[name]))
    )
    changes = drift.compare(
        verified, drift.vocabulary(cap), known=drift_cmd.known_vocabulary(name).merge(verified)
    )
    new = [c.text() for c in changes if c.unknown]
    assert not new, (
        f"{name} {res.backend_version} wrote what no verified capture shows: "
        f"{'; '.join(new)} {ADVICE}"
    )
    if name == "claude":
        odd = {
            f"{f.get('type')}/{f.get('subtype')}"
            for f in res.frames
            if not in_vocabulary(f.get("type"), f.get("subtype"))
        }
        assert not odd, f"claude wrote frame types outside the vocabulary: {odd} {ADVICE}"
