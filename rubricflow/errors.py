"""The one error tree: every error rubricflow raises on purpose is a `RubricflowError`.

Messages name the thing that is wrong (a file, a field path, a criterion, a plugin)
and say how to fix it, so the CLI can print them without a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ArtifactConflictError",
    "ArtifactIdTakenError",
    "AuthenticationError",
    "ConfigurationError",
    "ContentBoundsError",
    "ContentValidationError",
    "DecisionTimeoutError",
    "FormatDetectionError",
    "IllegalTransitionError",
    "NotFoundError",
    "PermissionDeniedError",
    "PluginConflictError",
    "PluginError",
    "PreconditionFailedError",
    "Problem",
    "ReviewError",
    "RewardError",
    "RubricLoadError",
    "RubricValidationError",
    "RubricVersionConflictError",
    "RubricflowError",
    "SchemaOutdatedError",
    "ScoringError",
    "ServerError",
    "StoreError",
    "UnsafeImportError",
    "WebhookError",
]


class RubricflowError(Exception):
    """Base of every error rubricflow raises on purpose.

    An error the HTTP API answered (raised by `rubricflow.client`) also carries the
    response's `status` and its problem document (`problem`, RFC 9457); both are None
    for errors raised in process."""

    status: int | None = None
    problem: dict[str, Any] | None = None


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a rubric: where (a field path such as `criteria[2].weight`) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class RubricValidationError(RubricflowError, ValueError):
    """A rubric document breaks the model's rules; `problems` lists each one with its field path."""

    def __init__(self, problems: Sequence[Problem], source: str | None = None) -> None:
        self.problems = tuple(problems)
        self.source = source
        head = f"{source}: " if source else ""
        lines = "\n".join(f"  {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__(f"{head}invalid rubric ({count} problem{'s' * (count != 1)}):\n{lines}")


class RubricLoadError(RubricflowError):
    """A rubric file cannot be read or parsed (missing, unreadable, malformed YAML/JSON)."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        self.detail = message
        super().__init__(f"{path}: {message}" if path else message)


class FormatDetectionError(RubricLoadError):
    """A document matches no known rubric format, or the requested format does not exist."""


class ConfigurationError(RubricflowError):
    """A setting, option or environment variable has a value rubricflow cannot use."""


class ContentBoundsError(ConfigurationError, ValueError):
    """Content (an artifact's, a target's) is beyond a bound it must keep: nested too deep,
    a list or object with too many items, a string too long, or too large in all (see
    `rubricflow.content_bounds`). `bound` names the bound, `path` where it broke (`$.a[3]`)."""

    def __init__(self, message: str, *, bound: str, path: str) -> None:
        self.bound = bound
        self.path = path
        super().__init__(message)


class PluginError(RubricflowError):
    """A plugin failed to load or registered something unusable."""


class PluginConflictError(PluginError):
    """Two plugins registered the same scorer, function, format or provider name."""


class UnsafeImportError(RubricflowError):
    """A rubric names `module:function` code that was not registered and import was not allowed."""


class ScoringError(RubricflowError):
    """A criterion cannot be scored as configured (unknown scorer, bad scorer options)."""


class RewardError(ScoringError):
    """A reward could not be worked out and the caller asked for failures to raise
    (`on_failure="raise"`): the judge failed, or a per-prompt rubric could not be read."""


class StoreError(RubricflowError):
    """The rubric/evaluation store cannot do what was asked (unreachable, locked, corrupt)."""


class SchemaOutdatedError(StoreError):
    """The database's schema is not the one this rubricflow needs; the message names the
    command to run (`rubricflow db upgrade --db URL`)."""


class NotFoundError(StoreError, LookupError):
    """No stored rubric, version or evaluation has the id asked for."""


class RubricVersionConflictError(StoreError):
    """A rubric id and version is already stored with different content."""


class ReviewError(RubricflowError):
    """An artifact review cannot be done as asked (no rubrics bound, unknown type)."""


class IllegalTransitionError(ReviewError):
    """A trigger that the artifact's current state does not allow; the message names the
    state, the trigger and the triggers that are allowed."""

    def __init__(self, artifact_id: str, state: str, trigger: str, allowed: list[str]) -> None:
        self.artifact_id = artifact_id
        self.state = state
        self.trigger = trigger
        self.allowed = allowed
        choices = ", ".join(allowed) if allowed else "none (the state is final)"
        super().__init__(
            f"artifact {artifact_id!r} is {state}: {trigger!r} is not allowed; allowed: {choices}"
        )


class ArtifactConflictError(ReviewError):
    """Another writer changed the artifact first (optimistic lock); reload and retry."""


class ArtifactIdTakenError(ReviewError):
    """A new artifact's id is taken. Ids are unique across the store, so the id may be
    taken by an artifact the caller cannot see: the message is the same for every taker
    and says nothing of the artifact holding it."""


class PreconditionFailedError(ArtifactConflictError):
    """A change named the artifact version it expects (HTTP `If-Match`), and the artifact
    is at another one, or another writer moved it on while the change was applied: nothing
    was written. Reload the artifact and decide again."""

    def __init__(self, artifact_id: str, expected: int, current: int | None = None) -> None:
        self.artifact_id = artifact_id
        self.expected = expected
        self.current = current
        now = f"it is at version {current}" if current is not None else "another writer moved it on"
        super().__init__(
            f"artifact {artifact_id!r} is no longer at version {expected} (If-Match): {now}; "
            "nothing was changed: reload it and retry with its current ETag"
        )


class ContentValidationError(ReviewError):
    """Artifact content breaks its type's JSON Schema; `problems` lists each violation."""

    def __init__(self, message: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(message + "".join(f"\n  {p}" for p in problems))


class WebhookError(RubricflowError):
    """A webhook cannot be registered, sent or replayed as asked (a URL that is not http(s)
    or reaches a private network, an unknown event, a delivery still pending)."""


class AuthenticationError(RubricflowError):
    """The HTTP API refused the request's token (401): none was sent, or it is unknown,
    revoked or expired. Ask an admin for a token (`rubricflow tokens create`)."""


class PermissionDeniedError(RubricflowError):
    """The token's role or artifact types do not allow the request (403)."""


class ServerError(RubricflowError):
    """The HTTP API could not be reached, or failed on its side (5xx other than a store
    that cannot answer, which is a `StoreError`)."""


class DecisionTimeoutError(RubricflowError, TimeoutError):
    """An artifact was not decided within the time a client chose to wait for it."""
