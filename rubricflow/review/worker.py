"""Workers: claim queued artifacts with a lease, review them, commit the outcome.

Claims are races several workers may run at once: the claim is a conditional write on the
artifact's version (PostgreSQL also skips rows other workers hold with `FOR UPDATE SKIP
LOCKED`), so each review has one owner. A worker killed mid-review loses its lease when
the lease expires and another worker takes the review over; evaluations already stored
for that revision are reused, never repeated.

An idle worker waits for a change that queues an artifact (`LiveStatus.watch`): NOTIFY on
PostgreSQL wakes it within milliseconds whichever process queued it, the change feed's
short poll on SQLite; `poll_interval` stays the fallback (expired leases, retry times
coming due, a feed that is down).

SIGTERM (or `stop()`) stops claiming; the reviews in flight get the grace period
(`grace_seconds`, default 30) to finish, and those still running then are cancelled and
handed back (`abort_review`, queued at once, not counted as a failure) for another worker
to take, so a worker stops within its grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import uuid
from dataclasses import dataclass, field

from rubricflow.engine.isolation import hold_check_pool
from rubricflow.errors import (
    ArtifactConflictError,
    IllegalTransitionError,
    NotFoundError,
    StoreError,
)
from rubricflow.review.service import ArtifactRegistry, ReviewOutcome
from rubricflow.store.artifacts import Artifact
from rubricflow.store.changes import Watch

__all__ = ["DEFAULT_GRACE_SECONDS", "Worker", "WorkerStats"]

# how long the reviews in flight may run on after SIGTERM before they are handed back
DEFAULT_GRACE_SECONDS = 30.0

logger = logging.getLogger("rubricflow.worker")


@dataclass
class WorkerStats:
    """What a worker did."""

    reviewed: int = 0
    approved: int = 0
    lost_races: int = 0
    errors: int = 0
    #: reviews handed back unfinished when the worker stopped (its grace period ran out)
    handed_back: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    def count(self, outcome: ReviewOutcome) -> None:
        self.reviewed += 1
        artifact = outcome.artifact
        # a passing review that waits for a human stays in_review: name it for what it is
        status = "awaiting_approval" if artifact.awaiting_approval else artifact.status
        self.outcomes[status] = self.outcomes.get(status, 0) + 1
        if outcome.approved:
            self.approved += 1


class Worker:
    """Reviews artifacts waiting in `pending_review` (and takes over expired leases)."""

    def __init__(
        self,
        registry: ArtifactRegistry,
        *,
        concurrency: int = 1,
        poll_interval: float = 1.0,
        name: str | None = None,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        max_failures: int | None = None,
    ) -> None:
        """`grace_seconds`: how long the reviews in flight may run on after `stop()`
        (SIGTERM) before they are handed back; `max_failures`: failed reviews in a row
        that dead-letter an artifact (sets the registry's; default as configured there)."""
        self.registry = registry
        if max_failures is not None:
            registry.max_failures = max_failures
        self.grace_seconds = max(0.0, grace_seconds)
        self._in_flight: set[asyncio.Task[ReviewOutcome]] = set()
        self._deadline: asyncio.TimerHandle | None = None
        self.concurrency = max(1, concurrency)
        self.poll_interval = poll_interval
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.stats = WorkerStats()
        self._stopping = asyncio.Event()
        self._watches: set[Watch] = set()

    def stop(self) -> None:
        """Claim nothing more; let the reviews in flight finish within the grace period,
        hand back the rest, then return from `run`. A second call hands back at once."""
        if self._stopping.is_set():
            self._hand_back()
            return
        self._stopping.set()
        for watch in list(self._watches):
            watch.poke()
        with contextlib.suppress(RuntimeError):  # no running loop: nothing in flight
            loop = asyncio.get_running_loop()
            self._deadline = loop.call_later(self.grace_seconds, self._hand_back)

    def _hand_back(self) -> None:
        """The grace period is over: cancel the reviews still running (each is handed back
        to the queue by its slot)."""
        for task in list(self._in_flight):
            task.cancel()

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop)

    async def run(self, *, once: bool = False) -> WorkerStats:
        """Review until stopped; with `once`, until nothing is waiting. The check process
        pool is started with the worker, and stopped with it unless others still use it."""
        pool = hold_check_pool(prestart=not once)
        slots = [asyncio.create_task(self._slot(index, once)) for index in range(self.concurrency)]
        try:
            await asyncio.gather(*slots)
        finally:
            if self._deadline is not None:
                self._deadline.cancel()
            pool.release()
        return self.stats

    async def _slot(self, index: int, once: bool) -> None:
        worker = f"{self.name}/{index}"
        if once:
            await self._work(worker, None)
            return
        queued, _ = self.registry.lifecycle.claimable_states
        with self.registry.live.watch(dest=[queued]) as watch:
            self._watches.add(watch)
            try:
                await self._work(worker, watch)
            finally:
                self._watches.discard(watch)

    async def _work(self, worker: str, watch: Watch | None) -> None:
        """Claim and review until stopped (`watch` None: until nothing is waiting); idle,
        wait for `watch` to see an artifact queued, or for the poll interval."""
        while not self._stopping.is_set():
            if watch is not None:
                watch.clear()  # a change from now on wakes the wait below
            try:
                reviewed = await self._review_next(worker)
            except StoreError:
                if watch is None:
                    raise
                # the store is unreachable or locked for now: keep polling until it is back
                logger.exception("%s: cannot claim a review; retrying", worker)
                reviewed = False
            if reviewed:
                continue
            if watch is None:
                return
            await watch.wait(self.poll_interval)

    async def _review_next(self, worker: str) -> bool:
        """Claim and review one artifact; False when nothing is waiting."""
        for _ in range(20):
            try:
                claimed = await self.registry.claim_next(worker=worker)
            except (ArtifactConflictError, IllegalTransitionError, NotFoundError):
                self.stats.lost_races += 1  # another worker claimed it first
                continue
            if claimed is None:
                return False
            review = asyncio.create_task(self.registry.finish_review(claimed, deferred=True))
            self._in_flight.add(review)
            try:
                await asyncio.wait({review})
            finally:
                self._in_flight.discard(review)
            if review.cancelled():  # the worker is stopping and its grace period is over
                await self._give_back(worker, claimed)
                return True
            try:
                outcome = review.result()
            except (ArtifactConflictError, IllegalTransitionError) as error:
                # the lease was lost (another worker took over) or a human decided first
                self.stats.lost_races += 1
                logger.warning("%s: %s", worker, error)
                return True
            except Exception:
                # e.g. the store went away while committing: the lease expires and another
                # review takes the artifact over; this worker carries on
                self.stats.errors += 1
                logger.exception("%s: the review of %s failed", worker, claimed.id)
                return True
            self.stats.count(outcome)
            logger.info(
                "%s reviewed %s revision %s: %s",
                worker,
                claimed.id,
                outcome.artifact.revision,
                outcome.artifact.status,
            )
            return True
        return True  # every claim lost a race: others are busy with the queue; look again

    async def _give_back(self, worker: str, claimed: Artifact) -> None:
        """Hand a review cut short by the end of the grace period back to the queue."""
        reason = (
            f"worker {worker} stopped before the review finished (its {self.grace_seconds:g}s "
            "grace period ran out); handed back for another worker"
        )
        try:
            await self.registry.abandon_review(claimed, reason=reason)
        except (ArtifactConflictError, IllegalTransitionError) as error:
            logger.warning("%s: %s", worker, error)  # someone else moved it on meanwhile
        except Exception:  # its lease expires and another worker takes it over
            logger.exception("%s: could not hand back %s", worker, claimed.id)
        else:
            self.stats.handed_back += 1
            logger.info("%s handed back %s unfinished", worker, claimed.id)
