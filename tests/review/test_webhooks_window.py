"""The delivery worker's rolling window and its wake-ups, with a real receiver on
127.0.0.1, on SQLite and PostgreSQL: a receiver slow to answer one message holds up that
message only (the others are claimed and sent as slots free, not after the slowest of a
batch); outcomes recorded in batches leave every delivery and attempt logged; a worker
over a store without subscriptions, which ignores the change feed, still serves a
subscription added by another process, within its poll interval."""

from __future__ import annotations

import asyncio
import threading
import time

from rubricflow.application import Application
from rubricflow.plugins import PluginRegistry
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store
from rubricflow.webhooks import DeliveryPolicy, DeliveryWorker, WebhookService

from .conftest import doc_types, reach
from .webhook_receiver import Receiver, running_receiver


async def until(receiver: Receiver, check: object, timeout: float = 20.0) -> bool:
    return await asyncio.to_thread(receiver.wait_for, check, timeout)  # type: ignore[arg-type]


async def test_a_slow_answer_holds_up_its_own_message_only(
    store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store)
    await doc_types(registry)
    with running_receiver() as receiver:
        created = await service.add(receiver.url, ["submitted"], actor="admin", allow_private=True)
        receiver.secret = created.secret
        first = await reach(registry, "pending_review")
        for _ in range(12):
            await reach(registry, "pending_review")
        release = threading.Event()

        def answer(message_id: str, _count: int) -> int:
            if slow_id and message_id == slow_id[0]:
                release.wait(20)  # this receiver is slow to answer this one message
            return 200

        slow_id = [d.message_id for d in await service.deliveries(artifact_id=first)]
        receiver.answer = answer
        policy = DeliveryPolicy(batch=4, timeout_seconds=30, lease_seconds=60)
        worker = DeliveryWorker(store.webhooks, policy=policy, name="window")
        sending = asyncio.create_task(worker.deliver_due())
        try:
            # the twelve others arrive while the slow one is still unanswered
            assert await until(receiver, lambda r: len(r.delivered()) == 12, timeout=20)
            assert slow_id[0] not in receiver.delivered_ids()
        finally:
            release.set()
            stats = await asyncio.wait_for(sending, 30)
            await worker.aclose()
    assert stats.delivered == 13 and stats.attempts == 13
    deliveries = await service.deliveries(limit=100)
    assert {d.status for d in deliveries} == {"delivered"} and len(deliveries) == 13
    for delivery in deliveries:
        (attempt,) = await service.attempts(delivery.id)
        assert (attempt.attempt, attempt.status_code, attempt.worker) == (1, 200, "window")


async def test_a_subscription_added_elsewhere_is_served_within_the_poll(
    db_url: str, review_plugins: PluginRegistry
) -> None:
    async with await Application.open(db_url, plugins=review_plugins) as app:
        await doc_types(app.artifacts)
        policy = DeliveryPolicy(poll_seconds=0.3)
        with running_receiver() as receiver:
            stop = asyncio.Event()
            running = asyncio.create_task(app.webhooks.run_delivery_worker(stop, policy=policy))
            try:
                await reach(app.artifacts, "approved")  # nobody listens: nothing is sent
                await asyncio.sleep(0.5)
                # another process (its own store) subscribes: this worker is not told
                async with await Store.open(db_url) as other:
                    created = await WebhookService(other).add(
                        receiver.url, ["approved"], actor="admin", allow_private=True
                    )
                receiver.secret = created.secret
                started = time.monotonic()
                await reach(app.artifacts, "approved")
                assert await until(receiver, lambda r: len(r.delivered()) == 1, timeout=10)
                waited = time.monotonic() - started
            finally:
                stop.set()
                stats = await asyncio.wait_for(running, 5)
    assert stats.delivered == 1
    assert waited < 3.0, f"the worker took {waited:.2f}s to serve a new subscription"
