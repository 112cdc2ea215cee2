"""API tokens over HTTP: create one (the secret is in the answer, once), a token's
record."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from rubricflow.records.tokens import ApiToken

__all__ = ["TokenCreate", "TokenIssued", "TokenOut"]


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="Recorded as the actor")
    role: str = Field(pattern="^(submitter|reviewer|admin)$")
    types: list[str] = Field(default_factory=list, description="Allowed artifact types; empty: all")
    expires_at: datetime | None = None


class TokenOut(BaseModel):
    id: str
    name: str
    role: str
    types: list[str]
    created_by: str
    created_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def of(cls, token: ApiToken) -> TokenOut:
        return cls(
            id=token.id,
            name=token.name,
            role=token.role,
            types=list(token.types),
            created_by=token.created_by,
            created_at=token.created_at,
            expires_at=token.expires_at,
            revoked_at=token.revoked_at,
        )


class TokenIssued(TokenOut):
    token: str = Field(description="The secret: shown this once, never stored")
