"""Rules ``argv`` and ``session-pin``: whatever command line an official SDK builds, cbc
gets one it accepts, and every option the bridge drops is said once.

The command lines are the SDKs' own: the Python SDK's ``_build_command()`` (installed
``claude_agent_sdk``) and the TypeScript SDK's ``query()`` (recorded in
``data/ts_sdk_argv_*.json`` by ``tests/js/ts_sdk_argv.mjs``). The real binary's verdict is
in ``tests/bridge/test_real_cbc_argv.py``.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.argv import TRANSLATION_TABLE, session_id_of, split_tool_list, translate_to_cbc
from compat.env import translate_env_to_cbc, winddown_ceiling
from compat.flags import BY_NAME, FLAGS

from ..conftest import REFERENCE
from .argv_support import TS_FILES, parse_cbc, ts_argvs

sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import ClaudeAgentOptions  # noqa: E402
from claude_agent_sdk._internal.transport.subprocess_cli import (  # noqa: E402
    SubprocessCLITransport,
)

SID = "33333333-3333-4333-8333-333333333333"
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


def _python_sets() -> dict[str, dict[str, Any]]:
    """ClaudeAgentOptions sets that, together, use every option that becomes a flag."""
    return {
        "everything": dict(
            tools=["Bash", "Read"],
            allowed_tools=["Bash(git log:*)", "Read"],
            disallowed_tools=["Write", "Edit"],
            max_turns=3,
            max_budget_usd=1.5,
            task_budget={"total": 1000},
            model="default-model",
            fallback_model="fast-model",
            betas=["context-1m-2025-08-07"],
            permission_prompt_tool_name="stdio",
            permission_mode="acceptEdits",
            continue_conversation=True,
            resume="11111111-1111-4111-8111-111111111111",
            session_id="22222222-2222-4222-8222-222222222222",
            settings='{"model": "x"}',
            add_dirs=["/tmp/a", "/tmp/b"],
            mcp_servers={"echo": {"type": "stdio", "command": "echo", "args": ["x"]}},
            include_partial_messages=True,
            include_hook_events=True,
            strict_mcp_config=True,
            fork_session=True,
            resume_session_at="msg-1",
            resume_drops_turn="turn-1",
            session_store=object(),
            setting_sources=["user", "project"],
            plugins=[{"type": "local", "path": "/tmp/p"}],
            skills=["pdf"],
            thinking={"type": "enabled", "budget_tokens": 2048, "display": "summarized"},
            effort="high",
            output_format={"type": "json_schema", "schema": SCHEMA},
            system_prompt={"type": "preset", "preset": "claude_code", "append": "Be brief."},
            extra_args={
                "replay-user-messages": None,
                "some-new-flag": "value",
                "negative": "-5",
                "debug-to-stderr": None,
            },
        ),
        "defaults": {},
        "none-and-empty": dict(
            system_prompt=None, tools=[], setting_sources=[], thinking={"type": "adaptive"}
        ),
        "file-and-preset": dict(
            system_prompt={"type": "file", "path": "/tmp/sp.md"},
            tools={"type": "preset", "preset": "claude_code"},
            thinking={"type": "disabled"},
            sandbox={"enabled": True},
        ),
        "custom-and-legacy": dict(
            system_prompt={"type": "custom", "prompt": "You are terse."},
            max_thinking_tokens=4096,
            mcp_servers="/tmp/mcp.json",
        ),
        "string-prompt-mcp-tool": dict(
            system_prompt="Hi", skills="all", permission_prompt_tool_name="mcp__p__ask"
        ),
    }


def python_argvs() -> list[tuple[str, list[str]]]:
    out = []
    for name, opts in _python_sets().items():
        t = SubprocessCLITransport(
            prompt="hi", options=ClaudeAgentOptions(cli_path="/nonexistent/claude", **opts)
        )
        out.append((f"py-{name}", t._build_command()[1:]))
    return out


def all_argvs() -> list[tuple[str, list[str]]]:
    return python_argvs() + ts_argvs()


def check_cbc_argv(argv: list[str]) -> dict[str, list[list[str]]]:
    got, problems = parse_cbc(argv)
    assert problems == [], problems
    assert "--print" in got
    assert got["--input-format"] == [["stream-json"]]
    assert got["--output-format"] == [["stream-json"]]
    assert "--verbose" in got
    return got


# -- the SDKs' command lines ---------------------------------------------------------------


def _options_in_code(function: Any) -> set[str]:
    """The ``--option`` names a function's code spells in its string literals and f-string
    heads: its comments and docstring (which may quote a shape like ``--flag=value``) are
    not code."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(re.findall(r"^(--[a-z][\w-]*)", node.value))
    return found


