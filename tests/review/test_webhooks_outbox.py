"""The webhook outbox: each transition that announces an event writes its deliveries in
its own transaction (never without it), one per matching subscription, with the Standard
Webhooks payload and nothing of the artifact's content. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rubricflow.errors import ArtifactConflictError
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store
from rubricflow.store.artifacts import ArtifactRepository, Change
from rubricflow.store.webhooks import EVENTS, WebhookDelivery, announced_event
from rubricflow.webhooks import WebhookService

from .conftest import BROKEN, FAIL, PASS, define, doc_types, reach, score_rubric

HOOK = "http://127.0.0.1:9/hooks"  # never sent to here: these tests read the outbox


async def subscribe(service: WebhookService, *events: str, **options: Any) -> str:
    created = await service.add(
        HOOK, events or ["all"], actor="admin", allow_private=True, **options
    )
    return created.subscription.id


async def outbox(service: WebhookService, **filters: Any) -> list[WebhookDelivery]:
    return list(reversed(await service.deliveries(limit=1000, **filters)))


def announced(deliveries: list[WebhookDelivery], artifact_id: str) -> list[str]:
    return [d.payload["data"]["event"] for d in deliveries if d.artifact_id == artifact_id]


async def test_every_event_is_written_by_the_transition_that_causes_it(
    store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store)
    await doc_types(registry)
    await subscribe(service)

    approved = await reach(registry, "approved")
    overridden = await reach(registry, "needs_revision")
    await registry.override(overridden, actor="carol", reason="good enough for launch")
    rejected = await reach(registry, "rejected")  # review: needs_revision, then carol rejects
    dead = await reach(registry, "dead_lettered")  # one failed review at a limit of 1
    await registry.retry(dead, actor="carol", reason="the check is fixed")
    flaky = await registry.create("doc", BROKEN, actor="bot")
    await registry.submit_for_review(flaky.id, actor="bot")  # fails, back to the queue
    handed = await reach(registry, "in_review")
    await registry.abandon_review(await registry.get(handed), reason="worker stopping")
    revised = await reach(registry, "needs_revision")
    await registry.revise(revised, PASS, actor="bot", reason="raised the score")

    deliveries = await outbox(service)
    assert announced(deliveries, approved) == ["submitted", "approved"]
    assert announced(deliveries, overridden) == ["submitted", "needs_revision", "overridden"]
    assert announced(deliveries, rejected) == ["submitted", "needs_revision", "rejected"]
    assert announced(deliveries, dead) == ["submitted", "review_incomplete", "submitted"]
    assert announced(deliveries, flaky.id) == ["submitted", "review_incomplete"]
    # a claim and a stopping worker's hand-back announce nothing; nor does a revision
    assert announced(deliveries, handed) == ["submitted"]
    assert announced(deliveries, revised) == ["submitted", "needs_revision"]
    assert {d.payload["data"]["event"] for d in deliveries} == set(EVENTS)

    for delivery in deliveries:
        history = {e.seq: e for e in await registry.history(delivery.artifact_id)}
        event = history[delivery.event_seq]
        data = delivery.payload["data"]
        assert delivery.payload["type"] == delivery.event_type == f"artifact.{data['event']}"
        assert delivery.payload["timestamp"] == event.created_at.isoformat().replace("+00:00", "Z")
        assert (data["status"], data["previous_status"], data["trigger"]) == (
            event.dest,
            event.source,
            event.trigger,
        )
        assert (data["revision"], data["actor"], data["reason"]) == (
            event.revision,
            event.actor,
            event.reason,
        )
        assert data["artifact_type"] == "doc"
        assert [e["id"] for e in data["evaluations"]] == list(event.evaluation_ids)
        assert delivery.status == "pending" and delivery.attempts == 0
        assert delivery.message_id.startswith("msg_")
    assert len({d.message_id for d in deliveries}) == len(deliveries)

    decision = next(d for d in deliveries if d.artifact_id == approved and d.event_seq > 2)
    (evaluation,) = decision.payload["data"]["evaluations"]
    assert evaluation["verdict"] == "pass" and evaluation["passed"] is True
    assert evaluation["score"] == pytest.approx(0.9)
    assert evaluation["rubric_id"] == "scored"


async def test_the_payload_never_holds_the_content(
    store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store)
    await doc_types(registry)
    await subscribe(service)
    secret_text = "the-launch-code-is-0000"
    artifact = await registry.create("doc", {**PASS, "text": secret_text}, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot")
    deliveries = await outbox(service)
    assert len(deliveries) == 2
    for delivery in deliveries:
        assert secret_text not in json.dumps(delivery.payload)
        assert "content" not in delivery.payload["data"]


async def test_subscriptions_choose_their_type_and_events(
    store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store)
    await doc_types(registry)
    gated_approvals = await subscribe(service, "approved", artifact_type="gated")
    all_rejections = await subscribe(service, "artifact.rejected")
    removed = await subscribe(service, "all")
    await service.remove(removed)

    await reach(registry, "approved")  # a doc: neither subscription wants it
    waiting = await registry.create("gated", PASS, actor="bot")
    await registry.submit_for_review(waiting.id, actor="bot")  # awaits approval: no event
    await registry.approve(waiting.id, actor="carol", reason="reads well")
    rejected = await reach(registry, "rejected")

    deliveries = await outbox(service)
    assert [(d.subscription_id, d.artifact_id, d.event_type) for d in deliveries] == [
        (gated_approvals, waiting.id, "artifact.approved"),
        (all_rejections, rejected, "artifact.rejected"),
    ]
    approval = deliveries[0].payload["data"]
    assert (approval["actor"], approval["reason"], approval["artifact_type"]) == (
        "carol",
        "reads well",
        "gated",
    )
    assert await service.deliveries(removed) == []


async def test_one_event_is_one_message_to_every_subscription(
    store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store)
    await doc_types(registry)
    first, second = await subscribe(service, "approved"), await subscribe(service, "approved")
    approved = await reach(registry, "approved")
    deliveries = await outbox(service, artifact_id=approved)
    assert sorted(d.subscription_id for d in deliveries) == sorted([first, second])
    # the same message (one webhook-id, one body) to each
    assert len({d.message_id for d in deliveries}) == 1
    assert deliveries[0].payload == deliveries[1].payload


async def test_a_transition_whose_transaction_fails_writes_no_delivery(
    store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store)
    await define(registry, "doc", score_rubric())
    await subscribe(service)
    artifact = await registry.create("doc", PASS, actor="bot")
    repository = ArtifactRepository(store.database)
    submit = Change(trigger="submit", dest="pending_review", actor="bot", failures=0)

    with pytest.raises(RuntimeError, match="after the transition"):
        async with repository.transaction() as tx:
            await tx.write_transition(artifact, submit)
            raise RuntimeError("the unit of work failed after the transition")
    assert await outbox(service) == []
    assert (await registry.get(artifact.id)).status == "draft"

    # two writers race from the same read: the winner's transition and delivery commit,
    # the loser's transaction is rolled back whole
    async with repository.transaction() as tx:
        await tx.write_transition(artifact, submit)
    with pytest.raises(ArtifactConflictError):
        async with repository.transaction() as tx:
            await tx.write_transition(artifact, submit)
    deliveries = await outbox(service)
    assert [(d.artifact_id, d.event_type, d.event_seq) for d in deliveries] == [
        (artifact.id, "artifact.submitted", 2)
    ]


async def test_no_subscription_no_delivery(store: Store, registry: ArtifactRegistry) -> None:
    service = WebhookService(store)
    await doc_types(registry)
    await reach(registry, "approved")
    await reach(registry, "needs_revision", content=FAIL)
    assert await outbox(service) == []
    assert await service.backlog() == {"pending": 0, "delivered": 0, "failed": 0}


def test_the_event_mapping_covers_the_lifecycle() -> None:
    from rubricflow.review.lifecycle import TRIGGERS

    mapped = {t: announced_event(t) for t in TRIGGERS}
    assert {t: e for t, e in mapped.items() if e} == {
        "submit": "submitted",
        "approve": "approved",
        "request_revision": "needs_revision",
        "reject": "rejected",
        "override": "overridden",
        "retry": "submitted",
    }
    assert announced_event("abort_review", failed=True) == "review_incomplete"
    assert announced_event("dead_letter", failed=True) == "review_incomplete"
    assert announced_event("abort_review") is None
