"""Where the scenario corpus, the captures and the conformance page are, from a checkout or from an
installed package.

In a checkout (this file's parent directory holds ``pyproject.toml``), the repository's own
``scenarios/`` and ``captures/``. From an installed package, the copies the build mapped into
it (pyproject ``package-dir``: ``scenarios`` -> ``harness.scenarios``, ``captures`` ->
``analysis.captures``), so ``ab``, ``conformance``, ``drift`` and ``scenario`` work from any
directory. Nothing here imports more than the standard library."""

from __future__ import annotations

import importlib.util
from pathlib import Path

#: the directory the packages are in: the checkout's root, or site-packages; scenario
#: files name it ``{REPO}`` (``{PYTHON} {REPO}/harness/mcp_server.py``)
CODE = Path(__file__).resolve().parents[1]


def checkout() -> Path | None:
    """The repository root when running from a checkout, else None."""
    return CODE if (CODE / "pyproject.toml").is_file() and (CODE / "scenarios").is_dir() else None


def _data(top: str, package: str) -> Path:
    root = checkout()
    if root is not None:
        return root / top
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise FileNotFoundError(f"the package data {package} is not installed")
    return Path(locations[0])


def scenarios() -> Path:
    """The scenario corpus (``scenarios/``)."""
    return _data("scenarios", "harness.scenarios")


def scenario_file(spec: str) -> Path:
    """A scenario given by name or as a file, as every command takes one (``ab``, ``drift
    --scenarios``, ``scenario run``): ``simple-success`` is the corpus's
    ``scenarios/simple-success.toml``; a path with a ``.toml`` suffix or a directory part is
    that file. A name the corpus does not have is a ``FileNotFoundError`` naming the closest
    ones."""
    path = Path(spec)
    if path.suffix == ".toml" or len(path.parts) != 1:
        return path
    corpus = scenarios()
    found = corpus / f"{spec}.toml"
    if found.is_file() or path.is_file():
        return found if found.is_file() else path
    import difflib

    close = difflib.get_close_matches(spec, scenario_names(), n=3)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise FileNotFoundError(
        f"no scenario named {spec!r} ({hint}a name is a file in {corpus} without .toml)"
    )


def scenario_names() -> list[str]:
    """The names of the corpus's scenarios (its files' stems)."""
    return sorted(p.stem for p in scenarios().glob("*.toml"))


def captures() -> Path:
    """The captures (``captures/``: ``twins/``, ``reference/``, the golden sessions)."""
    return _data("captures", "analysis.captures")


def conformance_doc() -> Path | None:
    """The checkout's ``docs/conformance.md`` (the conformance tables' home), or None when
    installed."""
    root = checkout()
    return root / "docs" / "conformance.md" if root is not None else None