def test_the_python_option_sets_use_every_flag_the_sdk_can_emit() -> None:
    emitted = _options_in_code(SubprocessCLITransport._build_command)
    used = {
        tok.partition("=")[0] for _, argv in python_argvs() for tok in argv if tok.startswith("--")
    }
    assert emitted - used == set()
    assert len(emitted) >= 35  # a sanity check that the source was read


def test_the_typescript_argvs_were_recorded() -> None:
    if not TS_FILES:
        pytest.skip("no data/ts_sdk_argv_*.json (run tests/js/ts_sdk_argv.mjs)")
    versions = {json.loads(p.read_text())["version"] for p in TS_FILES}
    assert "0.3.220" in versions


@pytest.mark.parametrize(
    ("name", "argv"), all_argvs(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_every_sdk_command_line_becomes_one_cbc_accepts(name: str, argv: list[str]) -> None:
    tr = translate_to_cbc(argv, session_id=SID)
    got = check_cbc_argv(tr.argv)
    # every Claude option was either passed on or named in exactly one warning (or, when
    # nothing is lost, one note: --permission-prompt-tool stdio)
    for tok in argv:
        if not tok.startswith("--"):
            continue
        flag = tok.partition("=")[0]
        spec = BY_NAME.get(flag)
        target = spec.target if spec else flag
        said = [w for w in [*tr.warnings, *tr.notes] if flag in w]
        assert (
            target in got
            or said
            or (spec and spec.action in ("settings", "thinking", "thinking-tokens", "mcp"))
        ), (flag, tr.warnings)
    # one warning per option, never two
    keys = [w.split(" ")[1] if w.startswith("dropped ") else w.split(" ")[0] for w in tr.warnings]
    assert len(keys) == len(set(keys)), tr.warnings
    # split tool lists: separate words, never a comma-joined one
    for opt in ("--allowedTools", "--disallowedTools"):
        for vals in got.get(opt, []):
            assert all("," not in v or "(" in v for v in vals), vals
    if not tr.session_given:
        assert got["--session-id"] == [[SID]]
        assert tr.pinned


def test_python_everything_in_detail() -> None:
    argv = dict(python_argvs())["py-everything"]
    tr = translate_to_cbc(argv, session_id=SID)
    got = check_cbc_argv(tr.argv)
    assert got["--allowedTools"] == [["Bash(git log:*)", "Read", "Skill(pdf)"]]
    assert got["--disallowedTools"] == [["Write", "Edit"]]
    assert got["--tools"] == [["Bash,Read"]]
    assert got["--add-dir"] == [["/tmp/a"], ["/tmp/b"]]
    assert got["--plugin-dir"] == [["/tmp/p"]]
    assert got["--resume"] == [["11111111-1111-4111-8111-111111111111"]]
    assert got["--session-id"] == [["22222222-2222-4222-8222-222222222222"]]  # not pinned
    assert got["--setting-sources"] == [["user,project"]]
    assert got["--replay-user-messages"] == [[]]  # an extra_args flag cbc knows
    assert json.loads(got["--settings"][0][0]) == {"model": "x", "alwaysThinkingEnabled": True}
    assert json.loads(got["--json-schema"][0][0]) == SCHEMA
    assert tr.env == {"MAX_THINKING_TOKENS": "2048"}
    assert tr.stdio_permissions
    assert tr.session_given
    assert not tr.pinned
    assert tr.session_id is None  # --fork-session: cbc makes a new one
    assert sorted(tr.dropped) == sorted(
        [
            "--max-budget-usd",
            "--task-budget",
            "--betas",
            "--permission-prompt-tool",
            "--include-hook-events",
            "--resume-session-at",
            "--resume-drops-turn",
            "--session-mirror",
            "--some-new-flag",
            "--negative",
            "--debug-to-stderr",
            "--thinking-display",
        ]
    )


def test_python_none_and_empty_values() -> None:
    argv = dict(python_argvs())["py-none-and-empty"]
    # the SDK writes an empty value as two words (up to 0.2.189) or as "--flag=" (since)
    at = next(i for i, tok in enumerate(argv) if tok.partition("=")[0] == "--system-prompt")
    assert argv[at] == "--system-prompt=" or argv[at : at + 2] == ["--system-prompt", ""]
    got = check_cbc_argv(translate_to_cbc(argv).argv)
    assert got["--system-prompt"] == [[""]]
    assert got["--tools"] == [[""]]
    assert got["--setting-sources"] == [["none"]]  # Claude's empty list is cbc's "none"
    assert json.loads(got["--settings"][0][0]) == {"alwaysThinkingEnabled": True}


def test_thinking_and_sandbox_settings_merge() -> None:
    argv = dict(python_argvs())["py-file-and-preset"]
    got = check_cbc_argv(translate_to_cbc(argv).argv)
    assert got["--system-prompt-file"] == [["/tmp/sp.md"]]
    assert got["--tools"] == [["default"]]
    assert json.loads(got["--settings"][0][0]) == {
        "sandbox": {"enabled": True},
        "alwaysThinkingEnabled": False,
    }
    tr = translate_to_cbc(["--settings", "/tmp/settings.json", "--thinking", "disabled"])
    assert parse_cbc(tr.argv)[0]["--settings"] == [["/tmp/settings.json"]]
    assert any("not applied" in w for w in tr.warnings)


def test_max_thinking_tokens_goes_to_the_environment() -> None:
    tr = translate_to_cbc(dict(python_argvs())["py-custom-and-legacy"])
    assert tr.env == {"MAX_THINKING_TOKENS": "4096"}
    assert parse_cbc(tr.argv)[0]["--mcp-config"] == [["/tmp/mcp.json"]]
    off = translate_to_cbc(["--max-thinking-tokens", "0"])
    assert off.env == {}
    assert json.loads(parse_cbc(off.argv)[0]["--settings"][0][0]) == {
        "alwaysThinkingEnabled": False
    }


def test_a_prompt_tool_that_is_not_stdio_is_dropped_and_does_not_route_prompts() -> None:
    tr = translate_to_cbc(dict(python_argvs())["py-string-prompt-mcp-tool"])
    assert not tr.stdio_permissions
    assert any("--permission-prompt-tool" in w and "denies" in w for w in tr.warnings)
    assert parse_cbc(tr.argv)[0]["--allowedTools"] == [["Skill"]]


# -- forms and edge cases ------------------------------------------------------------------


@pytest.mark.parametrize("form", ["space", "equals"])
def test_flag_value_and_flag_equals_value_are_the_same(form: str) -> None:
    pairs = [
        ("--model", "m1"),
        ("--max-turns", "4"),
        ("--permission-mode", "plan"),
        ("--allowedTools", "Bash,Read"),
        ("--max-budget-usd", "2"),
        ("--setting-sources", "user"),
        ("--mcp-config", '{"mcpServers":{}}'),
    ]
    argv = (
        [t for f, v in pairs for t in (f, v)] if form == "space" else [f"{f}={v}" for f, v in pairs]
    )
    tr = translate_to_cbc(argv, session_id=SID)
    got = check_cbc_argv(tr.argv)
    assert got["--model"] == [["m1"]]
    assert got["--max-turns"] == [["4"]]
    assert got["--permission-mode"] == [["plan"]]
    assert got["--allowedTools"] == [["Bash", "Read"]]
    assert got["--setting-sources"] == [["user"]]
    assert tr.dropped == ["--max-budget-usd"]


def _seen_by_cbc(argv: list[str]) -> tuple[object, ...]:
    tr = translate_to_cbc(argv, session_id=SID)
    got, problems = parse_cbc(tr.argv)
    return got, problems, tr.warnings, tr.dropped, tr.env, tr.stdio_permissions, tr.prompt


_VALUED = [f for f in FLAGS if f.arity != "none" and f.name.startswith("--")]


@pytest.mark.parametrize("flag", _VALUED, ids=lambda f: f.name)
@settings(max_examples=25, deadline=None)
@given(value=st.text(st.characters(blacklist_categories=["Cs"]), max_size=12))
def test_every_value_means_the_same_in_either_form(flag: Any, value: str) -> None:
    """An SDK may write any option as ``--flag value`` or ``--flag=value`` (the Python SDK
    moved to the second in 0.2.190): cbc must get the same either way. An option whose value
    is optional binds a following word only when it is not an option."""
    if flag.arity != "one" and (value.startswith("-") or value == ""):
        value = "v" + value
    assert _seen_by_cbc([flag.name, value]) == _seen_by_cbc([f"{flag.name}={value}"])


def test_dash_leading_values_stay_bound_to_their_flag() -> None:
    tr = translate_to_cbc(["--system-prompt", "-- be terse", "--resume=-odd", "--name", "-x"])
    assert "--system-prompt=-- be terse" in tr.argv
    assert "--resume=-odd" in tr.argv
    assert "--name=-x" in tr.argv
    check_cbc_argv(tr.argv)
    # cbc's variadic options too: a dash-leading value is one --flag=value word (that form
    # binds one value; as a word of its own, --plugin-dir -p would turn on --print)
    tr = translate_to_cbc(["--add-dir=-a", "--add-dir", "/b", "/c", "--plugin-dir=-p"])
    got = check_cbc_argv(tr.argv)
    assert got["--add-dir"] == [["-a"], ["/b", "/c"]]
    assert got["--plugin-dir"] == [["-p"]]


def test_repeated_drops_warn_once_and_the_first_positional_is_the_prompt() -> None:
    # (a variadic option takes every following word, as commander does: --betas=c d)
    tr = translate_to_cbc(["--betas", "a", "b", "--betas=c", "d", "--verbose", "hello", "--", "x"])
    assert len([w for w in tr.warnings if "--betas" in w]) == 1
    # Claude takes the first positional word as the prompt and ignores the rest (probe
    # two-positionals); the prompt never reaches cbc's argv (it goes on stdin as a user line)
    assert tr.prompt == "hello"
    assert tr.ignored == ["x"]
    assert "hello" not in tr.argv
    assert not [w for w in tr.warnings if "positional" in w or "'--'" in w]
    check_cbc_argv(tr.argv)


def test_a_prompt_after_dashdash() -> None:
    tr = translate_to_cbc(["-p", "--output-format", "json", "--", "-not-an-option"])
    assert tr.prompt == "-not-an-option"
    assert tr.options["--output-format"] == ["json"]
    assert "-not-an-option" not in tr.argv
    check_cbc_argv(tr.argv)


def test_unknown_cbc_known_and_refused_options() -> None:
    tr = translate_to_cbc(
        [
            "--brand-new",
            "v",
            "--other-new",
            "--subagent-permission-mode",
            "plan",
            "-y",
            "--serve",
            "--port",
            "8080",
            "--bg",
            "--tmux",
            "--remote-control",
            "--help",
            "-v",
        ]
    )
    got = check_cbc_argv(tr.argv)
    assert got["--subagent-permission-mode"] == [["plan"]]
    assert "--dangerously-skip-permissions" in got
    for gone in (
        "--serve",
        "--port",
        "--bg",
        "--tmux",
        "--remote-control",
        "--help",
        "--version",
        "--brand-new",
        "--other-new",
    ):
        assert gone not in got
    assert {
        "--brand-new",
        "--other-new",
        "--serve",
        "--port",
        "--bg",
        "--tmux",
        "--remote-control",
        "--help",
        "--version",
    } <= set(tr.dropped)


def test_claude_variadic_options() -> None:
    tr = translate_to_cbc(
        [
            "--tools",
            "Bash",
            "Read",
            "--mcp-config",
            '{"mcpServers":{"a":{}}}',
            '{"mcpServers":{"b":{}}}',
            "--add-dir",
            "/x",
            "/y",
            "--file",
            "f1:a",
            "f2:b",
            "--fallback-model",
            "m1,m2",
        ]
    )
    got = check_cbc_argv(tr.argv)
    assert got["--tools"] == [["Bash,Read"]]
    assert json.loads(got["--mcp-config"][0][0]) == {"mcpServers": {"a": {}, "b": {}}}
    assert got["--add-dir"] == [["/x", "/y"]]
    assert got["--fallback-model"] == [["m1"]]
    assert "--file" in tr.dropped
    mixed = translate_to_cbc(["--mcp-config", "/a.json", "/b.json"])
    assert parse_cbc(mixed.argv)[0]["--mcp-config"] == [["/a.json"]]
    assert any("kept '/a.json'" in w for w in mixed.warnings)


def test_permission_modes_and_formats() -> None:
    tr = translate_to_cbc(
        [
            "--permission-mode",
            "manual",
            "--output-format",
            "json",
            "--input-format=text",
            "-p",
            "--print",
            "--verbose",
            "--verbose",
        ]
    )
    got = check_cbc_argv(tr.argv)
    assert got["--permission-mode"] == [["default"]]
    assert got["--print"] == [[]]
    assert got["--verbose"] == [[]]
    # cbc always gets stream-json; the client's formats are kept for the renderer, unwarned
    assert got["--input-format"] == [["stream-json"]]
    assert got["--output-format"] == [["stream-json"]]
    assert not [w for w in tr.warnings if "stream-json" in w]
    assert tr.options["--output-format"] == ["json"]
    assert tr.options["--input-format"] == ["text"]


def test_split_tool_lists_respect_parentheses() -> None:
    assert split_tool_list(["Bash(git log:*),Edit", "Read Write", "Bash(a, b)"]) == [
        "Bash(git log:*)",
        "Edit",
        "Read",
        "Write",
        "Bash(a, b)",
    ]


# -- session-pin ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        ["--resume", "abc"],
        ["--resume=abc"],
        ["-r", "abc"],
        ["--continue"],
        ["-c"],
        ["--session-id", "abc"],
        ["--session-id=abc"],
        ["--resume"],
    ],
)
def test_no_pin_when_the_client_names_the_session(given: list[str]) -> None:
    tr = translate_to_cbc(given, session_id=SID)
    assert tr.session_given
    assert not tr.pinned
    assert SID not in tr.argv


