"""``file-tool-results``: Read, Write and Edit results carry Claude Code 2.1.220's file
record, which editors render as the file or as a diff.

Claude's user frame of each result carries a ``tool_use_result`` (twins file-tools,
file-tool-errors, parallel-tools): Write ``{type: create, filePath, content, structuredPatch:
[], originalFile: null, userModified: false}`` for a new file, ``{type: update, …,
structuredPatch, originalFile}`` for an overwrite; Edit ``{filePath, oldString, newString,
originalFile, structuredPatch, userModified, replaceAll}``; Read ``{type: text, file:
{filePath, content, numLines, startLine, totalLines}}``. cbc writes a sentence
(``Successfully created and wrote to new file: …``, ``Successfully edited file: …``) or the
file in its numbered layout (``   1→alpha``) and no record.

What the records need is on the session's wire: a new file's content is the Write call's
input; a Read's is cbc's layout without the numbers; an Edit's or an overwrite's
``originalFile`` is the file as this session last wrote, edited or read it, and the patch
(``structuredPatch``: unified hunks, 3 lines of context) follows from the two. A file the
session did not see first gets no record for an Edit or an overwrite (nothing would say
what it held), nor does any file after the result of a call of another tool that may
have changed it (Bash, an Agent, an MCP tool: what the rule knew is forgotten). A partial Read
(``offset``, ``limit``) or one of another layout (an image, a notebook) gets none either.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.stage import Context, Output, Stage, register
from compat.stages.hygiene import message_blocks, one_text
from compat.taskkit import remember

#: the calls whose results get a record, and those that change no file
_FILE_TOOLS = frozenset({"Read", "Write", "Edit"})
_HARMLESS = frozenset({"Glob", "Grep", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet"})
#: the most files and calls remembered, and the largest file kept
_MAX_FILES = 64
_MAX_CALLS = 256
_MAX_SIZE = 1 << 20
#: the most lines of a Read taken (cbc, as Claude, reads 2,000 lines unless told)
_MAX_READ = 2000
_NUMBERED = re.compile(r"^ *(\d+)\u2192(.*)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_CREATED = "Successfully created and wrote to new file:"
_OVERWROTE = "Successfully overwrote file:"
_EDITED = "Successfully edited file:"


def structured_patch(before: str, after: str) -> list[dict[str, Any]]:
    """The unified hunks from ``before`` to ``after`` (3 lines of context), as Claude's
    ``structuredPatch``: ``{oldStart, oldLines, newStart, newLines, lines}``."""
    hunks: list[dict[str, Any]] = []
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=3)
    for line in diff:
        head = _HUNK.match(line)
        if head is not None:
            o, ol, n, nl = head.groups()
            hunks.append(
                {
                    "oldStart": int(o),
                    "oldLines": int(ol) if ol is not None else 1,
                    "newStart": int(n),
                    "newLines": int(nl) if nl is not None else 1,
                    "lines": [],
                }
            )
        elif hunks and line[:1] in (" ", "-", "+"):
            hunks[-1]["lines"].append(line)
    return hunks


def read_content(text: str) -> str | None:
    """The file a Read showed in cbc's numbered layout (None: another layout)."""
    lines = text.split("\n")
    if not lines or len(lines) > _MAX_READ:
        return None
    out = []
    for i, line in enumerate(lines, start=1):
        m = _NUMBERED.match(line)
        if m is None or int(m.group(1)) != i:
            return None
        out.append(m.group(2))
    return "\n".join(out)


