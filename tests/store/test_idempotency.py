"""Idempotency keys in the store: one request holds a key, its retry replays the stored
response, another request under the key is a mismatch, a key whose request died is taken
over once its lock lapses, and an expired key is forgotten. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from rubricflow.store import Store
from rubricflow.store.idempotency import StoredResponse

TTL = {"ttl_seconds": 3600.0, "lock_seconds": 60.0}


async def test_a_key_is_held_then_replayed(store: Store) -> None:
    keys = store.idempotency
    assert (await keys.begin("alice", "k1", "f1", **TTL)).outcome == "started"
    assert (await keys.begin("alice", "k1", "f1", **TTL)).outcome == "in_progress"
    assert (await keys.begin("alice", "k1", "f2", **TTL)).outcome == "mismatch"
    # another principal's key of the same name is another key
    assert (await keys.begin("bob", "k1", "f2", **TTL)).outcome == "started"

    response = StoredResponse(201, [("etag", '"2"')], b'{"id": "x"}')
    await keys.finish("alice", "k1", "f1", response)
    claim = await keys.begin("alice", "k1", "f1", **TTL)
    assert claim.outcome == "replay"
    assert claim.response == StoredResponse(201, [("etag", '"2"')], b'{"id": "x"}')
    assert (await keys.begin("alice", "k1", "f2", **TTL)).outcome == "mismatch"


async def test_a_released_key_runs_again(store: Store) -> None:
    keys = store.idempotency
    assert (await keys.begin("alice", "k", "f", **TTL)).outcome == "started"
    await keys.release("alice", "k", "f")
    assert (await keys.begin("alice", "k", "f", **TTL)).outcome == "started"


async def test_a_lapsed_lock_and_an_expired_key_are_taken_over(store: Store) -> None:
    keys = store.idempotency
    # the first request died holding the key: once its lock lapses, a retry takes it
    assert (await keys.begin("alice", "dead", "f", ttl_seconds=3600, lock_seconds=0)).outcome == (
        "started"
    )
    assert (await keys.begin("alice", "dead", "f", **TTL)).outcome == "started"
    # a finished key past its expiry is forgotten, even for another request
    assert (await keys.begin("alice", "old", "f", ttl_seconds=0, lock_seconds=60)).outcome == (
        "started"
    )
    await keys.finish("alice", "old", "f", StoredResponse(200))
    assert (await keys.begin("alice", "old", "g", **TTL)).outcome == "started"
    assert await keys.purge() == 0  # nothing expired is left: "old" was taken over


async def test_racing_requests_agree_on_one_holder(db_url: str) -> None:
    """Eight stores (separate connections) race for one key: exactly one holds it."""
    stores = [await Store.open(db_url) for _ in range(8)]
    try:
        claims = await asyncio.gather(
            *(s.idempotency.begin("alice", "race", "f", **TTL) for s in stores)
        )
    finally:
        for opened in stores:
            await opened.close()
    outcomes = sorted(claim.outcome for claim in claims)
    assert outcomes == ["in_progress"] * 7 + ["started"], outcomes