def test_pin_adds_the_bridge_uuid_and_can_be_switched_off() -> None:
    tr = translate_to_cbc(["--model", "m"], session_id=SID)
    assert tr.pinned
    assert tr.session_id == SID
    assert tr.argv[-2:] == ["--session-id", SID]
    assert session_id_of(tr.argv) == SID
    off = translate_to_cbc(["--model", "m"], session_id=SID, pin=False)
    assert not off.pinned
    assert "--session-id" not in off.argv
    assert translate_to_cbc(["--session-id=abc"]).session_id == "abc"
    assert session_id_of(["--resume=xyz"]) == "xyz"


# -- the table -------------------------------------------------------------------------------


def test_every_option_of_claude_help_is_in_the_table() -> None:
    if REFERENCE is None:
        pytest.skip("reference captures not found (set CCBRIDGE_SHARED)")
    names: set[str] = set()
    for version in ("claude-2.1.197", "claude-2.1.220", "claude-2.1.332"):
        for raw in (REFERENCE / version / "help.txt").read_text().splitlines():
            m = re.match(r"^\s{2}(?:(-\w), )?(--[\w-]+)(?:, (--[\w-]+))?", raw)
            if m:
                names.update(n for n in m.groups() if n)
    assert names - set(BY_NAME) == set()


