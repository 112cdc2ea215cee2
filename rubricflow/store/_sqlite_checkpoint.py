"""WAL checkpoints of a SQLite store, made in a thread of their own.

SQLite copies the write-ahead log back into the database file (a checkpoint, with an
fsync) from inside whichever commit makes the log pass 1,000 pages. rubricflow commits
in the event loop's thread, so that commit held up every task in the process for
milliseconds, one commit in a hundred. Instead, a store's connections leave the copying
to this thread (their own automatic checkpoint stays only as a far-off backstop,
`BACKSTOP_PAGES`), which checkpoints after every `COMMITS_PER_CHECKPOINT` commits, as
soon as the log file passes `LOG_LIMIT_BYTES` (large transactions), and once more when
the store is closed (a short-lived process's commits, while another process keeps the
file open).

The thread's checkpoint is PASSIVE: commits go on meanwhile, so it never catches up
with the last of them, and SQLite starts the log over only once a checkpoint has copied
all of it. So the next commit after it, in the event loop's thread, copies the few pages
left and starts the log over (`wal_checkpoint(RESTART)`, not waiting for any reader or
writer: if one is busy the log is started over at a later checkpoint).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable

__all__ = ["BACKSTOP_PAGES", "COMMITS_PER_CHECKPOINT", "LOG_KEEP_BYTES", "WalCheckpointer"]

logger = logging.getLogger(__name__)

COMMITS_PER_CHECKPOINT = 128
# the log file is cut back to this size whenever it starts over (`journal_size_limit`):
# room for `COMMITS_PER_CHECKPOINT` reviews (each commit of one writes 20-50 pages), so a
# steady stream of them neither passes `LOG_LIMIT_BYTES` nor grows the file anew between
# two checkpoints (with 4 MB, the gate's log was cut back and regrown 106 times in 4,000
# commits, and each restart copied more: 0.25 s of the event loop's time, now 0.05 s)
LOG_KEEP_BYTES = 16 * 1024 * 1024
# a log file grown past this (large transactions) is checkpointed without waiting for
# `COMMITS_PER_CHECKPOINT` commits
LOG_LIMIT_BYTES = 2 * LOG_KEEP_BYTES
# the store connections' own automatic checkpoint (in pages), for when this thread cannot
# keep up (back-to-back large transactions leave its restart no gap to take the lock)
BACKSTOP_PAGES = 12_000  # 48 MB: past `LOG_LIMIT_BYTES`, which the thread acts on first
RESTART_WAIT_MS = 100


class WalCheckpointer:
    """Checkpoints one SQLite database file from a thread of its own. `committed` is
    called in the event loop's thread after each commit; it never raises."""

    def __init__(
        self, connect: Callable[[], sqlite3.Connection], every: int = COMMITS_PER_CHECKPOINT
    ) -> None:
        self._connect = connect
        self._every = every
        self._commits = 0
        self._unchecked = False  # commits since the last checkpoint began
        self._log_path: str | None = None  # known once the thread has connected
        self._restart_due = False  # the thread copied the log: the next commit restarts it
        self._copying = False  # the thread is checkpointing
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        #: checkpoints made (for tests and diagnostics)
        self.checkpoints = 0

    def committed(self, connection: sqlite3.Connection | None = None) -> None:
        """A commit was made (on `connection`, in the event loop's thread, when given)."""
        self._commits += 1
        self._unchecked = True
        if self._closed:
            return
        if self._restart_due and connection is not None:
            self._restart_due = False
            _restart_now(connection)
        started = self._thread is not None
        if started and (
            self._copying  # one at a time: a restart needs the thread idle
            or self._restart_due
            or (self._commits < self._every and not self._log_too_large())
        ):
            return
        try:
            self._ensure_thread()  # the first commit starts it (it learns the log's path)
        except Exception as error:  # never fail a commit that has been made
            logger.warning("could not start the SQLite checkpoint thread: %s", error)
            return
        if started:
            self._commits = 0
            self._wake.set()

    def close(self) -> None:
        """Checkpoint what was committed since the last checkpoint, then stop the
        thread."""
        self._closed = True
        if self._unchecked:
            try:
                self._ensure_thread()
            except Exception as error:
                logger.warning("could not start the SQLite checkpoint thread: %s", error)
        self._wake.set()
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(timeout=30)

    def _log_too_large(self) -> bool:
        if self._log_path is None:
            return False
        try:
            return os.stat(self._log_path).st_size >= LOG_LIMIT_BYTES
        except OSError:
            return False

    def _ensure_thread(self) -> None:
        """Start the thread unless it runs (it died, or this is a forked child)."""
        if self._thread is not None and self._thread.is_alive():
            return
        thread = threading.Thread(target=self._run, name="rubricflow-wal-checkpoint", daemon=True)
        thread.start()
        self._thread = thread

    def _checkpoint(self, connection: sqlite3.Connection, *, last: bool = False) -> None:
        """Copy the log into the database while commits go on (PASSIVE); the next
        commit starts it over. The last checkpoint, at close, starts it over itself."""
        self._unchecked = False
        self._copying = True
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            if last:
                connection.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
            else:
                self._restart_due = True
            self.checkpoints += 1
        finally:
            self._copying = False

    def _open(self) -> sqlite3.Connection:
        connection = self._connect()
        # the restart at close holds new writers back while it waits for readers of the
        # old log: never for long (a reader may take its time)
        connection.execute(f"PRAGMA busy_timeout={RESTART_WAIT_MS}")
        main = [row[2] for row in connection.execute("PRAGMA database_list") if row[1] == "main"]
        if main and main[0]:
            self._log_path = main[0] + "-wal"
        return connection

    def _run(self) -> None:
        connection: sqlite3.Connection | None = None
        try:
            try:
                connection = self._open()
            except Exception as error:
                logger.warning("could not open the SQLite log for checkpoints: %s", error)
            while True:
                self._wake.wait()
                self._wake.clear()
                closing = self._closed
                if closing and not self._unchecked:
                    return
                try:
                    if connection is None:
                        connection = self._open()
                    self._checkpoint(connection, last=closing)
                except Exception as error:
                    # a missed checkpoint only lets the log grow until the next one
                    logger.warning("could not checkpoint the SQLite log: %s", error)
                if closing:
                    return
        finally:
            if connection is not None:
                connection.close()


def _restart_now(connection: sqlite3.Connection) -> None:
    """Copy what is left of the log and start it over, at once or not at all (no
    waiting on another reader or writer: the busy timeout is 0 meanwhile)."""
    try:
        (timeout,) = connection.execute("PRAGMA busy_timeout").fetchone()
        connection.execute("PRAGMA busy_timeout=0")
        try:
            connection.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
        finally:
            connection.execute(f"PRAGMA busy_timeout={int(timeout)}")
    except sqlite3.Error as error:
        logger.debug("the SQLite log was not started over now: %s", error)
