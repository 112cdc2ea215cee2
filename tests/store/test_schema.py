"""Opening a database: URLs, a new database created at the current schema, the migrated
schema equal to the tables, refusing databases that are behind or ahead, SQLite settings,
lock errors, and unreachable servers, on both backends."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

import rubricflow.store._sqlite_fastpath as sqlite_store
import rubricflow.store.database as database_module
from rubricflow.cli import app
from rubricflow.errors import ConfigurationError, SchemaOutdatedError, StoreError
from rubricflow.store import DB_ENV, Database, Store, resolve_url
from rubricflow.store.tables import metadata
from rubricflow.store.url import display_url

from .conftest import PostgresServer, make_evaluation, make_rubric, scalar

PASSWORD = "s3cr3t-pw"
HEAD = Database.head_revision()
LATER = "9001_test"
STORE_TABLES = {table.name for table in metadata.sorted_tables}


async def _tables(url: str) -> set[str]:
    engine = Database(url, database_module._create_engine(url)).engine
    try:
        async with engine.connect() as connection:
            return set(await connection.run_sync(lambda s: sa.inspect(s).get_table_names()))
    finally:
        await engine.dispose()


async def _execute(url: str, *statements: str) -> None:
    engine = database_module._create_engine(url)
    try:
        async with engine.begin() as connection:
            for statement in statements:
                await connection.exec_driver_sql(statement)
    finally:
        await engine.dispose()


# ------------------------------------------------------------------------------ URLs


def test_resolve_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DB_ENV, raising=False)
    assert resolve_url() == "sqlite+aiosqlite:///rubricflow.db"
    assert resolve_url(str(tmp_path / "x.db")) == f"sqlite+aiosqlite:///{tmp_path}/x.db"
    assert resolve_url("sqlite:///x.db") == "sqlite+aiosqlite:///x.db"
    assert resolve_url("postgresql://u@h/db") == "postgresql+asyncpg://u@h/db"
    assert resolve_url("postgres://u:pw@h:5/db") == "postgresql+asyncpg://u:pw@h:5/db"
    assert resolve_url("postgresql+psycopg2://u@h/db") == "postgresql+asyncpg://u@h/db"
    monkeypatch.setenv(DB_ENV, "postgresql://env@h/db")
    assert resolve_url() == "postgresql+asyncpg://env@h/db"
    assert resolve_url("sqlite:///given.db") == "sqlite+aiosqlite:///given.db"
    with pytest.raises(ConfigurationError, match="unsupported database 'mysql'"):
        resolve_url("mysql://u@h/db")
    with pytest.raises(ConfigurationError, match="cannot read database URL"):
        resolve_url("://nothing")


def test_display_url_masks_the_password() -> None:
    shown = display_url(f"postgresql+asyncpg://bob:{PASSWORD}@db.example:5432/reviews")
    assert PASSWORD not in shown
    assert shown == "postgresql+asyncpg://bob:***@db.example:5432/reviews"
    assert display_url("sqlite+aiosqlite:///x.db") == "sqlite+aiosqlite:///x.db"


async def test_unreachable_server_is_a_store_error_without_the_password() -> None:
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        await Store.open(f"postgresql://bob:{PASSWORD}@127.0.0.1:1/x")
    message = str(caught.value)
    assert "cannot open database" in message and "127.0.0.1:1" in message
    assert PASSWORD not in message and "bob:***@" in message
    assert time.monotonic() - started < 10


async def test_missing_sqlite_folder_and_garbage_files_are_store_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="unable to open database file"):
        await Store.open(str(tmp_path / "no" / "such" / "dir.db"))
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database " * 400)
    with pytest.raises(StoreError, match="not a database"):
        await Store.open(str(garbage))


async def test_missing_postgres_database_is_a_store_error(pg_server: PostgresServer) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        await Store.open(pg_server.url("rubricflow_test_never_created"))


# ------------------------------------------------------------------ schema and migrations


async def test_a_new_database_is_created_at_the_current_schema(fresh_db_url: str) -> None:
    async with await Store.open(fresh_db_url) as store:
        assert await store.database.current_revision() == Database.head_revision()
    assert await _tables(fresh_db_url) == STORE_TABLES | {"alembic_version"}
    async with await Store.open(fresh_db_url) as store:  # and opens again as it is
        assert await store.database.current_revision() == HEAD


async def test_the_migrated_schema_matches_the_tables(fresh_db_url: str) -> None:
    async with (
        await Store.open(fresh_db_url) as store,
        store.database.engine.connect() as connection,
    ):
        differences = await connection.run_sync(
            lambda sync: compare_metadata(
                MigrationContext.configure(sync, opts={"compare_type": True}), metadata
            )
        )
    assert differences == []


async def test_a_store_without_its_schema_version_is_refused(fresh_db_url: str) -> None:
    async with await Store.open(fresh_db_url) as store:
        await store.rubrics.register(make_rubric("essay", "1.0.0"))
    await _execute(fresh_db_url, "DELETE FROM alembic_version")
    with pytest.raises(SchemaOutdatedError) as caught:
        await Store.open(fresh_db_url)
    message = str(caught.value)
    assert f"rubricflow db upgrade --db {display_url(fresh_db_url)}" in message
    assert f"needs schema {HEAD}" in message and "no schema version" in message


def test_db_upgrade_fixes_a_store_without_its_schema_version(
    fresh_db_url: str, cli: CliRunner
) -> None:
    import asyncio

    async def prepare() -> None:
        async with await Store.open(fresh_db_url) as store:
            await store.rubrics.register(make_rubric("essay", "1.0.0"))
        await _execute(fresh_db_url, "DELETE FROM alembic_version")

    asyncio.run(prepare())
    refused = cli.invoke(app, ["rubrics", "list", "--db", fresh_db_url])
    assert refused.exit_code == 2
    assert "rubricflow db upgrade --db" in refused.output
    fixed = cli.invoke(app, ["db", "upgrade", "--db", fresh_db_url, "--json"])
    assert fixed.exit_code == 0, fixed.output
    listed = cli.invoke(app, ["rubrics", "list", "--db", fresh_db_url, "--json"])
    assert listed.exit_code == 0, listed.output
    assert '"essay"' in listed.output


async def test_a_store_with_foreign_tables_only_is_refused_then_upgraded(
    fresh_db_url: str,
) -> None:
    await _execute(fresh_db_url, "CREATE TABLE someone_elses (id INTEGER PRIMARY KEY)")
    with pytest.raises(SchemaOutdatedError, match="rubricflow db upgrade --db"):
        await Store.open(fresh_db_url)
    async with await Store.open(fresh_db_url, upgrade=True) as store:
        await store.rubrics.register(make_rubric("essay", "1.0.0"))
    assert "someone_elses" in await _tables(fresh_db_url)


async def test_a_partial_store_without_version_is_not_adopted(fresh_db_url: str) -> None:
    async with await Store.open(fresh_db_url):
        pass
    await _execute(fresh_db_url, "DELETE FROM alembic_version", "DROP TABLE judge_cache")
    with pytest.raises(SchemaOutdatedError):
        await Store.open(fresh_db_url)
    with pytest.raises(StoreError, match="judge_cache"):
        await Store.open(fresh_db_url, upgrade=True)


async def test_a_schema_from_a_newer_rubricflow_is_refused(fresh_db_url: str) -> None:
    async with await Store.open(fresh_db_url):
        pass
    await _execute(fresh_db_url, "UPDATE alembic_version SET version_num = '9999_future'")
    with pytest.raises(SchemaOutdatedError) as caught:
        await Store.open(fresh_db_url)
    assert "9999_future" in str(caught.value) and "newer rubricflow" in str(caught.value)
    with pytest.raises(SchemaOutdatedError, match="newer rubricflow"):
        await Store.open(fresh_db_url, upgrade=True)  # never "upgrade" past what it knows


EXTRA_MIGRATION = '''\
"""a later schema change (test only)"""
from alembic import op

revision = "{later}"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_test_judge_cache_created", "judge_cache", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_test_judge_cache_created", table_name="judge_cache")
'''


def ship_later_migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    """Make this rubricflow ship one more migration, `text`, after its head."""
    copy = tmp_path / "migrations"
    shutil.copytree(database_module.MIGRATIONS, copy)
    migration = text.replace("{later}", LATER).replace("{head}", str(HEAD))
    (copy / "versions" / f"{LATER}_extra.py").write_text(migration)
    monkeypatch.setattr(database_module, "MIGRATIONS", copy)
    return copy


@pytest.fixture
def newer_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This rubricflow, plus a later migration it does not ship."""
    return ship_later_migration(tmp_path, monkeypatch, EXTRA_MIGRATION)


