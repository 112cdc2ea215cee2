"""WAL checkpoints of a SQLite store, made in a thread of their own.

SQLite copies the write-ahead log back into the database file (a checkpoint, with an
fsync) from inside whichever commit makes the log pass 1,000 pages. rubricflow commits
in the event loop's thread, so that commit held up every task in the process for
milliseconds, one commit in a hundred. Instead, a store's connections are opened with
automatic checkpoints off, and this thread, with a connection of its own, runs a
PASSIVE checkpoint (it waits for no reader or writer) after every `every` commits.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

__all__ = ["WalCheckpointer"]

logger = logging.getLogger(__name__)

COMMITS_PER_CHECKPOINT = 128
RESTART_WAIT_MS = 100


class WalCheckpointer:
    """Checkpoints one SQLite database file after every `every` commits reported to
    `committed` (called from the event loop's thread; cheap)."""

    def __init__(
        self, connect: Callable[[], sqlite3.Connection], every: int = COMMITS_PER_CHECKPOINT
    ) -> None:
        self._connect = connect
        self._every = every
        self._commits = 0
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        #: checkpoints made (for tests and diagnostics)
        self.checkpoints = 0

    def committed(self) -> None:
        self._commits += 1
        if self._commits < self._every or self._closed:
            return
        self._commits = 0
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="rubricflow-wal-checkpoint", daemon=True
            )
            self._thread.start()
        self._wake.set()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it is making, if any)."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _checkpoint(self, connection: sqlite3.Connection) -> None:
        """Copy the log into the database while commits go on (PASSIVE), then copy what
        they added and start the log over (RESTART: new writers wait for that short
        step, in aiosqlite's thread, never in the event loop's). Without the restart the
        log would only grow: a writer starts it over only after a checkpoint has copied
        all of it, which one running alongside steady commits never manages."""
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        # busy: a reader still on the old log; the next checkpoint tries again
        connection.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
        self.checkpoints += 1

    def _run(self) -> None:
        connection: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._closed:
                    return
                try:
                    if connection is None:
                        connection = self._connect()
                        # RESTART holds new writers back while it waits for readers
                        # of the old log: never for long (a reader may take its time)
                        connection.execute(f"PRAGMA busy_timeout={RESTART_WAIT_MS}")
                    self._checkpoint(connection)
                except sqlite3.Error as error:
                    # a missed checkpoint only lets the log grow until the next one
                    logger.warning("could not checkpoint the SQLite log: %s", error)
        finally:
            if connection is not None:
                connection.close()
