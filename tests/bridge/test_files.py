"""Workflow scripts are read only below cwd, regular files, size-capped, no link out."""

from __future__ import annotations

import os
from pathlib import Path

from bridge.files import read_script


def test_reads_a_script_below_cwd(tmp_path: Path) -> None:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "a.js").write_text("export const meta = {}")
    assert read_script(str(tmp_path), "flows/a.js") == "export const meta = {}"
    assert read_script(str(tmp_path), str(tmp_path / "flows" / "a.js")) is not None


def test_refuses_paths_out_of_cwd(tmp_path: Path) -> None:
    cwd = tmp_path / "wd"
    cwd.mkdir()
    (tmp_path / "secret.js").write_text("x")
    assert read_script(str(cwd), "../secret.js") is None
    assert read_script(str(cwd), str(tmp_path / "secret.js")) is None
    os.symlink(tmp_path / "secret.js", cwd / "link.js")
    assert read_script(str(cwd), "link.js") is None  # a link leading out
    assert read_script(str(cwd), "link.js", extra_roots=[str(tmp_path)]) == "x"


def test_link_inside_cwd_is_fine_but_not_special_files(tmp_path: Path) -> None:
    (tmp_path / "real.js").write_text("ok")
    os.symlink(tmp_path / "real.js", tmp_path / "alias.js")
    assert read_script(str(tmp_path), "alias.js") == "ok"
    os.mkfifo(tmp_path / "fifo.js")
    assert read_script(str(tmp_path), "fifo.js") is None  # never blocks on a FIFO
    (tmp_path / "dir.js").mkdir()
    assert read_script(str(tmp_path), "dir.js") is None


def test_size_cap_and_bad_input(tmp_path: Path) -> None:
    (tmp_path / "big.js").write_bytes(b"x" * 2000)
    assert read_script(str(tmp_path), "big.js", max_bytes=1000) is None
    (tmp_path / "bin.js").write_bytes(b"\xff\xfe")
    assert read_script(str(tmp_path), "bin.js") is None
    assert read_script(str(tmp_path), "missing.js") is None
    assert read_script(str(tmp_path), "a\x00b") is None
    assert read_script("", "x.js") is None
