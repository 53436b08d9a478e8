"""Where the database lives: ``--db``, else ``TREESEEK_DB``, else a per-user default.

The per-user default follows the XDG base directory spec: ``$XDG_DATA_HOME/treeseek/treeseek.db``,
or ``~/.local/share/treeseek/treeseek.db`` when ``XDG_DATA_HOME`` is unset or not absolute.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from treeseek.errors import ConfigError

DB_ENV = "TREESEEK_DB"
DB_FILE_NAME = "treeseek.db"


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
    explicit: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> Path | str:
    """The database to use, by precedence: ``explicit``, ``$TREESEEK_DB``, the default: a
    SQLite file path, or a ``postgresql://`` URL (returned unchanged, as a str)."""
    env = os.environ if environ is None else environ
    if explicit is not None and str(explicit) != "":
        raw: str | Path = explicit
    elif env.get(DB_ENV):
        raw = env[DB_ENV]
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
