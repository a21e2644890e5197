"""Claude Code's headless modes over a backend that always speaks stream-json (pure).

``claude -p PROMPT``, a prompt on stdin (``--input-format text``, the default) and
``--output-format text|json`` are how scripts run Claude Code. The bridge runs cbc in
stream-json both ways whatever the client asked (so every rule applies) and does the rest
here, the way Claude 2.1.220 does it (``print.ts``; the probes in
``tests/bridge/data/headless/``):

- ``mode_of``: the client's argv -> a ``Mode`` (formats, ``--verbose``, the prompt).
- ``Mode.usage_error``: what Claude refuses before it starts (exit 1, its own words).
- ``prompt_text``: the prompt argument and what stdin held, joined as Claude joins them.
- ``user_line``: the prompt as the stream-json user line written to cbc as client input.
- ``Renderer``: fed the normalized client-bound bytes, gives what Claude prints: nothing
  for ``stream-json``; the last result's text (``text``); the last result frame, or with
  ``--verbose`` an array of every message (``json``); plus the exit status.

A stream-json client (``--input-format stream-json --output-format stream-json``: the
SDKs) is not headless here: ``Mode.passthrough`` and nothing is wrapped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import orjson

from compat.argv import Translation, translate_to_cbc
from compat.exits import Exit

Format = Literal["text", "json", "stream-json"]
OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")
#: Claude's limit on piped stdin (``uEm``): more is an error
STDIN_LIMIT = 10 * 1024 * 1024
#: seconds Claude waits for the first byte on a piped stdin before it goes on without it
STDIN_WAIT = 3.0
EXIT_ERROR = Exit.FAILED  # Claude's status for a usage error and an error result

NO_PROMPT = (
    "Error: Input must be provided either through stdin or as a prompt argument when using --print"
)
NO_RESULT = "Error: No messages returned from query"
STDIN_TOO_BIG = (
    "Error: piped stdin input exceeds 10MB. Pass large content as a file path "
    "in your prompt instead."
)
STDIN_SILENT = (
    "Warning: no stdin data received in 3s, proceeding without it. If piping "
    "from a slow command, redirect stdin explicitly: < /dev/null to skip, or "
    "wait longer."
)
#: the lines Claude prints for an error result in text mode (no newline after them)
ERROR_TEXT = {
    "error_during_execution": "Execution error",
    "error_max_turns": "Error: Reached max turns ({max_turns})",
    "error_max_budget_usd": "Error: Exceeded USD budget ({max_budget_usd})",
    "error_max_structured_output_retries": (
        "Error: Failed to provide valid structured output after maximum retries"
    ),
}
#: what ``text`` mode prints before a result cut short (Claude's ``vpE``)
INCOMPLETE = "The response above may be incomplete."

#: system subtypes that are not messages (Claude's ``zkm``): never the "last message"
_NOT_MESSAGES_SYSTEM = frozenset(
    {
        "session_state_changed",
        "task_notification",
        "task_started",
        "task_updated",
        "task_progress",
        "background_tasks_changed",
        "control_request_progress",
        "notification",
        "post_turn_summary",
        "task_summary",
        "hook_started",
        "hook_progress",
        "hook_response",
        "commands_changed",
        "elicitation_complete",
        "files_persisted",
        "mirror_error",
        "code_change_published",
        "vcs_state_changed",
    }
)
_NOT_MESSAGES = frozenset(
    {
        "control_response",
        "control_request",
        "control_cancel_request",
        "stream_event",
        "keep_alive",
        "prompt_suggestion",
        "conversation_reset",
        "transcript_mirror",
        "command_lifecycle",
        "active_goal",
    }
)


class Mode(NamedTuple):
    """The client's headless mode, read from its command line (a NamedTuple: this module
    is read before the backend is spawned, where attrs costs 8 ms of import)."""

    output: str = "text"
    input: str = "text"
    verbose: bool = False
    print_mode: bool = False
    prompt: str | None = None
    max_turns: str | None = None
    max_budget_usd: str | None = None
    #: the first option neither Claude nor cbc knows, as spelled
    unknown: str | None = None
    #: the first option Claude knows given without its required value
    missing: str | None = None

    @property
    def passthrough(self) -> bool:
        """The client speaks stream-json both ways: nothing to render, nothing to write."""
        return self.input == "stream-json" and self.output == "stream-json"

    @property
    def renders(self) -> bool:
        return self.output != "stream-json"

    def usage_error(self) -> str | None:
        """Claude's message for a command line it refuses (exit 1), else None."""
        if self.missing is not None:  # (commander throws it while it parses: first)
            return missing_value(self.missing)
        if self.unknown is not None:  # (commander refuses it once it parsed)
            return unknown_option(self.unknown)
        if self.output not in OUTPUT_FORMATS:
            return (
                f"error: option '--output-format <format>' argument '{self.output}' is "
                "invalid. Allowed choices are text, json, stream-json."
            )
        if self.input not in INPUT_FORMATS:
            return (
                f"error: option '--input-format <format>' argument '{self.input}' is "
                "invalid. Allowed choices are text, stream-json."
            )
        if self.input == "stream-json" and self.output != "stream-json":
            return "Error: --input-format=stream-json requires output-format=stream-json."
        if self.print_mode and self.output == "stream-json" and not self.verbose:
            return "Error: When using --print, --output-format=stream-json requires --verbose"
        return None


