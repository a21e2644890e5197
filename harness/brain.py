"""What the stand-in model answers (pure: a request in, a decision out; no I/O).

The reply is decided from the *latest input* only: the last user message (all its text
blocks, so Claude's ``<system-reminder>`` blocks count) or the latest tool results, plus
any ``system`` messages after them (Claude Code 2.1.220 surfaces a user line written
mid-turn that way). Rules are tried in order; a rule fires only for the kind of agent it
names (default ``main``) and a tool rule never for a request that offers no tools
(Claude's title requests), so a trigger repeated in a sub-agent's prompt, a title request
or a notification cannot loop. Otherwise: "done." after a tool result, "ok" after user
text (the replies of the stand-in the reference captures were made with).

Who is asking: cbc says so in ``X-Agent-Type`` (``main``, ``subagent``, ``team`` for a
background agent); Claude Code in the billing line that opens a sub-agent's system prompt
(``SUBAGENT_MARKER``). A request offering no tools is a ``utility`` request.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any, Literal

import attrs

AgentKind = Literal["main", "sub", "utility"]
RuleAgent = Literal["main", "sub", "utility", "any"]
#: Claude Code 2.1.220 marks a sub-agent's (and a workflow agent's) request in the billing
#: line that opens its system prompt: ``cc_entrypoint=sdk-cli; cc_is_subagent=true;``
SUBAGENT_MARKER = "cc_is_subagent=true"


def _nonneg(_: object, a: attrs.Attribute[float], v: float) -> None:
    if v < 0:
        raise ValueError(f"{a.name} must be >= 0, not {v}")


STOPS = ("end_turn", "tool_use", "max_tokens", "refusal", "stop_sequence")
#: HTTP statuses a rule may answer with instead of a reply (the API's error kinds)
ERROR_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "api_error",
    529: "overloaded_error",
}


@attrs.frozen
class Call:
    """One tool call of a reply (several in one reply: parallel tool use)."""

    tool: str
    input: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Rule:
    """When the latest input contains ``when`` (or matches ``regex``), reply with ``text``
    and/or a call of ``tool`` with ``input`` (or several calls in one message: ``calls``).
    With ``regex``, ``$1``..``$9`` in the string values of ``input`` and in ``text`` are
    replaced by the groups.

    ``thinking`` opens the reply with a thinking block (Anthropic ``thinking`` with a
    signature; OpenAI ``reasoning_content`` deltas). ``stop`` overrides the stop reason
    (``max_tokens`` / ``refusal``: OpenAI ``length`` / ``content_filter``). ``status``
    answers with that HTTP error instead (``retry_after`` seconds in ``retry-after``), for
    ``times`` requests: the retry that follows gets the next matching rule. ``cut`` ends
    the stream after half of the reply's deltas, the connection closed without the final
    events; ``stall`` waits that many seconds in mid-stream (after the first half of the
    deltas, pings meanwhile); both apply to streamed replies only. ``image`` (true/false)
    also requires that the latest input does (or does not) carry an image."""

    when: str | None = None
    regex: str | None = None
    agent: RuleAgent = "main"
    tool: str | None = None
    input: dict[str, Any] = attrs.field(factory=dict)
    calls: tuple[Call, ...] = ()
    text: str | None = None
    thinking: str | None = None
    stop: str | None = None
    status: int | None = None
    retry_after: float | None = attrs.field(default=None)
    message: str | None = None  # the error's message, with ``status``
    cut: bool = False
    stall: float = attrs.field(default=0.0, validator=_nonneg)
    image: bool | None = None
    delay: float = attrs.field(default=0.0, validator=_nonneg)
    times: int | None = None  # fire at most this many times

    def __attrs_post_init__(self) -> None:
        self._check_match()
        self._check_reply()
        self._check_error()
        if self.cut and self.stall:
            raise ValueError("a rule takes `cut` or `stall`, not both")

    def _check_match(self) -> None:
        if self.when is not None and self.regex is not None:
            raise ValueError("a rule takes `when` or `regex`, not both")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as e:
                raise ValueError(f"regex {self.regex!r}: {e}") from None

    def _check_reply(self) -> None:
        if self.input and self.tool is None:
            raise ValueError("`input` needs `tool`")
        if self.calls and self.tool is not None:
            raise ValueError("a rule takes `tool` or `calls`, not both")
        if self.times is not None and self.times < 1:
            raise ValueError("`times` must be >= 1")
        if self.stop is not None and self.stop not in STOPS:
            raise ValueError(f"`stop` must be one of {', '.join(STOPS)}, not {self.stop!r}")

    def _check_error(self) -> None:
        if self.status is not None:
            if not 400 <= self.status <= 599:
                raise ValueError(f"`status` must be an HTTP error (400-599), not {self.status}")
            reply = [
                k
                for k in ("tool", "calls", "text", "thinking", "stop", "cut", "stall")
                if getattr(self, k) not in (None, (), False, 0.0)
            ]
            if reply:
                raise ValueError(f"`status` answers with an error: no {', '.join(reply)}")
        elif self.retry_after is not None or self.message is not None:
            raise ValueError("`retry_after` and `message` go with `status`")
        if self.retry_after is not None and self.retry_after < 0:
            raise ValueError("`retry_after` must be >= 0")

    @property
    def all_calls(self) -> tuple[Call, ...]:
        return self.calls or ((Call(self.tool, self.input),) if self.tool is not None else ())

    def match(self, latest: str) -> re.Match[str] | bool:
        if self.regex is not None:
            return re.search(self.regex, latest) or False
        return self.when is None or self.when in latest


@attrs.frozen
class ModelScript:
    rules: tuple[Rule, ...] = ()
    default_text: str = "ok"
    after_tool_text: str = "done."
    #: requests offering no tools (Claude's session-title request)
    utility_text: str = "Mock title"
    default_delay: float = attrs.field(default=0.0, validator=_nonneg)


@attrs.frozen
class Decision:
    text: str | None
    calls: tuple[Call, ...] = ()
    delay: float = 0.0
    rule: int | None = None  # index of the rule that fired
    thinking: str | None = None
    stop: str | None = None  # None: tool_use when there are calls, else end_turn
    status: int | None = None  # an HTTP error instead of a reply
    retry_after: float | None = None
    message: str | None = None
    cut: bool = False
    stall: float = 0.0

    @property
    def tool(self) -> str | None:
        return self.calls[0].tool if self.calls else None

    @property
    def input(self) -> dict[str, Any]:
        return self.calls[0].input if self.calls else {}

    @property
    def stop_reason(self) -> str:
        return self.stop or ("tool_use" if self.calls else "end_turn")

    def summary(self) -> list[Any]:
        if self.status is not None:
            return ["error", self.status]
        out: list[Any] = (
            ["tool_use", *(c.tool for c in self.calls)] if self.calls else ["text", self.text]
        )
        extra = [k for k in ("thinking", "cut") if getattr(self, k)]
        if self.stop is not None and self.stop != ("tool_use" if self.calls else "end_turn"):
            extra.append(f"stop={self.stop}")
        if self.stall:
            extra.append(f"stall={self.stall:g}")
        return out + extra


@attrs.frozen
class Request:
    """What the rules look at, the same for both dialects."""

    dialect: Literal["anthropic", "openai"]
    agent: AgentKind
    model: str
    stream: bool
    n_messages: int
    tools: tuple[str, ...]
    latest: str  # text of the latest user message or tool results, and system notes after
    after_tool: bool
    shown: str = ""  # the latest input without the trailing system messages (for the log)
    images: int = 0  # image blocks in the latest input
    #: tool name -> its input schema, as the request offered it
    schemas: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)


# -- reading requests -------------------------------------------------------------------
def _texts(content: Any) -> Iterator[tuple[str, bool]]:
    """(text, is_tool_result) pieces of a message's content, either dialect."""
    if isinstance(content, str):
        yield content, False
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            yield block["text"], False
        elif block.get("type") == "tool_result":
            for text, _ in _texts(block.get("content")):
                yield text, True


