"""Settings: command-line flags > environment (``CCBRIDGE_*``) > config file > defaults.

The config file is ``$CCBRIDGE_CONFIG``, else ``./ccbridge.toml``, else
``~/.config/ccbridge/ccbridge.toml``; its keys are the fields of ``Settings`` and unknown
keys are an error that names them (cattrs ``forbid_extra_keys``): a typo must not be
silently ignored by a daemon that runs for weeks.

Every value is checked where it is read, whatever its source, and a bad one is a
``ConfigError`` naming the setting and what is wrong in plain words (``guarded`` prints it
on one line and exits 2): no type is coerced (``stats = "yes"``, ``backend = 5`` and
``script_roots = "notalist"`` are errors, not True, "5" and a list of letters), levels are
one of ``LEVELS``, numbers are finite and in range, and paths are checked before a session
starts (``check_log``, ``make_record_dir``, ``check_out_file``, ``check_out_dir``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import shlex
import tomllib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from bridge.configfile import ConfigError as ConfigError
from bridge.configfile import config_path as config_path
from bridge.configfile import target as target
from bridge.files import private_dirs
from compat import DEFAULT_MAX_LINE, rulespec
from compat.rulespec import RuleSettings
from compat.versions import TARGET_CLAUDE_VERSION

if TYPE_CHECKING:
    import cattrs

#: log levels, quietest last; the default shows only what means something is wrong
LEVELS = ("debug", "info", "warning", "error")
DEFAULT_LOG_LEVEL = "warning"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")
_T = TypeVar("_T")


#: a dataclass, and cattrs imported only to read a config file: the settings are read
#: before the backend is spawned, and attrs and cattrs take 20 ms to import
#: (``bench.process``, "spawn -> backend started")
@dataclasses.dataclass
class Settings:
    backend: str | None = None  # a command line, shlex-split
    profile: str = "cbc-to-claude"
    #: parsed once (``compat.rulespec``): {"late-progress": {"mode": "pass", "grace": "2"}}
    rules: RuleSettings = dataclasses.field(default_factory=dict)
    record: str | None = None  # a directory: one capture per session
    log: str | None = None  # a file; default stderr
    log_level: str = DEFAULT_LOG_LEVEL
    max_line: int = DEFAULT_MAX_LINE
    eof_grace: float = 60.0
    stats: bool = False
    script_roots: list[str] = dataclasses.field(default_factory=list)  # roots for scripts
    target: str = TARGET_CLAUDE_VERSION  # the Claude Code version emulated (compat.target)
    #: ``[env]``: variables for the backend's environment (its endpoint, key, anything),
    #: where the bridge's own environment does not set them (``environment``): a client
    #: that passes the drop-in only ``HOME`` and ``PATH`` gets the same session
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    #: the drop-in writes Claude's session store (``bridge.session_store``); off: it
    #: does not (``CCBRIDGE_SESSION_STORE=off``)
    session_store: bool = True
    #: the config file the settings came from (None: none), for messages
    source: str | None = dataclasses.field(default=None, init=False)


def _strict(expected: type, words: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
            raise ValueError(f"must be {words}, not {_shown(value)}")
        return value

    return hook


def _shown(value: Any) -> str:
    kind = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)
    return f"{kind} ({value!r})"


@functools.cache
def _converter() -> cattrs.Converter:
    import cattrs

    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(str, _strict(str, "a string"))
    converter.register_structure_hook(bool, _strict(bool, "true or false"))
    converter.register_structure_hook(int, _strict(int, "a whole number"))
    converter.register_structure_hook(float, _strict(float, "a number"))
    converter.register_structure_hook_func(lambda t: t == list[str], _list_hook)
    converter.register_structure_hook_func(lambda t: t == RuleSettings, _rules_hook)
    converter.register_structure_hook_func(lambda t: t == dict[str, str], _env_hook)
    return converter


def _structured(data: dict[str, Any], path: str | None) -> Settings:
    """A config file's keys as ``Settings`` (cattrs: unknown keys and wrong types named)."""
    import cattrs

    try:
        return _converter().structure(data, Settings)
    except cattrs.BaseValidationError as e:
        raise ConfigError(f"config file {path}: {_plain(e)}") from e


def _plain(exc: cattrs.BaseValidationError) -> str:
    """cattrs' nested exception as ``key: what is wrong``, without the library's words."""
    import cattrs

    out: list[str] = []

    def walk(e: BaseException, path: str) -> None:
        if isinstance(e, cattrs.ForbiddenExtraKeysError):
            out.append(
                f"unknown key(s) {', '.join(sorted(e.extra_fields))} (known: "
                f"{', '.join(f.name for f in dataclasses.fields(Settings) if f.init)})"
            )
        elif isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                key = path
                for note in getattr(sub, "__notes__", None) or []:
                    m = re.search(r"@ attribute (\w+)|@ index (\d+)|@ key (\S+)", str(note))
                    if m and m.group(1):
                        key = m.group(1)
                    elif m and m.group(2):
                        key = f"{path}[{m.group(2)}]"
                    elif m:
                        key = f"{path}.{m.group(3)}"
                walk(sub, key)
        else:
            msg = str(e) if isinstance(e, ValueError) else "has the wrong type"
            out.append(f"{path}: {msg}" if path else msg)

    walk(exc, "")
    return "; ".join(out) or "invalid settings"


