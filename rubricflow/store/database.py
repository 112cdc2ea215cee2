"""The async engine, its SQLite settings, and the schema check against the migrations.

SQLite runs with WAL, foreign keys on and a busy timeout; PostgreSQL through asyncpg.
A new, empty database is migrated to the current schema when opened; a database whose
schema is behind is refused with the exact command that upgrades it.
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from rubricflow.errors import ConfigurationError, SchemaOutdatedError, StoreError
from rubricflow.store import _sqlite_fastpath as sqlite_store
from rubricflow.store._sqlite_fastpath import (
    SQLITE_BUSY_TIMEOUT_MS,
    FastPathStats,
    SQLiteEngine,
    autocommit_engine,
    create_sqlite_engine,
    is_busy_or_locked,
    read_engine,
    write_transaction,
)
from rubricflow.store.tables import metadata
from rubricflow.store.url import (
    POSTGRES_DRIVER_MISSING,
    display_url,
    postgres_connect_args,
    resolve_url,
)

__all__ = ["SQLITE_BUSY_TIMEOUT_MS", "Database"]

POSTGRES_CONNECT_TIMEOUT_S = 10
MIGRATIONS = Path(__file__).parent / "migrations"
# pg_advisory_xact_lock key that serialises migrations of one PostgreSQL database
_MIGRATION_LOCK = 0x52554252_49430001


def _store_tables() -> frozenset[str]:
    """The names of rubricflow's tables (read when needed: every table module is loaded)."""
    return frozenset(table.name for table in metadata.sorted_tables)


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


