"""Pick the database: an argument, `--db`, or `RUBRICFLOW_DB`; SQLite file by default."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from rubricflow.errors import ConfigurationError, NotFoundError

__all__ = ["DB_ENV", "DEFAULT_URL", "display_url", "existing_store_url", "resolve_url"]

DB_ENV = "RUBRICFLOW_DB"
DEFAULT_URL = "sqlite+aiosqlite:///rubricflow.db"

_ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "postgresql+psycopg2": "postgresql+asyncpg",
    "postgresql+psycopg": "postgresql+asyncpg",
}


def resolve_url(url: str | None = None) -> str:
    """The async SQLAlchemy URL to use: `url`, else $RUBRICFLOW_DB, else ./rubricflow.db.

    A plain file path means a SQLite file; `sqlite://` and `postgresql://` URLs get their
    async drivers (aiosqlite, asyncpg).
    """
    raw = url or os.environ.get(DB_ENV) or DEFAULT_URL
    if "://" not in raw:
        raw = f"sqlite+aiosqlite:///{raw}"
    try:
        parsed = make_url(raw)
    except ArgumentError:
        raise ConfigurationError(
            f"cannot read database URL {raw!r}; use e.g. sqlite+aiosqlite:///rubricflow.db "
            "or postgresql+asyncpg://user@host/dbname"
        ) from None
    driver = _ASYNC_DRIVERS.get(parsed.drivername, parsed.drivername)
    if driver not in ("sqlite+aiosqlite", "postgresql+asyncpg"):
        raise ConfigurationError(
            f"unsupported database {parsed.drivername!r}; rubricflow stores to SQLite "
            "(sqlite+aiosqlite:///file.db) or PostgreSQL (postgresql+asyncpg://...)"
        )
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


def display_url(url: str) -> str:
    """The URL with any password masked, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<database>"


def existing_store_url(url: str | None = None) -> str:
    """`resolve_url(url)`, for a look at a store that must already exist: a SQLite file
    that does not exist is a NotFoundError (looking must not create an empty store)."""
    resolved = resolve_url(url)
    parsed = make_url(resolved)
    file = parsed.database or ""
    if (
        parsed.get_backend_name() == "sqlite"
        and file not in ("", ":memory:")
        and not Path(file).exists()
    ):
        source = "--db" if url else f"${DB_ENV}" if os.environ.get(DB_ENV) else "the default"
        raise NotFoundError(
            f"no store at {file} ({source}): give the database `rubricflow eval --db URL` "
            f"stores to with --db URL (or set {DB_ENV})"
        )
    return resolved
