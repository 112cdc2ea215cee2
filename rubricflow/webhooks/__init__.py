"""Durable webhooks: subscriptions, an outbox written with each transition, and a delivery
worker that signs (Standard Webhooks), sends and retries every event at least once.

`Application.webhooks` is the `WebhookService`; docs/webhooks.md is the user's guide.
"""

from __future__ import annotations

from rubricflow.store.webhooks import (
    DELIVERY_STATUSES,
    EVENTS,
    DeliveryAttempt,
    WebhookDelivery,
    WebhookSubscription,
    announced_event,
)
from rubricflow.webhooks.addresses import address_refusal, check_url, resolve_target
from rubricflow.webhooks.delivery import DeliveryPolicy, DeliveryStats, DeliveryWorker
from rubricflow.webhooks.service import (
    ALL_EVENTS,
    CreatedWebhook,
    RemovedWebhook,
    WebhookService,
    parse_events,
)
from rubricflow.webhooks.signing import new_secret, signed_headers

__all__ = [
    "ALL_EVENTS",
    "DELIVERY_STATUSES",
    "EVENTS",
    "CreatedWebhook",
    "DeliveryAttempt",
    "DeliveryPolicy",
    "DeliveryStats",
    "DeliveryWorker",
    "RemovedWebhook",
    "WebhookDelivery",
    "WebhookService",
    "WebhookSubscription",
    "address_refusal",
    "announced_event",
    "check_url",
    "new_secret",
    "parse_events",
    "resolve_target",
    "signed_headers",
]
