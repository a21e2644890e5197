"""Launch options inside ``initialize`` (``--await-initialize``, ``compat.launch_init``):
TypeScript SDK 0.3.337 sends its MCP servers there by default and ends the session unless
the reply confirms them (``mcp_servers_applied``). The bridge reads that request before it
starts cbc and gives cbc the options on its command line (rule ``argv``);
``initialize-request`` removes what cbc got, ``initialize-reply`` confirms it. The real
SDK over the real cbc: ``tests/bridge/test_ts_sdk_mcp_real.py``."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compat import launch_init
from compat.argv import translate_to_cbc

from .argv_support import parse_cbc
from .control_support import cr, engine, replay, reply_to

SDK_ARGV = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
SERVERS = {"ext": {"type": "stdio", "command": "python3", "args": ["-m", "srv", "--x"]}}


def launched(body: dict[str, Any], argv: list[str] = SDK_ARGV) -> tuple[Any, frozenset[str]]:
    """What cbc gets for a client that awaits initialize and sends ``body``: (its options
    as commander parses them, the fields applied)."""
    words, fields = launch_init.launch_options(body)
    tr = translate_to_cbc([*words, *argv, launch_init.AWAIT], session_id="s")
    got, problems = parse_cbc(tr.argv)
    assert problems == [], problems
    return got, launch_init.applied(fields, tr.dropped)


# -- which clients await initialize ----------------------------------------------------------


def test_only_a_stream_json_client_with_await_initialize_is_read_before_the_launch() -> None:
    def awaits(argv: list[str]) -> bool:
        return launch_init.awaits_initialize(translate_to_cbc(argv).options)

    assert awaits([*SDK_ARGV, "--await-initialize"])
    assert awaits(["--await-initialize", "--input-format=stream-json", "-p"])
    assert not awaits(SDK_ARGV)  # the 0.3.220 SDK, the Python SDK
    assert not awaits(["-p", "hi", "--await-initialize"])  # a text prompt: no initialize


def test_the_await_flags_are_left_out_quietly() -> None:
    tr = translate_to_cbc([*SDK_ARGV, "--await-initialize", "--initialize-fields=settings"])
    assert "--await-initialize" not in tr.argv
    assert not any("initialize" in w for w in tr.warnings), tr.warnings
    assert any("--await-initialize" in n for n in tr.notes)


# -- the fields as cbc's options -------------------------------------------------------------


def test_every_launch_field_reaches_cbc_as_its_option() -> None:
    body = {
        "subtype": "initialize",
        "mcpServers": SERVERS,
        "settings": {"model": "m", "permissions": {"deny": ["Bash"]}},
        "disallowedTools": ["Bash(rm:*)", "Write"],
        "additionalDirectories": ["/tmp/a", "-odd"],
        "plugins": [{"type": "local", "path": "/p"}, {"type": "local", "path": "/q"}],
    }
    got, applied = launched(body)
    assert json.loads(got["--mcp-config"][0][0]) == {"mcpServers": SERVERS}
    assert json.loads(got["--settings"][0][0]) == body["settings"]
    assert got["--disallowedTools"] == [["Bash(rm:*)", "Write"]]
    assert got["--add-dir"] == [["/tmp/a"], ["-odd"]]  # a dash-leading value stays bound
    assert [v for [v] in got["--plugin-dir"]] == ["/p", "/q"]
    assert applied == set(body) - {"subtype"}


def test_what_cbc_cannot_take_is_not_confirmed() -> None:
    body = {
        "subtype": "initialize",
        "managedSettings": {"x": 1},  # cbc has no managed settings: argv drops it
        "plugins": [{"type": "remote", "url": "u"}],  # no option form
        "mcpServers": ["not", "a", "map"],
    }
    got, applied = launched(body)
    assert applied == frozenset()
    assert "--mcp-config" not in got
    assert "--plugin-dir" not in got
    assert launch_init.confirmations(body, applied) == {
        "mcp_servers_applied": False,
        "plugins_applied": False,
        "managed_settings_applied": False,
    }


def test_a_settings_path_and_empty_lists() -> None:
    got, applied = launched(
        {"subtype": "initialize", "settings": "/etc/s.json", "disallowedTools": []}
    )
    assert got["--settings"] == [["/etc/s.json"]]
    assert "--disallowedTools" not in got  # nothing to disallow: nothing lost either
    assert applied == {"settings", "disallowedTools"}


def test_the_servers_join_those_of_the_command_line() -> None:
    """A client that also names a config on its command line: cbc takes one, so the
    translator merges both (rule ``argv``, action ``mcp``)."""
    argv = [*SDK_ARGV, "--mcp-config", json.dumps({"mcpServers": {"cli": {"command": "c"}}})]
    got, applied = launched({"subtype": "initialize", "mcpServers": SERVERS}, argv)
    [[config]] = got["--mcp-config"]
    assert set(json.loads(config)["mcpServers"]) == {"cli", "ext"}
    assert applied == {"mcpServers"}


names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    servers=st.dictionaries(
        names, st.fixed_dictionaries({"command": names, "args": st.lists(names, max_size=3)})
    ),
    # a tool name (commas, spaces and parentheses separate or group tools: split_tool_list)
    denied=st.lists(names.filter(lambda s: not any(c.isspace() or c in ",()" for c in s))),
    dirs=st.lists(names, max_size=3),
)
def test_any_fields_reach_cbc_unchanged(
    servers: dict[str, Any], denied: list[str], dirs: list[str]
) -> None:
    body = {
        "subtype": "initialize",
        "mcpServers": servers,
        "disallowedTools": denied,
        "additionalDirectories": dirs,
    }
    got, applied = launched(body)
    assert applied == {"mcpServers", "disallowedTools", "additionalDirectories"}
    assert json.loads(got["--mcp-config"][0][0]) == {"mcpServers": servers}
    assert [v for vals in got.get("--disallowedTools", []) for v in vals] == denied
    assert [v for [v] in got.get("--add-dir", [])] == dirs


@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_first_line_is_read_without_an_error(line: bytes) -> None:
    body = launch_init.initialize_body(line)
    if body is not None:
        launch_init.launch_options(body)


def test_only_an_initialize_request_is_one() -> None:
    assert launch_init.initialize_body(json.dumps(cr("i", subtype="initialize")).encode())
    for other in (
        cr("i", subtype="interrupt"),
        {"type": "user", "message": {"role": "user", "content": "hi"}},
        {"type": "control_request", "request": "initialize"},
        [1],
    ):
        assert launch_init.initialize_body(json.dumps(other).encode()) is None


# -- the rules: the request without them, the reply confirming them --------------------------


def test_fields_cbc_got_at_launch_leave_the_request_and_are_confirmed() -> None:
    eng = engine()
    eng.state.launch_fields = frozenset({"mcpServers", "additionalDirectories"})
    request = cr(
        "init",
        subtype="initialize",
        hooks={},
        mcpServers=SERVERS,
        additionalDirectories=["/tmp/a"],
        managedSettings={"x": 1},
    )
    reply = reply_to("nomodel_controls-after-session", "init")
    run = replay(eng, extra=[(0.0, "client", request), (1.0, "backend", reply)])
    [sent] = run.frames("backend")
    assert sent["request"] == {"subtype": "initialize", "hooks": {}}
    [warning] = [g for g in run.logs if g.level == "warning"]
    assert "managedSettings" in warning.message
    assert "mcpServers" not in warning.message
    [answer] = run.frames()
    body = answer["response"]["response"]
    assert body["mcp_servers_applied"] is True
    assert body["additional_directories_applied"] is True
    assert body["managed_settings_applied"] is False
    assert "settings_applied" not in body  # not asked: not said


def test_an_initialize_without_launch_fields_is_answered_as_claude_2_1_220_does() -> None:
    plain = cr("init", subtype="initialize", hooks={})
    reply = reply_to("nomodel_controls-after-session", "init")
    run = replay(engine(), extra=[(0.0, "client", plain), (1.0, "backend", reply)])
    assert run.frames("backend") == [plain]
    [answer] = run.frames()
    assert not [k for k in answer["response"]["response"] if k.endswith("_applied")]


def test_servers_sent_to_a_cbc_already_running_are_said_and_confirmed_false() -> None:
    """No ``--await-initialize`` (cbc was started before the request): the SDK is told the
    servers did not load (it warns) instead of not being told (it ends the session)."""
    eng = engine()
    request = cr("init", subtype="initialize", mcpServers=SERVERS)
    reply = reply_to("nomodel_controls-after-session", "init")
    run = replay(eng, extra=[(0.0, "client", request), (1.0, "backend", reply)])
    assert any("mcpServers" in g.message for g in run.logs if g.level == "warning")
    [answer] = run.frames()
    assert answer["response"]["response"]["mcp_servers_applied"] is False
