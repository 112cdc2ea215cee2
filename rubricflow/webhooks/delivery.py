"""The delivery worker: claims due deliveries from the outbox, signs and POSTs them,
records each attempt, and retries with exponential back-off and jitter until the
receiver answers 2xx, or gives up (`failed`) after `max_attempts` or `max_age_seconds`.

At least once: a delivery is marked delivered only after a 2xx answer, and a worker
killed mid-send leaves its lease to expire, after which another worker (or the same one
restarted) sends it again with the same `webhook-id`. Several workers share the outbox
safely: a claim is a conditional write (and PostgreSQL skips rows another worker has
locked), so one message is never sent by two workers at once.

Redirects are not followed (a redirect could lead to an address the SSRF guard refuses),
a response's body is read up to 1 KiB, and every send has a total time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx

from rubricflow.errors import ConfigurationError, RubricflowError, StoreError
from rubricflow.store.changes import Watch
from rubricflow.store.webhooks import (
    DELIVERED,
    FAILED,
    PENDING,
    ClaimedDelivery,
    WebhookStore,
)
from rubricflow.webhooks.addresses import Resolver, resolve_target
from rubricflow.webhooks.signing import signed_headers

__all__ = ["DeliveryPolicy", "DeliveryStats", "DeliveryWorker"]

logger = logging.getLogger("rubricflow.webhooks")

_BODY_PREVIEW_BYTES = 1024
_USER_AGENT = "rubricflow-webhooks"


@dataclass(frozen=True)
class DeliveryPolicy:
    """How deliveries are sent and retried.

    The n-th retry waits `retry_delay_seconds * 2**(n-1)`, at most
    `max_retry_delay_seconds`, less a random share of up to `jitter` of it (so receivers
    coming back are not hit by every delivery at once). A delivery fails for good after
    `max_attempts` attempts or once it is `max_age_seconds` old. A send may take
    `timeout_seconds` in all; a claimed delivery is this worker's for `lease_seconds`
    (then another worker may take it over: it must outlast a send)."""

    max_attempts: int = 15
    max_age_seconds: float = 24 * 3600.0
    retry_delay_seconds: float = 5.0
    max_retry_delay_seconds: float = 3600.0
    jitter: float = 0.5
    timeout_seconds: float = 10.0
    lease_seconds: float = 60.0
    #: the longest wait between looks at the outbox when nothing wakes the worker
    poll_seconds: float = 0.5
    #: deliveries claimed at once, and sent at once
    batch: int = 16
    #: seconds the sends in flight may take to finish once the worker is told to stop;
    #: those still running then are handed back (sent again later, by any worker)
    grace_seconds: float = 5.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigurationError(f"max_attempts must be at least 1; got {self.max_attempts}")
        for name in (
            "max_age_seconds",
            "retry_delay_seconds",
            "max_retry_delay_seconds",
            "timeout_seconds",
            "lease_seconds",
            "poll_seconds",
        ):
            if getattr(self, name) <= 0:
                raise ConfigurationError(f"{name} must be above 0; got {getattr(self, name)}")
        if not 0 <= self.jitter <= 1:
            raise ConfigurationError(f"jitter must be between 0 and 1; got {self.jitter}")
        if self.lease_seconds <= self.timeout_seconds:
            raise ConfigurationError(
                f"lease_seconds ({self.lease_seconds:g}) must be longer than timeout_seconds "
                f"({self.timeout_seconds:g}), or another worker would take over a send still "
                "in flight"
            )
        if self.grace_seconds < 0:
            raise ConfigurationError(f"grace_seconds must be 0 or more; got {self.grace_seconds}")
        if self.batch < 1:
            raise ConfigurationError(f"batch must be at least 1; got {self.batch}")

    def retry_delay(self, attempts: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after the `attempts`-th failed attempt."""
        delay = min(
            self.retry_delay_seconds * 2 ** min(max(attempts - 1, 0), 30),
            max(self.max_retry_delay_seconds, self.retry_delay_seconds),
        )
        return float(delay * (1 - self.jitter * (rng or random).random()))


@dataclass
class DeliveryStats:
    """What a worker did: attempts made, and how they ended."""

    attempts: int = 0
    delivered: int = 0
    retried: int = 0
    failed: int = 0
    #: sends cut short by a stop and handed back (sent again later, by any worker)
    handed_back: int = 0
    #: outcomes not recorded because the lease had passed to another worker
    lost_leases: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "delivered": self.delivered,
            "retried": self.retried,
            "failed": self.failed,
            "handed_back": self.handed_back,
            "lost_leases": self.lost_leases,
        }


