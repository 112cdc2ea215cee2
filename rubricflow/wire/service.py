"""The service itself: liveness, readiness, and who the caller is."""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["Health", "Me", "Readiness"]


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    schema_revision: str | None


class Me(BaseModel):
    """The token this request was made with."""

    name: str
    role: str
    types: list[str]
