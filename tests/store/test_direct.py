"""Writes a SQLite store runs directly on sqlite3 (`rubricflow.store._sqlite_direct`) store
exactly what SQLAlchemy's own path stores, fail with SQLAlchemy's errors, and leave to
SQLAlchemy every statement they cannot run as SQLAlchemy would."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import IntegrityError, StatementError
from sqlalchemy.ext.asyncio.exc import AsyncMethodRequired

from rubricflow.store.database import Database

_meta = sa.MetaData()
_things = sa.Table(
    "direct_things",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("at", sa.DateTime(timezone=True)),
    sa.Column("flag", sa.Boolean),
    sa.Column("score", sa.Float),
    sa.Column("doc", sa.JSON),
    sa.Column("kind", sa.String(20), default="plain"),  # a default computed in Python
)
_INSERT = _things.insert()
_RENAME = _things.update().where(_things.c.id == sa.bindparam("match_id"))
_FIXED = _things.update().where(_things.c.id == sa.bindparam("match_id")).values(flag=True)

rows = st.fixed_dictionaries(
    {
        "name": st.text(min_size=1, max_size=30),
        "at": st.one_of(
            st.none(),
            st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1)).map(
                lambda value: value.replace(tzinfo=timezone.utc)
            ),
        ),
        "flag": st.one_of(st.none(), st.booleans()),
        "score": st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
        "doc": st.one_of(
            st.none(),
            st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5))),
        ),
        "kind": st.sampled_from(["plain", "fancy"]),
    }
)


async def _database(path: Path) -> Database:
    database = await Database.open(f"sqlite+aiosqlite:///{path}")
    async with database.engine.begin() as connection:
        await connection.run_sync(_meta.create_all)
    return database


@asynccontextmanager
async def _opened(path: Path) -> AsyncIterator[Database]:
    database = await _database(path)
    try:
        yield database
    finally:
        await database.close()


async def _read(database: Database) -> list[Any]:
    async with database.read() as connection:
        result = await connection.execute(sa.select(_things).order_by(_things.c.id))
        return [tuple(row) for row in result]


async def _write_each(
    database: Database, batch: list[dict[str, Any]], statement: Callable[[], Any] = lambda: _INSERT
) -> None:
    async with database.transaction() as connection:
        for number, row in enumerate(batch):
            await connection.execute(statement(), {"id": number, **row})


@pytest.mark.fast_path_only
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=st.lists(rows, min_size=2, max_size=6, unique_by=lambda row: row["name"]))
def test_direct_inserts_store_what_sqlalchemy_stores(tmp_path: Path, batch: list[dict]) -> None:
    async def scenario() -> None:
        folder = Path(tempfile.mkdtemp(dir=tmp_path))
        direct = await _database(folder / "direct.db")
        reference = await _database(folder / "reference.db")
        try:
            # the same statement object every time: from its second use it runs directly
            await _write_each(direct, batch)
            assert direct.engine.direct_writes.executed == len(batch) - 1  # type: ignore[attr-defined]
            # a new statement object every time: SQLAlchemy's own path throughout
            await _write_each(reference, batch, _things.insert)
            assert await _read(direct) == await _read(reference)
        finally:
            await direct.close()
            await reference.close()

    asyncio.run(scenario())


def test_a_direct_write_that_breaks_a_constraint_is_sqlalchemys_integrity_error(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with _opened(tmp_path / "store.db") as database:
            await _write_each(database, [{"name": "a"}, {"name": "b"}])
            with pytest.raises(IntegrityError):
                async with database.transaction() as connection:
                    await connection.execute(_INSERT, {"id": 7, "name": "c"})
                    await connection.execute(_INSERT, {"id": 8, "name": "a"})  # taken
            # the failed transaction was rolled back whole: "c" is not there
            names = [row[1] for row in await _read(database)]
            assert names == ["a", "b"]

    asyncio.run(scenario())


def test_python_side_defaults_still_apply(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _opened(tmp_path / "store.db") as database:
            # no "kind": the column's Python default must fill it, every time
            await _write_each(database, [{"name": f"n{n}"} for n in range(4)])
            assert {row[-1] for row in await _read(database)} == {"plain"}

    asyncio.run(scenario())


def test_updates_report_the_rows_they_changed_and_keep_fixed_values(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _opened(tmp_path / "store.db") as database:
            await _write_each(database, [{"name": f"n{n}"} for n in range(3)])
            later = datetime(2030, 1, 1, tzinfo=timezone.utc)
            counts = []
            async with database.transaction() as connection:
                for match in (0, 1, 99, 2):
                    done = await connection.execute(
                        _RENAME, {"name": f"renamed{match}", "at": later, "match_id": match}
                    )
                    counts.append(done.rowcount)
                for match in (0, 1, 2):
                    await connection.execute(_FIXED, {"match_id": match})
            assert counts == [1, 1, 0, 1]
            stored = await _read(database)
            assert [row[1] for row in stored] == ["renamed0", "renamed1", "renamed2"]
            assert {row[2] for row in stored} == {later.replace(tzinfo=None)}
            assert {row[3] for row in stored} == {True}

    asyncio.run(scenario())


def test_batches_are_written_as_sqlalchemy_writes_them(tmp_path: Path) -> None:
    """Same keys in every row: run directly; differing keys: SQLAlchemy's rule (the first
    row's keys) on SQLAlchemy's path."""
    batch = [{"id": 1, "name": "a", "score": 1.5}, {"id": 2, "name": "b", "score": 2.5}]
    mixed = [{"id": 3, "name": "c"}, {"id": 4, "name": "d", "flag": False}]

    async def write(database: Database, statement: Callable[[], Any]) -> list[Any]:
        for _ in range(3):  # from the second time, the same statement runs directly
            async with database.transaction() as connection:
                await connection.execute(sa.delete(_things))
                await connection.execute(statement(), batch)
                await connection.execute(statement(), mixed)
        return await _read(database)

    async def scenario() -> None:
        direct = await _database(tmp_path / "direct.db")
        reference = await _database(tmp_path / "reference.db")
        try:
            stored = await write(direct, lambda: _INSERT)
            assert stored == await write(reference, _things.insert)
            assert [(row[0], row[1], row[4]) for row in stored] == [
                (1, "a", 1.5),
                (2, "b", 2.5),
                (3, "c", None),
                (4, "d", None),
            ]
        finally:
            await direct.close()
            await reference.close()

    asyncio.run(scenario())


def test_values_given_by_compiled_name_or_in_the_statement_follow_sqlalchemys_precedence(
    tmp_path: Path,
) -> None:
    """A parameter naming a column overrides `.values()`; a parameter naming a compiled
    bind (`id_1`) is that bind's value: on the second run exactly as on the first."""
    valued = _things.insert().values(kind="fancy")
    by_name = _things.update().where(_things.c.id == 1)

    async def scenario() -> None:
        async with _opened(tmp_path / "store.db") as database:
            async with database.transaction() as connection:
                for number in range(4):
                    kind = "plain" if number % 2 else "given"
                    await connection.execute(
                        valued, {"id": number, "name": f"n{number}", "kind": kind}
                    )
                for number in (2, 3):
                    await connection.execute(by_name, {"score": 9.5, "id_1": number})
            stored = await _read(database)
            assert [row[-1] for row in stored] == ["given", "plain", "given", "plain"]
            assert [row[4] for row in stored] == [None, None, 9.5, 9.5]

    asyncio.run(scenario())


