"""A problem+json answer as the `RubricflowError` the same mistake raises in process:
the problem's `type` picks the class (the server maps each error class to one), the
status decides when the type is not one of rubricflow's; the error carries the server's
`detail` as its message, the `status` and the whole problem document."""

from __future__ import annotations

import json
from typing import Any

import httpx

from rubricflow.errors import (
    ArtifactConflictError,
    ArtifactIdTakenError,
    AuthenticationError,
    ConfigurationError,
    ContentValidationError,
    FormatDetectionError,
    IllegalTransitionError,
    NotFoundError,
    PermissionDeniedError,
    PluginError,
    PreconditionFailedError,
    Problem,
    ReviewError,
    RubricflowError,
    RubricLoadError,
    RubricValidationError,
    RubricVersionConflictError,
    SchemaOutdatedError,
    ScoringError,
    ServerError,
    StoreError,
    UnsafeImportError,
)

__all__ = ["error_from_problem", "error_from_response"]

_PREFIX = "urn:rubricflow:problem:"

#: the server's problem kinds (rubricflow.server.problems) and the class each came from
_BY_KIND: dict[str, type[RubricflowError]] = {
    "not-found": NotFoundError,
    "illegal-transition": IllegalTransitionError,
    "precondition-failed": PreconditionFailedError,
    "conflict": ArtifactConflictError,
    "id-taken": ArtifactIdTakenError,
    "version-conflict": RubricVersionConflictError,
    "schema-outdated": SchemaOutdatedError,
    "store-unavailable": StoreError,
    "not-ready": StoreError,
    "invalid-content": ContentValidationError,
    "invalid-rubric": RubricValidationError,
    "unknown-format": FormatDetectionError,
    "unreadable-rubric": RubricLoadError,
    "import-refused": UnsafeImportError,
    "scoring-refused": ScoringError,
    "invalid-input": ConfigurationError,
    "review-refused": ReviewError,
    "plugin-error": PluginError,
    "idempotency-in-progress": ArtifactConflictError,
    "refused": RubricflowError,
}

_BY_STATUS: dict[int, type[RubricflowError]] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ArtifactConflictError,
    412: PreconditionFailedError,
    503: StoreError,
}


def _class_for(kind: str, status: int) -> type[RubricflowError]:
    if status in (401, 403):  # whatever the kind says, the token is the problem
        return _BY_STATUS[status]
    if kind in _BY_KIND:
        return _BY_KIND[kind]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return ConfigurationError  # 400, 413, 422 and the like: the request is refused


def error_from_problem(problem: dict[str, Any], status: int) -> RubricflowError:
    """The error a problem document stands for; its message is the server's `detail`."""
    kind = str(problem.get("type", "")).removeprefix(_PREFIX)
    detail = str(problem.get("detail") or problem.get("title") or f"HTTP {status}")
    if status == 401:
        detail += " (send a valid token: --token, $RUBRICFLOW_TOKEN or Client(token=...))"
    cls = _class_for(kind, status)
    # built without the class's own constructor (which composes a message from parts the
    # server already composed): the server's words are the message
    error = cls.__new__(cls)
    Exception.__init__(error, detail)
    error.status = status
    error.problem = problem
    items = [i for i in problem.get("errors") or [] if isinstance(i, dict)]
    if isinstance(error, IllegalTransitionError):
        error.artifact_id = _artifact_in(str(problem.get("instance", "")))
        error.state = str(problem.get("state", ""))
        error.trigger = str(problem.get("trigger", ""))
        error.allowed = list(problem.get("allowed") or [])
    elif isinstance(error, PreconditionFailedError):
        error.artifact_id = _artifact_in(str(problem.get("instance", "")))
        error.expected = -1
        error.current = None
    elif isinstance(error, RubricValidationError):
        error.problems = tuple(
            Problem(str(i.get("path", "")), str(i.get("message"))) for i in items
        )
        error.source = None
    elif isinstance(error, ContentValidationError):
        error.problems = [str(i.get("message")) for i in items]
    elif isinstance(error, RubricLoadError):
        error.path = None
        error.detail = detail
    return error


def error_from_response(response: httpx.Response) -> RubricflowError:
    """The error an unsuccessful response stands for (a problem document, or whatever a
    proxy in between answered)."""
    problem: dict[str, Any] | None = None
    try:
        parsed = json.loads(response.content)
        if isinstance(parsed, dict):
            problem = parsed
    except ValueError:
        pass
    if problem is None:
        text = response.text.strip()[:200] or response.reason_phrase
        problem = {"type": "about:blank", "status": response.status_code, "detail": text}
    return error_from_problem(problem, response.status_code)


def _artifact_in(instance: str) -> str:
    """The artifact id of `/v1/artifacts/{id}/...`, or the whole path."""
    parts = instance.split("/")
    return parts[3] if len(parts) > 3 and parts[2] == "artifacts" else instance
