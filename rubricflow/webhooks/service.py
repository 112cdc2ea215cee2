"""`Application.webhooks`: register, list and remove subscriptions, read the delivery log,
replay a delivery, and run the delivery worker.

What a subscription may be is decided here: its URL passes the SSRF guard
(`addresses.resolve_target`; private addresses only with `allow_private`, which only an
admin may set: the faces enforce who), its events are known ones, its artifact type
exists. The outbox itself is written by the store with each transition
(`rubricflow.store.webhooks.write_outbox`).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rubricflow.errors import WebhookError
from rubricflow.store.artifacts import ArtifactRepository
from rubricflow.store.webhooks import (
    DELIVERY_STATUSES,
    EVENT_TYPE_PREFIX,
    EVENTS,
    DeliveryAttempt,
    WebhookDelivery,
    WebhookStore,
    WebhookSubscription,
)
from rubricflow.webhooks.addresses import Resolver, resolve_target
from rubricflow.webhooks.delivery import DeliveryPolicy, DeliveryStats, DeliveryWorker
from rubricflow.webhooks.signing import new_secret

if TYPE_CHECKING:
    from rubricflow.store import Store
    from rubricflow.store.changes import Watch

__all__ = ["ALL_EVENTS", "CreatedWebhook", "RemovedWebhook", "WebhookService", "parse_events"]

#: what `--event` takes to mean every event
ALL_EVENTS = "all"
MAX_LOG_LIMIT = 1000


@dataclass(frozen=True)
class CreatedWebhook:
    """A new subscription and its signing secret, which is shown this once."""

    subscription: WebhookSubscription
    secret: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.subscription.to_dict(), "secret": self.secret}


@dataclass(frozen=True)
class RemovedWebhook:
    """A removed subscription, and how many of its pending deliveries were given up."""

    subscription: WebhookSubscription
    given_up: int

    def to_dict(self) -> dict[str, Any]:
        return {**self.subscription.to_dict(), "pending_given_up": self.given_up}


def parse_events(events: Iterable[str]) -> tuple[str, ...]:
    """The events named (`approved` or `artifact.approved`; `all` for every one), known
    and each once, in lifecycle order; `WebhookError` naming an unknown one."""
    wanted: set[str] = set()
    for raw in events:
        for name in str(raw).split(","):
            name = name.strip()
            if not name:
                continue
            if name.startswith(EVENT_TYPE_PREFIX):
                name = name[len(EVENT_TYPE_PREFIX) :]
            if name in (ALL_EVENTS, "*"):
                wanted.update(EVENTS)
            elif name in EVENTS:
                wanted.add(name)
            else:
                raise WebhookError(
                    f"unknown webhook event {name!r}; choose from {', '.join(EVENTS)} "
                    f"(or {ALL_EVENTS})"
                )
    if not wanted:
        raise WebhookError(
            f"name at least one event to send (e.g. --event approved); events: "
            f"{', '.join(EVENTS)}, or {ALL_EVENTS}"
        )
    return tuple(event for event in EVENTS if event in wanted)


class WebhookService:
    """Webhook subscriptions, their delivery log and the delivery worker, over one store."""

    def __init__(
        self,
        store: Store,
        *,
        watch: Callable[[], Watch] | None = None,
        policy: DeliveryPolicy | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        """`watch` opens a watch on the store's change feed that wakes a running worker
        when a transition that may announce an event commits, in any process (without
        one, a worker looks every `poll_seconds`); `policy` is the delivery workers'
        default; `resolver` replaces the system's DNS resolver for the SSRF guard."""
        self.store = store
        self.repository: WebhookStore = store.webhooks
        self.policy = policy or DeliveryPolicy()
        self._watch = watch
        self._resolver = resolver
        self._running: set[DeliveryWorker] = set()

    # --- subscriptions -------------------------------------------------------------------
    async def add(
        self,
        url: str,
        events: Iterable[str],
        *,
        actor: str,
        artifact_type: str | None = None,
        allow_private: bool = False,
    ) -> CreatedWebhook:
        """Subscribe `url` to `events` (of `artifact_type`, or of every type). The URL must
        pass the SSRF guard unless `allow_private` (an admin's choice). The secret that
        signs its deliveries is returned this once."""
        if not actor or not actor.strip():
            raise WebhookError("name who adds this webhook (actor); it is on the record")
        chosen = parse_events(events)
        if artifact_type is not None:
            await ArtifactRepository(self.store.database).get_type(artifact_type)
        target = await resolve_target(url, allow_private=allow_private, resolver=self._resolver)
        secret = new_secret()
        subscription = await self.repository.add_subscription(
            url=target.url,
            events=chosen,
            artifact_type=artifact_type,
            secret=secret,
            allow_private=allow_private,
            actor=actor.strip(),
        )
        for worker in self._running:
            worker.wake()  # it reads the subscriptions again before it next waits
        return CreatedWebhook(subscription, secret)

    async def list(self, *, include_removed: bool = False) -> builtins.list[WebhookSubscription]:
        """The active subscriptions (and the removed ones, with `include_removed`)."""
        return await self.repository.list_subscriptions(include_removed=include_removed)

    async def get(self, subscription_id: str) -> WebhookSubscription:
        return await self.repository.get_subscription(subscription_id)

    async def remove(self, subscription_id: str) -> RemovedWebhook:
        """Stop sending to a subscription: it is deactivated (its log stays readable) and
        its pending deliveries are given up."""
        subscription, given_up = await self.repository.remove_subscription(subscription_id)
        return RemovedWebhook(subscription, given_up)

    # --- the delivery log ----------------------------------------------------------------
    async def deliveries(
        self,
        subscription_id: str | None = None,
        status: str | None = None,
        *,
        artifact_id: str | None = None,
        event: str | None = None,
        limit: int = 50,
        before: int | None = None,
    ) -> builtins.list[WebhookDelivery]:
        """Deliveries, newest first, filtered; `before` (a delivery id) pages back."""
        if status is not None and status not in DELIVERY_STATUSES:
            raise WebhookError(
                f"unknown delivery status {status!r}; choose from {', '.join(DELIVERY_STATUSES)}"
            )
        if not 1 <= limit <= MAX_LOG_LIMIT:
            raise WebhookError(f"limit must be between 1 and {MAX_LOG_LIMIT}; got {limit}")
        event_type = None
        if event is not None and event != ALL_EVENTS:
            names = parse_events([event])
            if len(names) != 1:
                raise WebhookError(f"filter the log by one event at a time; got {event!r}")
            event_type = EVENT_TYPE_PREFIX + names[0]
        return await self.repository.deliveries(
            subscription_id=subscription_id,
            status=status,
            artifact_id=artifact_id,
            event_type=event_type,
            limit=limit,
            before=before,
        )

    async def delivery(self, delivery_id: int) -> WebhookDelivery:
        return await self.repository.get_delivery(delivery_id)

    async def attempts(self, delivery_id: int) -> builtins.list[DeliveryAttempt]:
        """Every attempt at one delivery, oldest first."""
        return await self.repository.attempts(delivery_id)

    async def replay(self, delivery_id: int) -> WebhookDelivery:
        """Send a delivered or failed delivery again: a new delivery of the same message
        (the same `webhook-id` and body, so receivers can deduplicate), due now."""
        replayed = await self.repository.replay(delivery_id)
        for worker in self._running:
            worker.wake()
        return replayed

    async def backlog(self) -> dict[str, int]:
        """How many deliveries are pending, delivered and failed."""
        return await self.repository.counts()

    # --- delivering ----------------------------------------------------------------------
    def worker(
        self, *, policy: DeliveryPolicy | None = None, name: str | None = None
    ) -> DeliveryWorker:
        """A delivery worker over this store (the caller runs and closes it)."""
        return DeliveryWorker(
            self.repository, policy=policy or self.policy, name=name, resolver=self._resolver
        )

    async def deliver_due(self, *, policy: DeliveryPolicy | None = None) -> DeliveryStats:
        """One pass: send every delivery due now (quick retries included), then return."""
        worker = self.worker(policy=policy)
        try:
            return await worker.deliver_due()
        finally:
            await worker.aclose()

    async def run_delivery_worker(
        self,
        stop: asyncio.Event,
        *,
        policy: DeliveryPolicy | None = None,
        name: str | None = None,
    ) -> DeliveryStats:
        """Deliver until `stop` is set, waking at once when a transition that may announce
        an event commits (in this process or, through the change feed, in another), else
        every `poll_seconds`. Sends in flight when `stop` is set are handed back."""
        worker = self.worker(policy=policy, name=name)
        watch = self._watch() if self._watch is not None else None
        self._running.add(worker)
        try:
            return await worker.run(stop, watch=watch)
        finally:
            self._running.discard(worker)
            if watch is not None:
                watch.close()
