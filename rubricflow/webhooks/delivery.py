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
    AttemptOutcome,
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
    #: the most deliveries in flight at once: a rolling window, claimed again as sends
    #: finish (a slow receiver holds one slot, not the whole window)
    batch: int = 32
    #: seconds a finished send's outcome may wait to be recorded with others in one
    #: transaction (its lease keeps it this worker's meanwhile)
    record_seconds: float = 0.05
    #: outcomes recorded in one transaction at most (a full batch is written at once)
    record_batch: int = 64
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
        if self.record_seconds < 0:
            raise ConfigurationError(f"record_seconds must be 0 or more; got {self.record_seconds}")
        if self.record_batch < 1:
            raise ConfigurationError(f"record_batch must be at least 1; got {self.record_batch}")

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
        # whether any subscription is active, and when that was read (monotonic)
        self._listened = True
        self._listened_at: float | None = None

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
        """Look at the outbox now (a new delivery was committed, or a subscription
        added: the worker reads the subscriptions again too)."""
        self._listened_at = None
        self._wake.set()

    async def deliver_due(self, *, stop: asyncio.Event | None = None) -> DeliveryStats:
        """Send every delivery due now (and those that fall due while this runs: a quick
        retry), in a rolling window of `batch` sends, until none is due and none is in
        flight, or `stop` is set; every outcome is recorded when this returns."""
        await self._pump(stop, watch=None, keep_running=False)
        return self.stats

    async def run(self, stop: asyncio.Event, *, watch: Watch | None = None) -> DeliveryStats:
        """Deliver until `stop` is set. Due deliveries are claimed as slots of the window
        free up; with nothing more due, the worker waits until woken (`wake()`, or
        `watch`: the store's change feed), until the next delivery falls due, or
        `poll_seconds`, whichever comes first. A store that cannot be reached is retried
        at the poll interval."""
        try:
            await self._pump(stop, watch=watch, keep_running=True)
        finally:
            await self.aclose()
        return self.stats

    async def _pump(
        self, stop: asyncio.Event | None, *, watch: Watch | None, keep_running: bool
    ) -> None:
        """The rolling window: claim as many due deliveries as there are free slots, send
        each as its own task, hand finished outcomes to the recorder (one transaction per
        batch), and claim again when a slot frees while more may be due, or when woken.
        On `stop`, the sends in flight get the grace period, then are handed back."""
        await _Window(self, stop, watch=watch, keep_running=keep_running).run()

    async def _feed_woke(self, watch: Watch | None) -> bool:
        """Whether the change feed woke the worker for something it may have to send: a
        wake-up while no subscription is active (as read at most `poll_seconds` ago) is
        cleared, so a store with no webhooks costs no outbox read per transition."""
        if watch is None or not watch.woken:
            return False
        now = time.monotonic()
        if self._listened_at is None or now - self._listened_at >= self.policy.poll_seconds:
            try:
                self._listened = await self.store.any_active_subscription()
            except StoreError:
                self._listened = True  # look, and let the claim report the store
            self._listened_at = now
        if not self._listened:
            watch.clear()
        return self._listened

    async def _stop_sends(
        self, in_flight: dict[asyncio.Task[None], ClaimedDelivery], recorder: _Recorder
    ) -> None:
        """The worker is stopping: the sends in flight get the policy's grace period to
        finish, then are cut short and handed back (their lease released, their attempt
        not counted)."""
        sends = dict(in_flight)
        _, pending = await asyncio.wait(sends, timeout=self.policy.grace_seconds)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await recorder.flush()
        for task in pending:
            await self._hand_back(sends[task])

    async def _hand_back(self, claimed: ClaimedDelivery) -> None:
        try:
            if await self.store.release(claimed):
                self.stats.handed_back += 1
        except RubricflowError:  # its lease runs out and another worker takes it over
            logger.exception("%s: could not hand back delivery %s", self.name, claimed.delivery.id)

    # --- one send -----------------------------------------------------------------------------
    async def _send(self, claimed: ClaimedDelivery, recorder: _Recorder) -> None:
        """Send one delivery and hand its outcome to `recorder`."""
        delivery = claimed.delivery
        started_at = _utcnow()
        started = time.perf_counter()
        status_code: int | None = None
        error: str | None = None
        if not claimed.active:
            recorder.add(AttemptOutcome(claimed, FAILED, None, 0.0, "the subscription was removed"))
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
            recorder.add(
                AttemptOutcome(claimed, DELIVERED, status_code, latency_ms, None, None, started_at)
            )
            return
        age = (_utcnow() - delivery.created_at).total_seconds()
        if delivery.attempts >= self.policy.max_attempts or age >= self.policy.max_age_seconds:
            why = (
                f"{delivery.attempts} attempts"
                if delivery.attempts >= self.policy.max_attempts
                else f"{age:.0f}s (max age {self.policy.max_age_seconds:g}s)"
            )
            recorder.add(
                AttemptOutcome(
                    claimed,
                    FAILED,
                    status_code,
                    latency_ms,
                    f"{error}; gave up after {why}",
                    None,
                    started_at,
                )
            )
            return
        delay = self.policy.retry_delay(delivery.attempts, self._rng)
        recorder.add(
            AttemptOutcome(
                claimed,
                PENDING,
                status_code,
                latency_ms,
                error,
                _utcnow() + timedelta(seconds=delay),
                started_at,
            ),
            retry_in=delay,
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

    def _count(self, outcome: AttemptOutcome) -> None:
        self.stats.attempts += 1
        counted = {DELIVERED: "delivered", PENDING: "retried", FAILED: "failed"}[outcome.status]
        setattr(self.stats, counted, getattr(self.stats, counted) + 1)

    def _recorded(self, outcome: AttemptOutcome, held: bool) -> None:
        claimed = outcome.claimed
        if not held:
            self.stats.lost_leases += 1
            logger.warning(
                "%s: delivery %s was taken over by another worker; its outcome here (%s) "
                "is logged as an attempt only",
                self.name,
                claimed.delivery.id,
                outcome.status,
            )
        elif outcome.status == FAILED:
            logger.warning(
                "%s: delivery %s (%s) failed for good: %s",
                self.name,
                claimed.delivery.id,
                claimed.delivery.event_type,
                outcome.error,
            )


class _Window:
    """One pass of a worker's rolling window (`DeliveryWorker._pump`): the sends in
    flight and what the scheduler knows between its steps, each step a method."""

    def __init__(
        self,
        worker: DeliveryWorker,
        stop: asyncio.Event | None,
        *,
        watch: Watch | None,
        keep_running: bool,
    ) -> None:
        self.worker = worker
        self.policy = worker.policy
        self.watch = watch
        self.keep_running = keep_running
        self.never = asyncio.Event()
        self.stop = stop or self.never
        self.recorder = _Recorder(worker)
        self.in_flight: dict[asyncio.Task[None], ClaimedDelivery] = {}
        self.slot_freed = asyncio.Event()
        #: there may be due deliveries: claim when a slot is free
        self.look = True
        #: when a retry this worker recorded falls due (monotonic)
        self.retry_at: float | None = None
        #: when the outbox's next delivery falls due, as read (monotonic)
        self.due_at: float | None = None
        #: read the outbox's next due time again before the next wait
        self.read_due = True

    async def run(self) -> None:
        """Step until stopped (or, in a single pass, until nothing is due or in flight);
        on the way out the sends in flight are stopped and every outcome recorded."""
        try:
            while not self.stop.is_set() and await self._step():
                pass
            if self.in_flight:
                await self.worker._stop_sends(self.in_flight, self.recorder)
        finally:
            for task in list(self.in_flight):
                task.cancel()
            await asyncio.gather(*self.in_flight, return_exceptions=True)
            await asyncio.shield(self.recorder.flush())

    async def _step(self) -> bool:
        """One turn of the scheduler; False when the pass is over."""
        free = self.policy.batch - len(self.in_flight)
        if self.look and free > 0 and await self._claim(free):
            return True  # a full claim: more may be due at once
        if not self.in_flight and not self.look:
            if self.recorder.pending:
                # a quick retry is due only once its outcome is recorded
                await self.recorder.flush()
                self.look = True
                return True
            if not self.keep_running:
                return False
        if self.stop.is_set():
            return False
        self.slot_freed.clear()
        if len(self.in_flight) >= self.policy.batch:
            # the window is full: wait for a slot (a wake-up can wait till then)
            await _first_of(
                self.stop, self.slot_freed, watch=None, timeout=self.policy.poll_seconds
            )
            return True
        if self.worker._wake.is_set() or await self.worker._feed_woke(self.watch):
            self.look = True
            return True
        await self._wait_for_work()
        return True

    async def _claim(self, free: int) -> bool:
        """Claim up to `free` due deliveries and start sending them; whether the claim
        filled every free slot (then more may be due at once)."""
        self.worker._wake.clear()
        if self.watch is not None:
            self.watch.clear()  # a change from now on wakes the wait below
        try:
            claimed = await self.worker.store.claim(
                owner=self.worker.name,
                lease_until=_utcnow() + timedelta(seconds=self.policy.lease_seconds),
                limit=free,
            )
        except StoreError:
            if not self.keep_running:
                raise
            logger.exception("%s: cannot reach the outbox; retrying", self.worker.name)
            claimed = []
        for item in claimed:
            task = asyncio.create_task(self.worker._send(item, self.recorder))
            self.in_flight[task] = item
            task.add_done_callback(self._finished)
        self.look = len(claimed) == free
        return self.look

    def _finished(self, task: asyncio.Task[None]) -> None:
        self.in_flight.pop(task, None)
        self.slot_freed.set()
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "%s: a send failed unexpectedly; its lease runs out and it is sent again",
                self.worker.name,
                exc_info=task.exception(),
            )

    async def _wait_for_work(self) -> None:
        """Wait for a wake-up, the next due delivery or the poll interval (and, in a
        single pass, for the sends in flight to finish); then look again if any came."""
        wait = await self._wait_seconds()
        began = time.monotonic()
        await self._sleep(began, wait)
        now = time.monotonic()
        woken = self.worker._wake.is_set() or (self.watch is not None and self.watch.woken)
        if woken or now - began >= wait:
            self.look = True
            if self.retry_at is not None and self.retry_at <= now:
                self.retry_at = None
            if now - began >= wait:
                self.read_due = True

    async def _wait_seconds(self) -> float:
        """How long to wait at most: the poll interval, or less when a retry or the
        outbox's next delivery falls due sooner."""
        wait = self.policy.poll_seconds
        self.retry_at = self.recorder.take_retry_at(self.retry_at)
        if self.retry_at is not None:
            wait = min(wait, max(0.0, self.retry_at - time.monotonic()))
        if not self.in_flight and self.keep_running and self.read_due:
            await self._read_next_due()
        if self.due_at is not None:
            wait = min(wait, max(0.0, self.due_at - time.monotonic()))
        return wait

    async def _read_next_due(self) -> None:
        """Read when the outbox's next delivery falls due (another worker's retry, a
        lapsed lease); read again only after a quiet wait: a wake-up means a delivery
        due now, which the claim finds."""
        self.read_due, self.due_at = False, None
        try:
            due = await self.worker.store.next_due()
        except StoreError:
            logger.exception("%s: cannot reach the outbox; retrying", self.worker.name)
        else:
            if due is not None:
                self.due_at = time.monotonic() + (due - _utcnow()).total_seconds()

    async def _sleep(self, began: float, wait: float) -> None:
        """Sleep until woken or `wait` seconds after `began`; a change-feed wake-up that
        concerns no active subscription is slept through."""
        watch = self.watch
        while True:
            await _first_of(
                self.stop,
                self.worker._wake,
                self.never if self.keep_running else self.slot_freed,
                # with no subscription active, the poll alone looks again
                watch=watch if self.worker._listened else None,
                timeout=max(0.0, began + wait - time.monotonic()),
            )
            if (
                watch is None
                or not watch.woken
                or self.worker._wake.is_set()
                or self.slot_freed.is_set()
                or self.stop.is_set()
                or await self.worker._feed_woke(watch)
            ):
                return


