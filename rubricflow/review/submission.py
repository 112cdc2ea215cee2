"""Submission: where it is decided whether an artifact may be submitted, how it is
queued, and whether it is reviewed at once in this process.

Refused before anything changes when the content breaks its type's JSON Schema, the type
binds no rubrics, or a bound rubric is not registered; otherwise one transaction reads the
artifact with its type and what is stored of its review, and writes the `submit`. Unless
deferred (or the type has `auto_review: false`) the review follows inline: the same
transaction writes its claim (`start_review` by `inline-PID`), so no worker can take the
artifact between the two, then it is evaluated and decided. A review that asks no judge,
its evaluation done by then (`Reviewer.decide_at_once`), is decided in that transaction
too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from rubricflow.content_bounds import check_content_bounds
from rubricflow.errors import (
    ContentValidationError,
    NotFoundError,
    ReviewError,
    RubricflowError,
)
from rubricflow.review.claims import ReviewClaims
from rubricflow.review.content_schema import schema_violations, schema_violations_off_loop
from rubricflow.review.context import (
    ReviewContext,
    check_version,
    expect_version,
    named,
    utcnow,
)
from rubricflow.review.reviewing import (
    Decided,
    Evaluating,
    Planned,
    Reviewer,
    ReviewOutcome,
    let_start,
    no_rubrics,
    stop_evaluating,
)
from rubricflow.store.artifacts import (
    Artifact,
    ArtifactEvent,
    ArtifactTransaction,
    ArtifactType,
    NewArtifact,
)

__all__ = ["ArtifactSubmitter", "check_content", "check_submittable"]


class ArtifactSubmitter:
    """Submits artifacts for review: queues them, and reviews them inline by default."""

    def __init__(self, context: ReviewContext, claims: ReviewClaims, reviewer: Reviewer) -> None:
        self._context = context
        self._claims = claims
        self._reviewer = reviewer

    async def submit(
        self,
        artifact_id: str,
        *,
        actor: str,
        defer: bool = False,
        expected_version: int | None = None,
    ) -> ReviewOutcome:
        """Queue the artifact for review and, unless `defer` (or the type has
        `auto_review: false`), review it now in this process.

        Refused before anything changes when the content breaks the type's schema or the
        type binds no rubrics, or (`PreconditionFailedError`) when the artifact is not at
        `expected_version` as it is submitted.
        """
        submitted: _Submitted | None = None
        try:
            async with self._context.repository.transaction() as tx:
                artifact, artifact_type, last_seq, reviewed = await tx.get_for_submit(artifact_id)
                check_version(artifact, expected_version)
                await check_content_off_loop(artifact, artifact_type)
                submitted = await self._write_submit(
                    tx, artifact, artifact_type, last_seq, reviewed, actor, defer, expected_version
                )
            await self._notify(submitted)
            return await self._review_submitted(submitted)
        finally:
            if submitted is not None:
                await submitted.stop_unused()

    async def create_and_submit(self, new: NewArtifact, *, defer: bool = False) -> ReviewOutcome:
        """Create an artifact and submit it in one transaction: what the submit refuses
        (unknown type, content against the type's schema, no rubrics, a bound rubric not
        registered, an id already taken) creates nothing. The `create` and `submit`
        events are recorded as two steps of the history, as when done apart; the review
        then follows as `submit`'s does."""
        submitted: _Submitted | None = None
        try:
            async with self._context.repository.transaction() as tx:
                artifact_type = await tx.get_type(new.type_name)
                await check_submittable_off_loop(artifact_type, new.content)
                artifact, created = await tx.insert_new(new)
                try:
                    submitted = await self._write_submit(
                        tx, artifact, artifact_type, created.seq, False, new.actor, defer, None
                    )
                except NotFoundError as error:  # a bound rubric is not registered
                    raise NotFoundError(
                        f"type {new.type_name!r} reviews with a rubric that is not registered: "
                        f"{error}; register it (or bind another) and submit again (nothing "
                        "was created)"
                    ) from None
            await self._context.notify(created)
            await self._notify(submitted)
            try:
                return await self._review_submitted(submitted)
            except RubricflowError as error:
                name = submitted.artifact.id
                raise ReviewError(
                    f"{error}\n(artifact {name!r} was created and submitted, and waits for a "
                    f"review: a worker takes it (`rubricflow worker`); `rubricflow artifacts "
                    f"show {name}` shows where it is)"
                ) from error
        finally:
            if submitted is not None:
                await submitted.stop_unused()

    async def _write_submit(
        self,
        tx: ArtifactTransaction,
        artifact: Artifact,
        artifact_type: ArtifactType,
        last_seq: int,
        reviewed: bool,
        actor: str,
        defer: bool,
        expected_version: int | None,
    ) -> _Submitted:
        """Write the `submit` of `artifact` (its content checked already) in `tx`, and an
        inline review's claim after it. The review's evaluation starts before either, so
        the check pool scores while `tx` writes them and commits."""
        context = self._context
        if not artifact_type.rubrics:
            raise no_rubrics(artifact_type, artifact.id)
        inline = not defer and artifact_type.auto_review
        plan: list[Planned] = []
        evaluating: Evaluating | None = None
        if inline:
            plan = await self._reviewer.plan(tx, artifact, artifact_type, reviewed)
            # the pool scores while the submit and the claim are written: the evaluation
            # reads the content and revision, which neither changes
            evaluating = self._reviewer.start_evaluating(artifact, artifact_type, plan)
        else:
            for binding in artifact_type.rubrics:
                await tx.rubric(binding)
        try:
            if evaluating is not None:
                await let_start(evaluating)
            change = context.change(
                artifact, "submit", actor=named(actor), reason="submitted", queued_at=utcnow()
            )
            with expect_version(artifact, expected_version):
                event, artifact = await tx.write_transition(artifact, change, seq=last_seq + 1)
        except BaseException:
            if evaluating is not None:
                await stop_evaluating(evaluating)
            raise
        submitted = _Submitted(artifact, artifact_type, event, plan, evaluating=evaluating)
        if not inline:
            return submitted
        try:
            # claimed in the submit's own transaction: no worker can take the review in
            # between; should this process die, the lease runs out and a worker takes it
            start = self._claims.start(artifact, worker=f"inline-{os.getpid()}")
            submitted.claim, submitted.artifact = await tx.write_transition(
                artifact, start, seq=event.seq + 1
            )
            if submitted.evaluating is not None and self._reviewer.asks_no_judge(
                artifact_type, plan
            ):
                submitted.decided = await self._reviewer.decide_at_once(
                    tx,
                    submitted.artifact,
                    artifact_type,
                    plan,
                    submitted.evaluating,
                    seq=submitted.claim.seq + 1,
                )
        except BaseException:
            await submitted.stop_unused()
            raise
        return submitted

    async def _notify(self, submitted: _Submitted) -> None:
        """Tell the listeners of the committed `submit`, and of the inline claim."""
        await self._context.notify(submitted.event)
        if submitted.claim is not None:
            await self._context.notify(submitted.claim)

    async def _review_submitted(self, submitted: _Submitted) -> ReviewOutcome:
        """After the submit (and an inline review's claim) committed: queued for a worker,
        reviewed here, or decided already in the same transaction."""
        decided = submitted.decided
        if decided is not None:
            submitted.evaluating = None  # used: nothing to stop
            await self._context.announce_evaluations(submitted.artifact, decided.new)
            await self._context.notify(decided.event)
            return decided.outcome
        if submitted.claim is None:
            return ReviewOutcome(submitted.artifact, queued=True, reason="queued for a worker")
        return await self._reviewer.finish_review(
            submitted.artifact,
            prepared=(submitted.artifact_type, submitted.plan),
            seq=submitted.claim.seq + 1,
            evaluating=submitted.evaluating,
        )


