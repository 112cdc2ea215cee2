"""The judge cache kept in the store, so several workers share answers (see rubricflow.llm).

Implements the `JudgeCache` protocol: `await get(key)` and `await put(key, value)`; and,
for `rubricflow llm cache --db URL`, `stats()`, `entries()` and `clear()`.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from rubricflow.store._sql import insert_ignoring_duplicates, utcnow
from rubricflow.store.database import Database
from rubricflow.store.tables import JudgeCacheRow

__all__ = ["StoreJudgeCache"]

_cache = JudgeCacheRow.__table__  # type: ignore[attr-defined]
_STATS = sa.select(
    sa.func.count(),
    sa.func.coalesce(sa.func.sum(sa.func.length(_cache.c.value)), 0),
    sa.func.coalesce(sa.func.sum(_cache.c.hits), 0),
)


class StoreJudgeCache:
    """Content-addressed judge answers in the database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def get(self, key: str) -> str | None:
        async with self.database.transaction() as connection:
            row = (
                await connection.execute(sa.select(_cache.c.value).where(_cache.c.key == key))
            ).first()
            if row is None:
                return None
            await connection.execute(
                _cache.update().where(_cache.c.key == key).values(hits=_cache.c.hits + 1)
            )
        return str(row.value)

    async def put(self, key: str, value: str) -> None:
        async with self.database.transaction() as connection:
            await connection.execute(
                insert_ignoring_duplicates(connection, _cache).values(
                    key=key, value=value, created_at=utcnow(), hits=0
                )
            )

    async def stats(self) -> dict[str, Any]:
        """Where the cache is (`db`: the database URL, password masked), how many answers
        it holds (`entries`), their total length in characters (`chars`) and how often
        they were served (`hits`)."""
        async with self.database.read() as connection:
            entries, chars, hits = (await connection.execute(_STATS)).one()
        return {
            "db": self.database.display_url,
            "entries": int(entries),
            "chars": int(chars),
            "hits": int(hits),
        }

    async def entries(self) -> list[tuple[str, str]]:
        """Every (key, value), by key (for `rubricflow llm cache export --db URL`)."""
        async with self.database.read() as connection:
            rows = await connection.execute(
                sa.select(_cache.c.key, _cache.c.value).order_by(_cache.c.key)
            )
            return [(str(row.key), str(row.value)) for row in rows]

    async def clear(self) -> int:
        """Remove every cached answer; returns how many there were."""
        async with self.database.transaction() as connection:
            removed = await connection.execute(_cache.delete())
        return int(removed.rowcount)
