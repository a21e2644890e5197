"""The settings ``--version`` needs, without the rest of ``bridge.config`` (which imports
dataclasses and, for a config file, cattrs): where the config file is, the target Claude
Code version, and the error every bad setting raises. ``bridge.config`` re-exports them."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping

from compat.versions import TARGET_CLAUDE_VERSION, TARGET_VERSIONS


class ConfigError(Exception):
    pass


def config_path(env: Mapping[str, str]) -> str | None:
    """The config file: ``$CCBRIDGE_CONFIG``, else the first of ``config_candidates`` that
    is a file; None: there is none."""
    explicit = env.get("CCBRIDGE_CONFIG")
    if explicit:
        return explicit
    return next((c for c in config_candidates(env) if os.path.isfile(c)), None)


def config_candidates(env: Mapping[str, str]) -> list[str]:
    """Where the config file is looked for, in order: ``./ccbridge.toml``, then
    ``$XDG_CONFIG_HOME/ccbridge/ccbridge.toml`` (when set), then
    ``~/.config/ccbridge/ccbridge.toml`` (from ``HOME``: what a client that passes only
    ``HOME`` and ``PATH`` still gives the drop-in)."""
    home = env.get("HOME") or os.path.expanduser("~")
    dirs = [env["XDG_CONFIG_HOME"]] if env.get("XDG_CONFIG_HOME") else []
    dirs.append(os.path.join(home, ".config"))
    found = [os.path.join(os.getcwd(), "ccbridge.toml")]
    found += [os.path.join(d, "ccbridge", "ccbridge.toml") for d in dict.fromkeys(dirs)]
    return found


def target(setting: str, value: str) -> str:
    """A Claude Code version the rules can emulate (what each changes: ``compat.target``)."""
    v = value.strip() if isinstance(value, str) else value
    if v not in TARGET_VERSIONS:
        known = ", ".join(TARGET_VERSIONS)
        raise ConfigError(f"{setting}={value!r}: not a target Claude Code version (one of {known})")
    return v


def load_target(env: Mapping[str, str]) -> str:
    """The target Claude Code version alone, checked as ``load`` checks it
    (``CCBRIDGE_TARGET``, else the config file's ``target =``), with none of ``load``'s
    other work: ``--version`` answers without touching the log or the record directory."""
    if env.get("CCBRIDGE_TARGET"):
        return target("CCBRIDGE_TARGET", env["CCBRIDGE_TARGET"])
    path = config_path(env)
    if not path:
        return TARGET_CLAUDE_VERSION
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"config file {path}: {getattr(e, 'strerror', None) or e}") from e
    data = data.get("ccbridge", data)
    value = data.get("target", TARGET_CLAUDE_VERSION) if isinstance(data, dict) else None
    if not isinstance(value, str):
        raise ConfigError(f"config file {path}: target: not a string ({value!r})")
    return target(f"config file {path}: target", value)