class TurnQueue:
    """Transactions of one process that must take turns, first come first served.

    Two uses (`Database`):

    - a SQLite file's write transactions. SQLite lets one connection write at a time.
      Without the queue, the tasks of one process (a server's concurrent requests) that
      find the write lock taken wait in SQLite's busy handler, which sleeps and polls (1,
      2, 5, 10... ms) in aiosqlite's thread: the lock is taken late, and each wait costs
      hand-offs to and from that thread. Queued, the next writer starts the moment the
      last one ends. Other processes still meet at SQLite's own lock, which alone decides
      who writes; a task that waits here longer than SQLite's busy timeout (`timeout`)
      goes on to it anyway, so none waits longer than it would have without the queue;
    - every transaction and read of an in-memory SQLite database, which lives in one
      connection they all share (`timeout=None`: they wait their turn, however long).

    A `Database` used from another event loop starts a new queue; a task that holds the
    turn already is not queued again."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._holder: asyncio.Task[Any] | None = None
        self._waiters: collections.deque[tuple[asyncio.Future[bool], asyncio.Task[Any]]] = (
            collections.deque()
        )

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - always inside a task
            yield
            return
        if self._loop is not loop:
            self._loop, self._holder, self._waiters = loop, None, collections.deque()
        if self._holder is task:
            yield
            return
        if self._holder is None:
            self._holder = task
        elif not await self._wait(loop, task):
            yield  # waited past the timeout: SQLite's lock decides
            return
        try:
            yield
        finally:
            self._hand_on()

    async def _wait(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> bool:
        """Wait to be handed the turn (True), or for the timeout (False)."""
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiters.append((waiter, task))

        def expire() -> None:
            if not waiter.done():
                waiter.set_result(False)

        timer = None if self.timeout is None else loop.call_later(self.timeout, expire)
        try:
            return await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self._hand_on()  # handed the turn as it was cancelled: pass it on
            else:
                waiter.cancel()
            raise
        finally:
            if timer is not None:
                timer.cancel()

    def _hand_on(self) -> None:
        while self._waiters:
            waiter, task = self._waiters.popleft()
            if not waiter.done():
                self._holder = task
                waiter.set_result(True)
                return
        self._holder = None


class Database:
    """One database: an async engine plus the schema check. Use `await Database.open(url)`."""

    def __init__(self, url: str, engine: AsyncEngine) -> None:
        self.url = url
        self.engine = engine
        # what reads connect through (SQLAlchemy's stock SQLite engine: reads begin
        # DEFERRED, not with the write lock)
        self._reads = read_engine(engine)
        # an in-memory SQLite database lives in one connection that every transaction
        # shares, so transactions must take turns (or one's rollback undoes another's work)
        in_memory = _in_memory(url)
        self._turns = TurnQueue(None) if in_memory else None
        # this process's writers of a SQLite file queue here for the write lock
        self._writers = (
            TurnQueue(sqlite_store.SQLITE_BUSY_TIMEOUT_MS / 1000)
            if engine.dialect.name == "sqlite" and not in_memory
            else None
        )
        #: (revision before, revision after) when `open` migrated the schema, else None
        self.migrated: tuple[str | None, str | None] | None = None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def display_url(self) -> str:
        return display_url(self.url)

    @property
    def fast_path_stats(self) -> FastPathStats | None:
        """The SQLite fast path's direct writes and the writes that missed it; None when
        the fast path is off (`RUBRICFLOW_SQLITE_FASTPATH=0`) or on PostgreSQL."""
        return self.engine.stats if isinstance(self.engine, SQLiteEngine) else None

    @classmethod
    async def open(cls, url: str | None = None, *, upgrade: bool = False) -> Database:
        """Connect and check the schema. A brand-new database is created at the current
        schema; with `upgrade=True` an older one is migrated, otherwise refused."""
        resolved = resolve_url(url)
        engine = _create_engine(resolved)
        database = cls(resolved, engine)
        try:
            await database._check_schema(upgrade=upgrade)
        except BaseException:
            await engine.dispose()
            raise
        return database

    async def close(self) -> None:
        await self.engine.dispose()
        if isinstance(self.engine, SQLiteEngine) and self.engine.checkpointer is not None:
            await asyncio.to_thread(self.engine.checkpointer.close)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A connection in one transaction: committed when the block ends, rolled back on
        any error. Driver errors become `StoreError`s naming the database."""
        async with self._turn(), self._begin() as connection:
            yield connection

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads only: unlike `transaction`, it takes no SQLite write lock
        (no BEGIN IMMEDIATE), so readers neither wait for nor hold up writers. Anything
        written through it is rolled back."""
        async with self._turn(), self._translated(), self._reads.connect() as connection:
            yield connection

    def _turn(self) -> AbstractAsyncContextManager[None]:
        """Wait for this task's turn at an in-memory database (a no-op for any other)."""
        return nullcontext() if self._turns is None else self._turns.turn()

    @asynccontextmanager
    async def _begin(self) -> AsyncIterator[AsyncConnection]:
        writers = nullcontext() if self._writers is None else self._writers.turn()
        if isinstance(self.engine, SQLiteEngine):
            async with (
                writers,
                self._translated(),
                write_transaction(self.engine, self._operational) as connection,
            ):
                yield connection
            return
        async with writers, self._translated(), self.engine.begin() as connection:
            yield connection

    @asynccontextmanager
    async def _translated(self) -> AsyncIterator[None]:
        """Driver errors inside the block become `StoreError`s naming the database."""
        try:
            yield
        except OperationalError as error:
            raise self._operational(error) from error
        except DBAPIError as error:
            if error.connection_invalidated:
                raise StoreError(
                    f"lost the connection to {self.display_url}: {error.orig}"
                ) from error
            raise

    def _operational(self, error: OperationalError | sqlite3.OperationalError) -> StoreError:
        driver_error = getattr(error, "orig", error)
        text = str(driver_error)
        if isinstance(driver_error, BaseException) and is_busy_or_locked(driver_error):
            return StoreError(
                f"database {self.display_url} stayed locked by another writer for "
                f"{sqlite_store.SQLITE_BUSY_TIMEOUT_MS / 1000:g}s; retry, or use PostgreSQL "
                "when several processes write at once"
            )
        return StoreError(f"database {self.display_url}: {text}")

    async def current_revision(self) -> str | None:
        async with self.transaction() as connection:
            return await connection.run_sync(
                lambda sync: MigrationContext.configure(sync).get_current_revision()
            )

    @staticmethod
    def head_revision() -> str | None:
        return ScriptDirectory.from_config(_alembic_config()).get_current_head()

    async def upgrade(self) -> tuple[str | None, str | None]:
        """Apply every pending migration; returns (revision before, revision after).

        The migration runs in one transaction that first takes a lock (SQLite: BEGIN
        IMMEDIATE, which also makes its DDL transactional; PostgreSQL: an advisory lock),
        so processes opening a new database at once migrate it once, and a migration that
        is interrupted leaves nothing behind. A store whose tables match this rubricflow's
        but that lost its version row is adopted (stamped), never re-created."""
        before = await self.current_revision()
        config = _alembic_config()

        def run(sync_connection: sa.Connection) -> None:
            config.attributes["connection"] = sync_connection
            current = MigrationContext.configure(sync_connection).get_current_revision()
            if current is None and self._adoptable(sync_connection):
                command.stamp(config, "head")
            else:
                command.upgrade(config, "head")

        if self.dialect == "sqlite":
            await self._upgrade_sqlite(run)
        else:
            async with self.transaction() as connection:
                await connection.execute(
                    sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK}
                )
                await connection.run_sync(run)
        return before, await self.current_revision()

    async def _upgrade_sqlite(self, run: Any) -> None:
        """SQLite's procedure for schema changes: foreign keys off (outside a transaction,
        the only place the pragma works) so that a migration rebuilding a table (copy, drop,
        rename: alembic's batch mode) does not cascade the drop to the rows pointing at it;
        BEGIN IMMEDIATE, so the DDL is one transaction and a second process waits; a
        foreign-key check before the commit; foreign keys on again."""
        engine = autocommit_engine(self.engine)  # the pragma only works outside a transaction
        async with self._translated(), engine.connect() as connection:
            await connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            await connection.commit()
            try:
                await connection.exec_driver_sql("BEGIN IMMEDIATE")
                await connection.run_sync(run)
                broken = (await connection.exec_driver_sql("PRAGMA foreign_key_check")).all()
                if broken:
                    raise StoreError(
                        f"migrating {self.display_url} would leave {len(broken)} row(s) whose "
                        f"foreign keys point nowhere (first: table {broken[0][0]}); nothing "
                        "was changed"
                    )
                await connection.commit()
            except BaseException:
                await connection.rollback()
                raise
            finally:
                await connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                await connection.commit()

    def _adoptable(self, sync_connection: sa.Connection) -> bool:
        """True when rubricflow's tables are all there, exactly as this rubricflow defines
        them, but the version row is missing; False when none of them exist (the migrations
        create them). Anything in between is refused: it is no schema rubricflow knows."""
        ours = _store_tables()
        present = set(sa.inspect(sync_connection).get_table_names()) & ours
        if not present:
            return False

        def ours_only(name: str | None, kind: str) -> bool:
            return kind != "table" or name in ours

        # only rubricflow's tables count, on both sides: other tables in the database, or
        # other SQLModel tables in this process, are not rubricflow's to judge
        context = MigrationContext.configure(
            sync_connection,
            opts={
                "compare_type": True,
                "include_name": lambda name, kind, _parents: ours_only(name, kind),
                "include_object": lambda _obj, name, kind, _seen, _to: ours_only(name, kind),
            },
        )
        differences = compare_metadata(context, metadata)
        if differences:
            shown = "; ".join(_describe(d) for d in differences[:8])
            more = f" and {len(differences) - 8} more" if len(differences) > 8 else ""
            raise StoreError(
                f"database {self.display_url} holds rubricflow tables without a schema "
                f"version, and they differ from this rubricflow's schema ({shown}{more}); "
                "it cannot be upgraded automatically: restore it from a backup, or move it "
                "aside and start a new store"
            )
        return True

    async def _check_schema(self, *, upgrade: bool) -> None:
        try:
            current, tables = await self._revision_and_tables()
        except (OSError, asyncio.TimeoutError, DBAPIError) as error:
            hint = (
                "check the path and that it is a rubricflow SQLite file"
                if self.dialect == "sqlite"
                else "check the URL and that the server is running"
            )
            reason = str(getattr(error, "orig", None) or error) or type(error).__name__
            raise StoreError(f"cannot open database {self.display_url}: {reason}; {hint}") from None
        head = self.head_revision()
        if current == head:
            return
        known = {
            script.revision
            for script in ScriptDirectory.from_config(_alembic_config()).walk_revisions()
        }
        if current is not None and current not in known:
            raise SchemaOutdatedError(
                f"database {self.display_url} has schema {current}, which this rubricflow does "
                "not know: it was written by a newer rubricflow; upgrade rubricflow"
            )
        if upgrade or (current is None and not tables):
            self.migrated = await self.upgrade()
            return
        if current is not None:
            state = f"has schema {current}"
        elif tables & _store_tables():
            state = "has rubricflow tables but no schema version"
        else:
            state = "has other tables and no rubricflow schema"
        raise SchemaOutdatedError(
            f"database {self.display_url} {state}, this rubricflow needs schema {head}; "
            f"run: rubricflow db upgrade --db {self.display_url}"
        )

    async def _revision_and_tables(self) -> tuple[str | None, set[str]]:
        """The schema revision and the table names, read in one transaction so that another
        process migrating the database in between cannot make them disagree."""

        def read(sync: sa.Connection) -> tuple[str | None, set[str]]:
            revision = MigrationContext.configure(sync).get_current_revision()
            return revision, set(sa.inspect(sync).get_table_names())

        async with self.transaction() as connection:
            return await connection.run_sync(read)


