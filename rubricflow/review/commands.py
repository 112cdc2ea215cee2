"""The commands people and bots give about artifacts (submission aside, in
`submission.py`): define a type, create an artifact, revise it, and the human decisions
(approve, reject, override, withdraw, archive, supersede, retry). Each reads the artifact, asks
the lifecycle where the trigger leads (refused with `IllegalTransitionError` when it may
not), and commits the transition in one transaction.

Every command on an existing artifact takes `expected_version`: the artifact version the
caller based its decision on (HTTP `If-Match`). Another version is refused with
`PreconditionFailedError` before anything is decided, and the write stays conditional on
that version, so a change that races another writer is refused too, never lost."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from rubricflow.conversation import read_conversation
from rubricflow.errors import ConfigurationError, NotFoundError, ReviewError
from rubricflow.identifiers import check_id
from rubricflow.review.content_schema import check_content_schema
from rubricflow.review.context import (
    ReviewContext,
    check_json,
    check_version,
    expect_version,
    named,
    why,
)
from rubricflow.review.lifecycle import CREATE
from rubricflow.review.reviewers import (
    VOTE,
    Vote,
    needs_votes,
    settle,
    summary,
    vote_reason,
    votes_of,
)
from rubricflow.store.artifacts import Artifact, ArtifactType, NewArtifact

__all__ = ["ArtifactCommands"]


class ArtifactCommands:
    """State-changing commands on artifacts and their types."""

    def __init__(self, context: ReviewContext) -> None:
        self._context = context

    async def set_type(self, artifact_type: ArtifactType) -> ArtifactType:
        """Define or replace an artifact type. Its rubrics must be registered already,
        each bound once; its content schema must be a valid JSON Schema."""
        check_id(artifact_type.name, what="the artifact type's name", path_segment=False)
        seen: set[str] = set()
        for binding in artifact_type.rubrics:
            if binding.rubric_id in seen:
                raise ConfigurationError(
                    f"artifact type {artifact_type.name!r} binds rubric {binding.rubric_id!r} "
                    "more than once; bind each rubric once (mark it blocking with "
                    "`blocking=True` / `--blocking ID`)"
                )
            seen.add(binding.rubric_id)
            await self._context.store.rubrics.get(binding.rubric_id, binding.version)
        check_content_schema(artifact_type)
        await self._context.repository.put_type(artifact_type)
        return artifact_type

    async def create(self, new: NewArtifact) -> Artifact:
        """Write `new` (from `new_artifact`): an artifact in the lifecycle's initial state
        (`draft`), revision 1."""
        artifact, event = await self._context.repository.create(new)
        await self._context.notify(event)
        return artifact

    def new_artifact(
        self,
        type_name: str,
        content: Any,
        *,
        actor: str,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        artifact_id: str | None = None,
    ) -> NewArtifact:
        """What `create` writes: the artifact (content and metadata checked as JSON) in
        the lifecycle's states for a new one, with a new id unless one is given."""
        check_json(content, "content")
        read_conversation(content)  # a conversation's shape and bounds, at the door
        check_json(dict(metadata or {}), "metadata")
        lifecycle = self._context.lifecycle
        return NewArtifact(
            artifact_id=artifact_id or uuid.uuid4().hex,
            type_name=type_name,
            content=content,
            actor=named(actor),
            title=title,
            metadata=dict(metadata or {}),
            trigger=CREATE,
            state=lifecycle.initial_state,
            revision_state=lifecycle.new_revision_state,
        )

    async def approve(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
    ) -> Artifact:
        """A named human approves an artifact whose review passed and awaits approval
        (refused while the review still runs: the lifecycle's guard). On a type that
        wants several reviewers it is this reviewer's vote (`review/reviewers.py`)."""
        return await self._decide_or_vote(artifact_id, "approve", actor, reason, expected_version)

    async def reject(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
    ) -> Artifact:
        return await self._decide_or_vote(artifact_id, "reject", actor, reason, expected_version)

    async def override(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
    ) -> Artifact:
        """A named human approves despite the rubrics; the reason is on the record."""
        return await self._decide(artifact_id, "override", actor, why, reason, expected_version)

    async def withdraw(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str | None = None,
        expected_version: int | None = None,
    ) -> Artifact:
        return await self._decide(artifact_id, "withdraw", actor, None, reason, expected_version)

    async def archive(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str | None = None,
        expected_version: int | None = None,
    ) -> Artifact:
        return await self._decide(artifact_id, "archive", actor, None, reason, expected_version)

    async def retry(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str | None = None,
        expected_version: int | None = None,
    ) -> Artifact:
        """Send a dead-lettered artifact back to the queue (`retry`), first in line, its
        count of failed reviews reset: a person says the cause is fixed."""
        artifact = await self._context.repository.get(artifact_id)
        check_version(artifact, expected_version)
        change = self._context.change(
            artifact,
            "retry",
            actor=named(actor),
            reason=reason or "retried after the cause of its failed reviews was fixed",
            queued_at=None,
        )
        written, _ = await self._context.commit(artifact, change, expected_version=expected_version)
        return written

    async def supersede(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str,
        by: str | None = None,
        expected_version: int | None = None,
    ) -> Artifact:
        """Retire an artifact that another one replaces (from `draft`, `needs_revision` or
        `approved`); `by` names the replacing artifact, which must exist. The event's
        reason reads "superseded by BY: REASON"."""
        who, because = named(actor), why(reason)
        repository = self._context.repository
        artifact = await repository.get(artifact_id)
        check_version(artifact, expected_version)
        if by is not None:
            by = by.strip()
            if by == artifact.id:
                raise ReviewError(
                    f"artifact {artifact_id!r} cannot supersede itself; name the artifact "
                    "that replaces it (`--by OTHER_ID`)"
                )
            try:
                await repository.get(by)
            except NotFoundError:
                raise NotFoundError(
                    f"no artifact {by!r} to supersede {artifact_id!r} with; create the "
                    "replacement first (`rubricflow artifacts create FILE --type TYPE`) and "
                    "name its id with --by"
                ) from None
            because = f"superseded by {by}: {because}"
        return await self._apply(
            artifact, "supersede", actor=who, reason=because, expected_version=expected_version
        )

    async def revise(
        self,
        artifact_id: str,
        content: Any,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
    ) -> Artifact:
        """New content as a new revision (in `draft`); the old revision is superseded."""
        check_json(content, "content")
        read_conversation(content)  # a conversation's shape and bounds, at the door
        context = self._context
        lifecycle = context.lifecycle
        artifact = await context.repository.get(artifact_id)
        check_version(artifact, expected_version)
        who, because = named(actor), why(reason)
        change = context.change(
            artifact,
            "revise",
            actor=who,
            reason=because,
            queued_at=None,
            revision=artifact.revision + 1,
        )
        with expect_version(artifact, expected_version):
            async with context.repository.transaction() as tx:
                # the version check first: a writer that lost the race stops here with a
                # conflict, before it writes the revision row the winner has written
                event, moved = await tx.write_transition(artifact, change)
                revised = await tx.add_revision(
                    artifact,
                    content,
                    actor=who,
                    reason=because,
                    status=lifecycle.new_revision_state,
                    retired_status=lifecycle.retired_revision_state,
                )
        await context.notify(event)
        return moved.model_copy(
            update={"content": revised.content, "content_hash": revised.content_hash}
        )

    async def _decide_or_vote(
        self,
        artifact_id: str,
        trigger: str,
        actor: str,
        reason: str,
        expected_version: int | None,
    ) -> Artifact:
        """A person's `approve` or `reject`: the decision itself, or, on an artifact whose
        type wants several reviewers, a vote that settles it once the votes agree."""
        repository = self._context.repository
        artifact = await repository.get(artifact_id)
        check_version(artifact, expected_version)
        who = named(actor)
        because = why(reason or "")
        policy = (await repository.get_type(artifact.type)).review_policy
        if not needs_votes(policy, artifact, who):
            return await self._apply(
                artifact, trigger, actor=who, reason=because, expected_version=expected_version
            )
        votes = votes_of(await repository.history(artifact_id), artifact.revision)
        if any(vote.actor == who for vote in votes):
            raise ReviewError(
                f"{who} has already decided artifact {artifact_id!r}; each reviewer decides "
                f"once (it waits for {policy.reviewers} reviewers, or a lead's decision)"
            )
        vote = Vote(who, trigger, because, lead=who in policy.leads)
        votes.append(vote)
        context = self._context
        change = context.change(artifact, VOTE, actor=who, reason=vote_reason(vote))
        counted = f"{len(votes)} of {policy.reviewers} reviewer decisions recorded"
        change = change._replace(shown_reason=f"{counted}; waiting for another reviewer")
        decision = settle(votes, policy.reviewers)
        if decision is None:
            written, _ = await context.commit(artifact, change, expected_version=expected_version)
            return written
        # the vote and the decision it settles, in one transaction: the history keeps each
        # reviewer's own decision, and the settled one
        with expect_version(artifact, expected_version):
            async with context.repository.transaction() as tx:
                voted, after_vote = await tx.write_transition(artifact, change)
                settled = context.change(
                    after_vote, decision, actor=who, reason=summary(votes, decision)
                )
                event, written = await tx.write_transition(after_vote, settled)
        await context.notify(voted)
        await context.notify(event)
        return written

    async def _decide(
        self,
        artifact_id: str,
        trigger: str,
        actor: str,
        required: Callable[[str], str] | None,
        reason: str | None,
        expected_version: int | None = None,
    ) -> Artifact:
        """Fire a person's `trigger` on the artifact as it is now; `required` checks the
        reason when the decision needs one."""
        artifact = await self._context.repository.get(artifact_id)
        check_version(artifact, expected_version)
        who = named(actor)
        because = required(reason or "") if required is not None else reason
        return await self._apply(
            artifact, trigger, actor=who, reason=because, expected_version=expected_version
        )

    async def _apply(
        self,
        artifact: Artifact,
        trigger: str,
        *,
        actor: str,
        reason: str | None,
        expected_version: int | None = None,
    ) -> Artifact:
        change = self._context.change(artifact, trigger, actor=actor, reason=reason)
        written, _ = await self._context.commit(artifact, change, expected_version=expected_version)
        return written
