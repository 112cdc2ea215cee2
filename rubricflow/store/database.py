"""The async engine, its SQLite settings, and the schema check against the migrations.

SQLite runs with WAL, foreign keys on and a busy timeout; PostgreSQL through asyncpg.
A new, empty database is migrated to the current schema when opened; a database whose
schema is behind is refused with the exact command that upgrades it.
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import aiosqlite
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.util.concurrency import await_, greenlet_spawn, in_greenlet

from rubricflow.errors import SchemaOutdatedError, StoreError
from rubricflow.store.checkpoint import WalCheckpointer
from rubricflow.store.direct import DirectWrites
from rubricflow.store.tables import metadata
from rubricflow.store.url import display_url, resolve_url

__all__ = ["SQLITE_BUSY_TIMEOUT_MS", "Database"]

SQLITE_BUSY_TIMEOUT_MS = 30_000
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


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    _enable_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _rollback_if_in_transaction(dbapi_connection: Any, _record: Any, _state: Any) -> None:
    """The pool's reset of a SQLite connection it takes back: a rollback only when a
    transaction is open. (The default rolls back every time, a round trip to aiosqlite's
    thread after every committed transaction: about a tenth of a review's time.)"""
    driver = getattr(dbapi_connection, "driver_connection", None)
    if driver is None or getattr(driver, "in_transaction", True):
        dbapi_connection.rollback()
    elif isinstance(driver, _InlineConnection) and not driver.thread_idle():
        # a call still running in aiosqlite's thread (a BEGIN IMMEDIATE whose waiter was
        # cancelled) may yet open a transaction: roll back after it
        dbapi_connection.rollback()


def _enable_wal(cursor: Any) -> None:
    """Switch a database to WAL once. SQLite answers a journal-mode change that races
    another connection with "database is locked" at once, without calling the busy
    handler, so two processes opening a new file together retry here (briefly blocking:
    it only happens while a new database is being set up)."""
    cursor.execute("PRAGMA journal_mode")
    if str(cursor.fetchone()[0]).lower() == "wal":
        return
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


class Database:
    """One database: an async engine plus the schema check. Use `await Database.open(url)`."""

    def __init__(self, url: str, engine: AsyncEngine) -> None:
        self.url = url
        self.engine = engine
        # an in-memory SQLite database lives in one connection that every transaction
        # shares, so transactions must take turns (or one's rollback undoes another's work)
        self._turns = asyncio.Lock() if _in_memory(url) else None
        self._turn_holder: asyncio.Task[Any] | None = None
        #: (revision before, revision after) when `open` migrated the schema, else None
        self.migrated: tuple[str | None, str | None] | None = None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def display_url(self) -> str:
        return display_url(self.url)

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
        if isinstance(self.engine, _SQLiteEngine) and self.engine.checkpointer is not None:
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
        async with self._turn(), self._translated(), self.engine.connect() as connection:
            yield connection

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """Wait for this task's turn at an in-memory database (a no-op for any other)."""
        task = asyncio.current_task()
        if self._turns is None or self._turn_holder is task:
            yield
            return
        async with self._turns:
            self._turn_holder = task
            try:
                yield
            finally:
                self._turn_holder = None

    @asynccontextmanager
    async def _begin(self) -> AsyncIterator[AsyncConnection]:
        if isinstance(self.engine, _SQLiteEngine):
            async with self._translated(), self._sqlite_transaction() as connection:
                yield connection
            return
        async with self._translated(), self.engine.begin() as connection:
            if self.dialect == "sqlite":
                # Take the write lock up front (waiting up to the busy timeout): a
                # transaction that reads and then writes could otherwise find another
                # process committed in between and fail at once with SQLITE_BUSY.
                await self._begin_immediate(connection)
            yield connection

    @asynccontextmanager
    async def _sqlite_transaction(self) -> AsyncIterator[AsyncConnection]:
        """`engine.begin()` for `_SQLiteEngine`s, the same steps (a pooled connection,
        BEGIN IMMEDIATE, commit or rollback, back to the pool) with every step that runs
        inline made here and now rather than through a greenlet, and none through an
        extra task: the machinery cost a write transaction several times what SQLite
        spends on it."""
        connection = await self.engine.connect().start()
        sync = connection.sync_connection
        assert sync is not None
        driver = cast(_InlineConnection, sync.connection.driver_connection)
        try:
            transaction = sync.begin()
            try:
                try:
                    await driver.begin_immediate()
                except sqlite3.OperationalError as error:
                    raise self._operational(error) from error
                yield connection
            except BaseException:
                if transaction.is_active:
                    await _inline_or_in_greenlet(driver, transaction.rollback)
                raise
            await _inline_or_in_greenlet(driver, transaction.commit)
        finally:
            # the pool rolls back a transaction still open; waiting (a rollback sent to
            # aiosqlite's thread, an overflow connection closed) is shielded from
            # cancellation, as `AsyncConnection` does
            if driver.thread_idle() and not _closes_on_return(sync):
                await greenlet_spawn(sync.close)
            else:
                await asyncio.shield(connection.close())

    async def _begin_immediate(self, connection: AsyncConnection) -> None:
        raw = await connection.get_raw_connection()
        driver = raw.driver_connection
        if connection.dialect.driver != "aiosqlite" or driver is None:
            await connection.exec_driver_sql("BEGIN IMMEDIATE")
            return
        try:
            if isinstance(driver, _InlineConnection):
                await driver.begin_immediate()
            else:
                await driver.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise self._operational(error) from error

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
        text = str(getattr(error, "orig", error))
        if "locked" in text or "busy" in text:
            return StoreError(
                f"database {self.display_url} stayed locked by another writer for "
                f"{SQLITE_BUSY_TIMEOUT_MS / 1000:g}s; retry, or use PostgreSQL when several "
                "processes write at once"
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
        async with self._translated(), self.engine.connect() as connection:
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


async def _inline_or_in_greenlet(driver: _InlineConnection, method: Callable[[], Any]) -> None:
    """Call a sync SQLAlchemy `method` (a commit, a rollback) right here when the driver
    runs it inline, else in a greenlet (it must wait in aiosqlite's thread)."""
    if driver.thread_idle():
        method()
    else:
        await greenlet_spawn(method)


def _closes_on_return(sync: sa.Connection) -> bool:
    """True when returning this connection to its pool may close a DBAPI connection (it
    was invalidated, or the pool has overflowed), which waits in aiosqlite's thread."""
    pool = sync.engine.pool
    overflow = getattr(pool, "overflow", None)
    return sync.invalidated or (overflow is not None and overflow() > 0)


def _in_memory(url: str) -> bool:
    parsed = make_url(url)
    return parsed.get_backend_name() == "sqlite" and (
        parsed.database in (None, "", ":memory:") or parsed.query.get("mode") == "memory"
    )


def _create_engine(url: str) -> AsyncEngine:
    if url.startswith("sqlite"):
        engine = create_async_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            pool_reset_on_return=None,
        )
        if engine.dialect.driver == "aiosqlite":
            creator, checkpointer = _aiosqlite_creator(engine, in_memory=_in_memory(url))
            engine = _SQLiteEngine(
                create_async_engine(url, creator=creator, pool_reset_on_return=None).sync_engine,
                checkpointer,
            )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(engine.sync_engine.pool, "reset", _rollback_if_in_transaction)
        return engine
    return create_async_engine(
        url,
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=10,
        connect_args={"timeout": POSTGRES_CONNECT_TIMEOUT_S},
    )


def _aiosqlite_creator(
    engine: AsyncEngine, *, in_memory: bool
) -> tuple[Callable[[], Any], WalCheckpointer | None]:
    """The pool's creator of connections for `engine`'s URL (as its dialect would open
    them, called in SQLAlchemy's greenlet): SQLAlchemy's aiosqlite adapter over an
    `_InlineConnection`, which runs in the event loop's thread the statements that cannot
    wait on another process. For a database file, also the `WalCheckpointer` that makes
    the checkpoints its connections no longer make themselves."""
    args, options = engine.dialect.create_connect_args(engine.url)
    kwargs: dict[str, Any] = {
        **options,
        "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
        # used from aiosqlite's thread and, inline, from the event loop's: never both at
        # once (SQLAlchemy runs one statement at a time on a connection)
        "check_same_thread": False,
    }
    dbapi = engine.dialect.dbapi

    def open_file() -> sqlite3.Connection:
        connection: sqlite3.Connection = sqlite3.connect(*args, **kwargs)  # type: ignore[call-overload]
        return connection

    checkpointer = None if in_memory else WalCheckpointer(open_file)

    def connector() -> sqlite3.Connection:
        connection = open_file()
        if checkpointer is not None:
            connection.execute("PRAGMA wal_autocheckpoint=0")
        return connection

    async def connect() -> aiosqlite.Connection:
        connection = _InlineConnection(connector, 64)
        connection._thread.daemon = True  # as SQLAlchemy does: never hold up an exit
        if checkpointer is not None:
            connection.on_commit = checkpointer.committed
        return await connection

    def create() -> _InlineAdaptedConnection:
        return _InlineAdaptedConnection(dbapi, cast(Any, await_(connect())))

    return create, checkpointer


class _SQLiteConnection(AsyncConnection):
    """An `AsyncConnection` whose statements run straight through SQLAlchemy's sync
    execution path, with no greenlet hand-off, when they run inline anyway (inside a
    write transaction this connection holds; see `_InlineConnection`). A review runs a
    dozen statements; each hand-off cost about as much as SQLite running the statement."""

    __slots__ = ()

    async def execute(
        self,
        statement: Any,
        parameters: Any = None,
        *,
        execution_options: Any = None,
    ) -> Any:
        sync = self.sync_connection
        if sync is not None and not sync.closed and not sync.invalidated:
            driver = sync.connection.driver_connection
            if isinstance(driver, _InlineConnection) and driver.holds_transaction():
                if execution_options is None:
                    engine = cast(_SQLiteEngine, self.engine)
                    written = engine.direct_writes.run(driver._conn, statement, parameters)
                    if written is not None:
                        return written
                return sync.execute(statement, parameters, execution_options=execution_options)
        return await super().execute(statement, parameters, execution_options=execution_options)


class _SQLiteEngine(AsyncEngine):
    """An `AsyncEngine` whose connections are `_SQLiteConnection`s, with the writes they
    run directly on `sqlite3`."""

    __slots__ = ("checkpointer", "direct_writes")

    _connection_cls = _SQLiteConnection

    def __init__(self, sync_engine: sa.Engine, checkpointer: WalCheckpointer | None) -> None:
        super().__init__(sync_engine)
        self.direct_writes = DirectWrites(sync_engine.dialect)
        self.checkpointer = checkpointer


class _InlineAdaptedCursor(AsyncAdapt_aiosqlite_cursor):
    """SQLAlchemy's aiosqlite cursor adapter, minus the greenlet hand-offs when called
    outside a greenlet (by `_SQLiteConnection.execute`, only for statements that run
    inline): opening and closing an `_InlineCursor` wait for nothing, and the statement
    is run here and now. Inside a greenlet it awaits as usual (SQLAlchemy's async
    `execute` insists that something was awaited)."""

    __slots__ = ()

    def _aenter_cursor(self, cursor: Any) -> Any:
        return cursor if not in_greenlet() else super()._aenter_cursor(cursor)

    def close(self) -> None:
        if in_greenlet():
            super().close()
        else:
            self._rows.clear()
            cast(_InlineCursor, self._cursor).take_rows()

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        if in_greenlet():
            return super().execute(operation, parameters)
        cursor = cast(_InlineCursor, self._cursor)
        try:
            cursor.run(operation, parameters)
        except Exception as error:
            self._adapt_connection._handle_exception(error)
        self._rows = cursor.take_rows()
        return None

    def executemany(self, operation: Any, seq_of_parameters: Any) -> Any:
        if in_greenlet():
            return super().executemany(operation, seq_of_parameters)
        cursor = cast(_InlineCursor, self._cursor)
        try:
            cursor.run_many(operation, seq_of_parameters)
        except Exception as error:
            self._adapt_connection._handle_exception(error)
        return None


class _InlineAdaptedConnection(AsyncAdapt_aiosqlite_connection):
    """SQLAlchemy's aiosqlite connection adapter over an `_InlineConnection`: cursors
    are `_InlineAdaptedCursor`s, and a commit or rollback that runs inline is made here
    and now."""

    __slots__ = ()

    _cursor_cls = _InlineAdaptedCursor

    def commit(self) -> None:
        driver: _InlineConnection = self._connection  # type: ignore[assignment]
        if driver.thread_idle() and driver.open():
            try:
                driver.commit_inline()
            except Exception as error:
                self._handle_exception(error)
        else:
            super().commit()

    def rollback(self) -> None:
        driver: _InlineConnection = self._connection  # type: ignore[assignment]
        if driver.thread_idle() and driver.open():
            try:
                driver.rollback_inline()
            except Exception as error:
                self._handle_exception(error)
        else:
            super().rollback()


class _InlineConnection(aiosqlite.Connection):
    """An aiosqlite connection that runs in the event loop's own thread whatever cannot
    wait on another process: statements inside a transaction this connection holds
    (rubricflow's write transactions start with BEGIN IMMEDIATE, so they hold the write
    lock; reads in WAL mode never wait for writers), plain SELECTs, commits and rollbacks.
    Only what may wait for a lock goes to aiosqlite's thread: a BEGIN IMMEDIATE that
    finds the database busy, statements outside a transaction, batched writes. Each trip
    to that thread wakes it and then the event loop, which on a two-core machine cost far
    more than SQLite running the statement (about 75 us against 1-20 us)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # calls sent to aiosqlite's thread and not finished there yet (a cancelled
        # waiter does not stop its call): while any is, nothing runs inline, so the
        # connection is never used from both threads and calls keep their order
        self._queued = 0
        self._queued_lock = threading.Lock()
        #: called in the event loop's thread after each commit
        self.on_commit: Callable[[], None] | None = None

    def cursor(self) -> Any:
        return _InlineCursor(self)

    async def in_thread(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run `function(*args)` in aiosqlite's thread (where waiting is harmless)."""

        def counted() -> Any:
            try:
                return function(*args)
            finally:
                with self._queued_lock:
                    self._queued -= 1

        with self._queued_lock:
            self._queued += 1
        try:
            return await self._execute(counted)  # type: ignore[no-untyped-call]
        except BaseException:
            # aiosqlite never ran it (a closed connection): it will not count itself out
            if self._connection is None:
                with self._queued_lock:
                    self._queued = 0
            raise

    def thread_idle(self) -> bool:
        with self._queued_lock:
            return self._queued == 0

    def open(self) -> bool:
        return self._connection is not None

    def holds_transaction(self) -> bool:
        """True when this connection is in a transaction and nothing of it is still
        running in aiosqlite's thread: every statement then runs inline."""
        connection = self._connection
        return connection is not None and connection.in_transaction and self.thread_idle()

    def runs_inline(self, sql: str) -> bool:
        if self._connection is None or not self.thread_idle():
            return False  # closed (aiosqlite raises its own error), or the thread is busy
        if self._conn.in_transaction:
            return True
        head = sql.lstrip()[:6].upper()
        return head in ("SELECT", "WITH")

    async def begin_immediate(self) -> None:
        """Take the write lock: at once when it is free, else wait for it (up to the busy
        timeout) in aiosqlite's thread, so the event loop never waits on another
        process."""
        raw = self._conn
        if not self.thread_idle():
            await self.in_thread(raw.execute, "BEGIN IMMEDIATE")
            return
        raw.execute("PRAGMA busy_timeout=0")
        try:
            raw.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                raise
        finally:
            raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        await self.in_thread(raw.execute, "BEGIN IMMEDIATE")

    def commit_inline(self) -> None:
        self._conn.commit()  # WAL: appends to the log, waits for nobody
        if self.on_commit is not None:
            self.on_commit()

    def rollback_inline(self) -> None:
        self._conn.rollback()

    async def commit(self) -> None:
        if self._connection is None:
            return
        if self.thread_idle():
            self.commit_inline()
        else:
            await self.in_thread(self._conn.commit)
            if self.on_commit is not None:
                self.on_commit()

    async def rollback(self) -> None:
        if self._connection is None:
            return
        if self.thread_idle():
            self._conn.rollback()
        else:
            # after the call still running there (a BEGIN IMMEDIATE whose waiter was
            # cancelled, say), so that what it started is what is rolled back
            await self.in_thread(self._conn.rollback)


class _InlineCursor:
    """The cursor SQLAlchemy's aiosqlite adapter opens for each statement: the statement
    runs inline when its connection allows (`_InlineConnection.runs_inline`), else in one
    trip to aiosqlite's thread; either way its rows are fetched whole with it and the
    SQLite cursor is closed at once."""

    def __init__(self, connection: _InlineConnection) -> None:
        self.connection = connection
        self._rows: collections.deque[Any] = collections.deque()
        self.description: Any = None
        self.rowcount = -1
        self.lastrowid: int | None = None
        self.arraysize = 1

    async def __aenter__(self) -> _InlineCursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def execute(self, sql: str, parameters: Any = None) -> _InlineCursor:
        if self.connection.runs_inline(sql):
            self.run(sql, parameters)
        else:
            await self.connection.in_thread(self.run, sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Any) -> _InlineCursor:
        await self.connection.in_thread(self.run_many, sql, parameters)
        return self

    def run(self, sql: str, parameters: Any) -> None:
        """Run one statement now, in this thread, and keep its rows."""
        self._take(self.connection._conn.execute(sql, () if parameters is None else parameters))

    def take_rows(self) -> collections.deque[Any]:
        rows, self._rows = self._rows, collections.deque()
        return rows

    def run_many(self, sql: str, parameters: Any) -> None:
        self._take(self.connection._conn.executemany(sql, parameters))

    def _take(self, cursor: sqlite3.Cursor) -> None:
        try:
            self.description = cursor.description
            self._rows = collections.deque(cursor.fetchall() if cursor.description else ())
            self.rowcount = cursor.rowcount
            self.lastrowid = cursor.lastrowid
        finally:
            cursor.close()

    async def fetchone(self) -> Any:
        return self._rows.popleft() if self._rows else None

    async def fetchmany(self, size: int | None = None) -> Any:
        rows = self._rows
        return [rows.popleft() for _ in range(min(size or self.arraysize, len(rows)))]

    async def fetchall(self) -> Any:
        rows = list(self._rows)
        self._rows.clear()
        return rows

    async def close(self) -> None:
        self._rows.clear()


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