class DeliveryWorker:
    """Sends the outbox's due deliveries: `deliver_due()` once, or `run(stop)` until
    `stop` is set. `wake()` makes a waiting `run` look at the outbox at once (the
    application calls it when a transition that announces an event commits)."""

    def __init__(
        self,
        store: WebhookStore,
        *,
        policy: DeliveryPolicy | None = None,
        name: str | None = None,
        client: httpx.AsyncClient | None = None,
        resolver: Resolver | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.policy = policy or DeliveryPolicy()
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._client = client
        self._owns_client = client is None
        self._resolver = resolver
        self._rng = rng or random.Random()
        self._wake = asyncio.Event()
        self.stats = DeliveryStats()

    # --- the HTTP client ---------------------------------------------------------------------
    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.policy.timeout_seconds),
                follow_redirects=False,
                trust_env=False,  # a proxy from the environment would bypass the SSRF guard
                headers={"user-agent": _USER_AGENT},
                transport=httpx.AsyncHTTPTransport(
                    limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
                    # a request's head and body go out at once, not 40 ms apart (Nagle)
                    socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                ),
            )
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client this worker opened (a given one stays open)."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.aclose()

    # --- running ------------------------------------------------------------------------------
    def wake(self) -> None:
        """Look at the outbox now (a new delivery was committed)."""
        self._wake.set()

    async def deliver_due(self, *, stop: asyncio.Event | None = None) -> DeliveryStats:
        """Send every delivery due now (and those that fall due while this runs: a quick
        retry), batch by batch, until none is due or `stop` is set; the worker's stats."""
        while stop is None or not stop.is_set():
            lease_until = _utcnow() + timedelta(seconds=self.policy.lease_seconds)
            claimed = await self.store.claim(
                owner=self.name, lease_until=lease_until, limit=self.policy.batch
            )
            if not claimed:
                break
            await self._send_all(claimed, stop)
        return self.stats

    async def run(self, stop: asyncio.Event, *, watch: Watch | None = None) -> DeliveryStats:
        """Deliver until `stop` is set: after each pass, wait until woken (`wake()`, or
        `watch`: the store's change feed), until the next delivery falls due, or
        `poll_seconds`, whichever comes first. A store that cannot be reached is retried at
        the poll interval."""
        try:
            while not stop.is_set():
                self._wake.clear()
                if watch is not None:
                    watch.clear()  # a change from now on wakes the wait below
                wait = self.policy.poll_seconds
                try:
                    await self.deliver_due(stop=stop)
                    due = await self.store.next_due()
                except StoreError:
                    logger.exception("%s: cannot reach the outbox; retrying", self.name)
                else:
                    if due is not None:
                        wait = min(wait, max(0.0, (due - _utcnow()).total_seconds()))
                if stop.is_set():
                    break
                await _first_of(stop, self._wake, watch=watch, timeout=wait)
        finally:
            await self.aclose()
        return self.stats

    async def _send_all(self, claimed: list[ClaimedDelivery], stop: asyncio.Event | None) -> None:
        """Send a batch at once; when `stop` is set meanwhile, the sends still in flight
        get the policy's grace period to finish, then are cut short and handed back
        (their lease released, their attempt not counted)."""
        sends = {asyncio.create_task(self._send(item)): item for item in claimed}
        stopper = asyncio.create_task(stop.wait()) if stop is not None else None
        try:
            pending: set[asyncio.Task[Any]] = set(sends)
            while pending:
                waiting = pending | ({stopper} if stopper is not None else set())
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                pending -= done
                if stopper is not None and stopper in done:
                    if pending:
                        _, pending = await asyncio.wait(pending, timeout=self.policy.grace_seconds)
                    for task in pending:
                        task.cancel()
                    await asyncio.gather(*pending, return_exceptions=True)
                    for task in pending:
                        await self._hand_back(sends[task])
                    break
        finally:
            if stopper is not None:
                stopper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await stopper

    async def _hand_back(self, claimed: ClaimedDelivery) -> None:
        try:
            if await self.store.release(claimed):
                self.stats.handed_back += 1
        except RubricflowError:  # its lease runs out and another worker takes it over
            logger.exception("%s: could not hand back delivery %s", self.name, claimed.delivery.id)

    # --- one send -----------------------------------------------------------------------------
    async def _send(self, claimed: ClaimedDelivery) -> None:
        delivery = claimed.delivery
        started_at = _utcnow()
        started = time.perf_counter()
        status_code: int | None = None
        error: str | None = None
        if not claimed.active:
            await self._record(claimed, FAILED, None, 0.0, "the subscription was removed")
            return
        try:
            status_code, error = await asyncio.wait_for(
                self._post(claimed), timeout=self.policy.timeout_seconds
            )
        except asyncio.TimeoutError:
            error = f"no answer within {self.policy.timeout_seconds:g}s"
        except RubricflowError as refused:  # the SSRF guard, at delivery time
            error = str(refused)
        except httpx.HTTPError as failure:
            error = (
                f"{type(failure).__name__}: {failure}" if str(failure) else type(failure).__name__
            )
        latency_ms = (time.perf_counter() - started) * 1000
        if error is None:
            await self._record(claimed, DELIVERED, status_code, latency_ms, None, started_at)
            return
        age = (_utcnow() - delivery.created_at).total_seconds()
        if delivery.attempts >= self.policy.max_attempts or age >= self.policy.max_age_seconds:
            why = (
                f"{delivery.attempts} attempts"
                if delivery.attempts >= self.policy.max_attempts
                else f"{age:.0f}s (max age {self.policy.max_age_seconds:g}s)"
            )
            await self._record(
                claimed,
                FAILED,
                status_code,
                latency_ms,
                f"{error}; gave up after {why}",
                started_at,
            )
            return
        delay = self.policy.retry_delay(delivery.attempts, self._rng)
        await self._record(
            claimed,
            PENDING,
            status_code,
            latency_ms,
            error,
            started_at,
            next_attempt_at=_utcnow() + timedelta(seconds=delay),
        )

    async def _post(self, claimed: ClaimedDelivery) -> tuple[int, str | None]:
        """POST the delivery to the checked address; (status, None) for a 2xx answer, else
        (status, why)."""
        target = await resolve_target(
            claimed.url, allow_private=claimed.allow_private, resolver=self._resolver
        )
        url = httpx.URL(target.url)
        extensions: dict[str, Any] = {}
        headers = {
            "content-type": "application/json",
            **signed_headers(claimed.secret, claimed.delivery.message_id, claimed.body, _utcnow()),
        }
        if target.address is not None and target.address != target.host:
            # connect to the address that was checked, naming the host for HTTP and TLS
            headers["host"] = url.netloc.decode("ascii")
            extensions["sni_hostname"] = target.host
            url = url.copy_with(host=target.address)
        request = self._http().build_request(
            "POST",
            url,
            content=claimed.body.encode("utf-8"),
            headers=headers,
            extensions=extensions,
        )
        response = await self._http().send(request, stream=True)
        try:
            status = response.status_code
            # read a short answer whole, so its connection can serve the next send
            preview = b""
            async for chunk in response.aiter_raw():
                preview += chunk
                if len(preview) >= _BODY_PREVIEW_BYTES:
                    break
            if 200 <= status < 300:
                return status, None
            text = preview[:_BODY_PREVIEW_BYTES].decode("utf-8", "replace").strip()
            if 300 <= status < 400:
                where = response.headers.get("location", "")
                return status, (
                    f"HTTP {status}: redirects are not followed; register the URL it points to"
                    + (f" ({where})" if where else "")
                )
            return status, f"HTTP {status}" + (f": {text[:200]}" if text else "")
        finally:
            await response.aclose()

    async def _record(
        self,
        claimed: ClaimedDelivery,
        status: str,
        status_code: int | None,
        latency_ms: float,
        error: str | None,
        attempted_at: datetime | None = None,
        *,
        next_attempt_at: datetime | None = None,
    ) -> None:
        self.stats.attempts += 1
        counted = {DELIVERED: "delivered", PENDING: "retried", FAILED: "failed"}[status]
        setattr(self.stats, counted, getattr(self.stats, counted) + 1)
        held = await self.store.record_attempt(
            claimed,
            status=status,
            status_code=status_code,
            latency_ms=latency_ms,
            error=error,
            next_attempt_at=next_attempt_at,
            attempted_at=attempted_at,
        )
        if not held:
            self.stats.lost_leases += 1
            logger.warning(
                "%s: delivery %s was taken over by another worker; its outcome here (%s) "
                "is logged as an attempt only",
                self.name,
                claimed.delivery.id,
                status,
            )
        elif status == FAILED:
            logger.warning(
                "%s: delivery %s (%s) failed for good: %s",
                self.name,
                claimed.delivery.id,
                claimed.delivery.event_type,
                error,
            )


async def _first_of(*events: asyncio.Event, watch: Watch | None, timeout: float) -> None:
    """Wait until any of `events` is set or `watch` is woken, or `timeout` seconds."""
    waits: list[asyncio.Task[Any]] = [asyncio.create_task(event.wait()) for event in events]
    if watch is not None:
        waits.append(asyncio.create_task(watch.wait()))
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)
