"""Webhook subscriptions, deliveries and delivery attempts as the webhook store hands
them back. Plain values: no database in here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["DeliveryAttempt", "WebhookDelivery", "WebhookSubscription"]


@dataclass(frozen=True)
class WebhookSubscription:
    """A subscription as stored, without its secret."""

    id: str
    url: str
    events: tuple[str, ...]
    artifact_type: str | None
    allow_private: bool
    active: bool
    created_by: str
    created_at: datetime
    removed_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": self.url,
            "events": list(self.events),
            "artifact_type": self.artifact_type,
            "allow_private": self.allow_private,
            "active": self.active,
            "created_by": self.created_by,
            "created_at": self.created_at.isoformat(),
            "removed_at": self.removed_at.isoformat() if self.removed_at else None,
        }


@dataclass(frozen=True)
class WebhookDelivery:
    """One message to one subscription, and how its sending stands."""

    id: int
    message_id: str
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "message_id": self.message_id,
            "subscription_id": self.subscription_id,
            "event_type": self.event_type,
            "artifact_id": self.artifact_id,
            "event_seq": self.event_seq,
            "payload": self.payload,
            "created_at": self.created_at.isoformat(),
            "status": self.status,
            "attempts": self.attempts,
            "next_attempt_at": self.next_attempt_at.isoformat(),
            "last_status_code": self.last_status_code,
            "last_error": self.last_error,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "replay_of": self.replay_of,
        }


@dataclass(frozen=True)
class DeliveryAttempt:
    """One try at sending a delivery: the HTTP status (None: no response), how long it
    took, and what went wrong."""

    id: int
    delivery_id: int
    attempt: int
    attempted_at: datetime
    status_code: int | None
    latency_ms: float
    error: str | None
    worker: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "delivery_id": self.delivery_id,
            "attempt": self.attempt,
            "attempted_at": self.attempted_at.isoformat(),
            "status_code": self.status_code,
            "latency_ms": self.latency_ms,
            "error": self.error,
            "worker": self.worker,
        }
