"""Idempotency keys written in batches (the server's group commit): a batch's responses
are stored before its claims are decided, claims of one key in one batch agree with each
other as if made one after another, and every batch decides exactly what the same calls
made singly would. SQLite and PostgreSQL."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubricflow.store import Store
from rubricflow.store.idempotency import FinishedKey, KeyRequest, StoredResponse

TTL = {"ttl_seconds": 3600.0, "lock_seconds": 60.0}
OK = StoredResponse(201, [("etag", '"1"')], b"{}")


async def test_one_batch_finishes_first_then_claims_in_order(store: Store) -> None:
    keys = store.idempotency
    held = KeyRequest("alice", "k1", "f1")
    assert (await keys.begin(*_named(held), **TTL)).outcome == "started"
    claims = await keys.write_batch(
        [
            held,  # finished by this very batch: replayed
            KeyRequest("alice", "k2", "f2"),  # new: started
            KeyRequest("alice", "k2", "f2"),  # the same key again in the batch: waits
            KeyRequest("alice", "k2", "other"),  # another request under it: refused
        ],
        [FinishedKey(held, OK)],
        **TTL,
    )
    assert [c.outcome for c in claims] == ["replay", "started", "in_progress", "mismatch"]
    assert claims[0].response == OK


def _named(request: KeyRequest) -> tuple[str, str, str]:
    return request.principal, request.key, request.fingerprint


requests = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(["k1", "k2", "k3"]),
        st.sampled_from(["f1", "f2"]),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=requests)
async def test_a_batch_decides_what_single_calls_would(
    store: Store, batch: list[tuple[str, str, str]]
) -> None:
    keys = store.idempotency
    run = f"r{id(batch)}-"  # keys of earlier examples in this store do not matter
    singly = [KeyRequest(p, run + "s" + k, f) for p, k, f in batch]
    together = [KeyRequest(p, run + "t" + k, f) for p, k, f in batch]
    one_by_one = [(await keys.begin(*_named(r), **TTL)).outcome for r in singly]
    batched = [c.outcome for c in await keys.write_batch(together, [], **TTL)]
    assert batched == one_by_one
