"""Pick the database: an argument, `--db`, or `RUBRICFLOW_DB`; SQLite file by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from rubricflow.errors import ConfigurationError, NotFoundError
from rubricflow.settings import current, env_name

__all__ = [
    "DB_ENV",
    "DEFAULT_URL",
    "POSTGRES_DRIVER_MISSING",
    "display_url",
    "existing_store_url",
    "postgres_connect_args",
    "resolve_url",
]

DB_ENV = env_name("db")
DEFAULT_URL = "sqlite+aiosqlite:///rubricflow.db"
#: what to do when a PostgreSQL URL is given and its driver is not installed
POSTGRES_DRIVER_MISSING = (
    "a PostgreSQL database needs the asyncpg driver, which is not installed; install it "
    "with `python -m pip install asyncpg`, or from a rubricflow checkout with "
    "`python -m pip install -e '.[postgres]'` (the `postgres` extra)"
)

_ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "postgresql+psycopg2": "postgresql+asyncpg",
    "postgresql+psycopg": "postgresql+asyncpg",
}


def resolve_url(url: str | None = None) -> str:
    """The async SQLAlchemy URL to use: `url`, else `Settings.db` ($RUBRICFLOW_DB), else
    ./rubricflow.db.

    A plain file path means a SQLite file; `sqlite://` and `postgresql://` URLs get their
    async drivers (aiosqlite, asyncpg).
    """
    raw = url or current().db or DEFAULT_URL
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


def existing_store_url(url: str | None = None, *, remedy: str | None = None) -> str:
    """`resolve_url(url)`, for a look at a store that must already exist: a SQLite file
    that does not exist is a NotFoundError (looking must not create an empty store);
    `remedy` says what to give instead."""
    resolved = resolve_url(url)
    parsed = make_url(resolved)
    file = parsed.database or ""
    if (
        parsed.get_backend_name() == "sqlite"
        and file not in ("", ":memory:")
        and not Path(file).exists()
    ):
        source = "--db" if url else f"${DB_ENV}" if current().db else "the default"
        default = (
            f"give the database `rubricflow eval --db URL` stores to with --db URL "
            f"(or set {DB_ENV})"
        )
        raise NotFoundError(f"no store at {file} ({source}): {remedy or default}")
    return resolved


_SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


def _one_parameter(query: dict[str, Any], name: str) -> str:
    """URL parameter `name`, taken out of `query`; given twice, it is an error."""
    value = query.pop(name)
    if not isinstance(value, str):
        raise ConfigurationError(f"database URL parameter {name!r} is given twice; give it once")
    return value


def _seconds(raw: str) -> float:
    """`connect_timeout`'s value as seconds."""
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(
            f"database URL parameter connect_timeout={raw!r} is not a number of seconds"
        ) from None


def postgres_connect_args(url: str) -> tuple[str, dict[str, Any]]:
    """A PostgreSQL URL's libpq parameters (`?sslmode=disable&connect_timeout=5`), which
    asyncpg does not take as they are, translated into its connect arguments: returns the
    URL without them and the arguments. A parameter neither knows is a ConfigurationError
    naming it, not a TypeError from deep inside the driver."""
    parsed = make_url(url)
    query = dict(parsed.query)
    args: dict[str, Any] = {}
    settings: dict[str, str] = {}

    def one(name: str) -> str:
        return _one_parameter(query, name)

    if "sslmode" in query:
        mode = one("sslmode")
        if mode not in _SSL_MODES:
            raise ConfigurationError(
                f"database URL parameter sslmode={mode!r} is not a libpq SSL mode; use one of "
                + ", ".join(_SSL_MODES)
            )
        args["ssl"] = mode
    if "connect_timeout" in query:
        seconds = _seconds(one("connect_timeout"))
        if seconds > 0:  # libpq: 0 (or less) waits forever; keep rubricflow's own bound
            args["timeout"] = seconds
    for name in ("application_name", "options"):
        if name in query:
            settings[name] = one(name)
    if "target_session_attrs" in query:
        args["target_session_attrs"] = one("target_session_attrs")
    if settings:
        args["server_settings"] = settings
    if query:
        raise ConfigurationError(
            f"database URL parameter(s) {', '.join(sorted(query))} are not supported; "
            "rubricflow understands sslmode, connect_timeout, application_name, options and "
            "target_session_attrs"
        )
    stripped = parsed.set(query={}).render_as_string(hide_password=False)
    return stripped, args
