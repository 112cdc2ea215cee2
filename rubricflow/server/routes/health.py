"""Liveness, readiness, and who the caller is."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from rubricflow.server.auth import AppDep, Submitter
from rubricflow.server.problems import PROBLEM_RESPONSES, problem_response
from rubricflow.wire.service import Health, Me, Readiness

__all__ = ["router"]

router = APIRouter(tags=["operations"])


@router.get("/healthz", response_model=Health, summary="The process is up")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="The database is reachable and migrated",
    responses={503: PROBLEM_RESPONSES[503]},
)
async def readyz(request: Request, application: AppDep) -> Readiness | JSONResponse:
    try:
        revision, head = await application.schema_revisions()
    except Exception as error:  # any failure to reach the database means not ready
        return problem_response(
            503,
            f"database {application.display_url} is not reachable: {type(error).__name__}",
            kind="not-ready",
            instance=request.url.path,
        )
    if revision != head:
        return problem_response(
            503,
            f"database {application.display_url} has schema {revision or 'none'}, this server "
            f"needs {head}; run: rubricflow db upgrade",
            kind="not-ready",
            instance=request.url.path,
        )
    return Readiness(status="ready", schema_revision=revision)


@router.get("/v1/me", response_model=Me, summary="The caller's token: name, role and types")
async def me(principal: Submitter) -> Me:
    return Me(name=principal.name, role=principal.role, types=list(principal.types))
