"""Where the database lives, and the config file.

The database: ``--db``, else ``TREESEEK_DB``, else ``db`` of the config file, else a per-user
default that follows the XDG base directory spec: ``$XDG_DATA_HOME/treeseek/treeseek.db``, or
``~/.local/share/treeseek/treeseek.db`` when ``XDG_DATA_HOME`` is unset or not absolute.

The config file is ``treeseek.toml`` in the current directory or the nearest parent that has
one (a project's), else ``$XDG_CONFIG_HOME/treeseek/treeseek.toml`` (``~/.config/...``)::

    db = ".treeseek/index.db"     # relative to the file's directory
    [llm]                         # the navigator (see treeseek.llm.select): spec, concurrency...
    spec = "anthropic:claude-sonnet-4-6"
    [query]                       # defaults of `treeseek query`
    k = 5
    budget = 4000

Command-line options and environment variables win over the file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from treeseek.errors import ConfigError

DB_ENV = "TREESEEK_DB"
DB_FILE_NAME = "treeseek.db"
CONFIG_FILE_NAME = "treeseek.toml"
_KNOWN_KEYS = {"db", "llm", "query", "server"}


def config_path(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Path | None:
    """The config file in force (see the module doc), or None."""
    env = os.environ if environ is None else environ
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_FILE_NAME
        if candidate.is_file():
            return candidate
    config_home = env.get("XDG_CONFIG_HOME", "")
    if config_home and os.path.isabs(config_home):
        base = Path(config_home)
    else:
        base = Path(env.get("HOME") or str(Path.home())) / ".config"
    user = base / "treeseek" / CONFIG_FILE_NAME
    return user if user.is_file() else None


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The settings of a config file (``path``, else :func:`config_path`'s), ``{}`` without
    one; ConfigError naming the file for bad TOML or unknown keys. ``db`` comes back
    absolute."""
    path = path or config_path()
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # Notepad adds a BOM
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - _KNOWN_KEYS)
    if unknown:
        known = ", ".join(sorted(_KNOWN_KEYS))
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)}; known: {known}")
    for table in ("llm", "query", "server"):
        if table in data and not isinstance(data[table], dict):
            raise ConfigError(f"{path}: {table} must be a table ([{table}])")
    if "db" in data:
        if not isinstance(data["db"], str) or not data["db"]:
            raise ConfigError(f"{path}: db must be a file name")
        data["db"] = str((path.parent / Path(data["db"]).expanduser()).resolve())
    data["_file"] = str(path)
    return data


def default_db_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    data_home = env.get("XDG_DATA_HOME", "")
    base = Path(data_home) if data_home and os.path.isabs(data_home) else None
    if base is None:
        home = env.get("HOME") or str(Path.home())
        base = Path(home) / ".local" / "share"
    return base / "treeseek" / DB_FILE_NAME


#: URL schemes of a database server (the PostgreSQL store); anything else is a SQLite file
SERVER_SCHEMES = ("postgresql://", "postgres://")


def resolve_db_path(
    explicit: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Path | str:
    """The database to use, by precedence: ``explicit``, ``$TREESEEK_DB``, ``db`` of the config
    file (``config``; read from disk only when neither ``environ`` nor ``config`` is given), the
    default: a SQLite file path, or a ``postgresql://`` URL (returned unchanged, as a str)."""
    env = os.environ if environ is None else environ
    if explicit is not None and str(explicit) != "":
        raw: str | Path = explicit
    elif env.get(DB_ENV):
        raw = env[DB_ENV]
    else:
        if config is None and environ is None:
            config = load_config()
        if config and config.get("db"):
            raw = str(config["db"])
        else:
            return default_db_path(env)
    if isinstance(raw, str) and raw.startswith(SERVER_SCHEMES):
        return raw
    chosen = Path(raw).expanduser()
    if chosen.is_dir():
        raise ConfigError(
            f"database path {chosen} is a directory; give a file name such as"
            f" {chosen / DB_FILE_NAME}"
        )
    return chosen
