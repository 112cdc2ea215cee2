"""Webhook subscriptions, the outbox of deliveries and the log of their attempts.

The outbox is written by `write_outbox`, which `ArtifactTransaction.transition` calls in
the transaction of every transition: a transition that announces an event (see
`announced_event`) writes one delivery per matching active subscription, committed with
the transition or not at all. Delivery workers claim due deliveries with a lease (as
workers claim reviews: PostgreSQL skips rows another worker holds locked, and a claim is a
conditional write), send them, and record each attempt here; what counts as delivered,
when to retry and when to give up is the worker's policy (`rubricflow.webhooks`).

A subscription's secret is kept (it signs every delivery; the receiver holds the same) but
never returned by `list`/`get`: only `claim` reads it, for the worker that signs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from rubricflow.errors import NotFoundError, WebhookError
from rubricflow.records.webhooks import DeliveryAttempt, WebhookDelivery, WebhookSubscription
from rubricflow.store._sql import as_utc, to_utc, utcnow
from rubricflow.store.artifact_models import Artifact, ArtifactEvent, Change
from rubricflow.store.database import Database
from rubricflow.store.tables import (
    EvaluationRow,
    WebhookAttemptRow,
    WebhookDeliveryRow,
    WebhookSubscriptionRow,
)

__all__ = [
    "DELIVERED",
    "DELIVERY_STATUSES",
    "EVENTS",
    "EVENT_TYPE_PREFIX",
    "FAILED",
    "PENDING",
    "AttemptOutcome",
    "ClaimedDelivery",
    "DeliveryAttempt",
    "WebhookDelivery",
    "WebhookStore",
    "WebhookSubscription",
    "announced_event",
    "write_outbox",
]

#: the events a subscription can ask for, in lifecycle order
EVENTS: tuple[str, ...] = (
    "submitted",
    "approved",
    "needs_revision",
    "rejected",
    "overridden",
    "review_incomplete",
)
#: a payload's `type` is this prefix and the event: `artifact.approved`
EVENT_TYPE_PREFIX = "artifact."

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
DELIVERY_STATUSES: tuple[str, ...] = (PENDING, DELIVERED, FAILED)

# The lifecycle's triggers (rubricflow.review.lifecycle.EDGES) and the event each
# announces; docs/webhooks.md, "Events", is the table a user reads.
_EVENT_OF_TRIGGER: dict[str, str] = {
    "submit": "submitted",
    "retry": "submitted",  # a dead letter a person sends back to the queue
    "approve": "approved",  # by a passing review, or a person after await_approval
    "request_revision": "needs_revision",
    "reject": "rejected",
    "override": "overridden",
}
# a review that could not finish (an error, an incomplete evaluation, an expired lease):
# back to the queue, or dead-lettered at the limit; a worker handing a review back when
# it stops fires `abort_review` too, but counts no failure and announces nothing
_FAILURE_TRIGGERS = frozenset({"abort_review", "dead_letter"})

_subscriptions = WebhookSubscriptionRow.__table__  # type: ignore[attr-defined]
_deliveries = WebhookDeliveryRow.__table__  # type: ignore[attr-defined]
_attempts = WebhookAttemptRow.__table__  # type: ignore[attr-defined]
_evaluations = EvaluationRow.__table__  # type: ignore[attr-defined]


def announced_event(trigger: str, *, failed: bool = False) -> str | None:
    """The webhook event a transition by `trigger` announces (`failed`: it records a
    failed review), or None for one that announces nothing (a claim, a revision...)."""
    if trigger in _FAILURE_TRIGGERS:
        return "review_incomplete" if failed else None
    return _EVENT_OF_TRIGGER.get(trigger)


# --- typed results ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ClaimedDelivery:
    """A delivery a worker holds the lease on, with what sending it needs: the exact body
    (signed as stored), the subscription's URL, secret and whether it may reach private
    addresses (and whether it is still active)."""

    delivery: WebhookDelivery
    body: str
    url: str
    secret: str = field(repr=False)
    allow_private: bool
    active: bool
    owner: str


@dataclass(frozen=True)
class AttemptOutcome:
    """How one attempt at a claimed delivery ended, to record: the delivery's new status
    (pending again with `next_attempt_at`, delivered or failed), the HTTP status (None: no
    response), how long it took and what went wrong."""

    claimed: ClaimedDelivery
    status: str
    status_code: int | None
    latency_ms: float
    error: str | None
    next_attempt_at: datetime | None = None
    attempted_at: datetime | None = None


# --- statements built once ----------------------------------------------------------------------
# One delivery per matching active subscription, in one INSERT ... SELECT: when nothing
# matches (the common case) the transition pays one statement, run on the SQLite fast
# path's direct writes, not a read through SQLAlchemy's result machinery. The event is
# found in the subscription's JSON list with instr/strpos, never LIKE: SQLite prepares a
# statement again on every run whose LIKE pattern is a bound value (ten times the cost).
_OUTBOX_COLUMNS = [
    "message_id",
    "subscription_id",
    "event_type",
    "artifact_id",
    "event_seq",
    "payload",
    "created_at",
    "status",
    "attempts",
    "next_attempt_at",
]


@cache
def _write_outbox(postgres: bool) -> Any:
    """The outbox's INSERT ... SELECT in one dialect (built once per dialect)."""
    position = sa.func.strpos if postgres else sa.func.instr
    return _deliveries.insert().from_select(
        _OUTBOX_COLUMNS,
        sa.select(
            sa.bindparam("message_id", type_=sa.String),
            _subscriptions.c.id,
            sa.bindparam("event_type", type_=sa.String),
            sa.bindparam("artifact_id", type_=sa.String),
            sa.bindparam("event_seq", type_=sa.Integer),
            sa.bindparam("payload", type_=sa.Text),
            sa.bindparam("created_at", type_=sa.DateTime(timezone=True)),
            sa.bindparam("status", type_=sa.String),
            sa.bindparam("attempts", type_=sa.Integer),
            sa.bindparam("next_attempt_at", type_=sa.DateTime(timezone=True)),
        ).where(
            _subscriptions.c.active,
            _subscriptions.c.artifact_type.is_(None)
            | (_subscriptions.c.artifact_type == sa.bindparam("artifact_type", type_=sa.String)),
            position(_subscriptions.c.events, sa.bindparam("needle", type_=sa.String)) > 0,
        ),
    )