def _last(tr: Translation, name: str) -> str | None:
    vals = tr.options.get(name)
    return vals[-1] if vals else None


def mode_of(argv: Sequence[str] | Translation) -> Mode:
    tr = argv if isinstance(argv, Translation) else translate_to_cbc(argv)
    return Mode(
        output=_last(tr, "--output-format") or "text",
        input=_last(tr, "--input-format") or "text",
        verbose="--verbose" in tr.options,
        print_mode="--print" in tr.options,
        prompt=tr.prompt,
        max_turns=_last(tr, "--max-turns"),
        max_budget_usd=_last(tr, "--max-budget-usd"),
        unknown=tr.unknown[0] if tr.unknown else None,
        missing=tr.missing[0] if tr.missing else None,
    )


def missing_value(option: str) -> str:
    """Claude's (commander's) refusal of an option given without the value it requires."""
    from compat.flags import CLAUDE_PLACEHOLDERS

    return f"error: option '{option} {CLAUDE_PLACEHOLDERS.get(option, '<value>')}' argument missing"


def unknown_option(word: str) -> str:
    """Claude's (commander's) refusal of an option it does not know, with its "Did you
    mean" among the options ``claude --help`` lists."""
    from compat.flags import CLAUDE_VISIBLE
    from compat.suggest import did_you_mean

    hint = did_you_mean(word, CLAUDE_VISIBLE) if word.startswith("--") else ""
    return f"error: unknown option '{word}'{hint}"


def prompt_text(argument: str | None, stdin: str | None) -> str | None:
    """Claude's ``[argument, stdin].filter(Boolean).join("\\n")``; None when both are empty."""
    parts = [p for p in (argument, stdin) if p]
    return "\n".join(parts) if parts else None


def user_line(text: str) -> bytes:
    """The prompt as the user line a stream-json client writes (the Python SDK's string
    ``query()``), newline-terminated."""
    return (
        orjson.dumps(
            {
                "type": "user",
                "session_id": "",
                "message": {"role": "user", "content": text},
                "parent_tool_use_id": None,
            }
        )
        + b"\n"
    )


def is_message(frame: dict[str, Any]) -> bool:
    """Claude's ``zkm``: a frame that counts as a message of the conversation."""
    kind = frame.get("type")
    if kind in _NOT_MESSAGES:
        return False
    return not (kind == "system" and frame.get("subtype") in _NOT_MESSAGES_SYSTEM)


