"""Launch options a client sends inside its ``initialize`` (``--await-initialize``), given
to cbc on its command line.

TypeScript Agent SDK 0.3.337 sends its MCP servers inside the ``initialize`` request by
default (``mcpServersDelivery: "initialize"``; ``settingsDelivery``,
``disallowedToolsDelivery``, ``additionalDirectoriesDelivery``, ``pluginDelivery`` and
``managedSettingsDelivery`` may say the same) and starts Claude Code with
``--await-initialize``: Claude waits for that request before it starts, applies the
options, and confirms each in its reply (``mcp_servers_applied``, ``settings_applied``,
…). The SDK ends the session when a confirmation it needs is missing ("This Claude Code is
too old to read MCP servers over stdin"). cbc 2.163.0 reads none of these fields (its
``initialize`` handler takes ``sdkMcpServers``, hooks, prompts, agents) and has no run-time
way to add an MCP server; it takes them all on its command line.

So the bridge does what Claude does: it reads the client's first line before it starts cbc
(``bridge.launch``); when that line is an ``initialize``, each field here becomes the Claude
option that carries it (``launch_options``), translated with the rest of the command line
(rule ``argv``). A field is *applied* when its option reached cbc (``applied``): rule
``initialize-request`` then removes it from the request without a warning, and
``initialize-reply`` confirms it. A field the client sent that cbc did not get is
confirmed false (``managedSettings``: cbc has no managed settings), which the SDK reports.

Pure: parsing the line and building option words; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple


class Field(NamedTuple):
    option: str  # the Claude option that carries the field on a command line
    reply: str  # the key of Claude's initialize reply that confirms it


#: the initialize fields that are launch options, as the TypeScript SDK 0.3.337 sends them
#: (``buildInitializeRequest``) and reads their confirmation (``Query.initialize``)
FIELDS: dict[str, Field] = {
    "mcpServers": Field("--mcp-config", "mcp_servers_applied"),
    "settings": Field("--settings", "settings_applied"),
    "disallowedTools": Field("--disallowedTools", "disallowed_tools_applied"),
    "additionalDirectories": Field("--add-dir", "additional_directories_applied"),
    "plugins": Field("--plugin-dir", "plugins_applied"),
    "managedSettings": Field("--managed-settings", "managed_settings_applied"),
}

AWAIT = "--await-initialize"


def awaits_initialize(options: dict[str, list[str]]) -> bool:
    """A stream-json client that starts Claude with ``--await-initialize`` (the options of
    ``compat.argv.Translation``): its first line is the ``initialize``."""
    return AWAIT in options and (options.get("--input-format") or [""])[-1] == "stream-json"


def initialize_body(line: bytes) -> dict[str, Any] | None:
    """The request of a client line that is an ``initialize`` control request, else None."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(obj, dict) or obj.get("type") != "control_request":
        return None
    request = obj.get("request")
    if not isinstance(request, dict) or request.get("subtype") != "initialize":
        return None
    return request


def launch_options(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The Claude options that carry the launch fields of an ``initialize`` request, and
    the fields they carry. A field whose value has no option form (a plugin that is not
    local, a value of the wrong type) is not among them: it stays unconfirmed."""
    words: list[str] = []
    fields: list[str] = []
    for name in FIELDS:
        if name not in body:
            continue
        given = _words(name, body[name])
        if given is not None:
            words += given
            fields.append(name)
    return words, fields


def _words(name: str, value: Any) -> list[str] | None:
    """One field's option words (``--flag=value``: a value may begin with a dash); None
    when the value has no option form."""
    option = FIELDS[name].option
    if name == "mcpServers":
        servers = {"mcpServers": value}
        return [f"{option}={json.dumps(servers)}"] if isinstance(value, dict) else None
    if name in ("settings", "managedSettings"):
        return _settings_words(option, value)
    if name == "plugins":
        return _plugin_words(value)
    if not _is_texts(value):
        return None
    if name == "disallowedTools":
        return [f"{option}={','.join(value)}"] if value else []
    return [f"{option}={v}" for v in value]


def _settings_words(option: str, value: Any) -> list[str] | None:
    """Settings as an object (written as JSON) or a string (a JSON text or a file path)."""
    if isinstance(value, dict):
        return [f"{option}={json.dumps(value)}"]
    return [f"{option}={value}"] if isinstance(value, str) and value else None


def _plugin_words(value: Any) -> list[str] | None:
    """``[{type: "local", path, skipMcpDiscovery?}]`` as ``--plugin-dir`` (or
    ``--plugin-dir-no-mcp``) words; None when one is not a local plugin."""
    if not isinstance(value, list):
        return None
    words = []
    for plugin in value:
        path = plugin.get("path") if isinstance(plugin, dict) else None
        if not isinstance(path, str) or not path or plugin.get("type") != "local":
            return None
        option = "--plugin-dir-no-mcp" if plugin.get("skipMcpDiscovery") else "--plugin-dir"
        words.append(f"{option}={path}")
    return words


def _is_texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def applied(fields: Iterable[str], dropped: Sequence[str]) -> frozenset[str]:
    """The fields whose option reached cbc: those the translation did not drop
    (``compat.argv.Translation.dropped``)."""
    lost = set(dropped)
    return frozenset(f for f in fields if FIELDS[f].option not in lost)


def confirmations(body: dict[str, Any], at_launch: frozenset[str]) -> dict[str, bool]:
    """The reply keys that confirm the launch fields an ``initialize`` carries: true for
    those cbc got on its command line, false for the others."""
    return {f.reply: name in at_launch for name, f in FIELDS.items() if name in body}
