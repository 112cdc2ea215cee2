"""`RUBRICFLOW_SQLITE_FASTPATH`: 1 (or unset) runs SQLite stores on rubricflow's fast
path, 0 on SQLAlchemy's stock async engine over aiosqlite; either way a store keeps its
settings (WAL, foreign keys, busy timeout), its write transactions hold SQLite's write
lock from their start, its reads take none, its log stays small, a cancelled wait for
the lock leaves nothing behind, and a locked database is a clear error.

CI runs the whole store and review suites a second time with the fast path off; the
tests here check the switch itself and both engines in any run.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.store import Store
from rubricflow.store._sqlite_checkpoint import LOG_KEEP_BYTES
from rubricflow.store._sqlite_fastpath import (
    FASTPATH_ENV,
    SQLITE_BUSY_TIMEOUT_MS,
    SQLiteEngine,
    fast_path_enabled,
)
from rubricflow.store.database import Database

from .test_processes import (
    test_a_transaction_cancelled_while_waiting_for_the_lock_leaves_nothing_behind as _cancelled,
)
from .test_schema import test_a_locked_sqlite_database_is_a_clear_store_error as _locked


@pytest.fixture(params=["1", "0"], ids=["fast", "stock"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The fast path on, then off (whatever this run's environment says)."""
    monkeypatch.setenv(FASTPATH_ENV, request.param)
    yield request.param


def _url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


# ---------------------------------------------------------------------------- the switch


@pytest.mark.parametrize("value", ["maybe", "2", "00", "disabled"])
async def test_any_other_value_is_a_configuration_error_naming_the_variable(
    value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(FASTPATH_ENV, value)
    with pytest.raises(ConfigurationError) as caught:
        await Store.open(str(tmp_path / "s.db"))
    message = str(caught.value)
    assert FASTPATH_ENV in message and repr(value) in message
    assert "1, true, yes, on or 0, false, no, off" in message  # the one boolean syntax
    assert isinstance(caught.value, RubricflowError)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    ("value", "fast"), [(None, True), ("", True), ("1", True), (" 1 ", True), ("0", False)]
)
async def test_the_switch_is_read_when_a_database_is_opened(
    value: str | None, fast: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if value is None:
        monkeypatch.delenv(FASTPATH_ENV, raising=False)
    else:
        monkeypatch.setenv(FASTPATH_ENV, value)
    assert fast_path_enabled() is fast
    async with await Store.open(str(tmp_path / "s.db")) as store:
        assert isinstance(store.database.engine, SQLiteEngine) is fast
        assert (store.database.fast_path_stats is not None) is fast


async def test_a_stock_engine_is_sqlalchemys_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No rubricflow class between the store and aiosqlite: SQLAlchemy's engine,
    connection and adapter; the driver's BEGIN off, SQLAlchemy's recipe instead."""
    monkeypatch.setenv(FASTPATH_ENV, "0")
    async with await Store.open(str(tmp_path / "s.db")) as store:
        engine = store.database.engine
        assert type(engine).__module__.startswith("sqlalchemy.")
        async with store.database.transaction() as connection:
            raw = await connection.get_raw_connection()
            assert type(raw.dbapi_connection).__module__.startswith("sqlalchemy.")
            assert type(raw.driver_connection).__module__.startswith("aiosqlite")
            assert raw.driver_connection._conn.isolation_level is None  # type: ignore[union-attr]
            assert raw.driver_connection._conn.in_transaction  # type: ignore[union-attr]


# ----------------------------------------------------------------------- both engines


async def test_settings(mode: str, tmp_path: Path) -> None:
    async with (
        await Store.open(str(tmp_path / "s.db")) as store,
        store.database.transaction() as connection,
    ):

        async def pragma(name: str) -> object:
            return (await connection.exec_driver_sql(f"PRAGMA {name}")).scalar()

        assert str(await pragma("journal_mode")).lower() == "wal"
        assert await pragma("foreign_keys") == 1
        assert await pragma("busy_timeout") == SQLITE_BUSY_TIMEOUT_MS
        assert await pragma("synchronous") == 1  # NORMAL
        assert await pragma("journal_size_limit") == LOG_KEEP_BYTES


def _lock_is_free(path: Path) -> bool:
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        assert "locked" in str(error)
        return False
    else:
        other.execute("ROLLBACK")
        return True
    finally:
        other.close()


async def test_a_write_transaction_holds_the_write_lock_from_its_start(
    mode: str, tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    async with await Store.open(str(path)) as store:
        async with store.database.transaction() as connection:
            await connection.exec_driver_sql("SELECT count(*) FROM rubrics")
            assert not _lock_is_free(path)
        assert _lock_is_free(path)


async def test_reads_take_no_write_lock_and_write_nothing(mode: str, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with await Store.open(str(path)) as store:
        async with store.database.read() as connection:
            assert (await connection.exec_driver_sql("SELECT count(*) FROM runs")).scalar() == 0
            assert _lock_is_free(path)
        with pytest.raises(RuntimeError):
            async with store.database.read() as connection:
                await connection.execute(
                    sa.text("INSERT INTO rubrics (rubric_id, created_at) VALUES ('x', '2026')")
                )
                raise RuntimeError("leave")
        assert _lock_is_free(path)
        async with store.database.read() as connection:
            assert (await connection.exec_driver_sql("SELECT count(*) FROM rubrics")).scalar() == 0


async def test_foreign_keys_are_enforced(mode: str, tmp_path: Path) -> None:
    async with await Store.open(str(tmp_path / "s.db")) as store:
        with pytest.raises(Exception, match="FOREIGN KEY"):
            async with store.database.transaction() as connection:
                await connection.exec_driver_sql(
                    "INSERT INTO rubric_versions (rubric_id, version, content_hash, name, "
                    "document, created_at) VALUES ('nobody', '1', 'h', 'n', '{}', '2026')"
                )


async def test_a_cancelled_wait_for_the_lock_leaves_nothing_behind(
    mode: str, tmp_path: Path
) -> None:
    await _cancelled(tmp_path)


async def test_a_locked_database_is_a_clear_store_error(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _locked(tmp_path, monkeypatch)


def test_the_stock_engines_log_stays_small_under_sqlites_own_checkpoint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With the fast path off there is no checkpoint thread: SQLite's own checkpoint (in
    the commit that takes the log past 1,000 pages) copies the log back and the next
    write starts it over, so steady commits never let it grow past about 4 MB."""
    monkeypatch.setenv(FASTPATH_ENV, "0")
    meta = sa.MetaData()
    blobs = sa.Table(
        "blobs", meta, sa.Column("id", sa.Integer, primary_key=True), sa.Column("body", sa.Text)
    )
    path = tmp_path / "s.db"
    commits = 1500
    body = "x" * 3000  # about a page per commit

    async def scenario() -> int:
        database = await Database.open(_url(path))
        try:
            async with database.transaction() as connection:
                await connection.run_sync(meta.create_all)
            largest = 0
            for number in range(commits):
                async with database.transaction() as connection:
                    await connection.execute(blobs.insert(), {"id": number, "body": body})
                wal = path.with_name(path.name + "-wal")
                largest = max(largest, wal.stat().st_size if wal.exists() else 0)
            return largest
        finally:
            await database.close()

    largest = asyncio.run(scenario())
    # never started over, the log would pass commits * 4 KiB (6 MB)
    assert largest < 5 * 1024 * 1024, largest
    with sqlite3.connect(path) as reader:  # everything reached the database
        assert reader.execute("SELECT count(*) FROM blobs").fetchone()[0] == commits
