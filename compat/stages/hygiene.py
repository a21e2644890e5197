"""``private-fields`` and ``vocabulary``: nothing reaches a Claude client that Claude
Code 2.1.220 would not send.

``private-fields``: cbc stamps ``__timestamp``, ``_requestId``, ``_messageId``, ``_meta``,
``errors_info`` on most frames (top level). Mode ``keep`` leaves them (for debugging).
cbc writes the underscore fields last, so the frame without them is its line cut before
them (the line filter ``compat.linefilters.PrivateTail``: the trailing run is checked to
hold private fields only): the other fields keep the bytes cbc wrote (``1.50`` is not
rewritten ``1.5``: the same JSON value). Any other shape (``errors_info``, which cbc
writes mid-object; an escape sequence before the run, which could spell a private key:
``"\\u005fmeta"``; a private field outside the run) is filtered from the parsed object and
written anew.
cbc also writes a private ``_meta`` (``rawResponse``: exit code, signal, …; ``renderer``)
inside the ``tool_result`` blocks of a ``user`` frame's ``message.content`` (twins
permission-allow, user-line-during-first-turn); Claude has no such key: it is removed there
too.

``vocabulary``: frame types and ``system`` subtypes outside the 2.1.220 vocabulary
(``compat.vocabulary``) are dropped and counted; cbc's top-level ``type:"error"`` frame
becomes a log line, because the Python SDK treats ``error``/``end`` as its own sentinels.
cbc's ``system/status`` with ``status: null`` (at every turn start, and after an
interrupt) is dropped and counted (``dropped:system/status-null``): Claude 2.1.220 sends
``system/status`` only for a real state (``requesting``, with
``--include-partial-messages``; twins ``*.claude.jsonl``). ``init-once``, which releases a
held init on that frame, and ``control-reply``'s session start run before it (profile
order: ``init-once`` < ``private-fields`` < ``vocabulary``; ``control-reply`` reads
``session``'s state).
"""

from __future__ import annotations

import re
from itertools import islice
from typing import Any, ClassVar, cast

import attrs

from compat import wire
from compat.frames import Frame
from compat.linefilters import (
    LINE_SEPARATORS,
    PRIVATE,
    PRIVATE_FIELDS,
    PrivateTail,
    block_meta_before,
    escape_line_separators,
)
from compat.linefilters import cut as cut_line
from compat.redact import redact_obj
from compat.stage import Context, Output, Stage, register
from compat.stages.turns import REJECTED
from compat.text import clip
from compat.vocabulary import in_vocabulary


@register
@attrs.define
class PrivateFields(Stage):
    """Strip cbc's private top-level fields (`__timestamp`, `_requestId`, `_meta`, ...)."""

    rule: ClassVar[str] = "private-fields"
    modes: ClassVar[tuple[str, ...]] = ("strip", "keep")
    #: every frame (looking for the fields on the bytes is its own first step:
    #: ``compat.linefilters.PrivateTail``)
    kinds: ClassVar[frozenset[str] | None] = None

    _tail: PrivateTail = attrs.field(factory=PrivateTail, init=False)

    def interested(self, type_: str | None, subtype: str | None) -> bool:
        return self.mode != "keep"

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        raw = frame.raw
        found = self._tail.find(raw) if raw else None
        if found is None:  # a parse tells: the top-level fields, a user frame's blocks
            obj = frame.obj
            return self._filtered(frame, obj, obj.get("type") == "user")
        cut, fields = found
        if not fields:
            return None
        if block_meta_before(raw, cut):
            return self._filtered(frame, frame.obj, True)
        return (_cut(frame, cut, fields),)

    @staticmethod
    def _filtered(frame: Frame, obj: dict[str, Any], inner: bool) -> Output:
        """``obj`` without its private top-level fields (and, ``inner``, without the
        ``_meta`` of a user frame's tool_result blocks), re-serialized."""
        content = _without_block_meta(cast("wire.User", obj)) if inner else None
        if content is None:
            return (frame.replace(_public(obj)),) if _has_private(obj) else None
        kept = _public(obj)
        kept["message"] = {**obj["message"], "content": content}
        return (frame.replace(kept),)