def _text_of(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


class Rendered(NamedTuple):
    stdout: bytes
    stderr: bytes
    status: int  # Claude's: 1 for an error result or none, else 0


class Renderer:
    """Fed the client-bound byte stream (any chunking), says what Claude would print.

    ``feed`` returns the bytes to write now (the stream itself in ``stream-json`` mode,
    nothing otherwise); ``finish`` the rest and the exit status. Only the last message is
    kept, except for ``json --verbose``, which prints them all (as Claude keeps them all).

    ``settle``: the session settled (its last result is written and nothing can follow:
    ``CloseBackendInput.settled``), where Claude prints its output and exits; what it
    prints is given then, what cbc still writes (it may, until it exits) is not read, and
    ``finish`` prints nothing more, its status the settled one.
    """

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self._partial = b""
        self._last: dict[str, Any] | None = None
        self._last_raw = b""
        self._all: list[bytes] = []
        self._keep_all = mode.output == "json" and mode.verbose
        # Claude's wxm/Txm: the text of the last two main-thread assistant messages
        self._last_text: str | None = None
        self._prior_text: str | None = None
        self._partial_for_result: str | None = None
        self._settled: Rendered | None = None
        self.lines = 0  # lines read, for tests and statistics

    def feed(self, data: bytes) -> bytes:
        if self._settled is not None:  # (never in stream-json: ``settle`` keeps nothing)
            return b""
        buf = self._partial + data
        *lines, self._partial = buf.split(b"\n")
        for line in lines:
            self._line(line)
        return data if self.mode.output == "stream-json" else b""

    def _line(self, raw: bytes) -> None:
        raw = raw.rstrip(b"\r")
        if not raw.strip():
            return
        self.lines += 1
        if raw.startswith(b'{"type":"stream_event"'):
            return  # the commonest line by far, and never a message
        try:
            frame = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return
        if not isinstance(frame, dict) or not is_message(frame):
            return
        self._last, self._last_raw = frame, raw
        if self._keep_all:
            self._all.append(raw)
        self._track_text(frame)

    def _track_text(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "system" and frame.get("subtype") == "compact_boundary":
            self._last_text = self._prior_text = None
        elif kind == "assistant" and frame.get("parent_tool_use_id") is None:
            self._assistant_text(frame)
        elif kind == "result":
            self._result_text(frame)

    def _assistant_text(self, frame: dict[str, Any]) -> None:
        message = frame.get("message")
        if isinstance(frame.get("supersedes"), list) and frame["supersedes"]:
            self._last_text = self._prior_text = None
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            return
        text = _text_of(message["content"])
        if text:
            self._prior_text, self._last_text = self._last_text, text

    def _result_text(self, frame: dict[str, Any]) -> None:
        result = frame.get("result")
        cut = (
            frame.get("subtype") == "success"
            and frame.get("is_error") is True
            and isinstance(result, str)
            and result.endswith(INCOMPLETE)
            and self._last_text == result
        )
        self._partial_for_result = self._prior_text if cut else None
        self._last_text = self._prior_text = None

    def failure(self) -> str | None:
        """The backend's own words for a turn it could not run (the last result is an
        ``error_during_execution`` with ``errors``: no credentials, no model), else None.
        Claude prints only "Execution error" for it; the drop-in adds these on stderr."""
        last = self._last
        if last is None or last.get("type") != "result":
            return None
        errors = last.get("errors")
        if last.get("subtype") != "error_during_execution" or not isinstance(errors, list):
            return None
        words = [e for e in errors if isinstance(e, str) and e.strip()]
        return "; ".join(words) or None

    def settle(self) -> bytes:
        """What Claude prints, now that the session settled (nothing for ``stream-json``,
        whose stream is already out)."""
        if self._settled is not None or self.mode.output == "stream-json":
            return b""
        self._settled = self._render()
        return self._settled.stdout

    @property
    def printed(self) -> bytes:
        """What ``settle`` gave (``b""``: not settled)."""
        return self._settled.stdout if self._settled is not None else b""

    def finish(self) -> Rendered:
        if self._settled is not None:
            return self._settled._replace(stdout=b"")
        if self._partial:
            self._line(self._partial)
            self._partial = b""
        return self._render()

    def _render(self) -> Rendered:
        last = self._last
        result = last if last is not None and last.get("type") == "result" else None
        status = EXIT_ERROR if result is not None and result.get("is_error") else 0
        if self.mode.output == "stream-json":
            return Rendered(b"", b"", status)
        if result is None:
            return Rendered(b"", NO_RESULT.encode() + b"\n", EXIT_ERROR)
        if self.mode.output == "json":
            out = b"[" + b",".join(self._all) + b"]" if self._keep_all else self._last_raw
            return Rendered(out + b"\n", b"", status)
        return Rendered(self._text(result).encode(), b"", status)

    def _text(self, result: dict[str, Any]) -> str:
        subtype = result.get("subtype")
        if subtype == "success":
            text = result.get("result")
            text = text if isinstance(text, str) else ""
            if self._partial_for_result is not None:
                text = f"{self._partial_for_result}\n{text}"
            return text if text.endswith("\n") else text + "\n"
        line = ERROR_TEXT.get(str(subtype))
        if line is None:
            return ""  # Claude prints nothing for a subtype it does not know
        # a JavaScript template: an option not given prints as "undefined"
        return line.format(
            max_turns=_js(self.mode.max_turns), max_budget_usd=_js(self.mode.max_budget_usd)
        )


def _js(value: str | None) -> str:
    return "undefined" if value is None else value