def _images(content: Any) -> int:
    """Image blocks in a message's content (Anthropic ``image``, OpenAI ``image_url``),
    tool results' included."""
    if not isinstance(content, list):
        return 0
    n = 0
    for block in content:
        if isinstance(block, dict):
            if block.get("type") in ("image", "image_url"):
                n += 1
            elif block.get("type") == "tool_result":
                n += _images(block.get("content"))
    return n


def agent_kind_anthropic(body: dict[str, Any]) -> AgentKind:
    if not body.get("tools"):
        return "utility"
    system = body.get("system")
    text = system if isinstance(system, str) else "".join(t for t, _ in _texts(system))
    return "sub" if SUBAGENT_MARKER in text else "main"


def parse_request(dialect: str, headers: dict[str, str], body: dict[str, Any]) -> Request:
    messages = body.get("messages") or []
    tools, schemas = _offered(body)
    if dialect == "anthropic":
        agent = agent_kind_anthropic(body)
    else:
        kind = headers.get("x-agent-type", "").lower()
        agent = ("sub" if kind in ("subagent", "team") else "main") if tools else "utility"
    pieces, late, images = _latest_input(messages)
    shown = "\n".join(t for t, _ in pieces)
    pieces += late
    return Request(
        dialect="anthropic" if dialect == "anthropic" else "openai",
        agent=agent,
        model=str(body.get("model") or "mock-model"),
        stream=bool(body.get("stream")),
        n_messages=len(messages),
        tools=tuple(tools),
        latest="\n".join(t for t, _ in pieces),
        after_tool=any(is_tool for _, is_tool in pieces),
        shown=shown,
        images=images,
        schemas=schemas,
    )