def test_the_table_is_exported_for_the_docs() -> None:
    assert len(TRANSLATION_TABLE) == len(FLAGS)
    rows = {r[0].split(",")[0].split(" ")[0]: r for r in TRANSLATION_TABLE}
    assert rows["--allowedTools"][1] == "--allowedTools"
    assert rows["--betas"][1] == "-"
    assert "split" in rows["--allowedTools"][2]


def test_dropin_help_lists_the_claude_options() -> None:
    from bridge.dropin import help_text

    text = help_text()
    for f in FLAGS:
        assert f.name in text


# -- env -----------------------------------------------------------------------------------


def test_env_maps_counterparts_and_sets_what_the_cbc_sdk_sets() -> None:
    env = {
        "CLAUDE_CODE_ENTRYPOINT": "sdk-py",
        "CLAUDE_AGENT_SDK_VERSION": "0.2.189",
        "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1",
        "CLAUDE_CODE_MAX_RETRIES": "2",
        "CODEBUDDY_CUSTOM_HEADERS": "X-Team: a",
        "DISABLE_AUTOUPDATER": "0",
    }
    out = translate_env_to_cbc(env, {"MAX_THINKING_TOKENS": "2048"}, bridge_version="9.9")
    assert out["CODEBUDDY_CODE_ENTRYPOINT"] == "sdk-py"
    assert out["CODEBUDDY_CODE_DISABLE_BACKGROUND_TASKS"] == "1"
    assert out["CODEBUDDY_MAX_RETRIES"] == "2"
    assert out["DISABLE_AUTOUPDATER"] == "1"  # always: an update restarts cbc mid-session
    assert out["CODEBUDDY_DISABLE_AUTO_MEMORY"] == "1"
    assert out["MAX_THINKING_TOKENS"] == "2048"
    assert out["CODEBUDDY_CUSTOM_HEADERS"] == (
        "User-Agent: ccbridge/9.9 (claude-on-cbc; sdk-py; Claude Agent SDK/0.2.189)\nX-Team: a"
    )
    assert out["CLAUDE_CODE_ENTRYPOINT"] == "sdk-py"  # kept
    mine = translate_env_to_cbc(
        {
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "0",
            "CODEBUDDY_CODE_ENTRYPOINT": "mine",
            "CLAUDE_CODE_ENTRYPOINT": "sdk-ts",
            "MAX_THINKING_TOKENS": "1",
        },
        {"MAX_THINKING_TOKENS": "5"},
    )
    assert mine["CODEBUDDY_DISABLE_AUTO_MEMORY"] == "0"  # the user's choice wins
    assert mine["CODEBUDDY_CODE_ENTRYPOINT"] == "mine"
    assert mine["MAX_THINKING_TOKENS"] == "1"
    assert "CODEBUDDY_CUSTOM_HEADERS" not in mine


