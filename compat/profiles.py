"""Profiles: explicit, ordered stage lists per direction, and the rule settings that tune them.

``--rule ID=MODE`` (``on``/``off`` or one of the stage's ``modes``) and
``--rule ID.option=VALUE`` (an attrs field of the stage, structured by cattrs) are parsed
here, strictly: an unknown rule, mode or option is an error that names what exists.
A test pins the order of every profile (tests/compat/test_profiles.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import cattrs

from compat import rulespec
from compat.rulespec import RuleError as RuleError
from compat.rulespec import RuleSettings
from compat.stage import Stage
from compat.stages import (  # noqa: F401 (they register)
    REGISTRY,
    reverse_control,
    reverse_replies,
    reverse_stream,
    stream,
)
from compat.suggest import did_you_mean

PROFILES: dict[str, dict[str, tuple[str, ...]]] = {
    "identity": {"up": (), "down": ()},
    "cbc-to-claude": {
        # control protocol (compat/stages/control.py, user_line.py, initialize.py, interrupts.py,
        # permissions.py): stdin-vocabulary first (nothing else sees what cbc must never get); the
        # request rewriters before unsupported-control, which registers and times what is really
        # forwarded
        "up": (
            "stdin-vocabulary",
            "user-line",
            # a slash command Claude answers itself (/cost, /help, an unknown one), answered
            # so in its turn, never sent (slash.py): right after user-line, which gives it
            # each line in its turn
            "local-slash-commands",
            "permission-reply",
            "hook-reply",  # keeps the client's hook answers (hook-once answers repeats)
            "sdk-mcp-reply",  # keeps what the client's in-process MCP servers answered
            "initialize-request",
            "resume-replay",
            "interrupt-request",
            "unsupported-control",
            # notes the /compact lines as cbc gets them, for compact-command (compact.py)
            "compact-line",
        ),
        "down": (
            "session",
            "foreign-init",
            # --max-turns held whatever cbc does (maxturns.py): first after the session's
            # bookkeeping, so no rule sees the output of a turn it stopped (nor the reply to
            # its interrupt) and every rule sees the result it writes for it
            "max-turns",
            "init-once",
            "tool-errors",  # before private-fields: reads the _meta it strips
            "hook-deny",  # a call a client's PreToolUse hook denied: the hook's reason
            "bash-output",  # a successful Bash call's output; a failed one is tool-errors'
            "task-tool-results",  # before private-fields: reads the _meta.rawResponse it cuts
            # TaskOutput/TaskStop: Claude's record from cbc's text and the task facts an
            # earlier frame left (task_output.py)
            "task-output-records",
            "file-tool-results",  # Read/Write/Edit: Claude's file record, from the wire
            # a foreground Agent call's record (agent_tasks.py): before subagent-answer,
            # which drops the agent's last frame (its usage is the record's)
            "agent-tool-result",
            # ExitPlanMode's plan in its call, prompt and record (plan.py): before
            # private-fields, which cuts the result's _meta.rawResponse it reads
            "exit-plan-mode",
            "private-fields",
            "vocabulary",
            # leaving plan mode said by a status frame (plan.py): after vocabulary, which
            # drops cbc's own status-null frames
            "plan-exit-status",
            # a foreground sub-agent's prompt frame, and its answer only in the Agent
            # call's result (subagents.py): before frame-fields, which stamps and names
            # the prompt frame as every frame of the agent
            "subagent-prompt",
            "subagent-answer",
            # Claude's timestamp (cbc's __timestamp, read from the wire line private-fields
            # cut), context_management; compat/stages/fields.py
            "frame-fields",
            # cbc's requests to the client's in-process MCP servers and their tool
            # results, as Claude's (compat/stages/sdk_mcp.py)
            "sdk-mcp",
            "hook-once",  # cbc's repeated PreToolUse for one call, answered as first answered
            "hook-input",  # a hook request's input as Claude's: prompt id, a Stop's answer
            # session shapes (compat/stages/shape.py): init-shape after init-once touches
            # only the init the client sees
            "init-shape",
            "tool-parent",
            "tool-input",  # a tool call's input with its schema's defaults, as Claude's
            # cbc's failed model requests and refusals as Claude's (errors.py): before
            # command-lifecycle, which cancels the line of an api_error turn
            "api-error",
            # control replies: control-reply matches them to requests first; control-state
            # after init-once sees one init per turn, where the client sees the turn start
            "control-reply",
            "command-lifecycle",  # just before control-state: sees the turn start first
            "control-state",
            "initialize-reply",
            "interrupt-reply",
            # task rules (compat/stages/tasks.py, workflow.py, lifecycle.py): the ones that
            # hold, drop or reorder lifecycle frames first; terminal-guarantee then sees what
            # the client will see; late-progress after it so a synthesized notification also
            # closes the task; tasks-snapshot after every holder; task-fields last.
            "task-correlation",
            # a message's calls in call order: after task-correlation names an agent's
            # task_started, before tasks-snapshot writes the snapshots from that order
            "call-order",
            "task-type",
            "workflow-name",
            "workflow-prompt",
            "task-noise",
            "task-status",
            "progress-snapshot",
            # at an interrupt's receipt: open prompts withdrawn, then agents/workflows ended
            # (their frames pass progress-final, terminal-guarantee and tasks-snapshot);
            # permission-routing after the rule that drops cbc's own post-interrupt turn
            "permission-cancel",
            "interrupt-terminal",
            "permission-routing",
            # turns and the end of the session (turns.py, result_shape.py, winddown.py): after the
            # rules that drop cbc's own post-interrupt turn; interrupted-turn rewrites the
            # result result-shape then completes; eof-wind-down sees results as the client
            # will, and its synthesized shell kills pass the task rules below
            "interrupted-turn",
            "final-answer",
            # partial messages (compat/stages/stream.py): after frame-fields, which writes
            # one assistant frame per block, each matched to the block's stream events; and
            # after final-answer, so that the answer frame it synthesizes for a streamed
            # message cbc wrote none for is matched to that message's held
            # content_block_stop like cbc's own frames: it reaches the client before the
            # stop, as Claude writes it, not after message_stop (final-answer cannot come
            # before stream-events: it judges the result the rules above it rewrote, an
            # interrupted turn's, an API error's). The rules between frame-fields and here
            # see the stream events in cbc's order and without the synthesized
            # `system/status` `requesting`, which none of them reads for what it does (the
            # move alone replays every capture to the output and counts it had 8th)
            "stream-events",
            "result-shape",
            # a result's usage is the turn's own (usage.py): after result-shape, which
            # drops cbc's max-turns notice (no model call of the turn)
            "turn-usage",
            # a /compact line's turn as Claude's (compact.py): after the rules that shape a
            # result, so it writes Claude's compaction result as the client sees it
            "compact-command",
            "eof-wind-down",
            "progress-final",
            "terminal-guarantee",
            "late-progress",
            "tasks-snapshot",
            # a foreground agent's task frames (agent_tasks.py): after tasks-snapshot (Claude
            # writes no snapshot for a foreground agent), before task-fields, which fills them
            "agent-task-frames",
            "task-fields",
            # U+2028/U+2029 escaped, as Claude writes them (hygiene.py): last, on bytes
            "line-separators",
        ),
    },
    # the other direction (REVERSE.md): a cbc 2.163.0 client over Claude Code 2.1.220;
    # compat/stages/reverse_control.py, reverse_replies.py, reverse_stream.py. Bookkeeping
    # first; the session id swaps last, so frames the rules before them build are swapped too
    "claude-to-cbc": {
        "up": (
            "rev-requests",
            "rev-local-controls",
            "rev-permission-reply",
            "rev-session-id-up",
        ),
        "down": (
            "rev-track",
            "rev-initialize-reply",
            "rev-resume-replay",
            "rev-mcp-status",
            "rev-control-replies",
            "rev-interrupt-reply",
            "rev-cancel-request",
            "rev-local-command",
            "rev-tasks-snapshot",
            "rev-vocabulary",
            "rev-command-lifecycle",
            "rev-background-agent",
            # a foreground agent as cbc shows it (reverse_agents.py): before rev-agent-summary,
            # which words an agent task's end (a foreground agent has none on cbc)
            "rev-foreground-agent",
            "rev-agent-summary",
            "rev-task-words",
            "rev-task-type",
            "rev-task-status",
            # a deny with interrupt: true ends the turn as cbc ends it (reverse_denials.py):
            # before the rules that give an interrupt's marker and result cbc's shape
            "rev-denied-interrupt",
            "rev-interrupt-marker",
            "rev-tool-result",
            "rev-interrupted-turn",
            "rev-error-result",
            "rev-exit-status",
            "rev-session-id",
        ),
    },
}

#: rules that translate the launch (compat/argv.py, compat/env.py), not stages: switched
#: on/off like the others, applied by the launcher (bridge/proxy.py)
TRANSLATIONS: dict[str, tuple[str, ...]] = {
    "cbc-to-claude": ("argv", "env", "session-pin"),
    "claude-to-cbc": ("rev-argv", "rev-env"),
}

#: rules that are bookkeeping other rules depend on; they cannot be switched off
ALWAYS_ON = frozenset({"session", "control-state", "rev-requests", "rev-track"})

_converter = cattrs.Converter(forbid_extra_keys=True)


def parse_rule_settings(items: Iterable[str]) -> RuleSettings:
    """``compat.rulespec.parse``: ``["late-progress=fold", "late-progress.grace=2"]`` ->
    ``{"late-progress": {"mode": "fold", "grace": "2"}}``."""
    return rulespec.parse(items)


def known_rules(profile: str) -> list[str]:
    p = PROFILES[profile]
    return [*p["up"], *p["down"]]


def build(
    profile: str, settings: Mapping[str, Mapping[str, str]] | None = None
) -> tuple[list[Stage], list[Stage]]:
    """Fresh stage instances (they hold per-session state) for ``profile``."""
    if profile not in PROFILES:
        raise RuleError(f"unknown profile {profile!r} (one of {', '.join(PROFILES)})")
    settings = dict(settings or {})
    translations = TRANSLATIONS.get(profile, ())
    _check_known(profile, settings)
    up = _stages(PROFILES[profile]["up"], settings)
    down = _stages(PROFILES[profile]["down"], settings)
    rules = known_rules(profile)
    unused = [r for r in settings if r not in rules and r not in translations]
    if unused:
        raise RuleError(f"rule(s) {', '.join(unused)} are not part of profile {profile!r}")
    return up, down


def _check_known(profile: str, settings: Mapping[str, Mapping[str, str]]) -> None:
    """Every rule set is a known one (a launch translation of ``profile``: with a valid
    setting)."""
    translations = TRANSLATIONS.get(profile, ())
    every = {r for t in TRANSLATIONS.values() for r in t}
    for rule in settings:
        if rule in translations:
            translation_enabled(profile, settings, rule)  # validates
            continue
        if rule not in REGISTRY and rule not in every:
            hint = did_you_mean(rule, sorted({*REGISTRY, *every}))
            raise RuleError(
                f"unknown rule {rule!r}{hint or ' (ccbridge rules lists them)'}".replace(
                    "\n(", " ("
                )
            )


def _stages(rules: Iterable[str], settings: Mapping[str, Mapping[str, str]]) -> list[Stage]:
    """The stages of ``rules`` that are not switched off, in order."""
    built = (make_stage(rule, settings.get(rule, {})) for rule in rules)
    return [stage for stage in built if stage is not None]


def translation_enabled(
    profile: str, settings: Mapping[str, Mapping[str, str]] | None, rule: str
) -> bool:
    """Whether launch translation ``rule`` (argv, env, session-pin) applies: it belongs to
    the profile and is not ``=off``. Only ``on``/``off`` are accepted."""
    if rule not in TRANSLATIONS.get(profile, ()):
        return False
    opts = dict((settings or {}).get(rule, {}))
    mode = opts.pop("mode", "on")
    if opts:
        raise RuleError(f"rule {rule!r} has no option {next(iter(opts))!r} (options: none)")
    if mode not in ("on", "off"):
        raise RuleError(f"rule {rule}: unknown mode {mode!r} (one of on, off)")
    return mode == "on"


def make_stage(rule: str, options: Mapping[str, str]) -> Stage | None:
    cls = REGISTRY[rule]
    opts: dict[str, Any] = dict(options)
    mode = opts.pop("mode", "")
    if mode == "off":
        if rule in ALWAYS_ON:
            raise RuleError(f"rule {rule!r} cannot be switched off")
        return None
    if mode == "on":
        mode = ""
    fields = {f.name: f for f in _option_fields(cls)}
    for name in opts:
        if name not in fields:
            hint = did_you_mean(name, fields).replace("\n(", " (")
            raise RuleError(
                f"rule {rule!r} has no option {name!r}{hint} (options: "
                f"{', '.join(fields) or 'none'})"
            )
    try:
        typed = {name: _structure(value, fields[name].type) for name, value in opts.items()}
        return cls(mode=mode, **typed)
    except (ValueError, TypeError, cattrs.BaseValidationError) as exc:
        raise RuleError(f"rule {rule!r}: {exc}") from exc


def _structure(value: str, type_: Any) -> Any:
    if type_ in (bool, "bool"):
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{value!r} is not a boolean")
    if isinstance(type_, str):
        type_ = {"int": int, "float": float, "str": str}.get(type_, str)
    out = _converter.structure(value, type_)
    # every numeric option is a duration or a count: a number, finite, 0 or more
    if isinstance(out, (int, float)) and not (math.isfinite(out) and out >= 0):
        raise ValueError(f"{value!r} must be a number, 0 or more")
    return out


def describe() -> list[tuple[str, str, tuple[str, ...]]]:
    """(rule id, summary: the first paragraph of its docstring, modes) for ``ccbridge
    rules`` and the README."""
    rows = []
    for rule, cls in sorted(REGISTRY.items()):
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        rows.append((rule, " ".join(doc.split()), cls.modes))
    return rows


def options_of(rule: str) -> list[tuple[str, Any]]:
    """The ``--rule ID.option=VALUE`` options of a rule and their defaults."""
    out: list[tuple[str, Any]] = []
    for f in _option_fields(REGISTRY[rule]):
        default: Any = f.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        out.append((f.name, default))
    return out


def _option_fields(cls: type[Stage]) -> list[attrs.Attribute[Any]]:
    """A stage's options: its attrs fields a user may set (not ``mode``, not state)."""
    return [
        f for f in attrs.fields(cls) if f.init and f.name != "mode" and not f.name.startswith("_")
    ]
