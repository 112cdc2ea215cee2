"""Small helpers shared by the repositories: dialect-aware upserts and timestamps."""

from __future__ import annotations

from datetime import datetime, timezone
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = [
    "INCOMPLETE",
    "as_utc",
    "insert_ignoring_duplicates",
    "parse_time",
    "to_utc",
    "utcnow",
]

# The `incomplete` verdict as a literal in the SQL, never a bound value: a query naming
# it as a bound value next to the partial unique index on complete evaluations makes
# SQLite prepare the statement again on every run (the value might match the index's
# condition), which cost a review's submit read five times its time.
INCOMPLETE: sa.ColumnClause[Any] = sa.literal_column("'incomplete'")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def insert_ignoring_duplicates(connection: AsyncConnection, table: sa.Table) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING, in the connection's dialect (one statement per
    dialect and table, built once; give the values as execution parameters or `.values`)."""
    return _ignoring_duplicates(connection.dialect.name == "postgresql", table)


@cache
def _ignoring_duplicates(postgres: bool, table: sa.Table) -> Any:
    return (postgresql if postgres else sqlite).insert(table).on_conflict_do_nothing()


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def to_utc(value: datetime) -> datetime:
    """`value` as an aware UTC time, for binding: SQLite stores times as text without an
    offset, so every time must be in UTC before it is written or compared (a naive time is
    taken to be UTC already)."""
    return value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (a trailing `Z` is accepted on every Python) as aware UTC."""
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return to_utc(datetime.fromisoformat(text))
