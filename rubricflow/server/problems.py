"""Errors as `application/problem+json` (RFC 9457), with the messages the CLI gives.

Every rubricflow error maps to one status: a missing thing 404, a state that refuses the
change or a writer that came first 409, a failed precondition 412, input the model
refuses 422, a store that cannot answer 503. Request validation, unknown routes and
methods, and anything unexpected become problems too, so a client parses one shape.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rubricflow.errors import (
    ArtifactConflictError,
    ArtifactIdTakenError,
    ConfigurationError,
    ContentValidationError,
    FormatDetectionError,
    IllegalTransitionError,
    NotFoundError,
    PluginError,
    PreconditionFailedError,
    ReviewError,
    RubricflowError,
    RubricLoadError,
    RubricValidationError,
    RubricVersionConflictError,
    SchemaOutdatedError,
    ScoringError,
    StoreError,
    UnsafeImportError,
)
from rubricflow.wire.problems import PROBLEM_JSON, ApiProblem, ProblemDetail

__all__ = [
    "PROBLEM_JSON",
    "PROBLEM_RESPONSES",
    "REQUEST_ID",
    "ApiProblem",
    "ProblemDetail",
    "install_problem_handlers",
    "problem_response",
]

#: the id of the request being served (set by the operations middleware); every problem
#: document carries it as `request_id`, so a client's report finds the server's log line
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "rubricflow_request_id", default=None
)
_log = logging.getLogger("rubricflow.server")

# most specific first: the first class an error is an instance of decides
_STATUS: tuple[tuple[type[RubricflowError], int, str], ...] = (
    (NotFoundError, 404, "not-found"),
    (IllegalTransitionError, 409, "illegal-transition"),
    (PreconditionFailedError, 412, "precondition-failed"),
    (ArtifactConflictError, 409, "conflict"),
    (ArtifactIdTakenError, 409, "id-taken"),
    (RubricVersionConflictError, 409, "version-conflict"),
    (SchemaOutdatedError, 503, "schema-outdated"),
    (StoreError, 503, "store-unavailable"),
    (ContentValidationError, 422, "invalid-content"),
    (RubricValidationError, 422, "invalid-rubric"),
    (FormatDetectionError, 422, "unknown-format"),
    (RubricLoadError, 422, "unreadable-rubric"),
    (UnsafeImportError, 422, "import-refused"),
    (ScoringError, 422, "scoring-refused"),
    (ConfigurationError, 422, "invalid-input"),
    (ReviewError, 422, "review-refused"),
    (PluginError, 500, "plugin-error"),
    (RubricflowError, 422, "refused"),
)


def _content(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "model": ApiProblem,
        "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/ApiProblem"}}},
    }


#: the problem responses every route may give, for the OpenAPI document
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _content("The request is malformed"),
    401: _content("No token, or a token that is unknown, revoked or expired"),
    403: _content("The token's role or types do not allow this"),
    404: _content("No such thing"),
    409: _content("The current state refuses the change, or another writer came first"),
    412: _content("If-Match names a version that is no longer current"),
    413: _content("The request body is over the server's limit"),
    422: _content("The input is refused; `errors` names each field"),
    428: _content("This change needs an If-Match header"),
    503: _content("The store cannot answer now; retry"),
}


def problem_response(
    status: int,
    detail: str,
    *,
    kind: str | None = None,
    instance: str = "",
    errors: list[dict[str, str]] | None = None,
    headers: Mapping[str, str] | None = None,
    **extensions: Any,
) -> JSONResponse:
    """A problem+json response."""
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    slug = kind or phrase.lower().replace(" ", "-").replace("'", "")
    body: dict[str, Any] = {
        "type": f"urn:rubricflow:problem:{slug}",
        "title": phrase,
        "status": status,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    if errors:
        body["errors"] = errors
    request_id = REQUEST_ID.get()
    if request_id is not None:
        body["request_id"] = request_id
    body.update(extensions)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def status_of(error: RubricflowError) -> tuple[int, str]:
    """The HTTP status and problem kind of a rubricflow error."""
    for kind, status, slug in _STATUS:
        if isinstance(error, kind):
            return status, slug
    return 422, "refused"  # pragma: no cover - RubricflowError is last above


def _error_items(error: RubricflowError) -> list[dict[str, str]]:
    if isinstance(error, RubricValidationError):
        return [problem.to_dict() for problem in error.problems]
    if isinstance(error, ContentValidationError):
        return [{"path": "content", "message": problem} for problem in error.problems]
    return []


async def _rubricflow_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RubricflowError)
    status, slug = status_of(error)
    detail = str(error)
    if isinstance(error, IllegalTransitionError):
        explain = getattr(request.app.state, "explain_refusal", None)
        if explain is not None:
            detail = await explain(error)
    extensions: dict[str, Any] = {}
    if isinstance(error, IllegalTransitionError):
        extensions = {"state": error.state, "trigger": error.trigger, "allowed": error.allowed}
    if status >= 500:
        _log.error("request %s %s failed: %s", request.method, request.url.path, detail)
    return problem_response(
        status,
        detail,
        kind=slug,
        instance=request.url.path,
        errors=_error_items(error),
        **extensions,
    )


def _location(parts: tuple[Any, ...] | list[Any]) -> str:
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


async def _validation_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    items = [
        {"path": _location(item.get("loc", ())), "message": str(item.get("msg", ""))}
        for item in error.errors()
    ]
    summary = "; ".join(
        f"{i['path']}: {i['message']}" if i["path"] else i["message"] for i in items
    )
    return problem_response(
        422,
        f"invalid request: {summary}" if summary else "invalid request",
        kind="invalid-request",
        instance=request.url.path,
        errors=items,
    )


async def _http_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, StarletteHTTPException)
    detail = error.detail if isinstance(error.detail, str) else str(error.detail)
    return problem_response(
        error.status_code,
        detail,
        instance=request.url.path,
        headers=error.headers,
    )


async def _unexpected(request: Request, error: Exception) -> JSONResponse:
    _log.exception("internal error on %s %s", request.method, request.url.path)
    return problem_response(
        500,
        f"internal error: {type(error).__name__}; the server's log has the details, "
        "please report it",
        kind="internal-error",
        instance=request.url.path,
    )


def install_problem_handlers(app: FastAPI) -> None:
    """Make every error of `app` a problem+json response."""
    app.add_exception_handler(RubricflowError, _rubricflow_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
