"""Batches of rows written with PostgreSQL's COPY, through asyncpg.

A batch of evaluations is hundreds of rows (each evaluation and its criterion results).
`executemany` sends them as that many INSERTs; asyncpg's `copy_records_to_table` sends
them as one binary COPY, in the same transaction, and stores a batch about 1.4-1.6 times
as fast. Anything other than asyncpg on PostgreSQL keeps `executemany`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["copies", "copy_rows"]


def copies(connection: AsyncConnection) -> bool:
    """Whether `copy_rows` can write through this connection (asyncpg on PostgreSQL)."""
    return connection.dialect.name == "postgresql" and connection.dialect.driver == "asyncpg"


async def copy_rows(
    connection: AsyncConnection, table: sa.Table, rows: Sequence[Mapping[str, Any]]
) -> None:
    """COPY `rows` (dicts keyed by column name; a missing key is NULL, or the column's
    server default when no row gives it) into `table`, in the connection's transaction.
    A broken constraint raises SQLAlchemy's `IntegrityError`, as an INSERT would."""
    if not rows:
        return
    given = {key for row in rows for key in row}
    columns = [column.name for column in table.columns if column.name in given]
    # SQLAlchemy's asyncpg adapter opens the transaction with the first statement: make
    # sure it is open, so the COPY is part of it
    await connection.execute(sa.text("SELECT 1"))
    raw = await connection.get_raw_connection()
    driver: Any = raw.driver_connection
    import asyncpg  # type: ignore[import-untyped]

    records = [tuple(row.get(name) for name in columns) for row in rows]
    try:
        await driver.copy_records_to_table(table.name, records=records, columns=columns)
    except asyncpg.exceptions.IntegrityConstraintViolationError as error:
        raise IntegrityError(f"COPY {table.name}", None, error) from error