def _offered(body: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The names of the tools a request offers, and their input schemas by name (either
    dialect)."""
    tools: list[str] = []
    schemas: dict[str, Any] = {}
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            got = t.get("function")
            fn: dict[str, Any] = got if isinstance(got, dict) else {}
            name = t.get("name") or fn.get("name")
            if isinstance(name, str):
                tools.append(name)
                schemas[name] = t.get("input_schema") or fn.get("parameters")
    return tools, schemas


def _latest_input(
    messages: list[Any],
) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]], int]:
    """The latest input's (text, is_tool_result) pieces, those of the ``system`` messages
    after it, and its image blocks.

    The latest input: trailing tool results (OpenAI: one `tool` message per call), else
    the last user message; plus the `system` messages after it. Claude Code 2.1.220
    (beta "mid-conversation-system") appends one after the first user message (the agent
    list), and surfaces a user line written mid-turn as one after the tool results
    ("The user sent a new message while you were working: ...")."""
    convo = [m for m in messages if isinstance(m, dict)]
    late: list[dict[str, Any]] = []
    while len(convo) > 1 and convo[-1].get("role") == "system":
        late.insert(0, convo.pop())
    pieces, images = _last_input(convo)
    notes = [(t, False) for m in late for t, _ in _texts(m.get("content"))]
    return pieces, notes, images


def _last_input(convo: list[dict[str, Any]]) -> tuple[list[tuple[str, bool]], int]:
    """The pieces and image blocks of the trailing tool results, else of the last user
    message."""
    tail = []
    for m in reversed(convo):
        if m.get("role") != "tool":
            break
        tail.append(m)
    if tail:
        pieces = [(t, True) for m in reversed(tail) for t, _ in _texts(m.get("content"))]
        return pieces, sum(_images(m.get("content")) for m in tail)
    if convo and convo[-1].get("role") == "user":
        content = convo[-1].get("content")
        return list(_texts(content)), _images(content)
    return [], 0


# -- deciding -------------------------------------------------------------------------
def _expand(value: Any, m: re.Match[str] | bool) -> Any:
    if not isinstance(m, re.Match):
        return value
    if isinstance(value, str):
        return re.sub(r"\$([1-9])", lambda g: m.group(int(g.group(1))) or "", value)
    if isinstance(value, dict):
        return {k: _expand(v, m) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, m) for v in value]
    return value


def fit_input(value: Any, schema: Any) -> Any:
    """A scripted tool input shaped to the schema the request offered, as a model would:
    when the schema requires exactly one property the input lacks (cbc 2.163.0 offers its
    ``StructuredOutput`` tool with the answer under a required ``data`` on some runs and
    flat on others), the input goes under that property; otherwise it is sent as written."""
    if not isinstance(value, dict) or not isinstance(schema, dict):
        return value
    required = schema.get("required")
    props = schema.get("properties")
    if not isinstance(required, list) or not isinstance(props, dict):
        return value
    missing = [k for k in required if isinstance(k, str) and k not in value]
    if len(missing) != 1 or len(required) != 1:
        return value
    inner = props.get(missing[0])
    if isinstance(inner, dict) and inner.get("type") not in (None, "object"):
        return value
    return {missing[0]: value}


class Brain:
    """Applies a ``ModelScript``; remembers how often each rule fired."""

    def __init__(self, script: ModelScript) -> None:
        self.script = script
        self.fired: Counter[int] = Counter()

    def decide(self, req: Request) -> Decision:
        for i, rule in enumerate(self.script.rules):
            m = self._fires(i, rule, req)
            if m:
                self.fired[i] += 1
                return self._decision(i, rule, m, req)
        return Decision(self._fallback(req), delay=self.script.default_delay)

    def _fires(self, i: int, rule: Rule, req: Request) -> re.Match[str] | bool:
        """What rule ``i`` matched in ``req``; False when it does not fire."""
        if rule.agent != "any" and rule.agent != req.agent:
            return False
        if (rule.tool is not None or rule.calls) and req.agent == "utility":
            return False  # no tools offered: a call could not be answered
        if rule.times is not None and self.fired[i] >= rule.times:
            return False
        m = rule.match(req.latest)
        if not m:
            return False
        if rule.image is not None and rule.image != (req.images > 0):
            return False
        return m

    def _decision(self, i: int, rule: Rule, m: re.Match[str] | bool, req: Request) -> Decision:
        delay = rule.delay or self.script.default_delay
        if rule.status is not None:
            return Decision(
                None,
                delay=delay,
                rule=i,
                status=rule.status,
                retry_after=rule.retry_after,
                message=_expand(rule.message, m),
            )
        calls = rule.all_calls
        text = _expand(rule.text, m)
        if not calls and text is None:
            text = self._fallback(req)
        return Decision(
            text,
            tuple(
                Call(c.tool, fit_input(_expand(c.input, m), req.schemas.get(c.tool))) for c in calls
            ),
            delay,
            i,
            thinking=_expand(rule.thinking, m),
            stop=rule.stop,
            cut=rule.cut,
            stall=rule.stall,
        )

    def _fallback(self, req: Request) -> str:
        if req.agent == "utility":
            return self.script.utility_text
        return self.script.after_tool_text if req.after_tool else self.script.default_text
