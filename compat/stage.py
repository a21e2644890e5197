"""The rule contract (docs/rule-contract.md): one rule = one ``Stage`` subclass.

A rule states protocol meaning; the pipeline owns speed. A stage is a plain attrs object
whose fields are its options (``--rule ID.field=VALUE``) and whose ``mode`` is what ``--rule
ID=VALUE`` sets; it declares the frames it acts on (``kinds``, ``triggers``, ``invalid``), the
facts it reads and writes (``reads``, ``writes``, ``reads_earlier``: enforced in tests,
``compat.factguard``) and its behaviour. The pipeline calls ``on_frame`` only for frames the
stage declared interest in, parsed once (a frame no stage wants is never parsed and leaves
byte-identical); a stage answers no question about parsing or hot paths (``OPTIMIZER``).

``on_frame`` returns ``None`` to pass the frame unchanged (the cheap, byte-identical path),
or a sequence of frames that replaces it: ``()`` drops it, ``(frame.replace(new),)``
rewrites it, extra ``Frame.synth(..., rule)`` frames are synthesized. The pipeline counts
each of those per rule from the frames' lineage, so a stage never counts by hand what it
returns; it counts only what it does out of band (``ctx.count``).

Time is never read: ``ctx.now`` is passed in, timers are requests (``ctx.set_timer``) that
come back as ``on_timer``. Randomness, wall-clock stamps and file reads reach a stage only
through ``ctx.env``, which the I/O side (or a test) supplies.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

import attrs

from compat.frames import Frame
from compat.versions import TARGET_CLAUDE_VERSION

if TYPE_CHECKING:
    from compat.session import SessionState
    from compat.stats import Stats

Direction = Literal["up", "down"]  # up: client -> backend; down: backend -> client
Output = Sequence[Frame] | None


@attrs.define
class Env:
    """What the pure core may ask of the outside world."""

    new_uuid: Callable[[], str]
    #: read a workflow script: (the cwd the backend reports, path as the tool call gave it)
    #: -> text or None. The I/O side binds the directory it started the backend in and
    #: enforces "below that directory (or script_roots), regular file, size-capped, no link
    #: out"; the reported cwd is untrusted (a hostile backend can say ``/``) and not a root.
    read_script: Callable[[str, str], str | None] = lambda cwd, path: None
    #: milliseconds since the Unix epoch at engine time 0.0 (for ``end_time`` stamps)
    epoch_ms: int = 0
    #: the Claude Code version the stream is made to look like
    target_version: str = TARGET_CLAUDE_VERSION
    #: does this path exist on this machine (a link followed, as Claude's ``stat``)? A slash
    #: line whose ``/<name>`` does is a path to Claude, not a command (``local-slash-commands``)
    path_exists: Callable[[str], bool] = lambda path: False


class Host(Protocol):
    """What a ``Context`` asks of its engine (``compat.engine.Engine`` implements it); a
    stage reaches the engine only through ``Context``, never directly."""

    stats: Stats

    def set_timer(self, stage: Stage, key: str, deadline: float) -> None: ...
    def cancel_timer(self, stage: Stage, key: str) -> None: ...
    def emit_direct(self, direction: Direction, frame: Frame, rule: str) -> None: ...
    def hold(self) -> None: ...
    def release_eof(self, stage: Stage, settled: bool = False) -> None: ...
    def terminate(self, stage: Stage, reason: str) -> None: ...
    def set_exit_status(self, status: int | None) -> None: ...
    def log(self, level: str, rule: str, message: str) -> None: ...


class Context:
    """Handed to every stage call; owned by the engine."""

    def __init__(self, engine: Host, env: Env, state: SessionState) -> None:
        self._engine = engine
        self.env = env
        self.state = state
        self.now = 0.0
        #: in ``on_backend_exit``: what ended the backend, in words ("the backend exited
        #: with status 0", "the backend was killed by SIGKILL", "the bridge terminated the
        #: backend (why)"); set by the engine from what the I/O side saw, never guessed
        self.backend_end = ""

    # -- time -------------------------------------------------------------------------
    def wall_ms(self) -> int:
        return self.env.epoch_ms + int(self.now * 1000)

    def set_timer(self, stage: Stage, key: str, delay: float) -> None:
        self._engine.set_timer(stage, key, self.now + max(0.0, delay))

    def cancel_timer(self, stage: Stage, key: str) -> None:
        self._engine.cancel_timer(stage, key)

    # -- side channels ----------------------------------------------------------------
    def emit(self, direction: Direction, frame: Frame, rule: str) -> None:
        """Write a frame straight to one side, bypassing the pipeline (e.g. answering a
        control request locally). Counted as synthesized by ``rule``."""
        self._engine.emit_direct(direction, frame, rule)

    def hold(self) -> None:
        """Say that the frame the stage is returning ``()`` for is kept to be released
        later (counted as held, not dropped)."""
        self._engine.hold()

    # -- the backend process (rule eof-wind-down) ------------------------------------
    def close_backend_input(self, stage: Stage, settled: bool = False) -> None:
        """A ``defers_eof`` stage is done with the client's EOF: once every such stage
        said so, the engine closes the backend's stdin (``CloseBackendInput``).
        ``settled``: the session is over as Claude ends it (its last result is written
        and nothing can follow), so a headless client's output can be printed now."""
        self._engine.release_eof(stage, settled)

    def terminate_backend(self, stage: Stage, reason: str) -> None:
        """Ask the I/O side to end the backend (SIGTERM, then SIGKILL; ``TerminateBackend``)."""
        self._engine.terminate(stage, reason)

    def set_exit_status(self, status: int | None) -> None:
        """The status the bridge exits with (``Engine.exit_status``); None: the backend's."""
        self._engine.set_exit_status(status)

    def log(self, rule: str, message: str, level: str = "info") -> None:
        self._engine.log(level, rule, message)

    def count(self, rule: str, what: str, n: int = 1) -> None:
        self._engine.stats.count(rule, what, n)

    def drop_held(self, rule: str, n: int = 1) -> None:
        """``n`` frames the stage held (``hold``) are dropped after all: they leave the hold
        (``released``) and are ``dropped``, so frames in + synthesized = frames out +
        dropped + held - released stays exact."""
        if n:
            stats = self._engine.stats
            stats.count(rule, "dropped", n)
            stats.count(rule, "released", n)