def _cut(frame: Frame, cut: int, fields: int) -> Frame:
    """The line without its trailing run of ``fields`` private fields (from ``cut``): the
    bytes are cut, never parsed for it (a JSON object still: ``compat.linefilters.PrivateTail``); an
    object a rule parsed already is cut alike (the members before the run, then the run's:
    no private name comes before it, and the first of duplicates keeps its place)."""
    raw = cut_line(frame.raw, cut)
    if frame.parsed:
        return frame.replace_raw(raw, _head(frame.obj, fields))
    return frame.replace_raw(raw, proven=frame.proven)


def _public(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without its private top-level fields."""
    return {k: v for k, v in obj.items() if k not in PRIVATE}


def _has_private(obj: dict[str, Any]) -> bool:
    return any(k in obj for k in PRIVATE_FIELDS)


def _head(obj: dict[str, Any], fields: int) -> dict[str, Any]:
    """``obj`` without its last ``fields`` members."""
    return dict(islice(obj.items(), len(obj) - fields))


def _without_block_meta(obj: wire.User) -> list[Any] | None:
    """A user frame's ``message.content`` without the ``_meta`` of its tool_result blocks;
    None when no block has one."""
    content = _content(obj.get("message"))
    if not any(isinstance(b, dict) and "_meta" in b for b in content):
        return None
    return [_without_meta(b) if _is_block(b, "tool_result") else b for b in content]


def _without_meta(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "_meta"}


def _content(message: Any) -> list[Any]:
    """A message's ``content`` (``[]`` when it is not a list)."""
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def message_blocks(obj: wire.User) -> tuple[dict[str, Any], list[Any]] | None:
    """A user frame's ``message`` and its list of content blocks (None: no such list)."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(message, dict) or not isinstance(content, list):
        return None
    return cast("dict[str, Any]", message), content


def _is_block(block: Any, block_type: str) -> bool:
    """A content block of that type."""
    return isinstance(block, dict) and block.get("type") == block_type


#: cbc's Bash result text: ``Command: …\nStdout: …\n\nStderr: …\n\nExit Code: N\nSignal: …``
#: (an empty stream is ``(empty)`` and has no blank line after it)
_COMMAND, _STDOUT, _STDERR = "Command: ", "\nStdout: ", "\nStderr: "
_EXIT, _SIGNAL = "Exit Code: ", "Signal: "


def bash_layout(text: str) -> tuple[str, str, str, str] | None:
    """Stdout, stderr, exit code and signal of cbc's Bash result text, or None when it is
    not laid out so: what ``Command: .*?\nStdout: (.*?)\n\n?Stderr: (.*?)\n\n?Exit Code:
    ([^\n]*)\nSignal: ([^\n]*)`` (DOTALL, whole text) gives, found in linear time: the
    text is the tool's output (a command the model wrote), and that regex backtracks
    (2.6 s on 44 KB of repeated ``\n\nStderr: ``). The exit code and signal are the last two
    lines; stdout ends at the first stderr marker after the first stdout marker, stderr at
    the newline (or blank line) before the exit code. What a client's PostToolUse hook
    added for the model (cbc appends ``<system-reminder data-role="tool-hint">…`` after
    the signal line; Claude gives the model that context apart) is not the output."""
    if not text.startswith(_COMMAND):
        return None
    text = _without_hints(text)
    status = _exit_and_signal(text)
    if status is None:
        return None
    exit_nl, code, sig = status
    streams = _stdout_and_stderr(text, exit_nl)
    if streams is None:
        return None
    return streams[0], streams[1], code, sig


#: how cbc appends a hook's context for the model to a tool's result text
_HINT = '\n<system-reminder data-role="tool-hint">'
_HINT_END = "</system-reminder>"


def _without_hints(text: str) -> str:
    """``text`` without the hook contexts cbc appended to it."""
    while text.endswith(_HINT_END) and (cut := text.rfind(_HINT)) >= 0:
        text = text[:cut]
    return text


def _exit_and_signal(text: str) -> tuple[int, str, str] | None:
    """The last two lines of a Bash result text, ``Exit Code: …`` and ``Signal: …``: where
    the first starts (its newline), the code, the signal."""
    nl = _line_before(text, len(text), _SIGNAL)
    if nl < 0:
        return None
    exit_nl = _line_before(text, nl, _EXIT)
    if exit_nl < 0:
        return None
    return exit_nl, text[exit_nl + 1 + len(_EXIT) : nl], text[nl + 1 + len(_SIGNAL) :]


def _line_before(text: str, end: int, label: str) -> int:
    """The newline that starts the last line of ``text[:end]`` when that line starts with
    ``label``; -1 otherwise."""
    nl = text.rfind("\n", 0, end)
    return nl if nl >= 0 and text.startswith(label, nl + 1) else -1


def _stdout_and_stderr(text: str, exit_nl: int) -> tuple[str, str] | None:
    """A Bash result's stdout and stderr, before its exit code line (at ``exit_nl``)."""
    out_at = text.find(_STDOUT, len(_COMMAND))
    if out_at < 0:
        return None
    out_start = out_at + len(_STDOUT)
    err_at = text.find(_STDERR, out_start, exit_nl)
    if err_at < 0:
        return None
    err_start = err_at + len(_STDERR)
    if err_start > exit_nl:
        return None
    out_end = _before_blank(text, out_start, err_at)
    return text[out_start:out_end], text[err_start : _before_blank(text, err_start, exit_nl)]


def _before_blank(text: str, start: int, end: int) -> int:
    """Where a stream that runs to ``end`` ends: before the newline that makes a blank
    line with the next marker's."""
    return end - 1 if end > start and text[end - 1] == "\n" else end


#: a file tool's error for a missing path, which Claude follows with the working directory
_NO_FILE = "File does not exist."
_CWD_NOTE = "Note: your current working directory is "
_READ_TOOLS = frozenset({"Read", "Edit", "Write", "NotebookEdit", "MultiEdit"})
_TOOL_USE_ERROR = re.compile(r"<tool_use_error>(?P<text>.*)</tool_use_error>", re.DOTALL)
#: an Edit whose old_string is not in the file: cbc adds advice for the model (in Chinese)
#: and quotes the string; Claude writes its sentence and the string, wrapped (twins
#: file-tool-errors)
_NOT_FOUND = "String to replace not found in file."
_CBC_NOT_FOUND = re.compile(
    r'(?:Error: )?String to replace not found in file\.[^\n]*\nString: "(?P<s>.*)"', re.DOTALL
)


def one_text(content: Any) -> str | None:
    """A tool result's content as one text: a string, or a single text block's text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        block = content[0]
        text = block.get("text") if block.get("type") == "text" else None
        return text if isinstance(text, str) else None
    return None


def _failed(block: dict[str, Any]) -> bool:
    """cbc says the call failed: on the block, or only in its private ``_meta.rawResponse``
    (a Bash exit status other than 0, a signal, ``is_error``)."""
    if block.get("is_error") is True:
        return True
    meta = block.get("_meta")
    raw = meta.get("rawResponse") if isinstance(meta, dict) else None
    return isinstance(raw, dict) and _raw_failed(raw)


def _raw_failed(raw: dict[str, Any]) -> bool:
    """A ``_meta.rawResponse`` that says the call failed."""
    code = raw.get("exitCode")
    return (
        raw.get("is_error") is True
        or (type(code) is int and code != 0)
        or (isinstance(raw.get("signal"), str) and bool(raw["signal"]))
    )


def _text_of(content: Any) -> str | None:
    """A tool_result's content as one string (a string, or a list of text blocks only)."""
    if isinstance(content, str):
        return content
    texts = _texts(content)
    return "\n".join(texts) if texts else None


def _texts(content: Any) -> list[str]:
    """The texts of a list of text blocks only (``[]`` for anything else)."""
    if not isinstance(content, list) or not all(_is_text(b) for b in content):
        return []
    return [b["text"] for b in content]


def _is_text(block: Any) -> bool:
    return _is_block(block, "text") and isinstance(block.get("text"), str)


def claude_error_text(text: str) -> str:
    """Claude's text for a failed tool call, from cbc's: a Bash that exited non-zero is
    ``Exit code N`` then its stdout and stderr (each without its trailing newline; empty
    ones left out); cbc's ``<tool_use_error>…</tool_use_error>`` wrapper is removed; the
    rejection of an interrupted call is Claude's constant; an Edit's string not found is
    Claude's sentence and the string, in Claude's wrapper. A Bash ended by a signal keeps
    cbc's text: Claude writes a status its own shell made up, which cbc's wire lacks.
    (``ToolErrors`` adds Claude's ``Note: your current working directory is …`` to a
    file tool's ``File does not exist.``.)"""
    bash = bash_layout(text)
    if bash is not None:
        return _bash_error_text(text, bash)
    not_found = _CBC_NOT_FOUND.fullmatch(text.strip())
    if not_found is not None:
        return f"<tool_use_error>{_NOT_FOUND}\nString: {not_found['s']}</tool_use_error>"
    wrapped = _TOOL_USE_ERROR.fullmatch(text.strip())
    if wrapped is not None:
        return wrapped["text"]
    if text.strip() == REJECTED:
        return REJECTED
    return text


def _bash_error_text(text: str, bash: tuple[str, str, str, str]) -> str:
    """``Exit code N``, then the streams that are not empty; a Bash without an exit code
    (ended by a signal) keeps cbc's ``text``."""
    out, err, code, _ = bash
    code = code.strip()
    if not code.lstrip("-").isdigit():
        return text
    kept = [s.rstrip("\n") for s in (out, err) if s != "(empty)" and s.rstrip("\n")]
    return "\n".join([f"Exit code {code}", *kept])


def _tool_use_result(text: str) -> str:
    """A failed call's ``tool_use_result`` as Claude writes it, from its text (a
    ``<tool_use_error>`` wrapper left out)."""
    if text == REJECTED:
        return "User rejected tool use"
    wrapped = _TOOL_USE_ERROR.fullmatch(text)
    text = wrapped["text"] if wrapped is not None else text
    return text if text.startswith("Error: ") else f"Error: {text}"


@register
@attrs.define
class ToolErrors(Stage):
    """A tool call cbc reports failed (on its result block, or only in the private
    `_meta.rawResponse`: exit code, signal, `is_error`) reaches the client as Claude writes
    it: `is_error: true`, the text as one string in Claude's words, `tool_use_result`
    `"Error: …"`."""

    rule: ClassVar[str] = "tool-errors"
    reads: ClassVar[frozenset[str]] = frozenset({"cwd", "tool_uses"})
    kinds: ClassVar[frozenset[str] | None] = frozenset({"user"})

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.User)
        found = message_blocks(obj)
        if found is None:
            return None
        message, content = found
        blocks, texts = self._blocks(content, ctx)
        if _none_failed(blocks, content, texts):
            return None
        new_obj: dict[str, Any] = {**obj, "message": {**message, "content": blocks}}
        if _owes_tool_use_result(obj, blocks, texts):
            new_obj["tool_use_result"] = _tool_use_result(texts[0])
        return None if new_obj == obj else (frame.replace(new_obj),)

    def _blocks(self, content: list[Any], ctx: Context) -> tuple[list[Any], list[str]]:
        """The blocks with each failed tool result in Claude's words, and those words."""
        blocks: list[Any] = []
        texts: list[str] = []
        for b in content:
            new, text = self._block(b, ctx)
            blocks.append(new)
            if text is not None:
                texts.append(text)
        return blocks, texts

    def _block(self, block: Any, ctx: Context) -> tuple[Any, str | None]:
        """A content block, a failed tool result as Claude writes it (and its text)."""
        if not (_is_block(block, "tool_result") and _failed(block)):
            return block, None
        text = _text_of(block.get("content"))
        new = dict(block)
        if text is not None:
            text = self._claude_text(text, block, ctx)
            new["content"] = text
        new["is_error"] = True
        if new != block:
            ctx.count(self.rule, "failed-result")
        return new, text

    def _claude_text(self, text: str, block: dict[str, Any], ctx: Context) -> str:
        """Claude's text (``claude_error_text``); a file tool's missing path gets the
        working directory."""
        text = claude_error_text(text)
        if text == _NO_FILE and ctx.state.cwd and self._tool(block, ctx) in _READ_TOOLS:
            return f"{_NO_FILE} {_CWD_NOTE}{ctx.state.cwd}."
        return text

    @staticmethod
    def _tool(block: dict[str, Any], ctx: Context) -> str | None:
        use_id = block.get("tool_use_id")
        use = ctx.state.tool_uses.get(use_id) if isinstance(use_id, str) else None
        return use.name if use is not None else None