def test_the_wind_down_ceiling_comes_from_claudes_variable() -> None:
    assert winddown_ceiling({}) is None
    assert winddown_ceiling({"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "1500"}) == 1.5
    assert winddown_ceiling({"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "-3"}) == 0.0
    assert winddown_ceiling({"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "soon"}) is None


def test_the_launch_page_carries_the_launch_tables() -> None:
    from compat.argv import readme_tables

    from ..conftest import REPO

    page = (REPO / "docs" / "launch.md").read_text(encoding="utf-8")
    block = page.split("<!-- launch-tables -->\n", 1)[1].split("\n<!-- /launch-tables -->")[0]
    assert block == readme_tables(), (
        "docs/launch.md out of date: paste compat.argv.readme_tables() between its markers"
    )


def test_an_option_cbc_needs_not_is_said_at_info_not_warned() -> None:
    """Claude's --allow-dangerously-skip-permissions only makes bypassPermissions a mode the
    session may switch to; cbc's set_permission_mode allows it without: nothing is lost,
    so the SDKs and editor adapters that always pass it get no warning on every start."""
    t = translate_to_cbc(["--allow-dangerously-skip-permissions", "--verbose"])
    assert "--allow-dangerously-skip-permissions" not in t.argv
    assert t.warnings == []
    assert t.notes == [
        "--allow-dangerously-skip-permissions not passed: "
        "cbc lets a session switch to bypassPermissions without it"
    ]
    assert "--allow-dangerously-skip-permissions" in t.dropped
