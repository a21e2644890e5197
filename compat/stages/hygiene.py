"""``private-fields`` and ``vocabulary``: nothing reaches a Claude client that Claude
Code 2.1.220 would not send.

``private-fields``: cbc stamps ``__timestamp``, ``_requestId``, ``_messageId``, ``_meta``,
``errors_info`` on most frames (top level). Mode ``keep`` leaves them (for debugging).
cbc writes the underscore fields last, so the frame without them is its line cut before
them (``PrivateFields._tail``: the trailing run is checked to hold private fields only):
the other fields keep the bytes cbc wrote (``1.50`` is not rewritten ``1.5``: the same JSON
value). Any other shape (``errors_info``, which cbc writes mid-object; an escape sequence
before the run, which could spell a private key: ``"\\u005fmeta"``; a private field
outside the run) is filtered from the parsed object and written anew.
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
from compat.frames import (
    LINE_SEPARATORS,
    Frame,
    escape_line_separators,
    has_u_escape,
    loads,
)
from compat.redact import redact_obj
from compat.stage import Context, Output, Stage, register
from compat.stages.turns import REJECTED
from compat.text import clip
from compat.vocabulary import in_vocabulary

PRIVATE_FIELDS = ("__timestamp", "_requestId", "_messageId", "_meta", "errors_info")
_PRIVATE = frozenset(PRIVATE_FIELDS)
_PRIVATE_KEYS = frozenset(f.encode() for f in PRIVATE_FIELDS)


#: the stamp cbc closes a line with (``,"__timestamp":"2026-11-29T10:53:11.335Z"}``)
_STAMP = re.compile(rb',"__timestamp":"[0-9A-Za-z:.+\-]*"\}')


@register
@attrs.define
class PrivateFields(Stage):
    """Strip cbc's private top-level fields (`__timestamp`, `_requestId`, `_meta`, ...)."""

    rule: ClassVar[str] = "private-fields"
    modes: ClassVar[tuple[str, ...]] = ("strip", "keep")
    #: every frame (looking for the fields is its own first step, see ``_tail``)
    kinds: ClassVar[frozenset[str] | None] = None

    #: the last run of private fields proved well-formed, without its closing stamp, and
    #: how many fields the run has: cbc repeats a message's ``_requestId``, ``_messageId``
    #: and ``_meta`` on each of its frames and only the stamp changes
    _known: tuple[bytes, int] = attrs.field(default=(b"", 0), init=False)

    def interested(self, type_: str | None, subtype: str | None) -> bool:
        return self.mode != "keep"

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = frame.obj
        raw = frame.raw
        found = self._tail(raw) if raw else None
        if found is None:  # a parse tells: the top-level fields, a user frame's blocks
            return self._filtered(frame, obj, obj.get("type") == "user")
        cut, fields = found
        if not fields:
            return None
        if _block_meta_before(raw, cut):
            return self._filtered(frame, obj, True)
        # the cut is the bytes, and the object's keys are the members before the run, then
        # the run's (``_tail``: no private name before it; the first of duplicates keeps
        # its place)
        return (frame.replace_raw(raw[:cut] + b"}", _head(obj, fields)),)

    @staticmethod
    def _filtered(frame: Frame, obj: dict[str, Any], inner: bool) -> Output:
        """``obj`` without its private top-level fields (and, ``inner``, without the
        ``_meta`` of a user frame's tool_result blocks), re-serialized."""
        content = _without_block_meta(cast("wire.User", obj)) if inner else None
        if content is None and not any(k in obj for k in PRIVATE_FIELDS):
            return None
        kept = {k: v for k, v in obj.items() if k not in _PRIVATE}
        if content is not None:
            kept["message"] = {**obj["message"], "content": content}
        return (frame.replace(kept),)

    def _tail(self, raw: bytes) -> tuple[int, int] | None:
        """Where the trailing run of private top-level fields of the JSON object ``raw``
        starts (the index of the comma before it) and how many fields it has (``(-1, 0)``:
        the line holds no private field); None when only a parse can tell.

        Why the cut is right for valid JSON: ``,"_`` can only be a comma between members or
        array items followed by a string (inside a string, that ``"`` would end it and
        ``_`` could not follow). If ``{`` + the rest parses as an object, the rest closes
        exactly the object open at the comma, and since it ends the line that is the
        top-level object: the members after the comma are its last ones, and they are all
        private (checked). None comes before: no ``"_`` occurs before the first one, and
        neither ``"errors_info"`` nor an escape that could spell a key (``\\u``) does.
        A rest that is the known run plus a plain stamp is such a run without a parse."""
        at = raw.find(b'"_')
        if at < 0:
            if raw.find(b'"errors_info"') >= 0 or has_u_escape(raw):
                return None
            return -1, 0
        cut = at - 1
        run, fields = self._known
        # the known run (it starts with its comma and a private key), or a private key
        known = run and raw.startswith(run, cut) and _STAMP.fullmatch(raw, cut + len(run))
        if not known:
            if raw[cut] != 0x2C:  # ","
                return None
            end = raw.find(b'"', at + 1)
            if raw[at + 1 : end] not in _PRIVATE_KEYS or raw[end + 1 : end + 2] != b":":
                return None  # a string that is not a private key (``"_compact"`` in a list)
        if raw.find(b'"errors_info"', 0, cut) >= 0:
            return None
        if has_u_escape(raw, 0, cut):
            return None
        if known:
            return cut, fields
        try:
            tail = loads(b"{" + raw[at:])
        except ValueError:
            return None
        if type(tail) is not dict or not tail.keys() <= _PRIVATE:
            return None
        stamp = raw.rfind(b',"__timestamp":"')
        if stamp > cut and _STAMP.fullmatch(raw, stamp):
            self._known = (raw[cut:stamp], len(tail))
        return cut, len(tail)