def _list_hook(value: Any, _: Any) -> list[str]:
    if not isinstance(value, list):
        raise ValueError(f"must be a list of strings, not {_shown(value)}")
    for v in value:
        if not isinstance(v, str):
            raise ValueError(f"must be a list of strings, not a list holding {_shown(v)}")
    return list(value)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_hook(value: Any, _: Any) -> dict[str, str]:
    """``[env]``: ``NAME = "value"`` (strings only: a number is written as one)."""
    if not isinstance(value, dict):
        raise ValueError(f"must be a table of variables, not {_shown(value)}")
    for k, v in value.items():
        if not _ENV_NAME.fullmatch(k):
            raise ValueError(f"{k!r} is not a variable name")
        if not isinstance(v, str):
            raise ValueError(f"{k} must be a string, not {_shown(v)}")
    return dict(value)


def _rules_hook(value: Any, _: Any) -> RuleSettings:
    """``[rules]``: ``"late-progress" = "pass"``, ``"late-progress.grace" = 2`` or, TOML's
    dotted keys, ``late-progress.grace = 2`` (a table per rule)."""
    if not isinstance(value, dict):
        raise ValueError(f"must be a table of rule settings, not {_shown(value)}")
    items: list[str] = []
    for k, v in value.items():
        for key, one in v.items() if isinstance(v, dict) else [("", v)]:
            name = f"{k}.{key}" if key and key != "mode" else str(k)
            items.append(f"{name}={_rule_value(name, one)}")
    try:
        return rulespec.parse(items)
    except rulespec.RuleError as e:
        raise ValueError(str(e)) from e


def _rule_value(name: str, v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, (int, float)):
        return repr(v)
    if not isinstance(v, str):
        raise ValueError(f"{name} must be a string or number, not {_shown(v)}")
    return v


def load(env: Mapping[str, str]) -> Settings:
    path = config_path(env)
    data = _read(path) if path else {}
    settings = _structured(data, path) if data else Settings()
    settings.source = path
    _override(settings, env)
    _check(settings, env, f"config file {path}")
    return settings


