"""The judge cache of a Ray actor: one for the whole cluster when the run's store is a
database every node reaches (PostgreSQL), else one per actor.

- a database URL (`postgresql://…`): the store's judge cache, opened on the actor's own
  loop, so answers given to any actor serve every other one, and the next run;
- `memory`: a dict in the actor, for its life, keeping the `MEMORY_ENTRIES` answers
  last used (nothing is written on the nodes);
- a file path: a SQLite cache file on the actor's node;
- None: no cache.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rubricflow.llm.cache import JudgeCache, MemoryJudgeCache, SQLiteJudgeCache

__all__ = ["is_shared_store", "open_cache"]

Closer = Callable[[], Awaitable[None]]
#: answers an actor's memory cache keeps (an actor lives as long as its driver: a
#: trainer's, a service's); an answer is a few hundred bytes to a few kilobytes
MEMORY_ENTRIES = 100_000


def is_shared_store(url: str | None) -> bool:
    """Whether the store at `url` is one every node of a cluster can reach (PostgreSQL;
    a SQLite file lives on the driver's machine only)."""
    return url is not None and url.split(":", 1)[0].split("+", 1)[0] in ("postgresql", "postgres")


async def _nothing() -> None:
    return None


async def open_cache(option: str | None) -> tuple[JudgeCache | None, Closer]:
    """The cache `option` names, and how to close it."""
    if option is None:
        return None, _nothing
    if option == "memory":
        return MemoryJudgeCache(max_entries=MEMORY_ENTRIES), _nothing
    if is_shared_store(option):
        from rubricflow.store.database import Database
        from rubricflow.store.judge_cache import StoreJudgeCache

        database = await Database.open(option)
        return StoreJudgeCache(database), database.close
    cache = SQLiteJudgeCache(option)

    async def close() -> None:
        cache.close()

    return cache, close