def _head(obj: dict[str, Any], fields: int) -> dict[str, Any]:
    """``obj`` without its last ``fields`` members."""
    return dict(islice(obj.items(), len(obj) - fields))


def _block_meta_before(raw: bytes, cut: int) -> bool:
    """A user line that may hold a tool_result's ``_meta`` before its trailing run."""
    return raw.startswith(b'{"type":"user"') and raw.find(b'"_meta"', 0, cut) >= 0


def _without_block_meta(obj: wire.User) -> list[Any] | None:
    """A user frame's ``message.content`` without the ``_meta`` of its tool_result blocks;
    None when no block has one."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or not any(
        isinstance(b, dict) and "_meta" in b for b in content
    ):
        return None
    return [
        {k: v for k, v in b.items() if k != "_meta"}
        if isinstance(b, dict) and b.get("type") == "tool_result"
        else b
        for b in content
    ]


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
    the newline (or blank line) before the exit code."""
    if not text.startswith(_COMMAND):
        return None
    nl = text.rfind("\n")
    if nl < 0 or not text.startswith(_SIGNAL, nl + 1):
        return None
    sig = text[nl + 1 + len(_SIGNAL) :]
    exit_nl = text.rfind("\n", 0, nl)
    if exit_nl < 0 or not text.startswith(_EXIT, exit_nl + 1):
        return None
    code = text[exit_nl + 1 + len(_EXIT) : nl]
    out_at = text.find(_STDOUT, len(_COMMAND))
    if out_at < 0:
        return None
    out_start = out_at + len(_STDOUT)
    err_at = text.find(_STDERR, out_start, exit_nl)
    if err_at < 0:
        return None
    out_end = err_at - 1 if err_at > out_start and text[err_at - 1] == "\n" else err_at
    err_start = err_at + len(_STDERR)
    if err_start > exit_nl:
        return None
    err_end = exit_nl - 1 if exit_nl > err_start and text[exit_nl - 1] == "\n" else exit_nl
    return text[out_start:out_end], text[err_start:err_end], code, sig


#: a file tool's error for a missing path, which Claude follows with the working directory
_NO_FILE = "File does not exist."
_CWD_NOTE = "Note: your current working directory is "
_READ_TOOLS = frozenset({"Read", "Edit", "Write", "NotebookEdit", "MultiEdit"})
_TOOL_USE_ERROR = re.compile(r"<tool_use_error>(?P<text>.*)</tool_use_error>", re.DOTALL)


def _failed(block: dict[str, Any]) -> bool:
    """cbc says the call failed: on the block, or only in its private ``_meta.rawResponse``
    (a Bash exit status other than 0, a signal, ``is_error``)."""
    if block.get("is_error") is True:
        return True
    meta = block.get("_meta")
    raw = meta.get("rawResponse") if isinstance(meta, dict) else None
    if not isinstance(raw, dict):
        return False
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
    if not isinstance(content, list) or not content:
        return None
    parts = []
    for b in content:
        if not (isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)):
            return None
        parts.append(b["text"])
    return "\n".join(parts)


