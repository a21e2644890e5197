"""Settings: command-line flags > environment (``CCBRIDGE_*``) > config file > defaults.

The config file is ``$CCBRIDGE_CONFIG``, else ``./ccbridge.toml``, else
``~/.config/ccbridge/ccbridge.toml``; its keys are the fields of ``Settings`` and unknown
keys are an error that names them (cattrs ``forbid_extra_keys``): a typo must not be
silently ignored by a daemon that runs for weeks.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

from compat.framing import DEFAULT_MAX_LINE


class ConfigError(Exception):
    pass


@attrs.define
class Settings:
    backend: str | None = None  # a command line, shlex-split
    profile: str = "cbc-to-claude"
    rules: dict[str, str] = attrs.Factory(dict)  # {"late-progress": "pass", ...}
    record: str | None = None  # a directory: one capture per session
    log: str | None = None  # a file; default stderr
    log_level: str = "info"
    max_line: int = DEFAULT_MAX_LINE
    eof_grace: float = 60.0
    stats: bool = False
    script_roots: list[str] = attrs.Factory(list)  # extra roots for workflow scripts


_converter = cattrs.Converter(forbid_extra_keys=True)


def config_path(env: Mapping[str, str]) -> str | None:
    explicit = env.get("CCBRIDGE_CONFIG")
    if explicit:
        return explicit
    for candidate in (
        os.path.join(os.getcwd(), "ccbridge.toml"),
        os.path.join(env.get("HOME", os.path.expanduser("~")), ".config", "ccbridge",
                     "ccbridge.toml"),
    ):
        if os.path.isfile(candidate):
            return candidate
    return None


def load(env: Mapping[str, str]) -> Settings:
    data: dict[str, Any] = {}
    path = config_path(env)
    if path:
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except FileNotFoundError as e:
            raise ConfigError(f"config file {path} does not exist") from e
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"config file {path}: {e}") from e
        data = data.get("ccbridge", data)  # a [ccbridge] table or top-level keys
    try:
        settings = _converter.structure(data, Settings)
    except cattrs.BaseValidationError as e:
        msgs = "; ".join(cattrs.transform_error(e))
        raise ConfigError(f"config file {path}: {msgs}") from e
    if env.get("CCBRIDGE_BACKEND"):
        settings.backend = env["CCBRIDGE_BACKEND"]
    if env.get("CCBRIDGE_PROFILE"):
        settings.profile = env["CCBRIDGE_PROFILE"]
    if env.get("CCBRIDGE_RULES"):
        for part in env["CCBRIDGE_RULES"].split(","):
            if part.strip():
                k, _, v = part.partition("=")
                settings.rules[k.strip()] = v.strip()
    if env.get("CCBRIDGE_RECORD"):
        settings.record = env["CCBRIDGE_RECORD"]
    if env.get("CCBRIDGE_LOG"):
        settings.log = env["CCBRIDGE_LOG"]
    if env.get("CCBRIDGE_LOG_LEVEL"):
        settings.log_level = env["CCBRIDGE_LOG_LEVEL"]
    if env.get("CCBRIDGE_STATS"):
        settings.stats = env["CCBRIDGE_STATS"] not in ("0", "", "false")
    for key, attr, typ in (("CCBRIDGE_MAX_LINE", "max_line", int),
                           ("CCBRIDGE_EOF_GRACE", "eof_grace", float)):
        if env.get(key):
            try:
                setattr(settings, attr, typ(env[key]))
            except ValueError as e:
                raise ConfigError(f"{key}={env[key]!r}: {e}") from e
    return settings
