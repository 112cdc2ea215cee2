"""API tokens, managed by admins: create (the secret is in the response, once), list,
revoke."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from rubricflow.server.auth import Admin, AppDep
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.store.tokens import ApiToken

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/tokens",
    tags=["tokens"],
    responses={k: PROBLEM_RESPONSES[k] for k in (403, 404)},
)


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


@router.post("", status_code=201, response_model=TokenIssued, summary="Create a token")
async def create_token(body: TokenCreate, principal: Admin, application: AppDep) -> TokenIssued:
    issued = await application.store.tokens.create(
        body.name,
        role=body.role,
        types=body.types,
        expires_at=body.expires_at,
        created_by=principal.name,
    )
    return TokenIssued(**TokenOut.of(issued.token).model_dump(), token=issued.secret)


@router.get("", response_model=list[TokenOut], summary="List tokens")
async def list_tokens(
    principal: Admin, application: AppDep, include_revoked: bool = False
) -> list[TokenOut]:
    tokens = await application.store.tokens.list(include_revoked=include_revoked)
    return [TokenOut.of(token) for token in tokens]


@router.delete("/{name}", response_model=TokenOut, summary="Revoke a token")
async def revoke_token(name: str, principal: Admin, application: AppDep) -> TokenOut:
    return TokenOut.of(await application.store.tokens.revoke(name))