class _Recorder:
    """Writes a worker's attempt outcomes in batches: one transaction for those that
    finish within `record_seconds` of each other (or `record_batch` of them), not one per
    send. The deliveries stay leased to the worker until then, so none is sent twice."""

    def __init__(self, worker: DeliveryWorker) -> None:
        self._worker = worker
        self._queue: list[AttemptOutcome] = []
        self._full = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._retry_at: float | None = None

    @property
    def pending(self) -> bool:
        return bool(self._queue) or (self._writer is not None and not self._writer.done())

    def add(self, outcome: AttemptOutcome, *, retry_in: float | None = None) -> None:
        """Queue an outcome; it is written within `record_seconds`."""
        self._worker._count(outcome)
        self._queue.append(outcome)
        if retry_in is not None:
            due = time.monotonic() + retry_in
            self._retry_at = due if self._retry_at is None else min(self._retry_at, due)
        if len(self._queue) >= self._worker.policy.record_batch:
            self._full.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_soon())

    def take_retry_at(self, known: float | None) -> float | None:
        """The earliest retry recorded so far (monotonic time), merged with `known`."""
        found, self._retry_at = self._retry_at, None
        if found is None:
            return known
        return found if known is None else min(found, known)

    async def _write_soon(self) -> None:
        while self._queue:
            if len(self._queue) < self._worker.policy.record_batch:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._full.wait(), self._worker.policy.record_seconds)
            await self._write()

    async def _write(self) -> None:
        self._full.clear()
        batch = self._queue[: self._worker.policy.record_batch]
        del self._queue[: len(batch)]
        if not batch:
            return
        try:
            held = await self._worker.store.record_attempts(batch)
        except RubricflowError:
            # their leases run out and the deliveries are sent again (at least once)
            logger.exception(
                "%s: could not record %d delivery attempts", self._worker.name, len(batch)
            )
            return
        for outcome, kept in zip(batch, held, strict=True):
            self._worker._recorded(outcome, kept)

    async def flush(self) -> None:
        """Write every queued outcome now."""
        writer = self._writer
        if writer is not None and not writer.done():
            self._full.set()
            with contextlib.suppress(Exception):
                await writer
        while self._queue:
            await self._write()


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
