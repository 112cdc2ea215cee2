"""What every part of the review service shares: the store, the lifecycle, the plugins
(for listeners and scorers) and the lease length, with the one way a transition is
decided (`ReviewContext.change`: the lifecycle says where it leads) and committed
(`ReviewContext.commit`: one transaction, then the listeners hear of it, through the one
event bus: `rubricflow.review.events`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from rubricflow.content_bounds import check_content_bounds
from rubricflow.errors import ArtifactConflictError, PreconditionFailedError, ReviewError
from rubricflow.formats.document import lone_surrogate
from rubricflow.plugins import PluginRegistry
from rubricflow.results import Evaluation
from rubricflow.review.events import evaluation_event, transition_event
from rubricflow.review.lifecycle import Lifecycle
from rubricflow.settings import Settings, current
from rubricflow.store import Store
from rubricflow.store.artifact_models import SYSTEM_ACTOR
from rubricflow.store.artifacts import (
    KEEP,
    Artifact,
    ArtifactEvent,
    ArtifactRepository,
    Change,
    Keep,
)

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "MAX_RETRY_DELAY_SECONDS",
    "RETRY_DELAY_SECONDS",
    "SYSTEM_ACTOR",
    "ReviewContext",
    "check_json",
    "check_version",
    "expect_version",
    "named",
    "utcnow",
    "why",
]

DEFAULT_LEASE_SECONDS = 300.0
RETRY_DELAY_SECONDS = 30.0
MAX_RETRY_DELAY_SECONDS = 3600.0


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class ReviewContext:
    """The store, its artifact repository, the lifecycle and the plugins, shared by the
    commands, queries, claims and reviews of one `ArtifactRegistry`."""

    store: Store
    repository: ArtifactRepository
    lifecycle: Lifecycle
    plugins: PluginRegistry
    lease_seconds: float
    #: the wait before the first retry of a failed review (doubling, up to an hour)
    retry_delay_seconds: float = RETRY_DELAY_SECONDS
    #: the settings reviews run under (the registry's, read once when it was made)
    settings: Settings = field(default_factory=current)

    def change(
        self,
        artifact: Artifact,
        trigger: str,
        *,
        actor: str,
        reason: str | None = None,
        evaluation_ids: Sequence[str] = (),
        by_review: bool = False,
        lease_owner: str | None = None,
        lease_expires_at: datetime | None = None,
        queued_at: datetime | Literal[Keep.KEEP] | None = KEEP,
        revision: int | None = None,
        failed: bool = False,
    ) -> Change:
        """`trigger` on `artifact` as the lifecycle decides it (its destination, whether
        it leaves the artifact waiting for approval, its count of failed reviews in a row
        (`failed`: this change records one); `IllegalTransitionError` or `ReviewError`
        when a guard refuses it), with what else it writes."""
        return Change(
            trigger=trigger,
            dest=self.lifecycle.decide(artifact, trigger, by_review=by_review),
            actor=actor,
            reason=reason,
            evaluation_ids=evaluation_ids,
            awaiting_approval=self.lifecycle.awaits_approval(trigger),
            lease_owner=lease_owner,
            lease_expires_at=lease_expires_at,
            queued_at=queued_at,
            revision=revision,
            failures=self.lifecycle.failures_after(artifact, trigger, failed=failed),
        )

    async def commit(
        self,
        artifact: Artifact,
        change: Change,
        *,
        seq: int | None = None,
        expected_version: int | None = None,
    ) -> tuple[Artifact, ArtifactEvent]:
        """Write `change` in one transaction and announce it: the artifact as written and
        its event. Raises `ArtifactConflictError` when another writer came first
        (`PreconditionFailedError` when the caller named the version it expects)."""
        with expect_version(artifact, expected_version):
            async with self.repository.transaction() as tx:
                event, written = await tx.write_transition(artifact, change, seq=seq)
        await self.notify(event)
        return written, event

    async def notify(self, event: ArtifactEvent) -> None:
        """Tell the listeners of a committed transition (once, after the commit; a
        listener that raises changes nothing): an `artifact.transition` event, built only
        when someone listens."""
        if self._heard():
            await self.plugins.notify(transition_event(event))

    async def announce_evaluations(
        self, artifact: Artifact, evaluations: Iterable[Evaluation]
    ) -> None:
        """Tell the listeners of evaluations a review stored (once each, after the commit
        that stored them): `evaluation.stored` events, built only when someone listens."""
        if not self._heard():
            return
        for evaluation in evaluations:
            await self.plugins.notify(
                evaluation_event(evaluation, artifact_id=artifact.id, revision=artifact.revision)
            )

    def _heard(self) -> bool:
        """Whether any listener implements the hook (the event bus counts as one once
        anything subscribes)."""
        return bool(self.plugins.manager.hook.rubricflow_artifact_transition.get_hookimpls())


def check_version(artifact: Artifact, expected_version: int | None) -> None:
    """`PreconditionFailedError` when the caller expects another version of `artifact` than
    the one read (HTTP `If-Match`); checked before anything else is decided."""
    if expected_version is not None and artifact.version != expected_version:
        raise PreconditionFailedError(artifact.id, expected_version, artifact.version)


@contextmanager
def expect_version(artifact: Artifact, expected_version: int | None) -> Iterator[None]:
    """Hold a change to the artifact version its caller expects (HTTP `If-Match`): refused
    with `PreconditionFailedError` when `artifact` (as read) is at another version, and
    when the write inside the block loses the race to another writer. The write itself is
    conditional on the version read (the store's optimistic lock), so the check and the
    write are one atomic step: no lost update."""
    if expected_version is None:
        yield
        return
    check_version(artifact, expected_version)
    try:
        yield
    except PreconditionFailedError:
        raise
    except ArtifactConflictError:
        raise PreconditionFailedError(artifact.id, expected_version) from None


def check_json(value: Any, what: str) -> None:
    """Content and metadata are stored as JSON: refuse what JSON cannot hold, and what
    breaks the content bounds (`ContentBoundsError`: too deep, too many items, a string
    too long, too large), before anything is stored."""
    check_content_bounds(value, f"artifact {what}")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ReviewError(
            f"artifact {what} must be JSON data (text, numbers, booleans, null, lists and "
            f"objects with text keys): {error}"
        ) from None
    surrogate = lone_surrogate(value)
    if surrogate is not None:
        raise ReviewError(
            f"artifact {what} holds a lone surrogate ({surrogate}): half of a character, e.g. "
            "an emoji cut in two; repair or drop that text"
        )


def named(actor: str) -> str:
    """Who does this, as recorded; refused when nobody is named."""
    if not actor or not actor.strip():
        raise ReviewError("name who does this (actor); decisions are on the record")
    if actor.strip() == SYSTEM_ACTOR:
        raise ReviewError(
            f"the actor name {SYSTEM_ACTOR!r} is reserved for rubricflow's own decisions; "
            "name the person (or program) who does this"
        )
    return actor.strip()


def why(reason: str) -> str:
    """Why a human decided this, as recorded; refused when no reason is given."""
    if not reason or not reason.strip():
        raise ReviewError("give a reason; human decisions are on the record")
    return reason.strip()
