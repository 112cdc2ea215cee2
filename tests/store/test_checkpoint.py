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


def _log_generation(wal: Path) -> bytes | None:
    """The write-ahead log header's checkpoint sequence number and first salt: both
    change whenever SQLite starts the log over from its beginning."""
    try:
        with wal.open("rb") as log:
            header = log.read(32)
    except FileNotFoundError:
        return None
    return header[12:20] if len(header) == 32 else None


@pytest.mark.fast_path_only
def test_the_log_is_checkpointed_in_the_background_and_stays_small(tmp_path: Path) -> None:
    """Commits go on without a pause while the thread checkpoints; each checkpoint lets
    the log start over (at the next commit), so it is written from its beginning again
    and again instead of growing with every commit.

    Nothing here depends on how fast the machine is: the test commits until the thread
    has checkpointed eight times (at least 16 rounds of `COMMITS_PER_CHECKPOINT`), with a
    two-minute deadline, and counts the restarts from the log's own header. (How far the
    log grows between two restarts depends on how soon the thread gets the CPU.)"""
    path = tmp_path / "store.db"
    wal = path.with_name(path.name + "-wal")
    body = "x" * 3000  # about a page per commit

    async def scenario() -> tuple[int, int, int, int]:
        database = await Database.open(f"sqlite+aiosqlite:///{path}")
        try:
            async with database.engine.begin() as connection:
                await connection.run_sync(_meta.create_all)
            checkpointer = getattr(database.engine, "checkpointer", None)
            assert checkpointer is not None
            commits = restarts = checkpoints = 0
            generation = _log_generation(wal)
            deadline = time.monotonic() + 120
            while commits < 16 * COMMITS_PER_CHECKPOINT or checkpoints < 8:
                assert time.monotonic() < deadline, (commits, checkpoints, restarts)
                async with database.transaction() as connection:
                    await connection.execute(_INSERT, {"id": commits, "body": body})
                commits += 1
                now = _log_generation(wal)
                restarts += generation is not None and now != generation
                generation, checkpoints = now, checkpointer.checkpoints
            async with database.read() as connection:
                count = (
                    await connection.execute(sa.select(sa.func.count()).select_from(_blobs))
                ).scalar_one()
            return commits, count, checkpoints, restarts
        finally:
            await database.close()

    commits, count, checkpoints, restarts = asyncio.run(scenario())
    assert count == commits
    # the store's connections never checkpoint themselves: the thread did it, and every
    # checkpoint but perhaps the last (its restart may still be due) started the log over
    assert checkpoints >= 8
    assert restarts >= checkpoints - 1
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
