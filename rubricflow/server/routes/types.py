"""Artifact types: which rubrics review an artifact type, and how. Every role reads the
types its token allows (another type is 404, as if it did not exist); admins define them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request

from rubricflow.application import ArtifactType
from rubricflow.errors import NotFoundError
from rubricflow.server.auth import Admin, AppDep, Reviewer, Submitter
from rubricflow.server.judging import check_type_judge
from rubricflow.server.params import TypeNamePath
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.wire.artifacts import ArtifactTypeIn

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/types",
    tags=["artifact types"],
    responses={k: PROBLEM_RESPONSES[k] for k in (403, 404, 503)},
)

TypeName = TypeNamePath


@router.get("", response_model=list[ArtifactType], summary="List the artifact types")
async def list_types(principal: Submitter, application: AppDep) -> list[ArtifactType]:
    types = await application.artifacts.list_types()
    return [t for t in types if principal.allows_type(t.name)]


@router.get("/{name}", response_model=ArtifactType, summary="Get an artifact type")
async def get_type(name: TypeName, principal: Submitter, application: AppDep) -> ArtifactType:
    if not principal.allows_type(name):
        raise NotFoundError(f"no artifact type {name!r}")
    return await application.artifacts.get_type(name)


@router.put(
    "/{name}",
    response_model=ArtifactType,
    summary="Define or replace an artifact type (admin)",
    responses={k: PROBLEM_RESPONSES[k] for k in (409, 422)},
)
async def set_type(
    name: TypeName,
    body: ArtifactTypeIn,
    principal: Admin,
    application: AppDep,
    request: Request,
) -> ArtifactType:
    if not principal.allows_type(name):
        raise HTTPException(403, f"token {principal.name!r} may not act on artifact type {name!r}")
    if body.judge is not None:
        check_type_judge(body.judge, request.app.state.settings)
    if body.review_policy.escalate_to is not None:
        check_type_judge(body.review_policy.escalate_to, request.app.state.settings)
    return await application.artifacts.set_type(body.to_type(name))


@router.get(
    "/{name}/agreement",
    summary="Agreement between the people deciding this type's artifacts (reviewers)",
)
async def type_agreement(
    name: TypeName,
    principal: Reviewer,
    application: AppDep,
    resamples: int = Query(default=1000, ge=10, le=10_000),
    seed: int = Query(default=0, ge=0, le=2**31 - 1),
) -> dict[str, Any]:
    """Cohen's kappa (two reviewers per decision) or Krippendorff's alpha (more), overall
    and per criterion, each with a bootstrap 95% interval; settled decisions only, so a
    decision still open reveals none of its votes."""
    if not principal.allows_type(name):
        raise NotFoundError(f"no artifact type {name!r}")
    found = await application.reviewer_agreement(name, resamples=resamples, seed=seed)
    return found.to_dict()


@router.get(
    "/{name}/disagreements",
    summary="Where the people deciding this type's artifacts disagreed, and the resolution",
)
async def type_disagreements(
    name: TypeName,
    principal: Reviewer,
    application: AppDep,
    limit: int = Query(default=100, ge=1, le=500),
) -> dict[str, Any]:
    """Open splits first (waiting for a further reviewer, a lead or an override), then
    the most recently resolved rounds, each with its votes and how it was resolved. An
    open split's votes say who voted, not what, unless you voted in it or lead the type."""
    if not principal.allows_type(name):
        raise NotFoundError(f"no artifact type {name!r}")
    leads = (await application.artifacts.get_type(name)).review_policy.leads
    found = await application.reviewer_disagreements(type_names=[name], limit=limit)
    return {
        "type": name,
        "disagreements": [d.seen_by(principal.name, leads).to_dict() for d in found],
    }
