"""Rule ``rev-argv``: a cbc 2.163.0 command line (what the CodeBuddy SDKs launch) -> one
Claude Code 2.1.220 accepts (profile ``claude-to-cbc``; REVERSE.md gaps 1-5, 27).

The cbc SDKs (``codebuddy-agent-sdk``, ``@tencent-ai/agent-sdk``) always pass
``--input-format=stream-json --output-format=stream-json --verbose`` and, unless told
otherwise, ``--setting-sources none``; optionally ``--session-id``/``--resume`` with any id
matching ``[A-Za-z0-9][A-Za-z0-9\\-_:]*`` and, from the JS SDK, ``--request-timeout-ms``.
Every word passes in the client's order, except:

- ``--setting-sources none`` -> ``--setting-sources ""`` (Claude refuses ``none``:
  ``Invalid setting source: none``, exit 1; the empty list loads no settings, as ``none``
  does for cbc). ``none`` inside a list is removed from it.
- a session id that is not a UUID (``--session-id``, ``--resume``) -> the UUID
  ``uuid5(SESSION_NAMESPACE, id)``: stable, so a later ``--resume <same id>`` finds the
  session; ``Translation.session_map`` pairs them (rule ``rev-session-id`` maps the UUID
  back in every frame). Claude: ``Invalid session ID. Must be a valid UUID.``
- ``--session-id`` with ``--resume``/``--continue`` and no ``--fork-session`` is dropped
  (the JS ``resumeSession`` passes both; Claude exits 1 on the pair).
- ``--request-timeout-ms N`` is dropped (the SDK's own control timeout; Claude: ``unknown
  option``).
- ``--permission-prompt-tool stdio`` is added unless the client gave one: cbc asks the
  client about every tool over stdio, Claude only with it (the SDKs always answer
  ``can_use_tool``).
- bypass (``--permission-mode bypassPermissions``, ``--dangerously-skip-permissions``) as
  root: ``IS_SANDBOX=1`` in ``Translation.env`` (Claude refuses bypass as root otherwise;
  cbc accepts it).
"""

from __future__ import annotations

import dataclasses  # (not attrs: read before the backend is spawned; bridge.launch)
import uuid
from collections.abc import Sequence

#: the namespace of the UUIDs that stand for non-UUID client session ids
SESSION_NAMESPACE = uuid.UUID("6b2f1c9e-4d3a-5e8f-9a1b-c0ffee5e55e1")
#: Claude options that take exactly one value (so that value is never read as an option)
ONE_VALUE = frozenset(
    {
        "--model",
        "--fallback-model",
        "--permission-mode",
        "--max-turns",
        "--session-id",
        "--system-prompt",
        "--append-system-prompt",
        "--settings",
        "--effort",
        "--input-format",
        "--output-format",
        "--setting-sources",
        "--permission-prompt-tool",
        "--json-schema",
        "--max-budget-usd",
        "--agent",
        "--agents",
        "--debug-file",
        "--name",
        "-n",
        "--request-timeout-ms",
        "--max-thinking-tokens",
        "--plugin-dir",
        "--plugin-url",
        "--system-prompt-file",
        "--append-system-prompt-file",
    }
)
#: options whose value is optional (taken only when the next word is not an option)
OPTIONAL_VALUE = frozenset({"--resume", "-r", "--debug", "-d"})
#: cbc-SDK options Claude lacks: dropped (value included)
DROPPED = {"--request-timeout-ms": "the SDK's own control-request timeout; Claude has none"}
BYPASS = "bypassPermissions"


def claude_session_id(client_id: str) -> str:
    """The UUID Claude is given for the client's session id (itself when it is a UUID)."""
    try:
        return str(uuid.UUID(client_id)) if len(client_id) == 36 else _mapped(client_id)
    except ValueError:
        return _mapped(client_id)


def _mapped(client_id: str) -> str:
    return str(uuid.uuid5(SESSION_NAMESPACE, client_id))


