"""Webhook subscriptions and their delivery log, for admins: subscribe a URL to artifact
events (the signing secret is in the response, once), list, remove, read the log and its
attempts, replay a delivery. The SSRF guard refuses private addresses unless the admin
allows them for that subscription."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query

from rubricflow.server.auth import Admin, AppDep
from rubricflow.server.params import DeliveryIdPath, RowIdQuery
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.wire.webhooks import (
    AttemptOut,
    Backlog,
    DeliveryDetail,
    DeliveryOut,
    WebhookCreate,
    WebhookCreated,
    WebhookOut,
    WebhookRemoved,
)

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/webhooks",
    tags=["webhooks"],
    responses={k: PROBLEM_RESPONSES[k] for k in (403, 404)},
)

_MAX_ID = 200


@router.post(
    "",
    status_code=201,
    response_model=WebhookCreated,
    summary="Subscribe a URL to artifact events",
    responses={422: PROBLEM_RESPONSES[422]},
)
async def add_webhook(body: WebhookCreate, principal: Admin, application: AppDep) -> WebhookCreated:
    created = await application.webhooks.add(
        body.url,
        body.events,
        actor=principal.name,
        artifact_type=body.artifact_type,
        allow_private=body.allow_private,
    )
    return WebhookCreated(**WebhookOut.of(created.subscription).model_dump(), secret=created.secret)


@router.get("", response_model=list[WebhookOut], summary="List webhook subscriptions")
async def list_webhooks(
    principal: Admin, application: AppDep, include_removed: bool = False
) -> list[WebhookOut]:
    subscriptions = await application.webhooks.list(include_removed=include_removed)
    return [WebhookOut.of(s) for s in subscriptions]


@router.get("/backlog", response_model=Backlog, summary="Deliveries pending, delivered, failed")
async def webhook_backlog(principal: Admin, application: AppDep) -> Backlog:
    counts = await application.webhooks.backlog()
    return Backlog(**{k: v for k, v in counts.items() if k in Backlog.model_fields})


@router.get(
    "/deliveries",
    response_model=list[DeliveryOut],
    summary="The delivery log, newest first",
    responses={422: PROBLEM_RESPONSES[422]},
)
async def list_deliveries(
    principal: Admin,
    application: AppDep,
    subscription_id: str | None = Query(default=None, max_length=_MAX_ID),
    status: Literal["pending", "delivered", "failed"] | None = None,
    artifact_id: str | None = Query(default=None, max_length=_MAX_ID),
    event: str | None = Query(default=None, max_length=50),
    limit: int = Query(default=50, ge=1, le=1000),
    before: RowIdQuery = None,
) -> list[DeliveryOut]:
    deliveries = await application.webhooks.deliveries(
        subscription_id,
        status,
        artifact_id=artifact_id,
        event=event,
        limit=limit,
        before=before,
    )
    return [DeliveryOut.of(d) for d in deliveries]


@router.get(
    "/deliveries/{delivery_id}",
    response_model=DeliveryDetail,
    summary="One delivery and every attempt at it",
)
async def get_delivery(
    delivery_id: DeliveryIdPath, principal: Admin, application: AppDep
) -> DeliveryDetail:
    delivery = await application.webhooks.delivery(delivery_id)
    attempts = await application.webhooks.attempts(delivery_id)
    return DeliveryDetail(
        **DeliveryOut.of(delivery).model_dump(), attempt_log=[AttemptOut.of(a) for a in attempts]
    )


@router.post(
    "/deliveries/{delivery_id}/replay",
    status_code=202,
    response_model=DeliveryOut,
    summary="Send a delivery again (same webhook-id and body)",
    responses={409: PROBLEM_RESPONSES[409], 422: PROBLEM_RESPONSES[422]},
)
async def replay_delivery(
    delivery_id: DeliveryIdPath, principal: Admin, application: AppDep
) -> DeliveryOut:
    return DeliveryOut.of(await application.webhooks.replay(delivery_id))


@router.get("/{subscription_id}", response_model=WebhookOut, summary="One subscription")
async def get_webhook(subscription_id: str, principal: Admin, application: AppDep) -> WebhookOut:
    return WebhookOut.of(await application.webhooks.get(subscription_id))


@router.delete(
    "/{subscription_id}",
    response_model=WebhookRemoved,
    summary="Remove a subscription (its pending deliveries are given up; its log stays)",
)
async def remove_webhook(
    subscription_id: str, principal: Admin, application: AppDep
) -> WebhookRemoved:
    removed = await application.webhooks.remove(subscription_id)
    return WebhookRemoved(
        **WebhookOut.of(removed.subscription).model_dump(), pending_given_up=removed.given_up
    )