def _in_memory(url: str) -> bool:
    parsed = make_url(url)
    return parsed.get_backend_name() == "sqlite" and (
        parsed.database in (None, "", ":memory:") or parsed.query.get("mode") == "memory"
    )


def _create_engine(url: str) -> AsyncEngine:
    if url.startswith("sqlite"):
        return create_sqlite_engine(url, in_memory=_in_memory(url))
    plain, libpq = postgres_connect_args(url)
    try:
        return create_async_engine(
            plain,
            pool_pre_ping=True,
            pool_size=10,
            max_overflow=10,
            connect_args={"timeout": POSTGRES_CONNECT_TIMEOUT_S, **libpq},
        )
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] != "asyncpg":
            raise
        raise ConfigurationError(POSTGRES_DRIVER_MISSING) from None


def _describe(difference: Any) -> str:
    """One autogenerate difference, briefly ("missing table judge_cache")."""
    if isinstance(difference, list):  # modify_* entries come as a list of tuples
        _op, _schema, table, column, *_rest = difference[0]
        return f"changed column {table}.{column}"
    kind = difference[0]
    if kind in ("add_table", "remove_table"):
        state = "missing" if kind == "add_table" else "unexpected"
        return f"{state} table {difference[1].name}"
    if kind in ("add_column", "remove_column"):
        state = "missing" if kind == "add_column" else "unexpected"
        return f"{state} column {difference[2]}.{difference[3].name}"
    if kind in ("add_index", "remove_index"):
        state = "missing" if kind == "add_index" else "unexpected"
        return f"{state} index {difference[1].name}"
    return str(kind)
