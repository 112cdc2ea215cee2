"""Delivering webhooks to a real receiver on 127.0.0.1 that verifies every signature with
the `standardwebhooks` library: signed, retried with back-off until a 2xx (a receiver
failing half the time loses no event, and a message keeps its webhook-id across retries),
failed for good after the limit and visible in the log, replayed with the same id,
woken by a commit, stopped promptly, and never sent by two workers at once. On SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Sequence

import pytest

from rubricflow.application import Application
from rubricflow.errors import WebhookError
from rubricflow.plugins import PluginRegistry
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store
from rubricflow.webhooks import DeliveryPolicy, DeliveryWorker, WebhookService

from .conftest import doc_types, reach
from .webhook_receiver import Receiver, flaky, running_receiver

QUICK = DeliveryPolicy(
    retry_delay_seconds=0.01,
    max_retry_delay_seconds=0.05,
    max_attempts=60,
    timeout_seconds=5.0,
    lease_seconds=10.0,
    poll_seconds=0.05,
)


async def subscribe(service: WebhookService, receiver: Receiver, *events: str) -> str:
    created = await service.add(receiver.url, events or ["all"], actor="admin", allow_private=True)
    receiver.secret = created.secret
    return created.subscription.id


async def until(receiver: Receiver, check: object, timeout: float = 20.0) -> bool:
    return await asyncio.to_thread(receiver.wait_for, check, timeout)  # type: ignore[arg-type]


async def test_deliveries_are_signed_by_the_standard_and_logged(
    store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store, policy=QUICK)
    await doc_types(registry)
    with running_receiver() as receiver:
        subscription = await subscribe(service, receiver)
        approved = await reach(registry, "approved")
        stats = await service.deliver_due()

        assert (stats.attempts, stats.delivered) == (2, 2)
        assert [r.verified for r in receiver.received] == [True, True]
        deliveries = {d.message_id: d for d in await service.deliveries(subscription)}
        for request in receiver.received:
            delivery = deliveries[request.message_id]
            assert request.payload == delivery.payload
            assert request.headers["content-type"] == "application/json"
            assert request.headers["webhook-signature"].startswith("v1,")
            assert abs(int(request.headers["webhook-timestamp"]) - time.time()) < 60
        # Deliveries are concurrent and unordered (docs/webhooks.md); receivers order by
        # data.event_seq.
        in_order = sorted(receiver.received, key=lambda r: r.payload["data"]["event_seq"])
        assert [r.payload["type"] for r in in_order] == [
            "artifact.submitted",
            "artifact.approved",
        ]
        assert in_order[1].payload["data"]["artifact_id"] == approved

    for delivery in deliveries.values():
        assert (delivery.status, delivery.attempts, delivery.last_status_code) == (
            "delivered",
            1,
            200,
        )
        (attempt,) = await service.attempts(delivery.id)
        assert (attempt.attempt, attempt.status_code, attempt.error) == (1, 200, None)
        assert attempt.latency_ms > 0
    assert await service.backlog() == {"pending": 0, "delivered": 2, "failed": 0}


async def test_a_receiver_failing_half_the_time_loses_no_event(
    store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store, policy=QUICK)
    await doc_types(registry)
    with running_receiver() as receiver:
        receiver.answer = flaky(seed=17)
        await subscribe(service, receiver)
        for _ in range(15):
            await reach(registry, "approved")
        deliveries = await service.deliveries(limit=100)
        assert len(deliveries) == 30
        wanted = {d.message_id for d in deliveries}

        stop = asyncio.Event()
        running = asyncio.create_task(service.run_delivery_worker(stop))
        try:
            assert await until(receiver, lambda r: r.delivered_ids() >= wanted)
            while (await service.backlog())["pending"]:  # the last outcomes are recorded
                await asyncio.sleep(0.01)
        finally:
            stop.set()
            stats = await asyncio.wait_for(running, 5)

    requests: dict[str, list[str]] = defaultdict(list)
    for request in receiver.received:
        assert request.verified
        requests[request.message_id].append(request.body)
    assert set(requests) == wanted  # every event arrived, under its own webhook-id
    assert all(len(set(bodies)) == 1 for bodies in requests.values())  # one body per id
    failures = sum(1 for r in receiver.received if r.status >= 500)
    assert failures > 5  # the receiver did fail, and the retries carried every event
    # every failed attempt was retried (a connection the receiver dropped fails too)
    assert stats.retried >= failures and stats.delivered == 30
    for delivery in await service.deliveries(limit=100):
        assert delivery.status == "delivered"
        attempts = await service.attempts(delivery.id)
        assert len(attempts) == delivery.attempts >= len(requests[delivery.message_id])
        assert [a.status_code for a in attempts][-1] == 200
        assert all(a.status_code != 200 for a in attempts[:-1])


async def test_a_delivery_that_keeps_failing_fails_visibly_and_can_be_replayed(
    store: Store, registry: ArtifactRegistry
) -> None:
    policy = DeliveryPolicy(
        retry_delay_seconds=0.01, max_retry_delay_seconds=0.02, max_attempts=3, poll_seconds=0.05
    )
    service = WebhookService(store, policy=policy)
    await doc_types(registry)
    with running_receiver() as receiver:
        receiver.answer = lambda _id, _n: 503
        subscription = await subscribe(service, receiver, "submitted")
        artifact = await reach(registry, "pending_review")
        while (await service.backlog())["pending"]:
            await service.deliver_due()
            await asyncio.sleep(0.02)

        (failed,) = await service.deliveries(subscription, "failed")
        assert failed.artifact_id == artifact and failed.attempts == 3
        assert failed.last_status_code == 503
        assert failed.last_error == "HTTP 503: receiver says no; gave up after 3 attempts"
        assert [a.status_code for a in await service.attempts(failed.id)] == [503, 503, 503]
        assert await service.deliveries(subscription, "delivered") == []

        receiver.answer = lambda _id, _n: 200
        replayed = await service.replay(failed.id)
        assert (replayed.message_id, replayed.replay_of, replayed.status) == (
            failed.message_id,
            failed.id,
            "pending",
        )
        assert replayed.payload == failed.payload
        await service.deliver_due()
        again = await service.replay(replayed.id)  # a delivered one may be replayed too
        with pytest.raises(WebhookError, match=f"delivery {again.id} is still pending"):
            await service.replay(again.id)

    ids = [r.message_id for r in receiver.received]
    assert ids[:4] == [failed.message_id] * 4  # the same webhook-id every time
    assert (await service.delivery(replayed.id)).status == "delivered"
    assert (await service.delivery(failed.id)).status == "failed"  # its record stands


async def test_redirects_are_not_followed(store: Store, registry: ArtifactRegistry) -> None:
    policy = DeliveryPolicy(max_attempts=1)
    service = WebhookService(store, policy=policy)
    await doc_types(registry)
    with running_receiver() as receiver:
        receiver.answer = lambda _id, _n: 307
        await subscribe(service, receiver, "submitted")
        await reach(registry, "pending_review")
        await service.deliver_due()
    (delivery,) = await service.deliveries()
    assert delivery.status == "failed" and delivery.last_status_code == 307
    assert "redirects are not followed" in (delivery.last_error or "")
    assert len(receiver.received) == 1


async def test_an_address_that_turns_private_is_refused_at_delivery(
    store: Store, registry: ArtifactRegistry
) -> None:
    """DNS rebinding: the name was public when registered and points inside later."""
    answers = {"now": ["93.184.215.14"]}

    async def resolver(host: str, port: int) -> Sequence[str]:
        assert host == "hooks.example.com"
        return answers["now"]

    service = WebhookService(store, policy=DeliveryPolicy(max_attempts=1), resolver=resolver)
    await doc_types(registry)
    await service.add("https://hooks.example.com/in", ["submitted"], actor="admin")
    answers["now"] = ["10.1.2.3"]
    await reach(registry, "pending_review")
    stats = await service.deliver_due()
    (delivery,) = await service.deliveries()
    assert stats.failed == 1 and delivery.status == "failed"
    assert delivery.last_status_code is None
    assert "resolves to 10.1.2.3, which is a private address" in (delivery.last_error or "")


async def test_a_running_worker_wakes_on_a_commit_and_stops_promptly(
    db_url: str, review_plugins: PluginRegistry
) -> None:
    async with await Application.open(db_url, plugins=review_plugins) as app:
        await doc_types(app.artifacts)
        slow_poll = DeliveryPolicy(poll_seconds=30.0)
        with running_receiver() as receiver:
            await subscribe(app.webhooks, receiver, "approved")
            stop = asyncio.Event()
            running = asyncio.create_task(app.webhooks.run_delivery_worker(stop, policy=slow_poll))
            await asyncio.sleep(0.3)  # the worker has looked once and waits on its 30 s poll
            started = time.monotonic()
            await reach(app.artifacts, "approved")
            assert await until(receiver, lambda r: len(r.delivered()) == 1, timeout=10)
            woke_after = time.monotonic() - started
            stop.set()
            stopped = time.monotonic()
            stats = await asyncio.wait_for(running, 5)
            assert time.monotonic() - stopped < 5  # not the 30 s poll
    assert woke_after < 10, f"the worker waited {woke_after:.2f}s for a committed event"
    assert stats.delivered == 1


async def test_two_workers_never_send_one_message_at_once(
    db_url: str, store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store)
    await doc_types(registry)
    with running_receiver() as receiver:
        receiver.delay = 0.02
        await subscribe(service, receiver, "submitted")
        for _ in range(24):
            await reach(registry, "pending_review")
        async with await Store.open(db_url) as other:
            policy = DeliveryPolicy(batch=4, timeout_seconds=5, lease_seconds=10)
            workers = [
                DeliveryWorker(store.webhooks, policy=policy, name="one"),
                DeliveryWorker(other.webhooks, policy=policy, name="two"),
            ]
            try:
                await asyncio.gather(*(w.deliver_due() for w in workers))
            finally:
                for worker in workers:
                    await worker.aclose()
    counts: dict[str, int] = defaultdict(int)
    for request in receiver.received:
        counts[request.message_id] += 1
    assert len(counts) == 24 and set(counts.values()) == {1}
    assert sum(w.stats.delivered for w in workers) == 24
    assert all(d.status == "delivered" for d in await service.deliveries(limit=100))