def _none_failed(blocks: list[Any], content: list[Any], texts: list[str]) -> bool:
    """No block was a failed tool result: each is the one it was."""
    return not texts and all(n is o for n, o in zip(blocks, content, strict=True))


def _owes_tool_use_result(obj: wire.User, blocks: list[Any], texts: list[str]) -> bool:
    """The frame holds one tool result, a failed one with a text, and no
    ``tool_use_result``: Claude writes that text there too."""
    results = [b for b in blocks if _is_block(b, "tool_result")]
    return len(results) == 1 and len(texts) == 1 and "tool_use_result" not in obj


@register
@attrs.define
class Vocabulary(Stage):
    """Drop frame types/subtypes outside the Claude Code 2.1.220 vocabulary."""

    rule: ClassVar[str] = "vocabulary"

    def interested(self, type_: str | None, subtype: str | None) -> bool:
        return not in_vocabulary(type_, subtype) or (type_, subtype) == ("system", "status")

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.view(wire.StatusFrame)  # a system frame, or another type's
        t, st = obj.get("type"), obj.get("subtype")
        if (t, st) == ("system", "status"):
            return self._status(obj, ctx)
        label = clip(f"{t}/{st}" if t == "system" else str(t))  # a name a peer chose
        if t == "error":
            detail, _ = redact_obj(obj.get("error") or obj.get("message") or obj)
            text = str(detail)[:500]
            ctx.log(self.rule, f"backend error frame (not forwarded): {text}", "warning")
        else:
            ctx.log(self.rule, f"dropped a {label} frame (not in the 2.1.220 vocabulary)", "debug")
        ctx.count(self.rule, f"dropped:{label}")
        return ()

    def _status(self, obj: wire.StatusFrame, ctx: Context) -> Output:
        """``system/status``: dropped when its status is null (cbc's, at turn starts)."""
        if "status" in obj and obj["status"] is None:
            ctx.count(self.rule, "dropped:system/status-null")
            return ()
        return None


@register
@attrs.define
class LineSeparators(Stage):
    """Write U+2028/U+2029 as the escapes `\\u2028`/`\\u2029`, as Claude Code does.

    cbc writes the characters raw inside JSON strings; a client that splits its input with
    ``str.splitlines()`` (which breaks at U+2028/U+2029, unlike ``\\n``-only JSON Lines
    readers) then reads half lines. The escape is the
    same JSON value. A line that holds one (its ``triggers``: no kind is of interest
    otherwise) is fixed on its bytes (counted as a rewrite); a frame a rule rewrote, which
    has no bytes yet, passes: ``compat.frames.dumps`` writes the escapes."""

    rule: ClassVar[str] = "line-separators"
    kinds: ClassVar[frozenset[str] | None] = frozenset()
    triggers: ClassVar[tuple[bytes, ...]] = tuple(char for char, _ in LINE_SEPARATORS)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        raw = frame.raw
        if not raw:
            return None  # a rewritten frame: ``dumps`` writes the escapes
        escaped = escape_line_separators(raw)
        return None if escaped is raw else (frame.replace_raw(escaped),)