def claude_error_text(text: str) -> str:
    """Claude's text for a failed tool call, from cbc's: a Bash that exited non-zero is
    ``Exit code N`` then its stdout and stderr (each without its trailing newline; empty
    ones left out); cbc's ``<tool_use_error>…</tool_use_error>`` wrapper is removed; the
    rejection of an interrupted call is Claude's constant. A Bash ended by a signal keeps
    cbc's text: Claude writes a status its own shell made up, which cbc's wire lacks.
    (``ToolErrors`` adds Claude's ``Note: your current working directory is …`` to a
    file tool's ``File does not exist.``.)"""
    bash = bash_layout(text)
    if bash is not None:
        out, err, code, _ = bash
        code = code.strip()
        if not code.lstrip("-").isdigit():
            return text
        streams = [out, err]
        kept = [s.rstrip("\n") for s in streams if s != "(empty)" and s.rstrip("\n")]
        return "\n".join([f"Exit code {code}", *kept])
    wrapped = _TOOL_USE_ERROR.fullmatch(text.strip())
    if wrapped is not None:
        return wrapped["text"]
    if text.strip() == REJECTED:
        return REJECTED
    return text


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
        obj = cast("wire.User", frame.obj)
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not isinstance(content, list):
            return None
        blocks: list[Any] = []
        texts: list[str] = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result" and _failed(b):
                text = _text_of(b.get("content"))
                new = dict(b)
                if text is not None:
                    text = claude_error_text(text)
                    if text == _NO_FILE and ctx.state.cwd and self._tool(b, ctx) in _READ_TOOLS:
                        text = (
                            f"{_NO_FILE} Note: your current working directory is {ctx.state.cwd}."
                        )
                    new["content"] = text
                    texts.append(text)
                new["is_error"] = True
                if new != b:
                    ctx.count(self.rule, "failed-result")
                blocks.append(new)
            else:
                blocks.append(b)
        if not texts and all(n is o for n, o in zip(blocks, content, strict=True)):
            return None
        new_obj: dict[str, Any] = {**obj, "message": {**message, "content": blocks}}
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if len(results) == 1 and len(texts) == 1 and "tool_use_result" not in obj:
            text = texts[0]
            new_obj["tool_use_result"] = (
                "User rejected tool use"
                if text == REJECTED
                else text
                if text.startswith("Error: ")
                else f"Error: {text}"
            )
        if new_obj == obj:
            return None
        return (frame.replace(new_obj),)

    @staticmethod
    def _tool(block: dict[str, Any], ctx: Context) -> str | None:
        use_id = block.get("tool_use_id")
        use = ctx.state.tool_uses.get(use_id) if isinstance(use_id, str) else None
        return use.name if use is not None else None


@register
@attrs.define
class Vocabulary(Stage):
    """Drop frame types/subtypes outside the Claude Code 2.1.220 vocabulary."""

    rule: ClassVar[str] = "vocabulary"

    def interested(self, type_: str | None, subtype: str | None) -> bool:
        return not in_vocabulary(type_, subtype) or (type_, subtype) == ("system", "status")

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        obj = cast("wire.StatusFrame", frame.obj)  # a system frame, or another type's
        t, st = obj.get("type"), obj.get("subtype")
        if (t, st) == ("system", "status"):
            if "status" in obj and obj["status"] is None:
                ctx.count(self.rule, "dropped:system/status-null")
                return ()
            return None
        label = clip(f"{t}/{st}" if t == "system" else str(t))  # a name a peer chose
        if t == "error":
            detail, _ = redact_obj(obj.get("error") or obj.get("message") or obj)
            text = str(detail)[:500]
            ctx.log(self.rule, f"backend error frame (not forwarded): {text}", "warning")
        else:
            ctx.log(self.rule, f"dropped a {label} frame (not in the 2.1.220 vocabulary)", "debug")
        ctx.count(self.rule, f"dropped:{label}")
        return ()


@register
@attrs.define
class LineSeparators(Stage):
    """Write U+2028/U+2029 as the escapes `\\u2028`/`\\u2029`, as Claude Code does.

    cbc writes the characters raw inside JSON strings; a client that splits its input with
    ``str.splitlines()`` (which breaks at U+2028/U+2029, unlike ``\\n``-only JSON Lines
    readers) then reads half lines (issue "Fidelity beyond the corpus"). The escape is the
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
