"""API tokens, managed by admins: create (the secret is in the response, once), list,
revoke."""

from __future__ import annotations

from fastapi import APIRouter, Request

from rubricflow.server.auth import Admin, AppDep, token_cache
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.wire.tokens import TokenCreate, TokenIssued, TokenOut

__all__ = ["router"]

router = APIRouter(
    prefix="/v1/tokens",
    tags=["tokens"],
    responses={k: PROBLEM_RESPONSES[k] for k in (403, 404)},
)


@router.post("", status_code=201, response_model=TokenIssued, summary="Create a token")
async def create_token(body: TokenCreate, principal: Admin, application: AppDep) -> TokenIssued:
    issued = await application.tokens.create(
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
    tokens = await application.tokens.list(include_revoked=include_revoked)
    return [TokenOut.of(token) for token in tokens]


@router.delete("/{name}", response_model=TokenOut, summary="Revoke a token")
async def revoke_token(
    name: str, principal: Admin, application: AppDep, request: Request
) -> TokenOut:
    revoked = await application.tokens.revoke(name)
    token_cache(request.app).forget()  # it stops working at once, in this process
    return TokenOut.of(revoked)
