"""Scenario files: TOML (stdlib ``tomllib``), structured strictly with attrs + cattrs.

Unknown keys anywhere are errors, reported with their path (``$.steps[2].usr``); so are
wrong types, a step with two actions, and files that would land outside the working
directory. A scenario says what the model answers (``[model]``, ``[[model.rules]]``, see
``harness.model``), what the client does (``[[steps]]``, run in order), how the
backend is launched (``args``, ``backend_args``, ``env``, ``files``) and for how long
(``time_limit``: the process group is killed then, whatever happens).

A step waits for its ``after`` condition (a stdout frame, counted from the start of the
run: ``nth = 2`` is the second such frame, or with ``fresh = true`` from the end of the
previous step; or a model request whose latest input contains a string), then ``delay``
seconds, then does its one action:

    user = "text"            a user line (uuid: ``uuid`` or a stable one per step)
    line = "raw"             a line written verbatim (bad JSON, unknown types...)
    control = {subtype=...}  a control_request (``request_id`` or ``req-<n>``)
    permission = {behavior="allow"}   answer the next unanswered ``can_use_tool``
                             (``updatedInput`` defaults to the request's ``input``;
                             a cbc client sends it as ``{allowed, reason, ...}``)
    close_stdin = true
    (none)                   just wait

``${name}`` in ``user``/``line``/``control`` strings is replaced by the top-level field
``name`` of the frame that satisfied ``after`` (e.g. ``${task_id}`` of a task_started).
After the last step stdin is closed unless ``keep_stdin_open``. With ``initialize`` (the
default) the client first sends its ``initialize`` request and waits for its reply. The
client speaks the dialect of the client the run serves (``harness.client``): a cbc
SDK's on raw cbc and behind ``claude-to-cbc``, a Claude SDK's otherwise; ``client =
"claude"|"cbc"`` pins it (a scenario made from a recording speaks as the recorded client).
With ``headless = true`` the run is Claude's print mode: ``args`` are the whole client
command line (``["-p", "hello", "--output-format", "json"]``), stdin is what ``line``
steps write (a piped prompt) and then EOF, stdout is recorded as printed (text, a JSON
object or stream-json).

The model's rules (``[[model.rules]]``, ``harness.brain.Rule``) match the latest
input (``when`` / ``regex``, ``agent``, ``image = true|false``, ``times``) and answer with
any of: ``thinking``, ``text``, one call (``tool``, ``input``) or several in one message
(``calls = [{tool=..., input={...}}, ...]``), ``stop`` (``max_tokens``, ``refusal``...),
``delay`` before the reply, ``stall`` seconds in mid-stream, ``cut = true`` (the stream
ends half-way, the connection closed); or with an HTTP error: ``status`` (429, 500, 529...)
with ``retry_after`` and ``message``, for ``times`` requests. ``{CWD}`` and ``{HOME}`` in
their ``when``, texts and inputs, in ``args`` and in the steps' ``user``/``line``/``control``
are the run's directories (``ccbridge scenario from-capture`` writes a session's paths so).

What the CLI is launched with, beyond ``args``: ``hooks`` (Claude's settings ``hooks``
object) is written to a settings file passed as ``--settings FILE``; ``mcp_servers`` (an
``mcpServers`` object; ``harness/mcp_server.py`` is a scripted stdio server) to a
file passed as ``--mcp-config FILE``; ``{PYTHON}``, ``{REPO}``, ``{CWD}``, ``{HOME}`` in
their strings are replaced. ``[resume]`` (``args``, ``backend_args``, ``keep_stdin_open``,
``[[resume.steps]]``) is a second run after the first exits, on the same HOME and working
directory, with ``--resume <the first session_id the client read>``; its conditions count
from its own start, and both runs go into one capture (two ``exit`` records).
``[[answers]]`` (``subtype``, ``match``, ``response`` or ``error``, ``times``) answer the
control requests the CLI sends the client other than ``can_use_tool``, as an SDK answers
its hook callbacks and in-process MCP servers (``harness.answers``), whenever they come.
``[replay]`` (``source``, ``[[replay.differs]]`` with ``tool``, ``input``, ``reason``) is
what ``ccbridge scenario from-capture`` says of a recording it converted: the calls whose
results the replay cannot reproduce; the runner ignores it, ``ccbridge ab`` reads it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import attrs
import cattrs
from cattrs.v import format_exception

from harness.answers import Answer
from harness.brain import ModelScript, Rule

BACKENDS = ("claude", "cbc")


class ScenarioError(ValueError):
    pass


def _positive(_: object, a: attrs.Attribute[float], v: float) -> None:
    if v <= 0:
        raise ValueError(f"{a.name} must be > 0, not {v}")


@attrs.frozen
class Condition:
    type: str | None = None
    subtype: str | None = None  # also matches request.subtype of a control_request
    task_type: str | None = None
    contains: str | None = None  # a substring of the raw stdout line
    nth: int = 1
    model_request: str | None = None  # a model request whose latest input contains this
    #: count only what arrives after the previous step is done (default: since the start)
    fresh: bool = False

    def __attrs_post_init__(self) -> None:
        frame = (self.type, self.subtype, self.task_type, self.contains)
        if self.model_request is not None and any(x is not None for x in frame):
            raise ValueError("`model_request` cannot be combined with frame conditions")
        if self.nth < 1:
            raise ValueError("`nth` must be >= 1")

    def matches(self, frame: dict[str, Any], raw: bytes) -> bool:
        if self.model_request is not None:
            return False
        if self.type is not None and frame.get("type") != self.type:
            return False
        if self.subtype is not None:
            req = frame.get("request")
            sub = req.get("subtype") if isinstance(req, dict) else None
            if self.subtype not in (frame.get("subtype"), sub):
                return False
        if self.task_type is not None and frame.get("task_type") != self.task_type:
            return False
        return self.contains is None or self.contains.encode() in raw

    def describe(self) -> str:
        fields = attrs.asdict(
            self, filter=lambda a, v: v not in (None, False) and a.name not in ("nth", "fresh")
        )
        fresh = "new " if self.fresh else ""
        return f"{fresh}#{self.nth} " + " ".join(f"{k}={v!r}" for k, v in fields.items())


ACTIONS = ("user", "line", "control", "permission", "close_stdin")


@attrs.frozen
class Step:
    after: Condition | None = None
    delay: float = 0.0
    user: str | None = None
    line: str | None = None
    control: dict[str, Any] | None = None
    permission: dict[str, Any] | None = None
    close_stdin: bool = False
    request_id: str | None = None
    uuid: str | None = None
    note: str | None = None  # written to the capture when the step runs

    def __attrs_post_init__(self) -> None:
        if self.delay < 0:
            raise ValueError("`delay` must be >= 0")
        set_ = [a for a in ACTIONS if getattr(self, a) not in (None, False)]
        if len(set_) > 1:
            raise ValueError(f"a step does one thing; this one has {', '.join(set_)}")
        if self.control is not None and not isinstance(self.control.get("subtype"), str):
            raise ValueError("`control` needs a `subtype`")
        if self.request_id is not None and self.control is None:
            raise ValueError("`request_id` goes with `control`")
        if self.uuid is not None and self.user is None:
            raise ValueError("`uuid` goes with `user`")

    @property
    def action(self) -> str:
        return next((a for a in ACTIONS if getattr(self, a) not in (None, False)), "wait")


@attrs.frozen
class Resume:
    """A second run after the first one's exit, on the same HOME and working directory,
    with ``--resume <session_id>`` (the first ``session_id`` the client read) after its
    ``args`` (default: the first run's). The model server, and its rules' ``times``
    counts, carry on; its steps' conditions count from the start of the second run."""

    args: tuple[str, ...] | None = None
    backend_args: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    keep_stdin_open: bool = False
    steps: tuple[Step, ...] = ()


@attrs.frozen
class Differs:
    """A tool call whose result the replay cannot reproduce (what it reads is not in the
    scenario): ``tool`` and the part of its ``input`` that names it, and why."""

    tool: str
    input: dict[str, Any] = attrs.field(factory=dict)
    reason: str = ""

    def covers(self, name: Any, tool_input: Any) -> bool:
        """Is a call of ``name`` with ``tool_input`` this one (``input`` a subset of it)?"""
        if name != self.tool or not isinstance(tool_input, dict):
            return False
        return all(tool_input.get(k) == v for k, v in self.input.items())


@attrs.frozen
class Replay:
    """A scenario made from a recording (``ccbridge scenario from-capture``): the recording
    it came from and the calls whose results will differ from it (``ccbridge ab`` counts
    the differences found in their results as the replay's, not the backends')."""

    source: str = ""
    differs: tuple[Differs, ...] = ()


@attrs.frozen
class Scenario:
    name: str
    description: str = ""
    time_limit: float = attrs.field(default=60.0, validator=_positive)
    #: Claude-style client flags after the base argv (also what goes through ``--via``)
    args: tuple[str, ...] = ()
    #: replaces ``args`` when running directly on that backend (cbc lacks some flags)
    backend_args: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    env: dict[str, str] = attrs.field(factory=dict)
    files: dict[str, str] = attrs.field(factory=dict)  # relative path -> text
    initialize: bool = True
    keep_stdin_open: bool = False
    #: a headless run (``claude -p PROMPT --output-format json``): ``args`` are the whole
    #: client command line (no stream-json base argv), stdin holds what ``line`` steps
    #: write (a piped prompt), and there is no ``initialize``
    headless: bool = False
    #: Claude's settings ``hooks`` object; written to a settings file passed as
    #: ``--settings FILE`` (both CLIs read it)
    hooks: dict[str, Any] | None = None
    #: an ``mcpServers`` object; written to a file passed as ``--mcp-config FILE``
    mcp_servers: dict[str, Any] | None = None
    model: ModelScript = ModelScript()
    steps: tuple[Step, ...] = ()
    resume: Resume | None = None
    replay: Replay | None = None
    #: the dialect the client speaks (``claude`` or ``cbc``: a Claude SDK's or a cbc SDK's
    #: control requests and permission answers); default: the served client's
    client: str | None = None
    #: the client's answers to the CLI's control requests other than ``can_use_tool``
    #: (hook callbacks, SDK MCP servers: ``harness.answers``)
    answers: tuple[Answer, ...] = ()

    def __attrs_post_init__(self) -> None:
        if self.client not in (None, *BACKENDS):
            raise ValueError(f"client: {self.client!r} is not one of {BACKENDS}")
        if self.headless and self.initialize:
            object.__setattr__(self, "initialize", False)  # nothing reads it in print mode
        if self.headless:
            _stdin_only(self.steps)
        _known_backends([*self.backend_args, *(self.resume.backend_args if self.resume else ())])
        for f in self.files:
            _inside(f)
        if self.headless and self.resume is not None:
            _stdin_only(self.resume.steps)
        for name, server in (self.mcp_servers or {}).items():
            if not isinstance(server, dict):
                raise ValueError(f"mcp_servers.{name} must be a table")

    def args_for(self, backend: str) -> tuple[str, ...]:
        return self.backend_args.get(backend, self.args)

    def resume_args_for(self, backend: str) -> tuple[str, ...]:
        assert self.resume is not None
        r = self.resume
        return r.backend_args.get(backend, r.args if r.args is not None else self.args_for(backend))

    def second_run(self) -> Scenario:
        """The scenario the second (``resume``) run plays: its steps, no further resume;
        named apart, so its lines' stable uuids differ from the first run's (Claude drops
        a line whose uuid its transcript already holds)."""
        assert self.resume is not None
        return attrs.evolve(
            self,
            name=self.name + "#resume",
            steps=self.resume.steps,
            resume=None,
            keep_stdin_open=self.resume.keep_stdin_open,
        )


def _stdin_only(steps: tuple[Step, ...]) -> None:
    """ValueError unless each of a headless scenario's steps writes stdin or waits."""
    if any(st.action not in ("line", "wait", "close_stdin") for st in steps):
        raise ValueError("a headless scenario's steps only write stdin (`line`) or wait")


def _known_backends(names: list[str]) -> None:
    """ValueError unless ``backend_args`` names only backends there are."""
    for b in names:
        if b not in BACKENDS:
            raise ValueError(f"backend_args: unknown backend {b!r} (one of {BACKENDS})")


def _inside(f: str) -> None:
    """ValueError unless a path of ``files`` stays inside the working directory."""
    p = PurePosixPath(f)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ValueError(f"files: {f!r} must be a relative path inside the working directory")


def _converter() -> cattrs.Converter:
    c = cattrs.Converter(forbid_extra_keys=True)

    # a TOML table stays a plain dict (tool inputs, control requests, permission answers)
    def any_dict(v: Any, _: Any) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise TypeError(f"expected a table, got {type(v).__name__}")
        return v

    c.register_structure_hook_func(lambda t: t == dict[str, Any], any_dict)

    def strict_str(v: Any, _: Any) -> str:
        if not isinstance(v, str):
            raise TypeError(f"expected a string, got {type(v).__name__}: {v!r}")
        return v

    def strict_float(v: Any, _: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise TypeError(f"expected a number, got {type(v).__name__}: {v!r}")
        return float(v)

    def strict_int(v: Any, _: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"expected an integer, got {type(v).__name__}: {v!r}")
        return v

    def strict_bool(v: Any, _: Any) -> bool:
        if not isinstance(v, bool):
            raise TypeError(f"expected true or false, got {v!r}")
        return v

    c.register_structure_hook(str, strict_str)
    c.register_structure_hook(float, strict_float)
    c.register_structure_hook(int, strict_int)
    c.register_structure_hook(bool, strict_bool)
    return c


CONVERTER = _converter()


def _format(exc: BaseException, type_: Any) -> str:
    if type(exc) in (ValueError, TypeError):  # ours: the validators' own words
        return str(exc)
    return format_exception(exc, type_)


def parse(data: dict[str, Any], source: str = "<scenario>") -> Scenario:
    try:
        return CONVERTER.structure(data, Scenario)
    except Exception as e:  # cattrs wraps validator errors in exception groups
        msgs = (
            cattrs.transform_error(e, path="$", format_exception=_format)
            if isinstance(e, cattrs.BaseValidationError)
            else [str(e)]
        )
        raise ScenarioError(f"{source}: " + "; ".join(msgs)) from e


def loads(text: str, source: str = "<scenario>") -> Scenario:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{source}: not valid TOML: {e}") from e
    return parse(data, source)


def load(path: str | Path) -> Scenario:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError(f"{p}: {e.strerror or e}") from e
    return loads(text, str(p))


__all__ = [
    "Condition",
    "Differs",
    "ModelScript",
    "Replay",
    "Resume",
    "Rule",
    "Scenario",
    "ScenarioError",
    "Step",
    "load",
    "loads",
    "parse",
]