def _read(path: str) -> dict[str, Any]:
    """The config file's settings: its ``[ccbridge]`` table, or its top-level keys."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError as e:
        raise ConfigError(f"config file {path} does not exist") from e
    except IsADirectoryError as e:
        raise ConfigError(f"config file {path} is a directory") from e
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"config file {path}: {e}") from e
    table: dict[str, Any] = data.get("ccbridge", data)
    return table


#: environment variables that replace a setting word for word (when set and not empty)
_ENV_TEXT = (
    ("CCBRIDGE_BACKEND", "backend"),
    ("CCBRIDGE_PROFILE", "profile"),
    ("CCBRIDGE_RECORD", "record"),
    ("CCBRIDGE_LOG", "log"),
    ("CCBRIDGE_LOG_LEVEL", "log_level"),
)


def _override(settings: Settings, env: Mapping[str, str]) -> None:
    """The environment's settings over the config file's."""
    for var, name in _ENV_TEXT:
        if env.get(var):
            setattr(settings, name, env[var])
    if env.get("CCBRIDGE_RULES"):
        try:
            settings.rules = rulespec.parse([env["CCBRIDGE_RULES"]], into=settings.rules)
        except rulespec.RuleError as e:
            raise ConfigError(f"CCBRIDGE_RULES: {e}") from e
    if "CCBRIDGE_STATS" in env:
        settings.stats = flag("CCBRIDGE_STATS", env["CCBRIDGE_STATS"])
    if env.get("CCBRIDGE_SESSION_STORE"):
        settings.session_store = flag("CCBRIDGE_SESSION_STORE", env["CCBRIDGE_SESSION_STORE"])


def _check(settings: Settings, env: Mapping[str, str], where: str) -> None:
    """Every value checked (converted from the environment's text), each error naming
    where the value came from: the variable, else the config file's key."""

    def source(var: str, key: str) -> str:
        return var if env.get(var) else f"{where}: {key}"

    def given(var: str, key: str, value: _T) -> tuple[str, str | _T]:
        return (var, env[var]) if env.get(var) else (f"{where}: {key}", value)

    settings.max_line = positive_int(*given("CCBRIDGE_MAX_LINE", "max_line", settings.max_line))
    settings.eof_grace = seconds(*given("CCBRIDGE_EOF_GRACE", "eof_grace", settings.eof_grace))
    settings.log_level = level(source("CCBRIDGE_LOG_LEVEL", "log_level"), settings.log_level)
    settings.target = target(*given("CCBRIDGE_TARGET", "target", settings.target))
    if settings.log:
        check_log(source("CCBRIDGE_LOG", "log"), settings.log)
    if settings.record:
        make_record_dir(source("CCBRIDGE_RECORD", "record"), settings.record)


def environment(settings: Settings, env: Mapping[str, str]) -> dict[str, str]:
    """The environment a session runs with: the bridge's own, plus the config file's
    ``[env]`` for what it does not set (a variable set, even empty, is the caller's)."""
    return {**settings.env, **env}


def launched_note(program: str, settings: Settings, env: Mapping[str, str]) -> str:
    """What the bridge started and where its settings came from, in words, for a backend
    that failed to authenticate: the backend, whether it got ``CODEBUDDY_API_KEY`` and
    ``CODEBUDDY_BASE_URL``, and the config file read (or where none was found)."""
    from bridge.configfile import config_candidates

    given = [v for v in ("CODEBUDDY_API_KEY", "CODEBUDDY_BASE_URL") if env.get(v)]
    vars_ = (
        f"with {' and '.join(given)}"
        if given
        else "with neither CODEBUDDY_API_KEY nor CODEBUDDY_BASE_URL"
    )
    if settings.source:
        where = f"settings from {settings.source}"
    else:
        where = "no config file (looked for " + ", ".join(config_candidates(env)) + ")"
    return f"the bridge started {program} {vars_}; {where}"


# -- one check per kind of value, shared by every command -------------------------------


def command_line(setting: str, value: str) -> list[str]:
    """A backend command line, split as a POSIX shell would (never run by one)."""
    try:
        argv = shlex.split(value)
    except ValueError as e:
        raise ConfigError(
            f"{setting}={value!r}: {str(e).lower()} (a command line, split as a POSIX shell would)"
        ) from None
    if not argv:
        raise ConfigError(f"{setting}: an empty command line")
    return argv


def level(setting: str, value: str) -> str:
    if value not in LEVELS:
        raise ConfigError(f"{setting}={value!r}: not a log level (one of {', '.join(LEVELS)})")
    return value


def flag(setting: str, value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ConfigError(f"{setting}={value!r}: not a yes/no value (1/0, true/false, yes/no)")


def positive_int(setting: str, value: str | int) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{setting}={value!r}: not a whole number") from None
    if n <= 0:
        raise ConfigError(f"{setting}={value!r}: must be a number of bytes above 0")
    return n


def seconds(setting: str, value: str | float) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{setting}={value!r}: not a number of seconds") from None
    if not math.isfinite(x) or x < 0:
        raise ConfigError(f"{setting}={value!r}: must be a number of seconds, 0 or more")
    return x


def _file_ancestor(path: str) -> str | None:
    """The first existing ancestor of ``path`` that is not a directory, if any."""
    p = os.path.abspath(path)
    while True:
        parent = os.path.dirname(p)
        if parent == p:
            return None
        if os.path.exists(parent):
            return None if os.path.isdir(parent) else parent
        p = parent


def _no_link(setting: str, path: str) -> None:
    """A file the user names is written, never what a link there points to."""
    if os.path.islink(path):
        raise ConfigError(f"{setting}={path!r}: is a symbolic link; not written through")


def check_log(setting: str, path: str) -> None:
    """A log file we can append to: not a directory, not a link, its directory exists."""
    _no_link(setting, path)
    if os.path.isdir(path):
        raise ConfigError(f"{setting}={path!r}: is a directory, not a log file")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ConfigError(f"{setting}={path!r}: the directory {parent} does not exist")
    if (
        os.path.exists(path)
        and not os.access(path, os.W_OK)
        or not os.path.exists(path)
        and not os.access(parent, os.W_OK)
    ):
        raise ConfigError(f"{setting}={path!r}: not writable")


def check_out_file(setting: str, path: str) -> None:
    """A file to write (its directories may be created): not a directory, and nothing on
    the way to it is a file, not a link."""
    _no_link(setting, path)
    if os.path.isdir(path):
        raise ConfigError(f"{setting}={path!r}: is a directory, not a file")
    blocker = _file_ancestor(path)
    if blocker is not None:
        raise ConfigError(f"{setting}={path!r}: {blocker} is a file, not a directory")


def make_record_dir(setting: str, path: str) -> str:
    """``CCBRIDGE_RECORD`` / ``record =`` is a directory (one capture per session): made
    when missing (0700, ``bridge.files.private_dirs``), so it never becomes one file every
    session overwrites; never a link (the captures are not written through one)."""
    check_out_dir(setting, path)
    if os.path.islink(path.rstrip(os.sep) or path):
        raise ConfigError(f"{setting}={path!r}: is a symbolic link; name the directory itself")
    try:
        private_dirs(path)
    except OSError as e:
        raise ConfigError(f"{setting}={path!r}: cannot create it ({e.strerror})") from None
    return path


def check_out_dir(setting: str, path: str) -> None:
    """A directory to write into (created if missing): not a file, nothing on the way a
    file."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ConfigError(f"{setting}={path!r}: is a file, not a directory")
    blocker = _file_ancestor(path)
    if blocker is not None:
        raise ConfigError(f"{setting}={path!r}: {blocker} is a file, not a directory")
