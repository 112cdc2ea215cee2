"""Errors over HTTP: an RFC 9457 problem document (`application/problem+json`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PROBLEM_JSON", "ApiProblem", "ProblemDetail"]

PROBLEM_JSON = "application/problem+json"


class ProblemDetail(BaseModel):
    """One item of a problem's `errors`: where (a field path) and what."""

    model_config = ConfigDict(extra="allow")

    path: str = ""
    message: str


class ApiProblem(BaseModel):
    """An RFC 9457 problem document."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="A URI naming the kind of problem")
    title: str
    status: int
    detail: str = ""
    instance: str = ""
    errors: list[ProblemDetail] = Field(default_factory=list)
    request_id: str | None = Field(
        default=None, description="The request's X-Request-Id, as the server's log has it"
    )
