"""SQLite under rubricflow's store: its engine, connections and write transactions.

rubricflow talks to SQLite through SQLAlchemy's aiosqlite dialect, with connections
(`InlineConnection`) that run in the event loop's own thread whatever cannot wait on
another process, a write transaction begun and ended without SQLAlchemy's greenlet
hand-offs (`write_transaction`), repeated plain writes run directly on `sqlite3`
(`rubricflow.store._sqlite_direct`) and WAL checkpoints made in a thread of their own
(`rubricflow.store._sqlite_checkpoint`). Each hand-off cost more than SQLite running the
statement; a reviewed artifact commits three transactions.

All of that leans on private parts of SQLAlchemy's aiosqlite adapter and of aiosqlite,
so both are pinned to the minor versions it is tested with, and
`RUBRICFLOW_SQLITE_FASTPATH=0` (read whenever an engine is made) turns it off: the store
then runs on SQLAlchemy's stock async engine over aiosqlite, with SQLAlchemy's recipe for
SQLite transactions (the driver's own BEGIN off, a `begin` listener that emits
`BEGIN IMMEDIATE` for write transactions, `BEGIN DEFERRED` for reads) and SQLite's own
WAL checkpoints. See docs/store.md, "The SQLite fast path".
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import aiosqlite
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.util.concurrency import await_, greenlet_spawn, in_greenlet

from rubricflow.settings import current, env_name
from rubricflow.store._sqlite_checkpoint import BACKSTOP_PAGES, LOG_KEEP_BYTES, WalCheckpointer
from rubricflow.store._sqlite_direct import DirectWrites, FastPathStats

__all__ = [
    "BEGIN_OPTION",
    "FASTPATH_ENV",
    "SQLITE_BUSY_TIMEOUT_MS",
    "FastPathStats",
    "InlineConnection",
    "SQLiteEngine",
    "autocommit_engine",
    "create_sqlite_engine",
    "fast_path_enabled",
    "is_busy_or_locked",
    "read_engine",
    "write_transaction",
]

SQLITE_BUSY_TIMEOUT_MS = 30_000
FASTPATH_ENV = env_name("sqlite_fastpath")
#: the execution option saying how a transaction of the stock engine begins: "IMMEDIATE"
#: (the default: it takes the write lock), "DEFERRED" (reads) or "NONE" (no BEGIN: each
#: statement commits itself until the caller issues its own BEGIN)
BEGIN_OPTION = "rubricflow_sqlite_begin"


def fast_path_enabled() -> bool:
    """Whether SQLite engines take the fast path: `Settings.sqlite_fastpath`
    (`RUBRICFLOW_SQLITE_FASTPATH`, default on; 0 turns it off)."""
    return current().sqlite_fastpath


def create_sqlite_engine(url: str, *, in_memory: bool) -> AsyncEngine:
    """The engine of an aiosqlite URL (the only SQLite driver `resolve_url` lets through):
    a `SQLiteEngine` over `InlineConnection`s, for a database file with its
    `WalCheckpointer`; with `RUBRICFLOW_SQLITE_FASTPATH=0`, SQLAlchemy's stock engine
    (`_stock_engine`)."""
    if not fast_path_enabled():
        return _stock_engine(url, in_memory=in_memory)
    # an engine that never connects: its dialect says how to open the URL's connections
    dialect_only = create_async_engine(url)
    stats = FastPathStats()
    creator, checkpointer = _aiosqlite_creator(dialect_only, stats, in_memory=in_memory)
    engine = SQLiteEngine(
        create_async_engine(
            url,
            creator=creator,
            pool_reset_on_return=None,
            # a server's concurrent requests each hold a connection: a pool smaller than
            # that closes and reopens connections (each with its thread) all the time
            **({} if in_memory else {"pool_size": 20, "max_overflow": 20}),
        ).sync_engine,
        checkpointer,
        stats,
    )
    event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    event.listen(engine.sync_engine.pool, "reset", _rollback_if_in_transaction)
    return engine


def _stock_engine(url: str, *, in_memory: bool) -> AsyncEngine:
    """SQLAlchemy's own async engine over aiosqlite, nothing of rubricflow's inside it:
    SQLAlchemy's recipe for SQLite transactions (the driver emits no BEGIN of its own,
    `isolation_level=None`; a `begin` listener emits BEGIN IMMEDIATE, or what the
    connection's `BEGIN_OPTION` says), the same pragmas, and SQLite's own automatic WAL
    checkpoint (every 1,000 pages, in the committing connection)."""
    engine = create_async_engine(
        url,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "isolation_level": None},
    )
    event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    if not in_memory:
        event.listen(engine.sync_engine, "connect", _limit_log)
    event.listen(engine.sync_engine, "begin", _begin)
    return engine


def _begin(connection: sa.Connection) -> None:
    """The stock engine's BEGIN: IMMEDIATE unless the connection's `BEGIN_OPTION` says
    otherwise. A write transaction takes the write lock up front (waiting up to the busy
    timeout), so one that reads and then writes cannot find another process's commit in
    between and fail at once with SQLITE_BUSY."""
    mode = connection.get_execution_options().get(BEGIN_OPTION, "IMMEDIATE")
    if mode != "NONE":
        connection.exec_driver_sql(f"BEGIN {mode}")


def read_engine(engine: AsyncEngine) -> AsyncEngine:
    """The engine `Database.read` connects through: for the stock SQLite engine, one whose
    transactions begin DEFERRED (a snapshot, no write lock); else `engine` itself (the
    fast path's reads begin no transaction)."""
    if _is_stock(engine):
        return engine.execution_options(**{BEGIN_OPTION: "DEFERRED"})
    return engine


def autocommit_engine(engine: AsyncEngine) -> AsyncEngine:
    """The engine for statements that must run outside any transaction (a pragma such as
    `foreign_keys`) before the caller's own BEGIN: for the stock SQLite engine, one that
    emits no BEGIN; else `engine` itself (its driver begins only before a write)."""
    if _is_stock(engine):
        return engine.execution_options(**{BEGIN_OPTION: "NONE"})
    return engine


def _is_stock(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite" and not isinstance(engine, SQLiteEngine)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    _enable_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _limit_log(dbapi_connection: Any, _record: Any) -> None:
    """The stock engine's log: cut back to `LOG_KEEP_BYTES` whenever it starts over."""
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA journal_size_limit={LOG_KEEP_BYTES}")
    cursor.close()


def _rollback_if_in_transaction(dbapi_connection: Any, _record: Any, _state: Any) -> None:
    """The pool's reset of a SQLite connection it takes back: a rollback only when a
    transaction is open. (The default rolls back every time, a round trip to aiosqlite's
    thread after every committed transaction: about a tenth of a review's time.)"""
    driver = getattr(dbapi_connection, "driver_connection", None)
    if driver is None or getattr(driver, "in_transaction", True):
        dbapi_connection.rollback()
    elif isinstance(driver, InlineConnection) and not driver.thread_idle():
        # a call still running in aiosqlite's thread (a BEGIN IMMEDIATE whose waiter was
        # cancelled) may yet open a transaction: roll back after it
        dbapi_connection.rollback()


# SQLite's primary result codes for "another connection holds a lock" (each also has
# extended codes, such as SQLITE_BUSY_SNAPSHOT, whose low byte is the primary code)
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


def is_busy_or_locked(error: BaseException) -> bool:
    """Whether `error` (a `sqlite3` error) is SQLITE_BUSY or SQLITE_LOCKED: another
    connection holds the lock. Read from its result code (`sqlite_errorcode`, Python 3.11
    and later); Python 3.10's `sqlite3` errors carry none, and there only the message
    ("database is locked", "database table is locked") can say it."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    if not isinstance(error, sqlite3.Error):
        return False
    text = str(error)  # Python 3.10 only
    return "locked" in text or "busy" in text


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
            if not is_busy_or_locked(error) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


@asynccontextmanager
async def write_transaction(
    engine: SQLiteEngine, operational: Callable[[sqlite3.OperationalError], Exception]
) -> AsyncIterator[AsyncConnection]:
    """`engine.begin()` for a `SQLiteEngine`, the same steps (a pooled connection,
    BEGIN IMMEDIATE, commit or rollback, back to the pool) with every step that runs
    inline made here and now rather than through a greenlet, and none through an
    extra task: the machinery cost a write transaction several times what SQLite
    spends on it."""
    connection = await engine.connect().start()
    sync = connection.sync_connection
    assert sync is not None
    driver = cast(InlineConnection, sync.connection.driver_connection)
    try:
        transaction = sync.begin()
        try:
            try:
                await driver.begin_immediate()
            except sqlite3.OperationalError as error:
                raise operational(error) from error
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


async def _inline_or_in_greenlet(driver: InlineConnection, method: Callable[[], Any]) -> None:
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


def _aiosqlite_creator(
    engine: AsyncEngine, stats: FastPathStats, *, in_memory: bool
) -> tuple[Callable[[], Any], WalCheckpointer | None]:
    """The pool's creator of connections for `engine`'s URL (as its dialect would open
    them, called in SQLAlchemy's greenlet): SQLAlchemy's aiosqlite adapter over an
    `InlineConnection`, which runs in the event loop's thread the statements that cannot
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
            connection.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
            connection.execute(f"PRAGMA journal_size_limit={LOG_KEEP_BYTES}")
        return connection

    async def connect() -> aiosqlite.Connection:
        connection = InlineConnection(connector, 64)
        connection._thread.daemon = True  # as SQLAlchemy does: never hold up an exit
        connection.stats = stats
        if checkpointer is not None:
            connection.on_commit = checkpointer.committed
        return await connection

    def create() -> _InlineAdaptedConnection:
        return _InlineAdaptedConnection(dbapi, cast(Any, await_(connect())))

    return create, checkpointer


class _SQLiteConnection(AsyncConnection):
    """An `AsyncConnection` whose statements run straight through SQLAlchemy's sync
    execution path, with no greenlet hand-off, when they run inline anyway (inside a
    write transaction this connection holds; see `InlineConnection`). A review runs a
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
            if isinstance(driver, InlineConnection):
                # why a write would take SQLAlchemy's path (counted by the cursor adapter
                # when it runs one: `FastPathStats`)
                if execution_options or _streams(statement):
                    driver.miss_reason = _OPTIONS
                elif driver.holds_transaction():
                    if _plain(sync):
                        direct = cast(SQLiteEngine, self.engine).direct_writes
                        written = direct.run(driver._conn, statement, parameters)
                        if written is not None:
                            return written
                        driver.miss_reason = direct.miss
                    else:
                        driver.miss_reason = _NOT_PLAIN
                    return sync.execute(statement, parameters)
                else:
                    driver.miss_reason = _OUTSIDE
        return await super().execute(statement, parameters, execution_options=execution_options)


_OPTIONS = "execution options given with the statement, or a streaming statement"
_NOT_PLAIN = "cursor or error event listeners, echo or execution options on the connection"
_OUTSIDE = (
    "outside a write transaction held inline (none open, or a call of this connection "
    "still running in aiosqlite's thread)"
)
_ELSEWHERE = "not run through AsyncConnection.execute (run_sync, exec_driver_sql, ...)"
_WRITES = frozenset({"INSERT", "UPDATE", "DELETE", "REPLAC"})


def _streams(statement: Any) -> bool:
    """A statement asking for a server-side cursor: only `stream()` serves it."""
    options = getattr(statement, "get_execution_options", None)
    if options is None:
        return False
    chosen = options()
    return bool(chosen.get("stream_results") or chosen.get("yield_per"))


def _plain(sync: sa.Connection) -> bool:
    """True when SQLAlchemy would do nothing around a statement on this connection but
    run it: no execution options, no echo, no cursor or error event listeners."""
    dispatch = sync.dispatch
    return not (
        sync.get_execution_options()
        or sync.engine.echo
        or dispatch.before_cursor_execute
        or dispatch.after_cursor_execute
        or sync.dialect.dispatch.handle_error
    )


class SQLiteEngine(AsyncEngine):
    """An `AsyncEngine` whose connections are `_SQLiteConnection`s, with the writes they
    run directly on `sqlite3`."""

    __slots__ = ("checkpointer", "direct_writes", "stats")

    _connection_cls = _SQLiteConnection

    def __init__(
        self,
        sync_engine: sa.Engine,
        checkpointer: WalCheckpointer | None,
        stats: FastPathStats | None = None,
    ) -> None:
        super().__init__(sync_engine)
        #: the direct path's hits and the writes that missed it
        self.stats = stats if stats is not None else FastPathStats()
        self.direct_writes = DirectWrites(sync_engine.dialect, self.stats)
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

    def _count(self, operation: Any) -> None:
        """Count a write this adapter runs (SQLAlchemy's path) in the engine's stats."""
        driver = cast(InlineConnection, self._adapt_connection._connection)
        reason, driver.miss_reason = driver.miss_reason, None
        stats = driver.stats
        if (
            stats is not None
            and isinstance(operation, str)
            and operation.lstrip()[:6].upper() in _WRITES
        ):
            stats.missed(operation, reason or _ELSEWHERE)

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        self._count(operation)
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
        self._count(operation)
        if in_greenlet():
            return super().executemany(operation, seq_of_parameters)
        cursor = cast(_InlineCursor, self._cursor)
        try:
            cursor.run_many(operation, seq_of_parameters)
        except Exception as error:
            self._adapt_connection._handle_exception(error)
        return None


class _InlineAdaptedConnection(AsyncAdapt_aiosqlite_connection):
    """SQLAlchemy's aiosqlite connection adapter over an `InlineConnection`: cursors
    are `_InlineAdaptedCursor`s, and a commit or rollback that runs inline is made here
    and now."""

    __slots__ = ()

    _cursor_cls = _InlineAdaptedCursor

    def commit(self) -> None:
        driver = cast(InlineConnection, self._connection)
        self._now_or_queued(driver, driver.commit_inline, super().commit)

    def rollback(self) -> None:
        driver = cast(InlineConnection, self._connection)
        self._now_or_queued(driver, driver.rollback_inline, super().rollback)

    def _now_or_queued(
        self, driver: InlineConnection, now: Callable[[], None], queued: Callable[[], None]
    ) -> None:
        if driver.thread_idle() and driver.open():
            try:
                now()
            except Exception as error:
                self._handle_exception(error)
        else:
            queued()


class InlineConnection(aiosqlite.Connection):
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
        #: called in the event loop's thread after each commit, with the SQLite
        #: connection when the commit ran inline (nothing else is using it)
        self.on_commit: Callable[[sqlite3.Connection | None], None] | None = None
        #: the engine's stats, and why the statement on its way to SQLAlchemy's path
        #: did not run directly (set by `_SQLiteConnection.execute`)
        self.stats: FastPathStats | None = None
        self.miss_reason: str | None = None

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
            if not is_busy_or_locked(error):
                raise
        finally:
            raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        await self.in_thread(raw.execute, "BEGIN IMMEDIATE")

    def commit_inline(self) -> None:
        self._conn.commit()  # WAL: appends to the log, waits for nobody
        if self.on_commit is not None:
            self.on_commit(self._conn)

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
                self.on_commit(None)

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
    runs inline when its connection allows (`InlineConnection.runs_inline`), else in one
    trip to aiosqlite's thread; either way its rows are fetched whole with it and the
    SQLite cursor is closed at once."""

    def __init__(self, connection: InlineConnection) -> None:
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