@dataclasses.dataclass(frozen=True)
class Translation:
    argv: list[str]
    #: one line per option dropped or changed in meaning
    warnings: list[str] = dataclasses.field(default_factory=list)
    #: variables to add to Claude's environment (``IS_SANDBOX``)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    #: (client id, Claude UUID) when the client's id is not a UUID, else None
    session_map: tuple[str, str] | None = None
    #: the client passed ``--replay-user-messages`` (rev-local-command keeps replays)
    replay_user_messages: bool = False
    #: the client's ``--model``, when given
    model: str | None = None
    #: the client resumes a session (``--resume``/``--continue``)
    resuming: bool = False
    #: the Claude session id ``--resume`` names (a UUID), when it names one
    resume: str | None = None


def _split(argv: Sequence[str]) -> list[tuple[str, str | None, bool]]:
    """(word, its value or None, written as ``--flag=value``) per option; positional
    words as (word, None, False)."""
    out: list[tuple[str, str | None, bool]] = []
    i = 0
    words = list(argv)
    while i < len(words):
        w = words[i]
        i += 1
        if w == "--":
            out.extend((x, None, False) for x in words[i - 1 :])
            break
        if w.startswith("--") and "=" in w:
            name, _, value = w.partition("=")
            out.append((name, value, True))
        elif w in ONE_VALUE and i < len(words):
            out.append((w, words[i], False))
            i += 1
        elif w in OPTIONAL_VALUE and i < len(words) and not words[i].startswith("-"):
            out.append((w, words[i], False))
            i += 1
        else:
            out.append((w, None, False))
    return out


def translate_to_claude(argv: Sequence[str], *, is_root: bool = False) -> Translation:
    """``argv`` (a cbc SDK's launch words, after the executable) as Claude should get them."""
    opts = _split(argv)
    names = {n for n, _, _ in opts}
    walk = _Walk(
        resuming=bool(names & {"--resume", "-r", "--continue", "-c"}),
        forking="--fork-session" in names,
        bypass="--dangerously-skip-permissions" in names,
    )
    for name, value, eq in opts:
        walk.option(name, value, eq)
    if "--permission-prompt-tool" not in names:
        walk.out.extend(("--permission-prompt-tool", "stdio"))
    env = {"IS_SANDBOX": "1"} if walk.bypass and is_root else {}
    return Translation(
        walk.out,
        walk.warnings,
        env,
        walk.session_map,
        "--replay-user-messages" in names,
        walk.model,
        walk.resuming,
        walk.resume,
    )


@dataclasses.dataclass
class _Walk:
    """The translation under way, one option at a time."""

    resuming: bool
    forking: bool
    bypass: bool
    out: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    session_map: tuple[str, str] | None = None
    model: str | None = None
    resume: str | None = None

    def option(self, name: str, value: str | None, eq: bool) -> None:
        if name in DROPPED:
            self.warnings.append(f"{name} dropped ({DROPPED[name]})")
            return
        if name == "--setting-sources" and value is not None:
            sources = [s.strip() for s in value.split(",") if s.strip() and s.strip() != "none"]
            value, eq = ",".join(sources), False  # `--setting-sources ""`
        elif name in ("--session-id", "--resume", "-r") and value:
            value = self.session(name, value)
            if value is None:
                return
        else:
            self.note(name, value)
        self.emit(name, value, eq)

    def note(self, name: str, value: str | None) -> None:
        """What ``--permission-mode`` and ``--model`` tell (passed on unchanged)."""
        if name == "--permission-mode" and value == BYPASS:
            self.bypass = True
        elif name == "--model" and value:
            self.model = value

    def session(self, name: str, value: str) -> str | None:
        """The session id Claude gets for the client's (``--session-id``, ``--resume``);
        None when the option is dropped."""
        mapped = claude_session_id(value)
        if mapped != value:
            self.session_map = (value, mapped)
        if name == "--session-id" and self.resuming and not self.forking:
            self.warnings.append(
                "--session-id dropped: Claude takes it with --resume/--continue "
                "only together with --fork-session"
            )
            return None
        if name != "--session-id":
            self.resume = mapped
        return mapped

    def emit(self, name: str, value: str | None, eq: bool) -> None:
        if value is None:
            self.out.append(name)
        elif eq or value.startswith("-"):
            self.out.append(f"{name}={value}")
        else:
            self.out.extend((name, value))
