"""Reads: artifacts, their history and evaluations, artifact types, and a refused
transition explained to a person. Nothing here writes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rubricflow.errors import IllegalTransitionError, NotFoundError
from rubricflow.results import Evaluation
from rubricflow.review.context import ReviewContext, utcnow
from rubricflow.review.reviewers import VOTE, blind, in_blind_audit
from rubricflow.store.artifacts import Artifact, ArtifactEvent, ArtifactType
from rubricflow.store.evaluations import EvaluationFilter

__all__ = ["ArtifactQueries"]


class ArtifactQueries:
    """What is stored about artifacts and their types."""

    def __init__(self, context: ReviewContext) -> None:
        self._context = context

    async def get(self, artifact_id: str) -> Artifact:
        return await self._context.repository.get(artifact_id)

    async def list_artifacts(
        self,
        *,
        type_name: str | None = None,
        status: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Artifact]:
        """Artifacts (of one type, in one status), most recently changed first, a page at
        a time."""
        return await self._context.repository.list_artifacts(
            type_name=type_name, status=status, limit=limit, offset=offset
        )

    async def page(
        self,
        *,
        type_names: Sequence[str] | None = None,
        status: str | None = None,
        created_by: str | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = 50,
    ) -> list[Artifact]:
        """A keyset page of artifacts, newest first, stable under inserts (see
        `ArtifactRepository.page`)."""
        return await self._context.repository.page(
            type_names=type_names, status=status, created_by=created_by, after=after, limit=limit
        )

    async def history(self, artifact_id: str, *, viewer: str | None = None) -> list[ArtifactEvent]:
        """Every transition of the artifact, oldest first; the votes on a decision still
        open are hidden (`reviewers.blind`), so a later reviewer decides unswayed; a
        `viewer` who has voted on it sees them."""
        repository = self._context.repository
        events = await repository.history(artifact_id)
        if not any(event.trigger == VOTE for event in events):
            return events
        return blind(events, await repository.get(artifact_id), viewer=viewer)

    async def evaluations(self, artifact_id: str, revision: int | None = None) -> list[Evaluation]:
        """The stored evaluations of the artifact (one revision, or all), newest first;
        while a blind audit of its current revision waits for people, not that revision's
        (the reviewer decides without the machine's verdict)."""
        evaluations = self._context.store.evaluations
        found = await evaluations.query(
            EvaluationFilter(artifact_id=artifact_id, revision=revision), limit=10_000
        )
        if not found:
            return found
        repository = self._context.repository
        artifact = await repository.get(artifact_id)
        if revision not in (None, artifact.revision) or not artifact.awaiting_approval:
            return found
        if not in_blind_audit(await repository.history(artifact_id), artifact):
            return found
        if revision is not None:
            return []
        current = await evaluations.query(
            EvaluationFilter(artifact_id=artifact_id, revision=artifact.revision), limit=10_000
        )
        hidden = {e.id for e in current}
        return [e for e in found if e.id not in hidden]

    async def get_type(self, name: str) -> ArtifactType:
        return await self._context.repository.get_type(name)

    async def list_types(self) -> list[ArtifactType]:
        return await self._context.repository.list_types()

    async def explain_refusal(self, error: IllegalTransitionError) -> str:
        """`error` told to a person: the triggers only rubricflow's reviews fire are left
        out of what is allowed, and an artifact under review says what to do (wait, or
        run a worker to take over a review whose worker is gone). The error itself keeps
        the machine's full answer for programs."""
        try:
            artifact = await self._context.repository.get(error.artifact_id)
        except NotFoundError:
            return str(error)
        lifecycle = self._context.lifecycle
        head = f"artifact {artifact.id!r} is {artifact.status}: {error.trigger!r} is not allowed"
        allowed = lifecycle.open_to_people(artifact)
        others = ", ".join(allowed) if allowed else "nothing (the state is final)"
        queued, reviewing = lifecycle.claimable_states
        if artifact.status != reviewing:
            hint = ""
            if artifact.status == queued and error.trigger == "submit":
                hint = (
                    "; it is already queued for review: a worker reviews it "
                    "(`rubricflow worker --once`)"
                )
            return f"{head}{hint}; you can: {others}"
        if artifact.awaiting_approval:
            return (
                f"{head}; its review passed and waits for a human: approve it "
                f"(`rubricflow artifacts approve {artifact.id} --reason ...`), or: {others}"
            )
        owner = artifact.lease_owner or "a worker"
        expires = artifact.lease_expires_at
        if expires is None or expires < utcnow():
            since = f" at {expires:%Y-%m-%d %H:%M:%S} UTC" if expires is not None else ""
            state = (
                f"its review by {owner} stopped (the lease expired{since}; that worker is "
                "gone): run `rubricflow worker --once` to take the review over and finish "
                "it, then try again"
            )
        else:
            state = (
                f"it is being reviewed by {owner} (lease until {expires:%Y-%m-%d %H:%M:%S} "
                "UTC): wait for the review to finish; if that worker is gone, run "
                "`rubricflow worker --once` once the lease has expired, to take the review over"
            )
        return f"{head}; {state}. A person can also: {others}"