@dataclass
class _Submitted:
    """A `submit` as written, with what its inline review needs."""

    #: the artifact as written: claimed, when reviewed inline
    artifact: Artifact
    artifact_type: ArtifactType
    event: ArtifactEvent
    plan: list[Planned]
    #: the inline review's `start_review`, written with the submit (None: queued only)
    claim: ArtifactEvent | None = None
    #: the evaluation started early for the inline review
    evaluating: Evaluating | None = None
    #: the inline review, decided in the submission's own transaction
    decided: Decided | None = None

    async def stop_unused(self) -> None:
        """Stop the early evaluation if the review did not use it (the submission did not
        commit); `finish_review` stops it too, and twice is harmless."""
        if self.evaluating is not None:
            evaluating, self.evaluating = self.evaluating, None
            await stop_evaluating(evaluating)


def check_submittable(artifact_type: ArtifactType, content: Any) -> None:
    """What `submit` refuses before anything changes, checked for content that is not an
    artifact yet: so creating and submitting in one step creates nothing it would refuse."""
    _require_rubrics(artifact_type)
    _refuse_new(artifact_type, schema_violations(artifact_type, content))


async def check_submittable_off_loop(artifact_type: ArtifactType, content: Any) -> None:
    """`check_submittable`, the content schema run in a worker thread."""
    _require_rubrics(artifact_type)
    _refuse_new(artifact_type, await schema_violations_off_loop(artifact_type, content))


def _require_rubrics(artifact_type: ArtifactType) -> None:
    if not artifact_type.rubrics:
        raise ReviewError(
            f"artifact type {artifact_type.name!r} binds no rubrics, so its artifacts cannot "
            f"be reviewed; bind one with `rubricflow types set {artifact_type.name} --rubric "
            "RUBRIC_ID` (nothing was created)"
        )


def _refuse_new(artifact_type: ArtifactType, problems: list[str]) -> None:
    if problems:
        raise ContentValidationError(
            f"the content does not match the {artifact_type.name!r} type's content schema; "
            "fix it and submit again (nothing was created):",
            problems,
        )


def check_content(artifact: Artifact, artifact_type: ArtifactType) -> None:
    """`ContentValidationError` listing each violation of the type's content schema."""
    _refuse_stored(artifact, artifact_type, schema_violations(artifact_type, artifact.content))


async def check_content_off_loop(artifact: Artifact, artifact_type: ArtifactType) -> None:
    """`check_content`, the content schema run in a worker thread; content stored before
    the content bounds existed is held to them first (`ContentBoundsError`)."""
    check_content_bounds(artifact.content, f"artifact {artifact.id!r} content")
    problems = await schema_violations_off_loop(artifact_type, artifact.content)
    _refuse_stored(artifact, artifact_type, problems)


def _refuse_stored(artifact: Artifact, artifact_type: ArtifactType, problems: list[str]) -> None:
    if problems:
        raise ContentValidationError(
            f"artifact {artifact.id!r} content does not match the {artifact_type.name!r} "
            "type's content schema; fix the content (e.g. `rubricflow artifacts revise`) "
            "and submit again:",
            problems,
        )
