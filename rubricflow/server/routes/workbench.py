"""The reviewer's workbench over HTTP: claims, comments and the export of decisions.

- `POST /v1/artifacts/{id}/claim` claims an artifact for a short lease (`seconds`,
  default the dashboard's), or renews the caller's own claim; someone else's unexpired
  claim is 409, naming who holds it and until when. `GET` reads the claim (`holder` is
  null when none holds it), `DELETE` drops the caller's own. A claim lapses on its own
  when its lease ends. Reviewers only, on their types.
- `GET`/`POST /v1/artifacts/{id}/comments`: the artifact's comments, oldest first, and a
  new one (anyone who may read the artifact).
- `GET /v1/decisions/export?format=csv|jsonl&rows=decisions|labels`: every person's
  decision (or criterion label) on the caller's types, streamed
  (`rubricflow.server.decision_export`). Reviewers only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from rubricflow.application import Application, Artifact, Claim, Comment
from rubricflow.errors import NotFoundError
from rubricflow.server.auth import AppDep, Principal, Reviewer, Submitter
from rubricflow.server.decision_export import EXPORT_FORMATS, EXPORT_ROWS, export_lines, filename
from rubricflow.server.params import ArtifactIdPath
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.server.ui.queue import CLAIM_SECONDS

__all__ = ["ClaimOut", "CommentIn", "CommentOut", "router"]

router = APIRouter(tags=["workbench"], responses={k: PROBLEM_RESPONSES[k] for k in (403, 404)})


class ClaimOut(BaseModel):
    """Who holds an artifact on the workbench (`holder` null: nobody), until when."""

    artifact_id: str
    holder: str | None
    claimed_at: datetime | None = None
    expires_at: datetime | None = None
    #: whether the caller holds it
    mine: bool = False

    @classmethod
    def of(cls, artifact_id: str, claim: Claim | None) -> ClaimOut:
        if claim is None:
            return cls(artifact_id=artifact_id, holder=None)
        return cls(
            artifact_id=artifact_id,
            holder=claim.holder,
            claimed_at=claim.claimed_at,
            expires_at=claim.expires_at,
            mine=claim.mine,
        )


class CommentIn(BaseModel):
    body: str = Field(min_length=1, max_length=4000, description="The comment's text")


class CommentOut(BaseModel):
    id: int
    artifact_id: str
    revision: int
    author: str
    body: str
    created_at: datetime

    @classmethod
    def of(cls, comment: Comment) -> CommentOut:
        return cls(
            id=comment.id,
            artifact_id=comment.artifact_id,
            revision=comment.revision,
            author=comment.author,
            body=comment.body,
            created_at=comment.created_at,
        )


async def _readable(application: Application, principal: Principal, artifact_id: str) -> Artifact:
    try:
        artifact = await application.artifacts.get(artifact_id)
    except NotFoundError:
        raise NotFoundError(f"no artifact {artifact_id!r}") from None
    if not principal.can_read(artifact):
        raise NotFoundError(f"no artifact {artifact_id!r}")
    return artifact


async def _reviewable(application: Application, principal: Principal, artifact_id: str) -> None:
    artifact = await _readable(application, principal, artifact_id)
    if not principal.allows_type(artifact.type):
        raise HTTPException(
            403, f"token {principal.name!r} may not review artifacts of type {artifact.type!r}"
        )


@router.post(
    "/v1/artifacts/{artifact_id}/claim",
    response_model=ClaimOut,
    summary="Claim an artifact for review (a short lease), or renew your claim",
    responses={409: PROBLEM_RESPONSES[409]},
)
async def claim_artifact(
    artifact_id: ArtifactIdPath,
    principal: Reviewer,
    application: AppDep,
    seconds: Annotated[float, Query(ge=5, le=3600)] = CLAIM_SECONDS,
) -> ClaimOut:
    await _reviewable(application, principal, artifact_id)
    claim = await application.workbench.claim(artifact_id, principal.name, seconds=seconds)
    if not claim.mine:
        raise HTTPException(
            409,
            f"artifact {artifact_id!r} is claimed by {claim.holder!r} until "
            f"{claim.expires_at.isoformat()}; pick another item, or claim it once that lapses",
        )
    return ClaimOut.of(artifact_id, claim)


@router.get(
    "/v1/artifacts/{artifact_id}/claim",
    response_model=ClaimOut,
    summary="Who holds an artifact's claim, until when",
)
async def show_claim(
    artifact_id: ArtifactIdPath, principal: Reviewer, application: AppDep
) -> ClaimOut:
    await _reviewable(application, principal, artifact_id)
    claim = await application.workbench.holder_of(artifact_id, principal.name)
    return ClaimOut.of(artifact_id, claim)


@router.delete(
    "/v1/artifacts/{artifact_id}/claim",
    status_code=204,
    summary="Drop your claim on an artifact",
)
async def release_claim(
    artifact_id: ArtifactIdPath, principal: Reviewer, application: AppDep
) -> Response:
    await _reviewable(application, principal, artifact_id)
    await application.workbench.release(artifact_id, principal.name)
    return Response(status_code=204)


@router.get(
    "/v1/artifacts/{artifact_id}/comments",
    response_model=list[CommentOut],
    summary="An artifact's comments, oldest first",
)
async def list_comments(
    artifact_id: ArtifactIdPath, principal: Submitter, application: AppDep
) -> list[CommentOut]:
    await _readable(application, principal, artifact_id)
    return [CommentOut.of(c) for c in await application.workbench.comments(artifact_id)]


@router.post(
    "/v1/artifacts/{artifact_id}/comments",
    status_code=201,
    response_model=CommentOut,
    summary="Comment on an artifact (kept with its history)",
    responses={422: PROBLEM_RESPONSES[422]},
)
async def add_comment(
    artifact_id: ArtifactIdPath, body: CommentIn, principal: Submitter, application: AppDep
) -> CommentOut:
    artifact = await _readable(application, principal, artifact_id)
    text = body.body.strip()
    if not text:
        raise HTTPException(422, "body: a comment needs some words, not only spaces")
    comment = await application.workbench.add_comment(
        artifact_id, revision=artifact.revision, author=principal.name, body=text
    )
    return CommentOut.of(comment)


@router.get(
    "/v1/decisions/export",
    summary="Every person's decision, or criterion label, as CSV or JSON Lines (streamed)",
    responses={
        200: {"content": {"text/csv": {}, "application/x-ndjson": {}}},
        422: PROBLEM_RESPONSES[422],
    },
)
async def export_decisions(
    principal: Reviewer,
    application: AppDep,
    format: Annotated[str, Query(max_length=10, description="csv or jsonl")] = "csv",
    rows: Annotated[
        str, Query(max_length=20, description="decisions (one per rubric) or labels")
    ] = "decisions",
    since: Annotated[datetime | None, Query(description="decided at or after")] = None,
) -> Response:
    if format not in EXPORT_FORMATS:
        raise HTTPException(422, f"format: unknown export format {format!r}; use csv or jsonl")
    if rows not in EXPORT_ROWS:
        raise HTTPException(422, f"rows: unknown export rows {rows!r}; use decisions or labels")
    return StreamingResponse(
        export_lines(
            application, format=format, rows=rows, types=principal.types or None, since=since
        ),
        media_type=EXPORT_FORMATS[format],
        headers={"Content-Disposition": f'attachment; filename="{filename(format, rows)}"'},
    )
