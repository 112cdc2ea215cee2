"""Workers: claim queued artifacts with a lease, review them, commit the outcome.

Claims are races several workers may run at once: the claim is a conditional write on the
artifact's version (PostgreSQL also skips rows other workers hold with `FOR UPDATE SKIP
LOCKED`), so each review has one owner. A worker killed mid-review loses its lease when
the lease expires and another worker takes the review over; evaluations already stored
for that revision are reused, never repeated. SIGTERM lets in-flight reviews finish.
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

from rubricflow.errors import (
    ArtifactConflictError,
    IllegalTransitionError,
    NotFoundError,
    StoreError,
)
from rubricflow.review.service import ArtifactRegistry, ReviewOutcome

__all__ = ["Worker", "WorkerStats"]

logger = logging.getLogger("rubricflow.worker")


@dataclass
class WorkerStats:
    """What a worker did."""

    reviewed: int = 0
    approved: int = 0
    lost_races: int = 0
    errors: int = 0
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
    ) -> None:
        self.registry = registry
        self.concurrency = max(1, concurrency)
        self.poll_interval = poll_interval
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.stats = WorkerStats()
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Finish the reviews in flight, then return from `run`."""
        self._stopping.set()

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop)

    async def run(self, *, once: bool = False) -> WorkerStats:
        """Review until stopped; with `once`, until nothing is waiting."""
        slots = [asyncio.create_task(self._slot(index, once)) for index in range(self.concurrency)]
        await asyncio.gather(*slots)
        return self.stats

    async def _slot(self, index: int, once: bool) -> None:
        worker = f"{self.name}/{index}"
        while not self._stopping.is_set():
            try:
                reviewed = await self._review_next(worker)
            except StoreError:
                if once:
                    raise
                # the store is unreachable or locked for now: keep polling until it is back
                logger.exception("%s: cannot claim a review; retrying", worker)
                reviewed = False
            if reviewed:
                continue
            if once:
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self.poll_interval)

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
            try:
                outcome = await self.registry.finish_review(claimed)
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