#: what a rule of the old contract answered about speed, never declared now
#: (``Stage.__init_subclass__`` refuses them): the pipeline derives it from ``kinds``
OPTIMIZER = ("lazy", "pure", "cold", "cold_parsed", "raw_pass", "raw_triggers", "on_raw", "cools")

#: a ``kinds`` entry: a frame type, or ``type/subtype``
_KIND_KEY = re.compile(r"[^/\s]+(?:/[^/\s]+)?")


def _no_optimizer(cls: type[Stage]) -> str:
    stale = [name for name in OPTIMIZER if name in cls.__dict__]
    if not stale:
        return ""
    return (
        f"{', '.join(stale)}: a rule declares frames, facts and behaviour; what is parsed "
        "and what is skipped is the pipeline's"
    )


def _kinds_ok(cls: type[Stage]) -> str:
    kinds = cls.kinds
    if kinds is None or (type(kinds) is frozenset and all(_KIND_KEY.fullmatch(k) for k in kinds)):
        return ""
    return f"kinds must be None or a frozenset of 'type' or 'type/subtype' names, not {kinds!r}"


def _triggers_ok(cls: type[Stage]) -> str:
    triggers = cls.triggers
    if type(triggers) is tuple and all(type(t) is bytes and t for t in triggers):
        return ""
    return f"triggers must be a tuple of non-empty bytes, not {triggers!r}"


def _facts_ok(cls: type[Stage]) -> str:
    from compat.facts import FACTS

    for name in ("reads", "writes", "reads_earlier"):
        declared = getattr(cls, name)
        if type(declared) is not frozenset or not declared <= FACTS:
            unknown = sorted(set(declared) - FACTS) if isinstance(declared, frozenset) else ""
            return (
                f"{name} must be a frozenset of compat.facts.FACTS names, not {declared!r} "
                f"(unknown: {unknown})"
            )
    if not cls.reads_earlier <= cls.reads:
        return "reads_earlier must be part of reads"
    return ""