_SET_PAYLOAD = (
    _deliveries.update()
    .where(_deliveries.c.message_id == sa.bindparam("match_message_id"))
    .values(payload=sa.bindparam("new_payload"))
)
_SCORES = sa.select(
    _evaluations.c.id,
    _evaluations.c.rubric_id,
    _evaluations.c.rubric_version,
    _evaluations.c.verdict,
    _evaluations.c.passed,
    _evaluations.c.score,
).where(_evaluations.c.id.in_(sa.bindparam("ids", expanding=True)))
_INSERT_DELIVERY = _deliveries.insert()
_INSERT_ATTEMPT = _attempts.insert()
_FINISH = _deliveries.update().where(
    _deliveries.c.id == sa.bindparam("match_id"),
    _deliveries.c.lease_owner == sa.bindparam("match_owner"),
)
# the deliveries of a batch of outcomes this worker still holds (PostgreSQL locks them, so
# no lease can pass to another worker between this read and the writes that follow)
_HELD = sa.select(_deliveries.c.id).where(
    _deliveries.c.id.in_(sa.bindparam("ids", expanding=True)),
    _deliveries.c.lease_owner == sa.bindparam("owner"),
)
_RELEASE = (
    _deliveries.update()
    .where(
        _deliveries.c.id == sa.bindparam("match_id"),
        _deliveries.c.lease_owner == sa.bindparam("match_owner"),
    )
    .values(lease_owner=None, lease_expires_at=None, attempts=_deliveries.c.attempts - 1)
)
_CLAIMED = sa.select(
    _deliveries,
    _subscriptions.c.url,
    _subscriptions.c.secret,
    _subscriptions.c.allow_private,
    _subscriptions.c.active,
).join(_subscriptions, _subscriptions.c.id == _deliveries.c.subscription_id)


