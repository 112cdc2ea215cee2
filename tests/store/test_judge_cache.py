"""The judge cache kept in the store: content-addressed, first answer kept, hits counted."""

from __future__ import annotations

import asyncio

from rubricflow.store import Store, StoreJudgeCache

from .conftest import fetch, scalar

KEY = "k" * 64


async def test_get_of_an_unknown_key_is_none(store: Store) -> None:
    assert await store.judge_cache.get(KEY) is None
    assert await scalar(store, "SELECT count(*) FROM judge_cache") == 0


async def test_put_then_get(store: Store) -> None:
    assert isinstance(store.judge_cache, StoreJudgeCache)
    answer = '{"verdict": "MET", "reasoning": "ünïcode ✓"}'
    await store.judge_cache.put(KEY, answer)
    assert await store.judge_cache.get(KEY) == answer


async def test_the_first_answer_is_kept(store: Store) -> None:
    await store.judge_cache.put(KEY, "first")
    await store.judge_cache.put(KEY, "second")
    assert await store.judge_cache.get(KEY) == "first"
    assert await scalar(store, "SELECT count(*) FROM judge_cache") == 1


async def test_hits_are_counted(store: Store) -> None:
    await store.judge_cache.put(KEY, "answer")
    await store.judge_cache.put("other", "x")
    for _ in range(3):
        await store.judge_cache.get(KEY)
    await store.judge_cache.get("missing")
    rows = await fetch(store, "SELECT key, hits FROM judge_cache ORDER BY key")
    assert [tuple(row) for row in rows] == [(KEY, 3), ("other", 0)]


async def test_concurrent_puts_and_gets(store: Store) -> None:
    keys = [f"{i:064x}" for i in range(10)]
    await asyncio.gather(*(store.judge_cache.put(k, f"v{k[-1]}") for k in keys * 2))
    values = await asyncio.gather(*(store.judge_cache.get(k) for k in keys))
    assert values == [f"v{k[-1]}" for k in keys]
    assert await scalar(store, "SELECT sum(hits) FROM judge_cache") == 10


async def test_the_cache_is_shared_by_stores_on_one_database(db_url: str) -> None:
    async with await Store.open(db_url) as one, await Store.open(db_url) as two:
        await one.judge_cache.put(KEY, "shared")
        assert await two.judge_cache.get(KEY) == "shared"


async def test_stats_and_clear(store: Store) -> None:
    empty = await store.judge_cache.stats()
    assert empty == {"db": store.database.display_url, "entries": 0, "chars": 0, "hits": 0}
    await store.judge_cache.put(KEY, "ünï")
    await store.judge_cache.put("other", "12345")
    await store.judge_cache.get(KEY)
    await store.judge_cache.get(KEY)
    stats = await store.judge_cache.stats()
    assert (stats["entries"], stats["chars"], stats["hits"]) == (2, 8, 2)
    assert await store.judge_cache.clear() == 2
    assert await store.judge_cache.get(KEY) is None
    assert (await store.judge_cache.stats())["entries"] == 0
    assert await store.judge_cache.clear() == 0