@attrs.define
class Stage:
    """Base class. Subclasses set ``rule``, ``direction`` and their interest."""

    rule: ClassVar[str] = ""
    direction: ClassVar[Direction] = "down"
    #: modes ``--rule ID=MODE`` accepts besides on/off; the first is the default
    modes: ClassVar[tuple[str, ...]] = ("on",)
    #: frame types (``"system"``) or ``"type/subtype"`` keys this stage wants; None = all
    #: (checked where the class is declared; the pipeline reads it once per kind, ``Plan``)
    kinds: ClassVar[frozenset[str] | None] = frozenset()
    #: raw substrings that also make a frame interesting, whatever its type (a byte pattern
    #: a kind cannot say: line-separators' U+2028/U+2029)
    triggers: ClassVar[tuple[bytes, ...]] = ()
    #: also called for lines that are not JSON objects (``frame.obj`` is then not a dict)
    invalid: ClassVar[bool] = False
    #: the client's EOF does not close the backend's stdin until this stage calls
    #: ``ctx.close_backend_input(self)`` (``on_client_eof`` is called at the EOF)
    defers_eof: ClassVar[bool] = False
    #: the shared facts (``compat.facts``: ``session_id``, ``control.turn_active``,
    #: ``task.status``, ``rev.in_turn``, ...) the stage reads and writes; checked against
    #: what it does on the captures, one writer per fact in a profile, readers after their
    #: writer (tests/compat/test_ownership.py)
    reads: ClassVar[frozenset[str]] = frozenset()
    writes: ClassVar[frozenset[str]] = frozenset()
    #: facts it reads as an earlier frame left them though a later stage of its direction
    #: writes them: its place before that writer is deliberate
    reads_earlier: ClassVar[frozenset[str]] = frozenset()

    mode: str = attrs.field(default="", kw_only=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """The declarations are checked where a rule is declared, not found out at run
        time; none of them is about speed (the pipeline's alone: ``OPTIMIZER``)."""
        super().__init_subclass__(**kwargs)
        for check in (_no_optimizer, _kinds_ok, _triggers_ok, _facts_ok):
            problem = check(cls)
            if problem:
                raise TypeError(f"{cls.__name__}: {problem}")

    def __attrs_post_init__(self) -> None:
        if not self.mode:
            self.mode = self.modes[0]
        elif self.mode not in self.modes:
            raise ValueError(
                f"rule {self.rule}: unknown mode {self.mode!r} (one of {', '.join(self.modes)})"
            )

    def interested(self, type_: str | None, subtype: str | None) -> bool:
        """Whether frames of this kind reach ``on_frame``; asked once per kind for the
        pipeline's plan, so an override answers from the kind and the options alone."""
        kinds = self.kinds
        if kinds is None:
            return True
        return type_ in kinds or (subtype is not None and f"{type_}/{subtype}" in kinds)

    def on_frame(self, frame: Frame, ctx: Context) -> Output:
        return None

    def on_timer(self, key: str, ctx: Context) -> Output:
        return None

    def on_input_eof(self, ctx: Context) -> Output:
        """The stream this stage's direction reads from ended."""
        return None

    def on_client_eof(self, ctx: Context) -> Output:
        """The client closed its stdin (called on ``defers_eof`` stages, any direction)."""
        return None

    def on_backend_input_closed(self, ctx: Context) -> Output:
        """The backend's stdin is now closed (the I/O side did it, after ``CloseBackendInput``
        and every line queued before it)."""
        return None

    def eof_budget(self) -> float | None:
        """``defers_eof`` stages: the most seconds after the client's EOF before they
        release it (the I/O side's backstop); None: unbounded."""
        return None

    def on_backend_exit(self, status: int, ctx: Context) -> Output:
        """The backend process exited; last chance to emit frames downstream."""
        return None


#: rule id -> stage class; filled by ``register`` as the stage modules are imported
REGISTRY: dict[str, type[Stage]] = {}


def register(cls: type[Stage]) -> type[Stage]:
    if not cls.rule or cls.rule in REGISTRY:
        raise ValueError(f"stage {cls.__name__}: missing or duplicate rule id {cls.rule!r}")
    REGISTRY[cls.rule] = cls
    return cls
