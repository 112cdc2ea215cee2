"""A SQLite store's write-ahead log is checkpointed in a thread of its own (not inside
a commit in the event loop's thread), often enough that the log stays small."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from rubricflow.store._sqlite_checkpoint import COMMITS_PER_CHECKPOINT
from rubricflow.store.database import Database

_meta = sa.MetaData()
_blobs = sa.Table(
    "checkpoint_blobs",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("body", sa.Text, nullable=False),
)
_INSERT = _blobs.insert()


@pytest.mark.fast_path_only
def test_the_log_is_checkpointed_in_the_background_and_stays_small(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    commits = 16 * COMMITS_PER_CHECKPOINT
    body = "x" * 3000  # about a page per commit

    async def scenario() -> tuple[int, int, int]:
        database = await Database.open(f"sqlite+aiosqlite:///{path}")
        try:
            async with database.engine.begin() as connection:
                await connection.run_sync(_meta.create_all)
            largest = 0
            for number in range(commits):
                async with database.transaction() as connection:
                    await connection.execute(_INSERT, {"id": number, "body": body})
                wal = path.with_name(path.name + "-wal")
                largest = max(largest, wal.stat().st_size if wal.exists() else 0)
            async with database.read() as connection:
                count = (
                    await connection.execute(sa.select(sa.func.count()).select_from(_blobs))
                ).scalar_one()
            checkpointer = getattr(database.engine, "checkpointer", None)
            return largest, count, checkpointer.checkpoints if checkpointer else 0
        finally:
            await database.close()

    largest, count, checkpoints = asyncio.run(scenario())
    assert count == commits
    # the store's connections never checkpoint themselves: the thread did it
    assert checkpoints >= 4
    # every commit appends at least a page (4 KiB): were the log never started over, it
    # would reach commits * 4 KiB; steady commits with no pause must not stop the restarts
    assert largest < commits * 4096 / 2
    # closed: everything is in the database file itself
    with sqlite3.connect(path) as reader:
        assert reader.execute("SELECT count(*) FROM checkpoint_blobs").fetchone()[0] == commits


def test_a_reader_holding_an_old_snapshot_never_stalls_writers_for_long(tmp_path: Path) -> None:
    """The restart waits for readers of the old log; with a reader that keeps its
    snapshot open, writes must go on (the restart gives up quickly), not wait out the
    30 s busy timeout every 128 commits."""
    path = tmp_path / "store.db"
    commits = 4 * COMMITS_PER_CHECKPOINT

    async def scenario() -> float:
        database = await Database.open(f"sqlite+aiosqlite:///{path}")
        try:
            async with database.engine.begin() as connection:
                await connection.run_sync(_meta.create_all)
            async with database.transaction() as connection:
                await connection.execute(_INSERT, {"id": -1, "body": "before"})
            reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            reader.execute("BEGIN")
            assert reader.execute("SELECT count(*) FROM checkpoint_blobs").fetchone() == (1,)
            slowest = 0.0
            try:
                for number in range(commits):
                    started = time.monotonic()
                    async with database.transaction() as connection:
                        await connection.execute(_INSERT, {"id": number, "body": "x" * 100})
                    slowest = max(slowest, time.monotonic() - started)
                # the reader still sees its snapshot
                assert reader.execute("SELECT count(*) FROM checkpoint_blobs").fetchone() == (1,)
            finally:
                reader.execute("ROLLBACK")
                reader.close()
            return slowest
        finally:
            await database.close()

    assert asyncio.run(scenario()) < 5
