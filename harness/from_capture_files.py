"""What a converted scenario cannot take from a capture (``ccbridge scenario
from-capture``): the files the session's tools read. ``differing`` lists the tool calls
whose results will differ (a file read that the session did not write itself and that the
scenario's ``files`` do not hold, a search in the working directory, the network, an MCP
tool); ``dir_files`` reads a directory's text files for ``--files DIR`` (redacted: secrets
never travel); ``header_files`` takes the files a capture's header carries (the derived
captures' workflow scripts). Pure but for ``dir_files``.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

import attrs

from compat.capture import Capture
from compat.redact import redact_text
from harness.from_capture_model import Call, Item

#: what a tool reads, by tool: the input field naming it
READS = {
    "Read": "file_path",
    "NotebookRead": "notebook_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "Glob": "pattern",
    "Grep": "pattern",
    "LS": "path",
}
MAX_FILE = 256 * 1024
MAX_FILES_TOTAL = 4 * 1024 * 1024


class FilesError(ValueError):
    pass


# -- what will differ ---------------------------------------------------------------------
@attrs.frozen
class Differing:
    """A call whose result will differ: its tool, the part of its input that names what
    it reads (``harness.scenario.Differs``), and why, in words."""

    tool: str
    input: dict[str, Any]
    reason: str

    def text(self) -> str:
        return self.reason

    def table(self) -> dict[str, Any]:
        return {"tool": self.tool, "input": self.input, "reason": self.reason}


def differing(
    items: list[Item], results: dict[str, bool], files: dict[str, str]
) -> list[Differing]:
    """The tool calls whose results will differ in the scenario: what they read is not in
    it (files, the network, an MCP server)."""
    calls = [c for it in items for c in it.calls]
    written = {c.input.get("file_path") for c in calls if c.tool == "Write"}
    out: list[Differing] = []
    for c in calls:
        d = _differs(c, results.get(c.id), written, files)
        if d is not None and d not in out:
            out.append(d)
    return out


def _differs(
    c: Call, is_error: bool | None, written: set[Any], files: dict[str, str]
) -> Differing | None:
    if c.tool.startswith("mcp__"):
        return Differing(c.tool, {}, f"{c.tool}: an MCP tool (the scenario has no MCP server)")
    if c.tool in ("WebFetch", "WebSearch"):
        key = "url" if c.tool == "WebFetch" else "query"
        what = c.input.get(key)
        return Differing(c.tool, {key: what}, f"{c.tool} {what}: the network")
    field = READS.get(c.tool)
    target = c.input.get(field) if field is not None else None
    if field is None or not isinstance(target, str) or is_error is True or target in written:
        return None  # (a call that failed fails the same way without the file)
    reason = _read(c, target, files)
    return None if reason is None else Differing(c.tool, {field: target}, reason)


def _read(c: Call, target: str, files: dict[str, str]) -> str | None:
    """A read of ``target`` (a path, or a search pattern), unless ``files`` hold it."""
    if c.tool in ("Glob", "Grep"):
        where = c.input.get("path") if isinstance(c.input.get("path"), str) else "{CWD}"
        inside = str(where).startswith("{CWD}")
        return None if files and inside else f"{c.tool} {target!r} in {where}"
    rel = target[len("{CWD}/") :] if target.startswith("{CWD}/") else None
    if rel is not None and (rel in files or (c.tool == "LS" and files)):
        return None
    return f"{c.tool} {target}"


# -- files ----------------------------------------------------------------------------------
def dir_files(root: str | Path, notes: list[str]) -> dict[str, str]:
    """The text files below ``root`` (no links, no ``.git``), redacted, by relative path."""
    base = Path(root)
    if not base.is_dir():
        raise FilesError(f"--files {root}: not a directory")
    out: dict[str, str] = {}
    total = 0
    left: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(
            d for d in dirnames if d != ".git" and not os.path.islink(os.path.join(dirpath, d))
        )
        for name in sorted(filenames):
            p = Path(dirpath, name)
            rel = p.relative_to(base).as_posix()
            text = _text_file(p)
            if text is None or total + len(text) > MAX_FILES_TOTAL:
                left.append(rel)
                continue
            total += len(text)
            out[rel] = redact_text(text)
    if left:
        notes.append(
            f"--files: {len(left)} file(s) left out (links, not UTF-8 text, over "
            f"{MAX_FILE // 1024} KiB, or past {MAX_FILES_TOTAL // (1024 * 1024)} MiB in all): "
            + ", ".join(left[:5])
            + (" ..." if len(left) > 5 else "")
        )
    return out


def _text_file(p: Path) -> str | None:
    if p.is_symlink() or not p.is_file():
        return None
    try:
        if p.stat().st_size > MAX_FILE:
            return None
        return p.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def header_files(cap: Capture) -> dict[str, str]:
    files = cap.header.get("files")
    if not isinstance(files, dict):
        return {}
    out = {}
    for k, v in files.items():
        p = PurePosixPath(str(k))
        if isinstance(v, str) and p.parts and not p.is_absolute() and ".." not in p.parts:
            out[str(k)] = v
    return out