_ANY_ACTIVE = sa.select(_subscriptions.c.id).where(_subscriptions.c.active).limit(1)
_ANY_DUE = (
    sa.select(_deliveries.c.id)
    .where(
        _deliveries.c.status == PENDING,
        _deliveries.c.next_attempt_at <= sa.bindparam("now", type_=sa.DateTime(timezone=True)),
        _deliveries.c.lease_expires_at.is_(None)
        | (_deliveries.c.lease_expires_at < sa.bindparam("now", type_=sa.DateTime(timezone=True))),
    )
    .limit(1)
)


@cache
def _claim(postgres: bool) -> Any:
    """Take the lease on up to `limit` due deliveries in one statement, giving their ids:
    pending, their time come, not leased or their lease expired, oldest due first. The
    conditions are checked again by the UPDATE itself, so two workers never both win one
    delivery; PostgreSQL skips rows another worker has locked (a claim in flight) instead
    of waiting for them, and walks `ix_webhook_deliveries_due` (status, next_attempt_at)."""
    c = _deliveries.c
    now = sa.bindparam("now", type_=sa.DateTime(timezone=True))
    free = c.lease_expires_at.is_(None) | (c.lease_expires_at < now)
    due = (
        sa.select(c.id)
        .where(c.status == PENDING, c.next_attempt_at <= now, free)
        .order_by(c.next_attempt_at, c.id)
        .limit(sa.bindparam("limit", type_=sa.Integer))
    )
    if postgres:
        due = due.with_for_update(skip_locked=True)
    return (
        _deliveries.update()
        .where(c.id.in_(due.scalar_subquery()), c.status == PENDING, free)
        .values(
            lease_owner=sa.bindparam("owner"),
            lease_expires_at=sa.bindparam("until"),
            attempts=c.attempts + 1,
        )
        .returning(c.id)
    )


def _iso(moment: datetime) -> str:
    return to_utc(moment).isoformat().replace("+00:00", "Z")


async def write_outbox(
    connection: AsyncConnection, artifact: Artifact, change: Change, event: ArtifactEvent
) -> int:
    """In the transition's own transaction: one delivery of the event `change` announces
    to each active subscription that asked for it (for the artifact's type, or for all);
    how many were written. One statement when nothing matches, and no payload built: the
    deliveries are inserted with an empty one, filled in by a second statement (in the
    same transaction, so no reader sees them empty) only when there are any."""
    failed = change.failures is not None and change.failures > artifact.failures
    name = announced_event(change.trigger, failed=failed)
    if name is None:
        return 0
    event_type = EVENT_TYPE_PREFIX + name
    message_id = f"msg_{uuid.uuid4().hex}"
    now = utcnow()
    written = await connection.execute(
        _write_outbox(connection.dialect.name == "postgresql"),
        {
            "message_id": message_id,
            "event_type": event_type,
            "artifact_id": artifact.id,
            "event_seq": event.seq,
            "payload": "",
            "created_at": now,
            "status": PENDING,
            "attempts": 0,
            "next_attempt_at": now,
            "artifact_type": artifact.type,
            "needle": json.dumps(name),  # "approved", quotes included: a whole name
        },
    )
    count = int(written.rowcount)
    if not count:
        return 0
    # someone listens: the payload, with the evaluations' verdicts and scores
    payload: dict[str, Any] = {
        "type": event_type,
        "timestamp": _iso(event.created_at),
        "data": {
            "artifact_id": artifact.id,
            "artifact_type": artifact.type,
            "event": name,
            "status": event.dest,
            "previous_status": event.source,
            "revision": event.revision,
            "event_seq": event.seq,
            "trigger": event.trigger,
            "actor": event.actor,
            "reason": event.reason,
            "awaiting_approval": change.awaiting_approval,
            "evaluations": [],
        },
    }
    if event.evaluation_ids:
        rows = {
            row.id: row
            for row in await connection.execute(_SCORES, {"ids": list(event.evaluation_ids)})
        }
        payload["data"]["evaluations"] = [
            {
                "id": row.id,
                "rubric_id": row.rubric_id,
                "rubric_version": row.rubric_version,
                "verdict": row.verdict,
                "passed": bool(row.passed),
                "score": row.score,
            }
            for row in (rows.get(i) for i in event.evaluation_ids)
            if row is not None
        ]
    await connection.execute(
        _SET_PAYLOAD, {"match_message_id": message_id, "new_payload": _body(payload)}
    )
    return count


