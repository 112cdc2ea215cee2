"""SQLite lock errors are told apart by their result code, not by words in the message:
a real lock is "busy or locked", an unrelated error that merely mentions the words is not."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from rubricflow.errors import StoreError
from rubricflow.store._sqlite_fastpath import is_busy_or_locked
from rubricflow.store.database import Database

needs_codes = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="sqlite3 errors carry their result code from 3.11"
)


def _locked_error(path: Path) -> sqlite3.OperationalError:
    holder = sqlite3.connect(path, isolation_level=None)
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        holder.execute("PRAGMA journal_mode=WAL")
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError) as raised:
            other.execute("BEGIN IMMEDIATE")
        return raised.value
    finally:
        holder.execute("ROLLBACK")
        other.close()
        holder.close()


def test_a_held_write_lock_is_busy_or_locked(tmp_path: Path) -> None:
    assert is_busy_or_locked(_locked_error(tmp_path / "held.db"))


@needs_codes
def test_an_error_that_only_mentions_the_words_is_not(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "plain.db")
    try:
        with pytest.raises(sqlite3.OperationalError) as raised:
            connection.execute("SELECT * FROM locked_while_busy")
    finally:
        connection.close()
    assert "locked" in str(raised.value)  # "no such table: locked_while_busy"
    assert not is_busy_or_locked(raised.value)
    assert not is_busy_or_locked(ValueError("database is locked"))  # not SQLite's


@needs_codes
def test_the_store_reports_an_unrelated_error_as_itself(tmp_path: Path) -> None:
    """A missing table named `locked_while_busy` is reported as a missing table, not as
    "stayed locked by another writer" (which matching the words in the text said). CI
    runs this with the fast path on and off (`RUBRICFLOW_SQLITE_FASTPATH=0`)."""

    async def scenario() -> str:
        database = await Database.open(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
        try:
            with pytest.raises(StoreError) as raised:
                async with database.transaction() as connection:
                    await connection.execute(sa.text("DELETE FROM locked_while_busy"))
            return str(raised.value)
        finally:
            await database.close()

    message = asyncio.run(scenario())
    assert "no such table: locked_while_busy" in message
    assert "stayed locked" not in message
