"""One process's write transactions on a SQLite file take turns in a queue
(`rubricflow.store.database.TurnQueue`): first come, first served, each starting the
moment the last one ends, instead of sleeping in SQLite's busy handler. What a user of a
busy server sees: every concurrent write commits, in the order it asked; a cancelled
writer does not stall the ones behind it; and a writer held up past SQLite's busy timeout
still gets the clear "stayed locked" error it got before. Real SQLite files, with the
fast path on and off (CI runs the store suite both ways)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from rubricflow.errors import StoreError
from rubricflow.store import Store
from rubricflow.store import _sqlite_fastpath as sqlite_store

_LOG = sa.table("queue_log", sa.column("n", sa.Integer))


async def _open(tmp_path: Path) -> Store:
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'queue.db'}")
    async with store.database.transaction() as connection:
        await connection.execute(sa.text("CREATE TABLE queue_log (n INTEGER)"))
    return store


@contextlib.asynccontextmanager
async def _lock_held(store: Store) -> AsyncIterator[None]:
    """A task of this process holds the write lock (it wrote 0) until the block ends."""
    holding = asyncio.Event()
    let_go = asyncio.Event()

    async def first() -> None:
        async with store.database.transaction() as connection:
            await connection.execute(_LOG.insert().values(n=0))
            holding.set()
            await let_go.wait()

    holder = asyncio.create_task(first())
    await holding.wait()
    try:
        yield
    finally:
        let_go.set()
        await asyncio.wait_for(holder, 30)


async def _write(store: Store, n: int) -> None:
    async with store.database.transaction() as connection:
        await connection.execute(_LOG.insert().values(n=n))
        await asyncio.sleep(0)  # a write that yields, as a review's do


async def _logged(store: Store) -> list[int]:
    async with store.database.read() as connection:
        rows = await connection.execute(sa.text("SELECT n FROM queue_log ORDER BY rowid"))
        return [row.n for row in rows]


async def test_concurrent_writers_commit_in_the_order_they_asked(tmp_path: Path) -> None:
    store = await _open(tmp_path)
    try:
        writers = []
        async with _lock_held(store):
            for n in range(1, 13):
                writers.append(asyncio.create_task(_write(store, n)))
                await asyncio.sleep(0.005)  # each asks after the one before
        await asyncio.wait_for(asyncio.gather(*writers), 30)
        assert await _logged(store) == list(range(13))
    finally:
        await store.close()


async def test_a_cancelled_writer_does_not_hold_up_the_ones_behind_it(tmp_path: Path) -> None:
    store = await _open(tmp_path)
    try:
        async with _lock_held(store):
            gone = asyncio.create_task(_write(store, 1))
            await asyncio.sleep(0.01)
            behind = asyncio.create_task(_write(store, 2))
            await asyncio.sleep(0.01)
            gone.cancel()
        await asyncio.wait_for(behind, 30)
        assert gone.cancelled()
        assert await _logged(store) == [0, 2]
        # and the queue still works for the next writer
        await asyncio.wait_for(_write(store, 3), 30)
        assert await _logged(store) == [0, 2, 3]
    finally:
        await store.close()


async def test_a_writer_held_up_past_the_busy_timeout_gets_the_locked_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "SQLITE_BUSY_TIMEOUT_MS", 300)
    store = await _open(tmp_path)
    try:
        async with _lock_held(store):
            with pytest.raises(StoreError, match="stayed locked by another writer"):
                await _write(store, 1)
        assert await _logged(store) == [0]
    finally:
        await store.close()