def test_a_value_no_type_accepts_is_sqlalchemys_statement_error(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _opened(tmp_path / "store.db") as database:
            await _write_each(database, [{"name": "a"}, {"name": "b"}])
            for _ in range(2):
                with pytest.raises(StatementError):
                    async with database.transaction() as connection:
                        await connection.execute(_INSERT, {"id": 9, "name": "c", "at": "noon"})
            assert [row[1] for row in await _read(database)] == ["a", "b"]

    asyncio.run(scenario())


@pytest.mark.fast_path_only
def test_with_cursor_listeners_every_statement_takes_sqlalchemys_path(tmp_path: Path) -> None:
    """Event listeners (and echo, execution options) see every statement: nothing is
    run around them."""

    async def scenario() -> None:
        seen: list[str] = []

        def listener(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            seen.append(statement)

        async with _opened(tmp_path / "store.db") as database:
            sa.event.listen(database.engine.sync_engine, "before_cursor_execute", listener)
            await _write_each(database, [{"name": f"n{n}"} for n in range(3)])
            assert len([s for s in seen if s.startswith("INSERT")]) == 3
            assert database.engine.direct_writes.executed == 0  # type: ignore[attr-defined]

    asyncio.run(scenario())


def test_streaming_inside_a_transaction_says_to_use_stream(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _opened(tmp_path / "store.db") as database:
            await _write_each(database, [{"name": "a"}])
            async with database.transaction() as connection:
                with pytest.raises(AsyncMethodRequired):
                    await connection.execute(
                        sa.select(_things).execution_options(stream_results=True)
                    )
                streamed = await connection.stream(sa.select(_things.c.name))
                assert [row.name async for row in streamed] == ["a"]

    asyncio.run(scenario())
