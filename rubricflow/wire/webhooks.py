"""Webhook subscriptions and their delivery log over HTTP."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from rubricflow.records.webhooks import (
        DeliveryAttempt,
        WebhookDelivery,
        WebhookSubscription,
    )

__all__ = [
    "AttemptOut",
    "Backlog",
    "DeliveryDetail",
    "DeliveryOut",
    "WebhookCreate",
    "WebhookCreated",
    "WebhookOut",
    "WebhookRemoved",
]

_MAX_ID = 200


class WebhookCreate(BaseModel):
    url: str = Field(min_length=1, max_length=2000, description="http(s) URL to POST events to")
    events: list[str] = Field(
        min_length=1,
        max_length=20,
        description="submitted, approved, needs_revision, rejected, overridden, "
        "review_incomplete, or all",
    )
    artifact_type: str | None = Field(
        default=None, max_length=_MAX_ID, description="Only this type's events; null: every type"
    )
    allow_private: bool = Field(
        default=False,
        description="Allow a loopback, link-local or private address (refused otherwise)",
    )


class WebhookOut(BaseModel):
    id: str
    url: str
    events: list[str]
    artifact_type: str | None
    allow_private: bool
    active: bool
    created_by: str
    created_at: datetime
    removed_at: datetime | None = None

    @classmethod
    def of(cls, subscription: WebhookSubscription) -> WebhookOut:
        return cls(
            id=subscription.id,
            url=subscription.url,
            events=list(subscription.events),
            artifact_type=subscription.artifact_type,
            allow_private=subscription.allow_private,
            active=subscription.active,
            created_by=subscription.created_by,
            created_at=subscription.created_at,
            removed_at=subscription.removed_at,
        )


class WebhookCreated(WebhookOut):
    secret: str = Field(description="Verifies the signatures (Standard Webhooks): shown once")


class WebhookRemoved(WebhookOut):
    pending_given_up: int


class AttemptOut(BaseModel):
    attempt: int
    attempted_at: datetime
    status_code: int | None
    latency_ms: float
    error: str | None
    worker: str

    @classmethod
    def of(cls, attempt: DeliveryAttempt) -> AttemptOut:
        return cls(
            attempt=attempt.attempt,
            attempted_at=attempt.attempted_at,
            status_code=attempt.status_code,
            latency_ms=attempt.latency_ms,
            error=attempt.error,
            worker=attempt.worker,
        )


class DeliveryOut(BaseModel):
    id: int
    message_id: str = Field(description="The webhook-id header: the same on every retry")
    subscription_id: str
    event_type: str
    artifact_id: str
    event_seq: int
    payload: dict[str, Any]
    created_at: datetime
    status: str
    attempts: int
    next_attempt_at: datetime
    last_status_code: int | None = None
    last_error: str | None = None
    finished_at: datetime | None = None
    replay_of: int | None = None

    @classmethod
    def of(cls, delivery: WebhookDelivery) -> DeliveryOut:
        return cls(
            id=delivery.id,
            message_id=delivery.message_id,
            subscription_id=delivery.subscription_id,
            event_type=delivery.event_type,
            artifact_id=delivery.artifact_id,
            event_seq=delivery.event_seq,
            payload=delivery.payload,
            created_at=delivery.created_at,
            status=delivery.status,
            attempts=delivery.attempts,
            next_attempt_at=delivery.next_attempt_at,
            last_status_code=delivery.last_status_code,
            last_error=delivery.last_error,
            finished_at=delivery.finished_at,
            replay_of=delivery.replay_of,
        )


class DeliveryDetail(DeliveryOut):
    attempt_log: list[AttemptOut]


class Backlog(BaseModel):
    pending: int = 0
    delivered: int = 0
    failed: int = 0
