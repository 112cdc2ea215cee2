"""A content-addressed cache of valid judge answers.

The key is the sha256 of everything that decides an answer: the provider (kind, model,
endpoint), the request parameters (temperature, max tokens, sample number), the full
messages, the answer schema and the rubric's content hash. Editing a rubric, a prompt
template or the content under review therefore never serves a stale answer. Only answers
that passed validation are stored.

`JudgeCache` is the protocol; `SQLiteJudgeCache` (a local file, the default) and
`MemoryJudgeCache` implement it. A database store may provide another.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from rubricflow.results import canonical_json
from rubricflow.settings import current, env_name

__all__ = [
    "CACHE_DIR_ENV",
    "CACHE_FORMAT",
    "JudgeCache",
    "MemoryJudgeCache",
    "SQLiteJudgeCache",
    "cache_key",
    "cleared_stats",
    "default_cache",
    "default_cache_dir",
]

CACHE_DIR_ENV = env_name("cache_dir")
# 2: the messages enter the key as their sha256 (the ledger's prompt hash)
CACHE_FORMAT = 2


@runtime_checkable
class JudgeCache(Protocol):
    """Where valid judge answers are kept, by content-addressed key."""

    async def get(self, key: str) -> str | None:
        """The stored value for `key`, or None."""
        ...

    async def put(self, key: str, value: str) -> None:
        """Store `value` under `key` (replacing any earlier value)."""
        ...


_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class _Batch(Generic[_K, _V]):
    """Items submitted during one turn of the event loop, run together by `work` (a
    blocking function from the items to their results) in a worker thread."""

    def __init__(self, work: Callable[[Sequence[_K]], Mapping[_K, _V]]) -> None:
        self._work = work
        self._waiting: list[tuple[_K, asyncio.Future[_V]]] = []
        self._running: set[asyncio.Task[None]] = set()

    async def submit(self, item: _K) -> _V:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_V] = loop.create_future()
        if not self._waiting:
            loop.call_soon(self._flush)
        self._waiting.append((item, future))
        return await future

    def _flush(self) -> None:
        batch, self._waiting = self._waiting, []
        task = asyncio.ensure_future(self._run(batch))
        self._running.add(task)  # a reference until it is done
        task.add_done_callback(self._running.discard)

    async def _run(self, batch: list[tuple[_K, asyncio.Future[_V]]]) -> None:
        try:
            results = await asyncio.to_thread(self._work, [item for item, _ in batch])
        except Exception as error:
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        except BaseException:
            for _, future in batch:
                future.cancel()
            raise
        for item, future in batch:
            if not future.done():
                future.set_result(results[item])


def default_cache_dir() -> Path:
    """$RUBRICFLOW_CACHE_DIR, else $XDG_CACHE_HOME/rubricflow, else ~/.cache/rubricflow."""
    configured = current().cache_dir
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "rubricflow"


def default_cache() -> SQLiteJudgeCache:
    """The file-backed default: `<cache dir>/judge-cache.sqlite`."""
    return SQLiteJudgeCache(default_cache_dir() / "judge-cache.sqlite")


def cache_key(
    *,
    provider: str,
    params: Mapping[str, Any],
    messages: Sequence[Mapping[str, str]],
    schema: Mapping[str, Any] | None,
    rubric_hash: str,
    messages_hash: str | None = None,
) -> str:
    """sha256 (hex) of the canonical JSON of everything that decides an answer. The
    messages enter as the sha256 of their canonical JSON; a caller that has it already
    (the ledger's prompt hash) passes it as `messages_hash`."""
    if messages_hash is None:
        messages_hash = hashlib.sha256(
            canonical_json([dict(m) for m in messages]).encode("utf-8")
        ).hexdigest()
    payload = {
        "format": CACHE_FORMAT,
        "provider": provider,
        "params": dict(params),
        "messages": messages_hash,
        "schema": schema,
        "rubric": rubric_hash,
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class MemoryJudgeCache:
    """A dict in this process (tests, short scripts, a Ray actor). With `max_entries`, the
    answers least recently used go first once it is full (a long-lived actor's cache)."""

    def __init__(self, max_entries: int | None = None) -> None:
        self.data: dict[str, str] = {}
        self.max_entries = max_entries

    async def get(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is not None and self.max_entries is not None:
            self.data[key] = self.data.pop(key)  # the most recently used goes last
        return value

    async def put(self, key: str, value: str) -> None:
        self.data.pop(key, None)
        self.data[key] = value
        if self.max_entries is not None:
            while len(self.data) > self.max_entries:
                del self.data[next(iter(self.data))]

    def __len__(self) -> int:
        return len(self.data)

    async def entries(self) -> list[tuple[str, str]]:
        """Every (key, value), by key."""
        return sorted(self.data.items())


class SQLiteJudgeCache:
    """A SQLite file (stdlib `sqlite3`, run in a worker thread; WAL mode so several
    processes can share it). The file and its folder are created on first use.

    Lookups and writes asked for in the same turn of the event loop (the criteria of an
    evaluation, the targets in flight) go to the worker thread together, one trip and,
    for writes, one transaction: a trip to the thread costs more than the lookup."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._gets: _Batch[str, str | None] = _Batch(self._get_many)
        self._puts: _Batch[tuple[str, str], None] = _Batch(self._put_many)

    def __repr__(self) -> str:
        return f"SQLiteJudgeCache({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            with contextlib.suppress(sqlite3.OperationalError):
                connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS judge_cache ("
                " key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at REAL NOT NULL)"
            )
            connection.commit()
            self._connection = connection
        return self._connection

    def _get(self, key: str) -> str | None:
        with self._lock:
            row = (
                self._connect()
                .execute("SELECT value FROM judge_cache WHERE key = ?", (key,))
                .fetchone()
            )
        return None if row is None else str(row[0])

    def _put(self, key: str, value: str) -> None:
        self._put_many([(key, value)])

    def _get_many(self, keys: Sequence[str]) -> dict[str, str | None]:
        found: dict[str, str | None] = dict.fromkeys(keys)
        unique = list(found)
        with self._lock:
            connection = self._connect()
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = connection.execute(
                    f"SELECT key, value FROM judge_cache WHERE key IN ({marks})", chunk
                )
                found.update((str(key), str(value)) for key, value in rows)
        return found

    def _put_many(self, items: Sequence[tuple[str, str]]) -> dict[tuple[str, str], None]:
        now = time.time()
        with self._lock:
            connection = self._connect()
            connection.executemany(
                "INSERT OR REPLACE INTO judge_cache (key, value, created_at) VALUES (?, ?, ?)",
                [(key, value, now) for key, value in items],
            )
            connection.commit()
        return dict.fromkeys(items)

    def _stats(self) -> dict[str, Any]:
        with self._lock:
            count = self._connect().execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0]
        size = self.path.stat().st_size if self.path.exists() else 0
        return {"path": str(self.path), "entries": int(count), "bytes": size}

    def _clear(self) -> int:
        with self._lock:
            connection = self._connect()
            removed = connection.execute("DELETE FROM judge_cache").rowcount
            connection.commit()
            connection.execute("VACUUM")
        return int(removed)

    async def get(self, key: str) -> str | None:
        return await self._gets.submit(key)

    async def put(self, key: str, value: str) -> None:
        await self._puts.submit((key, value))

    async def stats(self) -> dict[str, Any]:
        """Path, number of entries and file size."""
        return await asyncio.to_thread(self._stats)

    def _entries(self) -> list[tuple[str, str]]:
        with self._lock:
            rows = self._connect().execute("SELECT key, value FROM judge_cache ORDER BY key")
            return [(str(key), str(value)) for key, value in rows]

    async def entries(self) -> list[tuple[str, str]]:
        """Every (key, value), by key (for `rubricflow llm cache export`)."""
        return await asyncio.to_thread(self._entries)

    async def clear(self) -> int:
        """Remove every entry; returns how many there were."""
        return await asyncio.to_thread(self._clear)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


async def cleared_stats(cache: Any, *, clear: bool) -> dict[str, Any]:
    """A judge cache's stats (any cache with `clear()` and `stats()`: the local file, a
    store's), after clearing it when asked, with how many answers were `removed`."""
    removed = await cache.clear() if clear else None
    stats: dict[str, Any] = await cache.stats()
    if removed is not None:
        stats["removed"] = removed
    return stats
