"""Worker claims: who reviews which artifact, and for how long.

A worker's claim is one transaction (an inline review's is written in its submit's): a
conditional write on the artifact's `version`, so of several workers racing for one
artifact one wins (PostgreSQL also skips rows other workers hold, `FOR UPDATE SKIP
LOCKED`). It sets a lease, which the reviewer renews while it works (`keep_lease`); a
review whose lease expired is taken over by the next claim. What a claim fires is the
lifecycle's answer (`Lifecycle.claim_triggers`).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from rubricflow.errors import IllegalTransitionError
from rubricflow.review.context import SYSTEM_ACTOR, ReviewContext, utcnow
from rubricflow.review.lifecycle import Lifecycle
from rubricflow.store.artifacts import KEEP, Artifact, ArtifactEvent, Change

__all__ = ["ReviewClaims", "dead_letter_reason"]

logger = logging.getLogger("rubricflow.review")


def dead_letter_reason(artifact: Artifact, cause: str, lifecycle: Lifecycle) -> str:
    """The reason a dead-lettered artifact shows: the last failure, how many in a row, and
    what a person does next."""
    return (
        f"{cause}; dead-lettered after {artifact.failures + 1} failed reviews in a row "
        f"(the limit is {lifecycle.max_failures}): it stays out of the queue until a person "
        f"fixes the cause and runs `rubricflow artifacts retry {artifact.id}`"
    )


class ReviewClaims:
    """Claims reviews for workers (and the inline review), and keeps their leases."""

    def __init__(self, context: ReviewContext) -> None:
        self._context = context

    async def claim(self, artifact_id: str, *, worker: str) -> Artifact:
        """Start the review of this queued artifact (or take over an expired lease)."""
        claimed = await self._claim(worker, artifact_id)
        if claimed is None:
            artifact = await self._context.repository.get(artifact_id)
            raise IllegalTransitionError(
                artifact.id,
                artifact.status,
                "start_review",
                self._context.lifecycle.allowed_triggers(artifact.status),
            )
        return claimed

    async def claim_next(self, *, worker: str) -> Artifact | None:
        """Claim the next artifact waiting for review, if any, in one transaction (on
        PostgreSQL, rows other workers hold are skipped)."""
        return await self._claim(worker, None)

    def start(self, artifact: Artifact, *, worker: str) -> Change:
        """`start_review` by `worker`, who holds the lease from now: a claim's change, also
        written by an inline review in its submit's transaction."""
        return self._context.change(
            artifact,
            "start_review",
            actor=worker,
            reason="review started",
            by_review=True,
            lease_owner=worker,
            lease_expires_at=utcnow() + timedelta(seconds=self._context.lease_seconds),
        )

    async def _claim(self, worker: str, artifact_id: str | None) -> Artifact | None:
        context = self._context
        lifecycle = context.lifecycle
        now = utcnow()
        events: list[ArtifactEvent] = []
        async with context.repository.transaction() as tx:
            if artifact_id is None:
                queued, reviewing = lifecycle.claimable_states
                ids = await tx.claimable(now=now, queued=queued, reviewing=reviewing)
                if not ids:
                    return None
                artifact_id = ids[0]
            artifact = await tx.get(artifact_id)
            fired = lifecycle.claim_triggers(artifact, now)
            if fired and fired[0] != "start_review":  # its reviewer is gone: a failed attempt
                reason = f"the lease of {artifact.lease_owner} expired; review restarted"
                if fired[0] == "dead_letter":
                    reason = dead_letter_reason(
                        artifact, f"the lease of {artifact.lease_owner} expired", lifecycle
                    )
                aborted, artifact = await tx.write_transition(
                    artifact,
                    context.change(
                        artifact,
                        fired[0],
                        actor=SYSTEM_ACTOR,
                        reason=reason,
                        by_review=True,
                        failed=True,
                        queued_at=None if fired[0] == "dead_letter" else KEEP,
                    ),
                )
                events.append(aborted)
            if "start_review" not in fired:
                return None
            started, claimed = await tx.write_transition(
                artifact, self.start(artifact, worker=worker)
            )
            events.append(started)
        for event in events:
            await context.notify(event)
        return claimed

    async def keep_lease(self, artifact: Artifact) -> None:
        """While this process is alive and reviewing, push the lease forward every third
        of its length, so a long review is not taken over; a killed worker stops renewing
        and its lease runs out. Runs until cancelled, or until the artifact moved on."""
        lease_seconds = self._context.lease_seconds
        interval = max(lease_seconds / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                renewed = await self._context.repository.renew_lease(
                    artifact, utcnow() + timedelta(seconds=lease_seconds)
                )
            except Exception:  # a missed renewal only risks a takeover, which is safe
                logger.warning("could not renew the lease on %s", artifact.id, exc_info=True)
                continue
            if not renewed:
                return  # someone else owns it now; our decision will be refused
