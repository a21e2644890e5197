"""The four layers (issue 10): ``compat`` the protocol core, ``bridge`` the runtime,
``analysis`` the tools that judge streams, ``harness`` the scripted models and scenarios.
A lower layer never imports a higher one, pyproject ships exactly the tree's packages, and
the tools work from an installed package, from any directory."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("compat", "bridge", "analysis", "harness")
#: what each layer may import at module level (a function may import a higher layer
#: lazily only where listed in LAZY)
ALLOWED = {
    "compat": {"compat"},
    "bridge": {"compat", "bridge"},
    "analysis": {"compat", "bridge", "analysis", "harness"},
    "harness": {"compat", "bridge", "harness"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.partition(".")[0])
    return found & set(LAYERS)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_itself_and_the_layers_below(layer: str) -> None:
    wrong = {
        str(p.relative_to(ROOT)): sorted(bad)
        for p in sorted((ROOT / layer).rglob("*.py"))
        if (bad := _imports(p) - ALLOWED[layer])
    }
    assert not wrong, wrong


def test_pyproject_ships_exactly_the_packages_of_the_tree() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = conf["package-dir"]
    tree = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for layer in LAYERS
        for p in (ROOT / layer).rglob("__init__.py")
    }
    listed = set(conf["packages"])
    assert listed >= tree | set(mapped)
    for data in listed - tree - set(mapped):  # data directories, not code
        top, _, rest = data.partition(".")
        parent = next((v for k, v in mapped.items() if data.startswith(k + ".")), None)
        where = ROOT / parent / data.rpartition(".")[2] if parent else ROOT / top / rest
        assert where.is_dir(), data
        assert not (where / "__init__.py").exists(), data
    assert {v for v in mapped.values()} == {"scenarios", "captures"}
    assert all((ROOT / d).is_dir() for d in mapped.values())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package as a user gets it: a wheel built from the checkout, unpacked alone."""
    out = tmp_path_factory.mktemp("wheel")
    src = out / "src"  # a copy of what the build reads: setuptools leaves build/ in it
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in (*LAYERS, "scenarios", "captures"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    site = out / "site"
    with zipfile.ZipFile(next(out.glob("*.whl"))) as z:
        z.extractall(site)
    return site


def _from(site: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from bridge.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(site), "CCBRIDGE_CONFIG": os.devnull}
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_tools_work_from_an_installed_package_in_any_directory(
    installed: Path, tmp_path: Path
) -> None:
    probe = _from(installed, tmp_path, "rules")  # the package is the wheel's, not the checkout
    assert probe.returncode == 0, probe.stderr
    where = subprocess.run(
        [sys.executable, "-c", "import harness.corpus as c; print(c.scenarios(), c.checkout())"],
        env={**os.environ, "PYTHONPATH": str(installed)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    scen, checkout = where.stdout.split()
    assert checkout == "None"
    assert Path(scen).is_relative_to(installed)
    table = _from(installed, tmp_path, "conformance", "--json")
    assert table.returncode == 0, table.stderr  # the twins and the known differences shipped
    listed = _from(installed, tmp_path, "scenario", "check", *map(str, Path(scen).glob("*.toml")))
    assert listed.returncode == 0, listed.stderr


def test_a_missing_dependency_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """h11 is part of the base install (one install has every command); an install that
    lost it still ends in one line."""
    code = (
        "import sys; sys.modules['h11'] = None\n"
        "from bridge.cli import main; sys.exit(main(['scenario', 'check', 'x.toml']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stderr.startswith("ccbridge scenario: error: "), done.stderr
    assert "h11" in done.stderr
    assert "Traceback" not in done.stderr
