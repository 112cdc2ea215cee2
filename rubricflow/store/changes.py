"""The change feed: which artifacts changed, told promptly to every process that watches
the store.

Every event row of the audit trail is announced in the transaction that writes it
(`announce`, called by the store's unit of work): on PostgreSQL a `pg_notify` on channel
`rubricflow_changes`, which the server delivers when, and only if, the transaction
commits (a rolled-back transition tells nobody). The payload is small: the artifact id,
the event's number (`seq`, which equals the artifact's `version` after it), its trigger
and its destination state.

`ChangeFeed` is one process's watcher. On PostgreSQL a dedicated asyncpg connection
LISTENs on the channel; when it drops it is reconnected (with back-off), and while it is
down, watchers are woken every `degraded_interval` to look in the store themselves. On
SQLite nothing is sent: the feed polls the event table by its id every `poll_interval`
(default 0.2 s, `RUBRICFLOW_CHANGE_POLL_SECONDS`; SQLite commits one writer at a time, so
ids arrive in commit order). Either way `wake` adds immediate in-process wake-ups.

A notice wakes a `Watch`; it never carries the truth. A watcher reads the store after it
is woken (and once after it opened the watch), so a notice that is lost, duplicated or
early costs a look, never a missed or repeated change. A notice with no artifact id
("look again") is broadcast whenever the feed (re)starts listening, since it may have
missed something meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection

from rubricflow.errors import ConfigurationError, NotFoundError
from rubricflow.settings import current, env_name
from rubricflow.store._sql import as_utc
from rubricflow.store.artifact_models import ArtifactEvent
from rubricflow.store.database import Database
from rubricflow.store.tables import ArtifactEventRow, ArtifactRow
from rubricflow.store.url import postgres_connect_args

__all__ = [
    "CHANNEL",
    "DEFAULT_POLL_SECONDS",
    "POLL_ENV",
    "ChangeFeed",
    "ChangeNotice",
    "Watch",
    "announce",
    "artifact_exists",
    "events_after",
    "poll_setting",
    "require_artifact",
]

logger = logging.getLogger("rubricflow.changes")

CHANNEL = "rubricflow_changes"
POLL_ENV = env_name("change_poll_seconds")
DEFAULT_POLL_SECONDS = 0.2
#: how often watchers are woken to look for themselves while PostgreSQL's LISTEN is down
DEFAULT_DEGRADED_SECONDS = 1.0
#: how often an idle LISTEN connection is checked (a dead peer that sent no FIN)
HEALTH_CHECK_SECONDS = 5.0
_MAX_RECONNECT_DELAY = 5.0
_POLL_BATCH = 1000

_events = ArtifactEventRow.__table__  # type: ignore[attr-defined]
_artifacts = ArtifactRow.__table__  # type: ignore[attr-defined]
_NOTIFY = sa.select(sa.func.pg_notify(CHANNEL, sa.bindparam("payload", type_=sa.String)))
_AFTER = (
    sa.select(_events)
    .where(_events.c.artifact_id == sa.bindparam("artifact_id"))
    .where(_events.c.seq > sa.bindparam("after"))
    .order_by(_events.c.seq)
    .limit(sa.bindparam("limit"))
)
_EXISTS = sa.select(_artifacts.c.id).where(_artifacts.c.id == sa.bindparam("artifact_id"))
_LAST_ID = sa.select(sa.func.coalesce(sa.func.max(_events.c.id), 0))
_NEWER = (
    sa.select(_events.c.id, _events.c.artifact_id, _events.c.seq, _events.c.trigger, _events.c.dest)
    .where(_events.c.id > sa.bindparam("last"))
    .order_by(_events.c.id)
    .limit(_POLL_BATCH)
)


@dataclass(frozen=True)
class ChangeNotice:
    """An artifact changed: its id, the new event's number, trigger and destination. An
    `artifact_id` of None means "anything may have changed: look again"."""

    artifact_id: str | None
    seq: int = 0
    trigger: str = ""
    dest: str = ""

    def to_payload(self) -> str:
        return json.dumps(
            {"a": self.artifact_id, "s": self.seq, "t": self.trigger, "d": self.dest},
            separators=(",", ":"),
            ensure_ascii=False,
        )

    @classmethod
    def from_payload(cls, payload: str) -> ChangeNotice:
        """The notice a payload holds; "look again" when it cannot be read."""
        try:
            data = json.loads(payload)
            return cls(str(data["a"]), int(data["s"]), str(data["t"]), str(data["d"]))
        except (ValueError, KeyError, TypeError):
            return LOOK_AGAIN

    @classmethod
    def of(cls, event: ArtifactEvent) -> ChangeNotice:
        return cls(event.artifact_id, event.seq, event.trigger, event.dest)


LOOK_AGAIN = ChangeNotice(None)


async def announce(connection: AsyncConnection, event: ArtifactEvent) -> None:
    """Tell every watching process about `event` when the transaction on `connection`
    commits (PostgreSQL's NOTIFY is transactional); a no-op on SQLite, whose watchers poll."""
    if connection.dialect.name == "postgresql":
        await connection.execute(_NOTIFY, {"payload": ChangeNotice.of(event).to_payload()})


async def events_after(
    database: Database, artifact_id: str, after: int, *, limit: int = 100
) -> list[ArtifactEvent]:
    """The artifact's events numbered above `after`, oldest first, at most `limit`."""
    async with database.read() as connection:
        rows = (
            await connection.execute(
                _AFTER, {"artifact_id": artifact_id, "after": after, "limit": limit}
            )
        ).all()
    return [
        ArtifactEvent.model_validate(
            {
                **{key: value for key, value in row._mapping.items() if key != "id"},
                "evaluation_ids": tuple(json.loads(row.evaluation_ids)),
                "created_at": as_utc(row.created_at),
            }
        )
        for row in rows
    ]


async def artifact_exists(database: Database, artifact_id: str) -> bool:
    async with database.read() as connection:
        return (await connection.execute(_EXISTS, {"artifact_id": artifact_id})).first() is not None


async def require_artifact(database: Database, artifact_id: str) -> None:
    """`NotFoundError` naming the artifact when there is none by that id."""
    if not await artifact_exists(database, artifact_id):
        raise NotFoundError(f"no artifact {artifact_id!r}; `rubricflow artifacts list` shows them")


def poll_setting(value: float | None = None) -> float:
    """The SQLite poll interval: `value`, else `Settings.change_poll_seconds` (0.2 s)."""
    if value is None:
        return current().change_poll_seconds
    if not 0 < value <= 60:
        raise ConfigurationError(
            f"the change poll interval must be above 0 and at most 60 seconds, not {value!r} "
            f"(set by {POLL_ENV} or poll_interval=)"
        )
    return float(value)


class Watch:
    """Wake-ups for one artifact (or, `artifact_id=None`, for every artifact whose notice
    `match`es). Open it before reading the store, `clear()` it before each read, and
    `wait()` after a read that found nothing new: a change that commits in between is
    never missed. Close it (or use `with`) when done."""

    def __init__(
        self,
        feed: ChangeFeed,
        artifact_id: str | None,
        match: Callable[[ChangeNotice], bool] | None,
    ) -> None:
        self._feed = feed
        self.artifact_id = artifact_id
        self._match = match
        self._woken = asyncio.Event()

    def offer(self, notice: ChangeNotice) -> None:
        if notice.artifact_id is None:
            self._woken.set()
        elif self.artifact_id is not None:
            if notice.artifact_id == self.artifact_id:
                self._woken.set()
        elif self._match is None or self._match(notice):
            self._woken.set()

    def poke(self) -> None:
        """Wake the waiter now (e.g. its owner is stopping)."""
        self._woken.set()

    def clear(self) -> None:
        self._woken.clear()

    @property
    def woken(self) -> bool:
        return self._woken.is_set()

    async def wait(self, timeout: float | None = None) -> bool:
        """Until woken since the last `clear` (True) or `timeout` seconds pass (False)."""
        if self._woken.is_set():
            return True
        if timeout is None:
            await self._woken.wait()
            return True
        if timeout <= 0:
            return False
        try:
            await asyncio.wait_for(self._woken.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    def close(self) -> None:
        self._feed._drop(self)

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


class ChangeFeed:
    """One process's view of which artifacts change in one store; see the module's
    docstring. It starts watching with the first `watch()` (in the running event loop) and
    stops with `close()`."""

    def __init__(
        self,
        database: Database,
        *,
        poll_interval: float | None = None,
        degraded_interval: float = DEFAULT_DEGRADED_SECONDS,
        health_interval: float = HEALTH_CHECK_SECONDS,
    ) -> None:
        self.database = database
        self.poll_interval = poll_setting(poll_interval)
        self.degraded_interval = degraded_interval
        self.health_interval = health_interval
        self._watches: set[Watch] = set()
        self._task: asyncio.Task[None] | None = None
        self._connection: Any = None  # the LISTEN connection (asyncpg), while it is up
        self._closed = False
        #: whether the feed watches now (PostgreSQL: the LISTEN connection is up)
        self.listening = False
        #: the LISTEN connection's server process id (PostgreSQL), for operators and tests
        self.listener_pid: int | None = None
        self._listening_changed = asyncio.Event()
        #: how often the LISTEN connection was (re)established
        self.connections = 0

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def postgres(self) -> bool:
        return self.database.dialect == "postgresql"

    def watch(
        self,
        artifact_id: str | None = None,
        *,
        match: Callable[[ChangeNotice], bool] | None = None,
    ) -> Watch:
        """A `Watch` for one artifact, or for every notice `match` accepts (all, by
        default). Starts the feed when it is not running."""
        if self._closed:
            raise RuntimeError("the change feed is closed")
        watch = Watch(self, artifact_id, match)
        self._watches.add(watch)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="rubricflow-change-feed"
            )
        return watch

    def _drop(self, watch: Watch) -> None:
        """Forget a closed watch; with none left, stop watching the store (at once, with
        no await: a watch may close as its event loop ends)."""
        self._watches.discard(watch)
        if not self._watches:
            self._stop()

    def _stop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            connection.terminate()
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
        self._set_listening(False)
        self.listener_pid = None

    def wake(self, notice: ChangeNotice) -> None:
        """Wake the watches a notice concerns (an in-process change, or one heard)."""
        for watch in list(self._watches):
            watch.offer(notice)

    async def wait_ready(self, timeout: float = 10.0) -> bool:
        """Until the feed watches (PostgreSQL: its LISTEN connection is up; SQLite: its poll
        has begun): True, or False when `timeout` passes first."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.listening:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            self._listening_changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._listening_changed.wait(), remaining)
        return True

    async def close(self) -> None:
        """Stop watching; open watches are woken (and should see `closed`)."""
        self._closed = True
        for watch in list(self._watches):
            watch.poke()
        task = self._task
        self._stop()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- the watching ----------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            if self.postgres:
                await self._listen_forever()
            else:
                await self._poll_forever()
        except asyncio.CancelledError:
            raise
        except Exception:  # never leave watchers asleep: they fall back to their timeouts
            logger.exception("the change feed of %s stopped", self.database.display_url)
            self.wake(LOOK_AGAIN)

    async def _poll_forever(self) -> None:
        """SQLite: read the event rows committed since the last look, every poll interval
        (while anyone watches: the feed stops with the last watch)."""
        last = await self._last_id()
        self._set_listening(True)
        self.wake(LOOK_AGAIN)  # a change committed before `last` was read may be unseen
        while True:
            await asyncio.sleep(self.poll_interval)
            try:
                last = await self._poll(last)
            except Exception:  # e.g. the file is locked for longer than the busy timeout
                logger.warning("could not poll %s for changes", self.database.display_url)
                self.wake(LOOK_AGAIN)

    async def _last_id(self) -> int:
        async with self.database.read() as connection:
            return int((await connection.execute(_LAST_ID)).scalar_one())

    async def _poll(self, last: int) -> int:
        while True:
            async with self.database.read() as connection:
                rows = (await connection.execute(_NEWER, {"last": last})).all()
            for row in rows:
                self.wake(ChangeNotice(row.artifact_id, row.seq, row.trigger, row.dest))
                last = row.id
            if len(rows) < _POLL_BATCH:
                return last

    async def _listen_forever(self) -> None:
        """PostgreSQL: LISTEN on a connection of its own; when it fails or drops, wake the
        watchers every degraded interval while reconnecting with back-off."""
        delay = 0.05
        while True:
            try:
                await self._listen()
                delay = 0.05  # it was up: reconnect at once
            except asyncio.CancelledError:
                raise
            except Exception as error:
                logger.warning(
                    "cannot LISTEN for changes on %s (%s: %s); watchers poll until it is back",
                    self.database.display_url,
                    type(error).__name__,
                    error,
                )
            self.wake(LOOK_AGAIN)
            slept = 0.0
            while slept < delay:
                step = min(self.degraded_interval, delay - slept)
                await asyncio.sleep(step)
                slept += step
                self.wake(LOOK_AGAIN)
            delay = min(delay * 2, _MAX_RECONNECT_DELAY)

    async def _listen(self) -> None:
        import asyncpg  # type: ignore[import-untyped]

        connection = await asyncpg.connect(**_connect_args(self.database.url))
        self._connection = connection
        lost = asyncio.Event()
        try:
            connection.add_termination_listener(lambda _connection: lost.set())
            await connection.add_listener(CHANNEL, self._heard)
            self.listener_pid = connection.get_server_pid()
            self._set_listening(True)
            self.connections += 1
            self.wake(LOOK_AGAIN)  # what committed before LISTEN took effect
            while not lost.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(lost.wait(), self.health_interval)
                if lost.is_set() or connection.is_closed():
                    break
                await asyncio.wait_for(connection.fetchval("SELECT 1"), self.health_interval)
        finally:
            if self._connection is connection:  # still this task's (not stopped meanwhile)
                self._connection = None
                self._set_listening(False)
                self.listener_pid = None
            if not connection.is_closed():
                connection.terminate()

    def _set_listening(self, value: bool) -> None:
        self.listening = value
        self._listening_changed.set()

    def _heard(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        self.wake(ChangeNotice.from_payload(payload))


def _connect_args(url: str) -> dict[str, Any]:
    """asyncpg's connect arguments for a SQLAlchemy PostgreSQL URL (libpq parameters
    translated as the store's engine does)."""
    plain, libpq = postgres_connect_args(url)
    parsed = make_url(plain)
    args: dict[str, Any] = parsed.translate_connect_args(username="user")
    args.setdefault("timeout", 10)
    args.update(libpq)
    return args