def _body(payload: dict[str, Any]) -> str:
    """The exact text sent (and signed): compact JSON, non-ASCII kept."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _subscription(row: Any) -> WebhookSubscription:
    return WebhookSubscription(
        id=row.id,
        url=row.url,
        events=tuple(json.loads(row.events)),
        artifact_type=row.artifact_type,
        allow_private=bool(row.allow_private),
        active=bool(row.active),
        created_by=row.created_by,
        created_at=as_utc(row.created_at),
        removed_at=as_utc(row.removed_at) if row.removed_at else None,
    )


def _delivery(row: Any) -> WebhookDelivery:
    return WebhookDelivery(
        id=int(row.id),
        message_id=row.message_id,
        subscription_id=row.subscription_id,
        event_type=row.event_type,
        artifact_id=row.artifact_id,
        event_seq=int(row.event_seq),
        payload=json.loads(row.payload),
        created_at=as_utc(row.created_at),
        status=row.status,
        attempts=int(row.attempts),
        next_attempt_at=as_utc(row.next_attempt_at),
        last_status_code=row.last_status_code,
        last_error=row.last_error,
        finished_at=as_utc(row.finished_at) if row.finished_at else None,
        replay_of=row.replay_of,
    )


def _attempt(row: Any) -> DeliveryAttempt:
    return DeliveryAttempt(
        id=int(row.id),
        delivery_id=int(row.delivery_id),
        attempt=int(row.attempt),
        attempted_at=as_utc(row.attempted_at),
        status_code=row.status_code,
        latency_ms=float(row.latency_ms),
        error=row.error,
        worker=row.worker,
    )


def _no_subscription(subscription_id: str) -> NotFoundError:
    return NotFoundError(
        f"no webhook subscription {subscription_id!r}; `rubricflow webhooks list` shows them"
    )


def _no_delivery(delivery_id: int) -> NotFoundError:
    return NotFoundError(
        f"no webhook delivery {delivery_id}; `rubricflow webhooks log` shows the deliveries"
    )


class WebhookStore:
    """Subscriptions, the outbox and the attempt log in one database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    # --- subscriptions -------------------------------------------------------------------
    async def add_subscription(
        self,
        *,
        url: str,
        events: Sequence[str],
        artifact_type: str | None,
        secret: str,
        allow_private: bool,
        actor: str,
    ) -> WebhookSubscription:
        """Store a new active subscription (checked by the caller) under a new id."""
        subscription = WebhookSubscription(
            id=f"wh_{uuid.uuid4().hex[:20]}",
            url=url,
            events=tuple(events),
            artifact_type=artifact_type,
            allow_private=allow_private,
            active=True,
            created_by=actor,
            created_at=utcnow(),
        )
        async with self.database.transaction() as connection:
            await connection.execute(
                _subscriptions.insert(),
                {
                    "id": subscription.id,
                    "url": url,
                    "events": json.dumps(list(events)),
                    "artifact_type": artifact_type,
                    "secret": secret,
                    "allow_private": allow_private,
                    "active": True,
                    "created_by": actor,
                    "created_at": subscription.created_at,
                    "removed_at": None,
                },
            )
        return subscription

    async def list_subscriptions(
        self, *, include_removed: bool = False
    ) -> list[WebhookSubscription]:
        query = sa.select(_subscriptions).order_by(_subscriptions.c.created_at, _subscriptions.c.id)
        if not include_removed:
            query = query.where(_subscriptions.c.active)
        async with self.database.read() as connection:
            return [_subscription(row) for row in await connection.execute(query)]

    async def get_subscription(self, subscription_id: str) -> WebhookSubscription:
        async with self.database.read() as connection:
            row = (
                await connection.execute(
                    sa.select(_subscriptions).where(_subscriptions.c.id == subscription_id)
                )
            ).first()
        if row is None:
            raise _no_subscription(subscription_id)
        return _subscription(row)

    async def remove_subscription(self, subscription_id: str) -> tuple[WebhookSubscription, int]:
        """Deactivate a subscription (its log stays readable) and give up its pending
        deliveries; the subscription as removed and how many deliveries were given up."""
        now = utcnow()
        async with self.database.transaction() as connection:
            done = await connection.execute(
                _subscriptions.update()
                .where(_subscriptions.c.id == subscription_id, _subscriptions.c.active)
                .values(active=False, removed_at=now)
            )
            if done.rowcount != 1:
                row = (
                    await connection.execute(
                        sa.select(_subscriptions.c.id).where(_subscriptions.c.id == subscription_id)
                    )
                ).first()
                if row is None:
                    raise _no_subscription(subscription_id)
                raise WebhookError(f"webhook subscription {subscription_id!r} is removed already")
            given_up = await connection.execute(
                _deliveries.update()
                .where(
                    _deliveries.c.subscription_id == subscription_id,
                    _deliveries.c.status == PENDING,
                )
                .values(
                    status=FAILED,
                    last_error="the subscription was removed",
                    finished_at=now,
                    lease_owner=None,
                    lease_expires_at=None,
                )
            )
            row = (
                await connection.execute(
                    sa.select(_subscriptions).where(_subscriptions.c.id == subscription_id)
                )
            ).one()
        return _subscription(row), int(given_up.rowcount)

    # --- the delivery log ----------------------------------------------------------------
    async def deliveries(
        self,
        *,
        subscription_id: str | None = None,
        status: str | None = None,
        artifact_id: str | None = None,
        event_type: str | None = None,
        limit: int = 50,
        before: int | None = None,
    ) -> list[WebhookDelivery]:
        """Deliveries, newest first; `before` (a delivery id) pages back in time."""
        c = _deliveries.c
        query = sa.select(_deliveries).order_by(c.id.desc()).limit(limit)
        if subscription_id is not None:
            query = query.where(c.subscription_id == subscription_id)
        if status is not None:
            query = query.where(c.status == status)
        if artifact_id is not None:
            query = query.where(c.artifact_id == artifact_id)
        if event_type is not None:
            query = query.where(c.event_type == event_type)
        if before is not None:
            query = query.where(c.id < before)
        async with self.database.read() as connection:
            return [_delivery(row) for row in await connection.execute(query)]

    async def get_delivery(self, delivery_id: int) -> WebhookDelivery:
        async with self.database.read() as connection:
            row = (
                await connection.execute(
                    sa.select(_deliveries).where(_deliveries.c.id == delivery_id)
                )
            ).first()
        if row is None:
            raise _no_delivery(delivery_id)
        return _delivery(row)

    async def attempts(self, delivery_id: int) -> list[DeliveryAttempt]:
        """Every attempt at a delivery, oldest first (`NotFoundError` for no delivery)."""
        async with self.database.read() as connection:
            exists = (
                await connection.execute(
                    sa.select(_deliveries.c.id).where(_deliveries.c.id == delivery_id)
                )
            ).first()
            if exists is None:
                raise _no_delivery(delivery_id)
            rows = await connection.execute(
                sa.select(_attempts)
                .where(_attempts.c.delivery_id == delivery_id)
                .order_by(_attempts.c.id)
            )
            return [_attempt(row) for row in rows]

    async def counts(self) -> dict[str, int]:
        """How many deliveries are in each status (the backlog is `pending`)."""
        query = sa.select(_deliveries.c.status, sa.func.count()).group_by(_deliveries.c.status)
        async with self.database.read() as connection:
            found = {row[0]: int(row[1]) for row in await connection.execute(query)}
        return {status: found.get(status, 0) for status in DELIVERY_STATUSES}

    async def replay(self, delivery_id: int) -> WebhookDelivery:
        """Queue a delivery again as a new delivery of the same message (same message id
        and body, so a receiver that saw it already can tell), due now. Refused while the
        delivery is still pending, or when its subscription was removed."""
        now = utcnow()
        async with self.database.transaction() as connection:
            row = (
                await connection.execute(
                    sa.select(_deliveries, _subscriptions.c.active)
                    .join(_subscriptions, _subscriptions.c.id == _deliveries.c.subscription_id)
                    .where(_deliveries.c.id == delivery_id)
                )
            ).first()
            if row is None:
                raise _no_delivery(delivery_id)
            if row.status == PENDING:
                raise WebhookError(
                    f"webhook delivery {delivery_id} is still pending (attempt {row.attempts} "
                    f"made, next at {_iso(as_utc(row.next_attempt_at))}); replay it once it is "
                    "delivered or failed"
                )
            if not row.active:
                raise WebhookError(
                    f"webhook delivery {delivery_id} belongs to subscription "
                    f"{row.subscription_id!r}, which was removed; add the URL again "
                    "(`rubricflow webhooks add`) to receive new events"
                )
            values = {
                "message_id": row.message_id,
                "subscription_id": row.subscription_id,
                "event_type": row.event_type,
                "artifact_id": row.artifact_id,
                "event_seq": row.event_seq,
                "payload": row.payload,
                "created_at": now,
                "status": PENDING,
                "attempts": 0,
                "next_attempt_at": now,
                "lease_owner": None,
                "lease_expires_at": None,
                "last_status_code": None,
                "last_error": None,
                "finished_at": None,
                "replay_of": delivery_id,
            }
            inserted = await connection.execute(
                _deliveries.insert().returning(_deliveries.c.id), values
            )
            new_id = int(inserted.scalar_one())
        return await self.get_delivery(new_id)

    # --- delivery workers ----------------------------------------------------------------
    async def claim(
        self, *, owner: str, lease_until: datetime, now: datetime | None = None, limit: int = 10
    ) -> list[ClaimedDelivery]:
        """Take the lease on up to `limit` due deliveries (pending, their time come, not
        leased or their lease expired), oldest due first; each claim counts an attempt.
        PostgreSQL skips rows other workers hold locked; the conditional write makes each
        delivery one worker's at a time."""
        now = now or utcnow()
        # a read first: a worker woken by every transition mostly finds nothing due, and
        # on SQLite a write transaction would take the one writer's lock for nothing
        async with self.database.read() as connection:
            if (await connection.execute(_ANY_DUE, {"now": now})).first() is None:
                return []
        async with self.database.transaction() as connection:
            ids = [
                row.id
                for row in await connection.execute(
                    _claim(connection.dialect.name == "postgresql"),
                    {"now": now, "owner": owner, "until": lease_until, "limit": limit},
                )
            ]
            if not ids:
                return []
            c = _deliveries.c
            rows = await connection.execute(
                _CLAIMED.where(c.id.in_(ids)).order_by(c.next_attempt_at, c.id)
            )
            return [
                ClaimedDelivery(
                    delivery=_delivery(row),
                    body=row.payload,
                    url=row.url,
                    secret=row.secret,
                    allow_private=bool(row.allow_private),
                    active=bool(row.active),
                    owner=owner,
                )
                for row in rows
            ]

    async def record_attempt(
        self,
        claimed: ClaimedDelivery,
        *,
        status: str,
        status_code: int | None,
        latency_ms: float,
        error: str | None,
        next_attempt_at: datetime | None = None,
        attempted_at: datetime | None = None,
    ) -> bool:
        """Log one attempt and leave the delivery in `status` (pending again, with its
        `next_attempt_at`; delivered; failed), releasing the lease. False when this worker
        no longer held the lease (it expired and another took over): the attempt is
        logged, the delivery left as the other worker leaves it."""
        outcome = AttemptOutcome(
            claimed, status, status_code, latency_ms, error, next_attempt_at, attempted_at
        )
        (held,) = await self.record_attempts([outcome])
        return held

    async def record_attempts(self, outcomes: Sequence[AttemptOutcome]) -> list[bool]:
        """`record_attempt` for many outcomes in one transaction (a worker records its
        sends in batches: one commit, not one per send); for each, whether this worker
        still held its lease."""
        if not outcomes:
            return []
        now = utcnow()
        held: set[int] = set()
        async with self.database.transaction() as connection:
            owners: dict[str, list[int]] = {}
            for outcome in outcomes:
                owners.setdefault(outcome.claimed.owner, []).append(outcome.claimed.delivery.id)
            for owner, ids in owners.items():
                query = _HELD
                if connection.dialect.name == "postgresql":
                    query = query.with_for_update()
                rows = await connection.execute(query, {"ids": ids, "owner": owner})
                held.update(int(row.id) for row in rows)
            await connection.execute(
                _INSERT_ATTEMPT,
                [
                    {
                        "delivery_id": o.claimed.delivery.id,
                        "attempt": o.claimed.delivery.attempts,
                        "attempted_at": o.attempted_at or now,
                        "status_code": o.status_code,
                        "latency_ms": o.latency_ms,
                        "error": o.error,
                        "worker": o.claimed.owner,
                    }
                    for o in outcomes
                ],
            )
            finished = [
                {
                    "match_id": o.claimed.delivery.id,
                    "match_owner": o.claimed.owner,
                    "status": o.status,
                    "last_status_code": o.status_code,
                    "last_error": o.error,
                    "lease_owner": None,
                    "lease_expires_at": None,
                    "finished_at": None if o.status == PENDING else now,
                    "next_attempt_at": o.next_attempt_at or o.claimed.delivery.next_attempt_at,
                }
                for o in outcomes
                if o.claimed.delivery.id in held
            ]
            if finished:
                await connection.execute(_FINISH, finished)
        return [o.claimed.delivery.id in held for o in outcomes]

    async def release(self, claimed: ClaimedDelivery) -> bool:
        """Hand a claimed delivery back unsent (its worker is stopping): due at once for
        any worker, the claim's attempt not counted. False when the lease had passed."""
        async with self.database.transaction() as connection:
            done = await connection.execute(
                _RELEASE, {"match_id": claimed.delivery.id, "match_owner": claimed.owner}
            )
        return bool(done.rowcount == 1)

    async def any_active_subscription(self) -> bool:
        """Whether any subscription is active (with none, no transition writes a
        delivery: a worker need not look at the outbox on every one)."""
        async with self.database.read() as connection:
            return (await connection.execute(_ANY_ACTIVE)).first() is not None

    async def next_due(self) -> datetime | None:
        """When the earliest pending delivery is due (None: nothing pending)."""
        c = _deliveries.c
        # a leased delivery is due again only when its lease runs out
        due_at = sa.case(
            (c.lease_expires_at > c.next_attempt_at, c.lease_expires_at), else_=c.next_attempt_at
        )
        async with self.database.read() as connection:
            value = (
                await connection.execute(sa.select(sa.func.min(due_at)).where(c.status == PENDING))
            ).scalar_one()
        if value is None:
            return None
        if isinstance(value, str):  # SQLite hands back a CASE over times as text
            value = datetime.fromisoformat(value)
        return as_utc(value)
