"""Artifacts over HTTP: create, submit (or both in one request: `POST /v1/submissions`),
revise, the human decisions, show (with a long poll), list (cursor pages), history and
evaluations.

Who may do what (the role comes from the token; the actor recorded is its name):

- submitters create, submit, revise and withdraw artifacts of their token's types, and
  read the ones they created; anyone else's artifact is 404, as if it did not exist;
- reviewers also approve, reject, override, retry a dead-lettered review, archive and
  supersede, on any artifact of their types, and read them all;
- admins do everything.

Every response that carries an artifact has `ETag: "<version>"`; a change sent with
`If-Match: "<version>"` is applied only if the artifact is still at that version, else
412 (the check and the write are one step: `expected_version` in the review layer).
If-Match is optional: without it a change applies to the artifact as it is (a change
that loses a race to another writer is still refused, 409). Every change may carry an
`Idempotency-Key` (`rubricflow.server.idempotency`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Awaitable
from datetime import datetime
from functools import partial
from typing import Annotated, Any, Protocol
from urllib.parse import quote

from fastapi import APIRouter, Header, HTTPException, Query, Request, Response
from pydantic import BaseModel

from rubricflow.application import Application, Artifact, ArtifactEvent
from rubricflow.errors import ConfigurationError, NotFoundError
from rubricflow.results import Evaluation
from rubricflow.review.listing import listed_status
from rubricflow.server.auth import AppDep, Principal, Reviewer, Submitter
from rubricflow.server.params import INT4_MAX, ArtifactIdPath, VersionQuery
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.wire.artifacts import (
    ID_PATTERN,
    ArtifactCreate,
    ArtifactPage,
    Decision,
    Note,
    ReviewOutcomeOut,
    Revision,
    Submission,
    Supersession,
)

__all__ = ["MAX_WAIT_SECONDS", "router"]

#: the longest long poll (`GET /v1/artifacts/{id}?wait=`)
MAX_WAIT_SECONDS = 120.0
_MAX_PAGE = 200

router = APIRouter(tags=["artifacts"], responses={k: PROBLEM_RESPONSES[k] for k in (403, 404, 503)})

ArtifactId = ArtifactIdPath
IfMatch = Annotated[
    str | None,
    Header(
        max_length=100,
        description='The artifact version the change is based on, as its ETag ("3"); '
        "another version is 412 and nothing changes",
    ),
]
_CHANGE: dict[int | str, dict[str, Any]] = {k: PROBLEM_RESPONSES[k] for k in (400, 409, 412, 422)}


# --- helpers ---------------------------------------------------------------------------------
def etag(version: int) -> str:
    return f'"{version}"'


def _version_of(header: str | None, name: str) -> int | None:
    """The version an If-Match / If-None-Match header names; None for none or `*`."""
    if header is None:
        return None
    value = header.strip()
    if value == "*":
        return None
    value = value.removeprefix("W/").strip().strip('"')
    if not value.isdigit() or len(value) > 18 or int(value) > INT4_MAX:
        raise HTTPException(
            400,
            f'{name} must name one artifact version as its ETag, e.g. {name}: "3" (the '
            "ETag of GET /v1/artifacts/{id})",
        )
    return int(value)


def _location(artifact_id: str) -> str:
    """The artifact's URL path, its id percent-encoded (a header is Latin-1: an id such as
    `\uff41`, a full-width a, could not be sent as it is)."""
    return f"/v1/artifacts/{quote(artifact_id, safe='')}"


def _json(
    model: BaseModel,
    *,
    version: int,
    status: int = 200,
    location: str | None = None,
) -> Response:
    """`model` as the JSON response, with the artifact's ETag (serialised once: FastAPI
    skips its second validation of a Response)."""
    headers = {"ETag": etag(version)}
    if location is not None:
        headers["Location"] = location
    return Response(
        model.model_dump_json(), status_code=status, media_type="application/json", headers=headers
    )


async def _readable(application: Any, principal: Principal, artifact_id: str) -> Artifact:
    """The artifact if the principal may see it; otherwise 404, as if it did not exist."""
    try:
        artifact: Artifact = await application.artifacts.get(artifact_id)
    except NotFoundError:
        raise NotFoundError(f"no artifact {artifact_id!r}") from None
    if not principal.can_read(artifact):
        raise NotFoundError(f"no artifact {artifact_id!r}")
    return artifact


def _allowed_type(principal: Principal, type_name: str) -> None:
    if not principal.allows_type(type_name):
        raise HTTPException(
            403,
            f"token {principal.name!r} may not act on artifact type {type_name!r}; its types: "
            + ", ".join(principal.types),
        )


def _encode_cursor(artifact: Artifact) -> str:
    raw = json.dumps([artifact.created_at.isoformat(), artifact.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, artifact_id = json.loads(raw)
        when = datetime.fromisoformat(created_at)
        if not isinstance(artifact_id, str) or when.tzinfo is None:
            raise ValueError
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise HTTPException(
            400, "invalid cursor: pass the next_cursor of the previous page as it was"
        ) from None
    return when, artifact_id


# --- create and submit -----------------------------------------------------------------------
@router.post(
    "/v1/artifacts",
    status_code=201,
    response_model=Artifact,
    summary="Create an artifact (in draft)",
    responses={k: PROBLEM_RESPONSES[k] for k in (409, 422)},
)
async def create_artifact(
    body: ArtifactCreate, principal: Submitter, application: AppDep
) -> Response:
    _allowed_type(principal, body.type)
    artifact = await application.artifacts.create(
        body.type,
        body.content,
        actor=principal.name,
        title=body.title,
        metadata=body.metadata,
        artifact_id=body.id,
    )
    return _json(artifact, version=artifact.version, status=201, location=_location(artifact.id))


@router.post(
    "/v1/submissions",
    status_code=201,
    response_model=ReviewOutcomeOut,
    summary="Create an artifact and submit it for review, in one request",
    description="What `rubricflow artifacts submit FILE --type T` does: the content is "
    "checked against the type first (nothing is created when it would be refused), then "
    "the artifact is created and reviewed now (or queued for the workers with "
    "`defer: true`). The response says the decision: `status` is approved, "
    "needs_revision or rejected (pending_review when queued).",
    responses={k: PROBLEM_RESPONSES[k] for k in (409, 422)},
)
async def submit_new(body: Submission, principal: Submitter, application: AppDep) -> Response:
    _allowed_type(principal, body.type)
    outcome = await application.create_and_submit(
        body.type,
        body.content,
        actor=principal.name,
        title=body.title,
        defer=body.defer,
        metadata=body.metadata,
        artifact_id=body.id,
    )
    artifact = outcome.artifact
    return _json(
        ReviewOutcomeOut.of(outcome),
        version=artifact.version,
        status=201,
        location=_location(artifact.id),
    )


@router.post(
    "/v1/artifacts/{artifact_id}/submit",
    response_model=ReviewOutcomeOut,
    summary="Submit an artifact for review (review now, or queue it with defer=true)",
    responses=_CHANGE,
)
async def submit_artifact(
    artifact_id: ArtifactId,
    principal: Submitter,
    application: AppDep,
    if_match: IfMatch = None,
    defer: Annotated[bool, Query(description="Only queue the review for the workers")] = False,
) -> Response:
    expected = _version_of(if_match, "If-Match")
    await _readable(application, principal, artifact_id)
    outcome = await application.artifacts.submit_for_review(
        artifact_id, actor=principal.name, defer=defer, expected_version=expected
    )
    return _json(ReviewOutcomeOut.of(outcome), version=outcome.artifact.version)


@router.post(
    "/v1/artifacts/{artifact_id}/revise",
    response_model=Artifact,
    summary="New content as a new revision (back to draft)",
    responses=_CHANGE,
)
async def revise_artifact(
    artifact_id: ArtifactId,
    body: Revision,
    principal: Submitter,
    application: AppDep,
    if_match: IfMatch = None,
) -> Response:
    expected = _version_of(if_match, "If-Match")
    await _readable(application, principal, artifact_id)
    artifact = await application.artifacts.revise(
        artifact_id,
        body.content,
        actor=principal.name,
        reason=body.reason,
        expected_version=expected,
    )
    return _json(artifact, version=artifact.version)


@router.post(
    "/v1/artifacts/{artifact_id}/withdraw",
    response_model=Artifact,
    summary="Take a queued artifact back to draft",
    responses=_CHANGE,
)
async def withdraw_artifact(
    artifact_id: ArtifactId,
    principal: Submitter,
    application: AppDep,
    body: Note | None = None,
    if_match: IfMatch = None,
) -> Response:
    expected = _version_of(if_match, "If-Match")
    await _readable(application, principal, artifact_id)
    artifact = await application.artifacts.withdraw(
        artifact_id,
        actor=principal.name,
        reason=body.reason if body else None,
        expected_version=expected,
    )
    return _json(artifact, version=artifact.version)


# --- reviewers' decisions ------------------------------------------------------------------
class _Change(Protocol):
    """One decision on one artifact, all but its expected version bound (a registry
    method, `functools.partial` of it: mypy checks each route's call)."""

    def __call__(self, *, expected_version: int | None) -> Awaitable[Artifact]: ...


async def _decide(
    change: _Change,
    application: Application,
    principal: Principal,
    artifact_id: str,
    if_match: str | None,
) -> Response:
    """Apply `change` to an artifact the principal may read, at the If-Match version."""
    expected = _version_of(if_match, "If-Match")
    await _readable(application, principal, artifact_id)
    artifact = await change(expected_version=expected)
    return _json(artifact, version=artifact.version)


@router.post(
    "/v1/artifacts/{artifact_id}/approve",
    response_model=Artifact,
    summary="Approve an artifact whose review passed and awaits a human (reviewer)",
    responses=_CHANGE,
)
async def approve_artifact(
    artifact_id: ArtifactId,
    body: Decision,
    principal: Reviewer,
    application: AppDep,
    if_match: IfMatch = None,
) -> Response:
    approve = partial(
        application.artifacts.approve, artifact_id, actor=principal.name, reason=body.reason
    )
    return await _decide(approve, application, principal, artifact_id, if_match)


@router.post(
    "/v1/artifacts/{artifact_id}/reject",
    response_model=Artifact,
    summary="Reject an artifact, with a reason (reviewer)",
    responses=_CHANGE,
)
async def reject_artifact(
    artifact_id: ArtifactId,
    body: Decision,
    principal: Reviewer,
    application: AppDep,
    if_match: IfMatch = None,
) -> Response:
    reject = partial(
        application.artifacts.reject, artifact_id, actor=principal.name, reason=body.reason
    )
    return await _decide(reject, application, principal, artifact_id, if_match)


@router.post(
    "/v1/artifacts/{artifact_id}/override",
    response_model=Artifact,
    summary="Approve despite the rubrics, with a reason (reviewer)",
    responses=_CHANGE,
)
async def override_artifact(
    artifact_id: ArtifactId,
    body: Decision,
    principal: Reviewer,
    application: AppDep,
    if_match: IfMatch = None,
) -> Response:
    override = partial(
        application.artifacts.override, artifact_id, actor=principal.name, reason=body.reason
    )
    return await _decide(override, application, principal, artifact_id, if_match)


@router.post(
    "/v1/artifacts/{artifact_id}/retry",
    response_model=Artifact,
    summary="Queue a dead-lettered artifact for review again (reviewer)",
    responses=_CHANGE,
)
async def retry_artifact(
    artifact_id: ArtifactId,
    principal: Reviewer,
    application: AppDep,
    body: Note | None = None,
    if_match: IfMatch = None,
) -> Response:
    reason = body.reason if body else None
    retry = partial(application.artifacts.retry, artifact_id, actor=principal.name, reason=reason)
    return await _decide(retry, application, principal, artifact_id, if_match)


@router.post(
    "/v1/artifacts/{artifact_id}/archive",
    response_model=Artifact,
    summary="Archive an artifact (final; reviewer)",
    responses=_CHANGE,
)
async def archive_artifact(
    artifact_id: ArtifactId,
    principal: Reviewer,
    application: AppDep,
    body: Note | None = None,
    if_match: IfMatch = None,
) -> Response:
    reason = body.reason if body else None
    archive = partial(
        application.artifacts.archive, artifact_id, actor=principal.name, reason=reason
    )
    return await _decide(archive, application, principal, artifact_id, if_match)


@router.post(
    "/v1/artifacts/{artifact_id}/supersede",
    response_model=Artifact,
    summary="Retire an artifact another one replaces (reviewer)",
    responses=_CHANGE,
)
async def supersede_artifact(
    artifact_id: ArtifactId,
    body: Supersession,
    principal: Reviewer,
    application: AppDep,
    if_match: IfMatch = None,
) -> Response:
    expected = _version_of(if_match, "If-Match")
    await _readable(application, principal, artifact_id)
    if body.by is not None:
        await _readable(application, principal, body.by)
    artifact = await application.artifacts.supersede(
        artifact_id, actor=principal.name, reason=body.reason, by=body.by, expected_version=expected
    )
    return _json(artifact, version=artifact.version)


# --- reads -----------------------------------------------------------------------------------
@router.get(
    "/v1/artifacts",
    response_model=ArtifactPage,
    summary="List artifacts, newest first, a page at a time",
    description="Filters: `type`, `status`, `created_by`, `dead_letter` (only dead-lettered "
    "artifacts). Pages are keyset pages: pass `next_cursor` as `cursor`; artifacts created "
    "meanwhile never make a page repeat or skip one. A submitter sees only the artifacts it "
    "created; every token only its types.",
    responses={400: PROBLEM_RESPONSES[400]},
)
async def list_artifacts(
    principal: Submitter,
    application: AppDep,
    type: Annotated[str | None, Query(max_length=200, pattern=ID_PATTERN)] = None,
    status: Annotated[str | None, Query(description="One of the lifecycle's states")] = None,
    created_by: Annotated[str | None, Query(max_length=200, pattern=ID_PATTERN)] = None,
    dead_letter: bool = False,
    limit: Annotated[int, Query(ge=1, le=_MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> ArtifactPage:
    try:
        status = listed_status(status, dead_letter=dead_letter)
    except ConfigurationError as refused:
        raise HTTPException(400, str(refused)) from None
    after = _decode_cursor(cursor) if cursor else None
    type_names: list[str] | None = None
    if type is not None:
        type_names = [type] if principal.allows_type(type) else []
    elif principal.types:
        type_names = list(principal.types)
    if not principal.allows_role("reviewer"):
        if created_by not in (None, principal.name):
            type_names = []  # another's artifacts: none to see
        created_by = principal.name
    if type_names == []:
        return ArtifactPage(items=[])
    items = await application.artifacts.page(
        type_names=type_names, status=status, created_by=created_by, after=after, limit=limit
    )
    next_cursor = _encode_cursor(items[-1]) if len(items) == limit else None
    return ArtifactPage(items=items, next_cursor=next_cursor)


@router.get(
    "/v1/artifacts/{artifact_id}",
    response_model=Artifact,
    summary="Show an artifact; with `wait`, long-poll until it changes",
    description="With `wait=N` (seconds) and the version the client holds (`If-None-Match: "
    '"V"` from the ETag, or `after=V`), the answer comes as soon as the artifact moves past '
    "that version, or after N seconds as 304 Not Modified. Without `wait`, `If-None-Match` "
    "naming the current version is 304 at once.",
    responses={304: {"description": "The artifact is still at the version the client holds"}},
)
async def show_artifact(
    request: Request,
    artifact_id: ArtifactId,
    principal: Submitter,
    application: AppDep,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS, description="Seconds")] = 0,
    after: VersionQuery = None,
    if_none_match: Annotated[str | None, Header(max_length=100)] = None,
) -> Response:
    artifact = await _readable(application, principal, artifact_id)
    held = after if after is not None else _version_of(if_none_match, "If-None-Match")
    if (
        held is not None
        and artifact.version <= held
        and wait > 0
        and await _wait_for_change(request, application, artifact_id, held, wait)
    ):
        artifact = await application.artifacts.get(artifact_id)
    if held is not None and artifact.version <= held:
        return Response(status_code=304, headers={"ETag": etag(artifact.version)})
    return _json(artifact, version=artifact.version)


async def _wait_for_change(
    request: Request, application: Any, artifact_id: str, held: int, wait: float
) -> bool:
    """Wait up to `wait` seconds for the artifact's next event past version `held`; False
    when none came, or the server began to stop."""
    change = asyncio.ensure_future(
        application.artifacts.wait_for_change(artifact_id, after=held, timeout=wait)
    )
    stopping: asyncio.Event | None = getattr(request.app.state, "stopping", None)
    if stopping is None:
        return await change is not None
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({change, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not change.done():
            change.cancel()
    return change.done() and not change.cancelled() and change.result() is not None


@router.get(
    "/v1/artifacts/{artifact_id}/history",
    response_model=list[ArtifactEvent],
    summary="Every transition of an artifact, oldest first: who, why, which evaluations",
)
async def artifact_history(
    artifact_id: ArtifactId, principal: Submitter, application: AppDep
) -> list[ArtifactEvent]:
    await _readable(application, principal, artifact_id)
    # votes on a decision still open are hidden, except from a reviewer who has voted
    events: list[ArtifactEvent] = await application.artifacts.history(
        artifact_id, viewer=principal.name
    )
    return events


@router.get(
    "/v1/artifacts/{artifact_id}/evaluations",
    response_model=list[Evaluation],
    summary="The evaluations stored for an artifact (one revision, or all), newest first",
)
async def artifact_evaluations(
    artifact_id: ArtifactId,
    principal: Submitter,
    application: AppDep,
    revision: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
) -> list[Evaluation]:
    await _readable(application, principal, artifact_id)
    found: list[Evaluation] = await application.artifacts.evaluations(artifact_id, revision)
    return found