REBUILD_MIGRATION = '''\
"""a later change that rebuilds the evaluations table on SQLite (test only)"""
import sqlalchemy as sa
from alembic import op

revision = "{later}"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    column = sa.Column("test_note", sa.Text(), nullable=True)
    if op.get_bind().dialect.name == "sqlite":
        # SQLite cannot alter much in place: alembic copies the table and drops the old one
        with op.batch_alter_table("evaluations", recreate="always") as batch:
            batch.add_column(column)
    else:
        op.add_column("evaluations", column)


def downgrade() -> None:
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("test_note")
'''


async def test_an_upgrade_that_rebuilds_a_table_keeps_the_rows_that_point_at_it(
    fresh_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # dropping the old evaluations table must not cascade to criterion results and LLM
    # calls (SQLite enforces foreign keys, so the upgrade must switch them off meanwhile)
    async with await Store.open(fresh_db_url) as store:
        await store.evaluations.save_many([make_evaluation("e1", calls=2), make_evaluation("e2")])
    ship_later_migration(tmp_path, monkeypatch, REBUILD_MIGRATION)
    async with await Store.open(fresh_db_url, upgrade=True) as store:
        assert await store.database.current_revision() == LATER
        assert await scalar(store, "SELECT count(*) FROM evaluations") == 2
        assert await scalar(store, "SELECT count(*) FROM criterion_results") == 6
        assert await scalar(store, "SELECT count(*) FROM llm_calls") == 3
        assert (await store.evaluations.get("e1")) == make_evaluation("e1", calls=2)
        if store.database.dialect == "sqlite":  # and foreign keys are on again
            assert await scalar(store, "PRAGMA foreign_keys") == 1
            async with store.database.transaction() as connection:
                await connection.exec_driver_sql("DELETE FROM evaluations WHERE id = 'e2'")
            assert await scalar(store, "SELECT count(*) FROM criterion_results") == 3


async def test_a_schema_behind_the_code_names_the_upgrade_command(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # the password of the URL never shows in the message
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("pg_server")
        plain = server.create_database()
        url = server.url(make_url(plain).database or "", password=PASSWORD)
    else:
        url = f"sqlite+aiosqlite:///{tmp_path / 'behind.db'}"
    async with await Store.open(url) as store:
        await store.evaluations.save(make_evaluation("kept"))
    request.getfixturevalue("newer_code")
    assert Database.head_revision() == LATER
    with pytest.raises(SchemaOutdatedError) as caught:
        await Store.open(url)
    message = str(caught.value)
    assert PASSWORD not in message
    assert f"has schema {HEAD}, this rubricflow needs schema {LATER}" in message
    assert f"run: rubricflow db upgrade --db {display_url(url)}" in message
    async with await Store.open(url, upgrade=True) as store:
        assert await store.database.current_revision() == LATER
        assert (await store.evaluations.get("kept")).id == "kept"
    async with await Store.open(url) as store:
        assert await store.database.current_revision() == LATER


def test_cli_db_upgrade_applies_a_pending_migration(
    fresh_db_url: str, cli: CliRunner, request: pytest.FixtureRequest
) -> None:
    created = cli.invoke(app, ["db", "upgrade", "--db", fresh_db_url, "--json"])
    assert created.exit_code == 0, created.output
    assert f'"revision": "{HEAD}"' in created.stdout
    request.getfixturevalue("newer_code")  # now this rubricflow ships a later migration
    behind = cli.invoke(app, ["evaluations", "list", "--db", fresh_db_url])
    assert behind.exit_code == 2
    assert f"has schema {HEAD}, this rubricflow needs schema {LATER}" in behind.stderr
    assert "rubricflow db upgrade --db" in behind.stderr
    assert "Traceback" not in behind.output
    upgraded = cli.invoke(app, ["db", "upgrade", "--db", fresh_db_url])
    assert upgraded.exit_code == 0, upgraded.output
    assert f"from schema {HEAD} to {LATER}" in upgraded.stdout
    listed = cli.invoke(app, ["evaluations", "list", "--db", fresh_db_url, "--json"])
    assert listed.exit_code == 0, listed.output


# --------------------------------------------------------------------------- SQLite


async def test_sqlite_runs_with_wal_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    async with (
        await Store.open(str(tmp_path / "s.db")) as store,
        store.database.engine.connect() as connection,
    ):

        async def pragma(name: str) -> object:
            return (await connection.exec_driver_sql(f"PRAGMA {name}")).scalar()

        assert str(await pragma("journal_mode")).lower() == "wal"
        assert await pragma("foreign_keys") == 1
        assert await pragma("busy_timeout") == database_module.SQLITE_BUSY_TIMEOUT_MS
        assert database_module.SQLITE_BUSY_TIMEOUT_MS >= 1000
    with sqlite3.connect(tmp_path / "s.db") as plain:  # WAL is a property of the file
        assert plain.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_locked_sqlite_database_is_a_clear_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "SQLITE_BUSY_TIMEOUT_MS", 300)
    path = tmp_path / "locked.db"
    async with await Store.open(str(path)) as store:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            started = time.monotonic()
            with pytest.raises(StoreError) as caught:
                await store.rubrics.register(make_rubric("essay", "1.0.0"))
            assert time.monotonic() - started < 5
            message = str(caught.value)
            assert "locked" in message and str(path) in message
            assert "0.3s" in message
            with pytest.raises(StoreError, match="locked"):
                await store.evaluations.save(make_evaluation("e1"))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await store.rubrics.register(make_rubric("essay", "1.0.0"))  # fine once released
        assert await scalar(store, "SELECT count(*) FROM rubric_versions") == 1


async def test_reads_never_wait_for_another_processs_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing and querying evaluations and runs take no write lock: another process
    in the middle of a write transaction neither holds them up nor is held up by them."""
    monkeypatch.setattr(sqlite_store, "SQLITE_BUSY_TIMEOUT_MS", 300)
    path = tmp_path / "busy.db"
    async with await Store.open(str(path)) as store:
        await store.evaluations.save(make_evaluation("e1"))
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("DELETE FROM criterion_results")  # uncommitted
        try:
            assert [e.id for e in await store.evaluations.query()] == ["e1"]
            assert await store.evaluations.count() == 1
            assert list(await store.evaluations.ids()) == ["e1"]
            assert (await store.evaluations.get("e1")).id == "e1"
            assert await store.runs.list() == []
            assert await store.runs.latest() is None
        finally:
            holder.execute("ROLLBACK")
            holder.close()


async def test_opening_a_locked_new_database_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "SQLITE_BUSY_TIMEOUT_MS", 200)
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="locked"):
            await Store.open(str(path))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    async with await Store.open(str(path)) as store:
        assert await store.database.current_revision() == HEAD