def _kept(name: str, given: Any) -> dict[str, Any]:
    """What is kept of a call's input until its result: a file call's, without a content
    of more than ``_MAX_SIZE`` (no record then, and the file is forgotten)."""
    if name not in _FILE_TOOLS or not isinstance(given, dict):
        return {}
    content = given.get("content")
    if isinstance(content, str) and len(content) > _MAX_SIZE:
        return {k: v for k, v in given.items() if k != "content"}
    return given


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@register
@attrs.define
class FileToolResults(Stage):
    """A Read, Write or Edit result carries Claude's file record (`tool_use_result`), built
    from what the session's wire shows of the file."""

    rule: ClassVar[str] = "file-tool-results"
    kinds: ClassVar[frozenset[str] | None] = frozenset({"assistant", "user"})

    #: path -> the file as the session last wrote, edited or read it
    _files: dict[str, str] = attrs.field(factory=dict, init=False)
    #: tool_use id -> (tool, input) of the calls whose results are to come
    _calls: dict[str, tuple[str, dict[str, Any]]] = attrs.field(factory=dict, init=False)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        if frame.key() == "assistant":
            self._note_calls(frame.view(wire.Assistant))
            return None
        obj = frame.view(wire.User)
        found = message_blocks(obj)
        if found is None:
            return None
        results = [b for b in found[1] if isinstance(b, dict) and b.get("type") == "tool_result"]
        records = [self._result(b) for b in results]
        if len(results) != 1 or records[0] is None or "tool_use_result" in obj:
            return None
        ctx.count(self.rule, "file-record")
        return (frame.replace({**obj, "tool_use_result": records[0]}),)

    def _note_calls(self, obj: wire.Assistant) -> None:
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                name = str(b.get("name"))
                remember(self._calls, b["id"], (name, _kept(name, b.get("input"))), cap=_MAX_CALLS)

    def _result(self, block: dict[str, Any]) -> dict[str, Any] | None:
        """The record of a file call's result (None: none); a call of another tool that
        may change files makes the rule forget them."""
        call = self._calls.pop(str(block.get("tool_use_id")), None)
        if call is None or call[0] not in _FILE_TOOLS:
            if call is None or call[0] not in _HARMLESS:
                self._files.clear()
            return None
        text = one_text(block.get("content"))
        path = _str(call[1].get("file_path"))
        if block.get("is_error") is True or text is None or path is None:
            return None
        return _MAKERS[call[0]](self, path, call[1], text)

    def _keep(self, path: str, content: str) -> None:
        if len(content) > _MAX_SIZE:
            self._files.pop(path, None)
            return
        remember(self._files, path, content, cap=_MAX_FILES)

    def _write(self, path: str, given: dict[str, Any], text: str) -> dict[str, Any] | None:
        content, before = _str(given.get("content")), self._files.pop(path, None)
        if content is None:
            return None
        self._keep(path, content)
        if text.startswith(_CREATED):
            return {
                "type": "create",
                "filePath": path,
                "content": content,
                "structuredPatch": [],
                "originalFile": None,
                "userModified": False,
            }
        if not text.startswith(_OVERWROTE) or before is None:
            return None
        return {
            "type": "update",
            "filePath": path,
            "content": content,
            "structuredPatch": structured_patch(before, content),
            "originalFile": before,
            "userModified": False,
        }

    def _edit(self, path: str, given: dict[str, Any], text: str) -> dict[str, Any] | None:
        old, new = _str(given.get("old_string")), _str(given.get("new_string"))
        before = self._files.pop(path, None)
        if not text.startswith(_EDITED) or before is None or old is None or new is None:
            return None
        if not old or old not in before:
            return None
        every = given.get("replace_all") is True
        after = before.replace(old, new) if every else before.replace(old, new, 1)
        self._keep(path, after)
        return {
            "filePath": path,
            "oldString": old,
            "newString": new,
            "originalFile": before,
            "structuredPatch": structured_patch(before, after),
            "userModified": False,
            "replaceAll": every,
        }

    def _read(self, path: str, given: dict[str, Any], text: str) -> dict[str, Any] | None:
        if "offset" in given or "limit" in given:
            return None
        content = read_content(text)
        if content is None:
            return None
        self._keep(path, content)
        n = content.count("\n") + 1
        return {
            "type": "text",
            "file": {
                "filePath": path,
                "content": content,
                "numLines": n,
                "startLine": 1,
                "totalLines": n,
            },
        }


_MAKERS = {
    "Write": FileToolResults._write,
    "Edit": FileToolResults._edit,
    "Read": FileToolResults._read,
}
