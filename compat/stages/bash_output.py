"""``bash-output``: a Bash call that succeeded reaches the client as Claude Code 2.1.220
writes it.

cbc 2.163.0 writes a foreground Bash call's result as a report: ``Command: …\\nStdout:
…\\n\\nStderr: …\\nExit Code: 0\\nSignal: (none)`` in one text block, and no
``tool_use_result``. Claude writes the output alone, as one string — stdout, then stderr,
each without its trailing newline, empty ones left out; ``(Bash completed with no
output)`` when both are empty — and the frame's ``tool_use_result`` is the output record
``{stdout, stderr, interrupted, isImage, noOutputExpected}`` (twins parallel-tools,
max-turns, permission-allow, thinking-partial; 17 calls of 17). Editors show that string
as the call's output (Zed's ACP adapter: ``rawOutput``; the AI SDK provider's
``tool-result``), so through the bridge they showed cbc's report.

A failed call (an exit code other than 0, a signal, ``is_error``) is ``tool-errors``'. A
call that runs in the background (``run_in_background``, or moved there when it outlived
its own ``timeout``) keeps cbc's text (``Status: Running in background with task_id: X``,
the model reads it) and gets Claude's record of it: the empty output record with
``backgroundTaskId`` and, when moved (``Reason: Auto-backgrounded after hitting foreground
timeout``), ``timedOutAfterMs``, the call's timeout (twins bg-bash, bg-shell-kill,
shell-timeout). ``noOutputExpected`` is Claude's guess from the command, made as Claude makes it
(read in 2.1.220's binary): true when every command of the line (split at ``&&``, ``||``,
``;``, ``|`` and newlines) starts with one of ``_SILENT`` (``touch``, ``mkdir``, ``cd``…),
whatever the call printed (twins file-tool-errors: a ``printf … >`` that printed nothing
is false).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import attrs

from compat import wire
from compat.frames import Frame
from compat.session import ToolUse
from compat.stage import Context, Output, Stage, register
from compat.stages.hygiene import bash_layout, message_blocks, one_text

#: Claude's text for a Bash call that printed nothing
NO_OUTPUT = "(Bash completed with no output)"
_EMPTY = "(empty)"


def _stream(text: str) -> str:
    """One of cbc's streams as Claude gives it: ``(empty)`` is nothing; no final newline."""
    return "" if text == _EMPTY else text.rstrip("\n")


def claude_output(text: str) -> tuple[str, str] | None:
    """Claude's stdout and stderr of a successful Bash call, from cbc's report (None: not
    a report of a call that exited 0)."""
    layout = bash_layout(text)
    if layout is None:
        return None
    out, err, code, signal = layout
    if code.strip() != "0" or signal.strip() not in ("(none)", ""):
        return None
    return _stream(out), _stream(err)


#: the programs Claude expects no output from (2.1.220: a command line of them alone)
_SILENT = frozenset(
    {"mv", "cp", "rm", "mkdir", "rmdir", "chmod", "chown", "chgrp", "touch", "ln", "cd"}
    | {"export", "unset", "wait"}
)
_SEPARATORS = re.compile(r"&&|\|\||[;|\n]")


def no_output_expected(command: Any) -> bool:
    """Claude's guess: every command of the line is one of ``_SILENT``."""
    if not isinstance(command, str):
        return False
    words = [part.split(maxsplit=1)[:1] for part in _SEPARATORS.split(command)]
    firsts = [w[0] for w in words if w]
    return bool(firsts) and all(w in _SILENT for w in firsts)


def _record(out: str, err: str, command: Any) -> dict[str, Any]:
    """Claude's ``tool_use_result`` for a Bash call."""
    return {
        "stdout": out,
        "stderr": err,
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": no_output_expected(command),
    }


#: cbc's report of a call that runs in the background, and of one it moved there
_BACKGROUND = re.compile(r"^Status: Running in background with task_id: (\S+)$", re.MULTILINE)
_MOVED = "Auto-backgrounded after hitting foreground timeout"


def _background(text: str, use: ToolUse) -> dict[str, Any] | None:
    """Claude's record of a call running in the background, from cbc's report (None: not
    such a report)."""
    found = _BACKGROUND.search(text)
    if found is None:
        return None
    record = {**_record("", "", use.input.get("command")), "backgroundTaskId": found.group(1)}
    timeout = use.input.get("timeout")
    if _MOVED in text and type(timeout) is int:
        record["timedOutAfterMs"] = timeout
    return record


@register
@attrs.define
class BashOutput(Stage):
    """A successful Bash call's result is its output, as Claude writes it: the text alone
    (not cbc's `Command:/Stdout:/Stderr:/Exit Code` report) and the output record in
    `tool_use_result`."""

    rule: ClassVar[str] = "bash-output"
    reads: ClassVar[frozenset[str]] = frozenset({"tool_uses"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.User)
        found = message_blocks(obj)
        if found is None:
            return None
        message, content = found
        records: list[dict[str, Any]] = []
        blocks = [self._block(b, records, ctx) for b in content]
        if not records:
            return None
        new: dict[str, Any] = {**obj, "message": {**message, "content": blocks}}
        if len(records) == 1 and len(content) == 1 and "tool_use_result" not in obj:
            new["tool_use_result"] = records[0]
        ctx.count(self.rule, "rewritten-output", len(records))
        return (frame.replace(new),)

    def _block(self, block: Any, records: list[dict[str, Any]], ctx: Context) -> Any:
        """The block, a successful Bash call's result in Claude's words (its output
        record added to ``records``)."""
        use = self._bash_call(block, ctx)
        if use is None:
            return block
        text = one_text(block.get("content"))
        streams = claude_output(text) if text is not None else None
        if streams is None:
            moved = _background(text, use) if text is not None else None
            if moved is not None:
                records.append(moved)
            return block
        out, err = streams
        records.append(_record(out, err, use.input.get("command")))
        return {**block, "content": "\n".join(s for s in (out, err) if s) or NO_OUTPUT}

    @staticmethod
    def _bash_call(block: Any, ctx: Context) -> ToolUse | None:
        """The call to Bash a tool result (not failed) answers, or None."""
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            return None
        if block.get("is_error") is True:
            return None
        use_id = block.get("tool_use_id")
        use = ctx.state.tool_uses.get(use_id) if isinstance(use_id, str) else None
        return use if use is not None and use.name == "Bash" else None
