"""Submission: where it is decided whether an artifact may be submitted, how it is
queued, and whether it is reviewed at once in this process.

Refused before anything changes when the content breaks its type's JSON Schema, the type
binds no rubrics, or a bound rubric is not registered; otherwise one transaction reads the
artifact with its type and what is stored of its review, and writes the `submit`. Unless
deferred (or the type has `auto_review: false`) the review follows inline: claimed as
written, evaluated, decided.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from jsonschema import FormatChecker, validators

from rubricflow.errors import ArtifactConflictError, ContentValidationError, ReviewError
from rubricflow.review.claims import ReviewClaims
from rubricflow.review.context import (
    INLINE_GRACE_SECONDS,
    ReviewContext,
    check_version,
    expect_version,
    named,
    utcnow,
)
from rubricflow.review.reviewing import (
    Evaluating,
    Reviewer,
    ReviewOutcome,
    let_start,
    no_rubrics,
    stop_evaluating,
)
from rubricflow.store.artifacts import Artifact, ArtifactType

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
        context = self._context
        evaluating: Evaluating | None = None
        try:
            async with context.repository.transaction() as tx:
                artifact, artifact_type, last_seq, reviewed = await tx.get_for_submit(artifact_id)
                check_version(artifact, expected_version)
                check_content(artifact, artifact_type)
                if not artifact_type.rubrics:
                    raise no_rubrics(artifact_type, artifact_id)
                inline = not defer and artifact_type.auto_review
                if inline:
                    plan = await self._reviewer.plan(tx, artifact, artifact_type, reviewed)
                else:
                    for binding in artifact_type.rubrics:
                        await tx.rubric(binding)
                # a review done here is not left for workers to snatch between the submit
                # and the claim; should this process die in between, workers take it after
                # the grace period
                grace = timedelta(seconds=min(context.lease_seconds, INLINE_GRACE_SECONDS))
                change = context.change(
                    artifact,
                    "submit",
                    actor=named(actor),
                    reason="submitted",
                    queued_at=utcnow() + grace if inline else utcnow(),
                )
                with expect_version(artifact, expected_version):
                    event, artifact = await tx.write_transition(artifact, change, seq=last_seq + 1)
                if inline:
                    # the check pool scores while the submission and the claim commit
                    evaluating = self._reviewer.start_evaluating(artifact, artifact_type, plan)
                    if evaluating is not None:
                        await let_start(evaluating)
            await context.notify(event)
            if not inline:
                return ReviewOutcome(artifact, queued=True, reason="queued for a worker")
            worker = f"inline-{os.getpid()}"
            try:
                # the artifact as just written: its claim needs no second look
                claimed, started = await self._claims.claim_submitted(
                    artifact, worker=worker, seq=event.seq + 1
                )
            except ArtifactConflictError:
                current = await context.repository.get(artifact.id)
                return ReviewOutcome(
                    current, queued=True, reason="another worker took the review over"
                )
            return await self._reviewer.finish_review(
                claimed, prepared=(artifact_type, plan), seq=started.seq + 1, evaluating=evaluating
            )
        finally:
            if evaluating is not None:  # not used: the submission or the claim failed
                await stop_evaluating(evaluating)


def check_submittable(artifact_type: ArtifactType, content: Any) -> None:
    """What `submit` refuses before anything changes, checked for content that is not an
    artifact yet: so creating and submitting in one step creates nothing it would refuse."""
    if not artifact_type.rubrics:
        raise ReviewError(
            f"artifact type {artifact_type.name!r} binds no rubrics, so its artifacts cannot "
            f"be reviewed; bind one with `rubricflow types set {artifact_type.name} --rubric "
            "RUBRIC_ID` (nothing was created)"
        )
    problems = _schema_violations(artifact_type, content)
    if problems:
        raise ContentValidationError(
            f"the content does not match the {artifact_type.name!r} type's content schema; "
            "fix it and submit again (nothing was created):",
            problems,
        )


def check_content(artifact: Artifact, artifact_type: ArtifactType) -> None:
    """`ContentValidationError` listing each violation of the type's content schema."""
    problems = _schema_violations(artifact_type, artifact.content)
    if problems:
        raise ContentValidationError(
            f"artifact {artifact.id!r} content does not match the {artifact_type.name!r} "
            "type's content schema; fix the content (e.g. `rubricflow artifacts revise`) "
            "and submit again:",
            problems,
        )


def _schema_violations(artifact_type: ArtifactType, content: Any) -> list[str]:
    """Each violation of the type's content schema (at most 20), as `$/path: message`."""
    schema = artifact_type.content_schema
    if schema is None:
        return []
    validator = validators.validator_for(schema)(schema, format_checker=FormatChecker())
    errors = sorted(validator.iter_errors(content), key=lambda e: list(e.absolute_path))
    return [f"$/{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in errors[:20]]
