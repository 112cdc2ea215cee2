"""Who is asking: a bearer token, verified against the store, becomes a `Principal`.

Roles are ordered: a submitter creates, submits, revises and reads its own artifacts of
the types its token allows; a reviewer also decides (approve, reject, override) on any
artifact of those types; an admin also manages rubrics, types, tokens and webhooks. The
principal's name (the token's name) is the actor the audit trail records: a client
cannot send another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rubricflow.application import Application
from rubricflow.store.artifact_models import Artifact
from rubricflow.store.tokens import ROLES

__all__ = [
    "LOCAL_PRINCIPAL",
    "Admin",
    "AppDep",
    "Principal",
    "Reviewer",
    "Submitter",
    "authenticate",
    "get_application",
    "require_role",
]

_bearer = HTTPBearer(auto_error=False, description="An API token: `rubricflow tokens create`")


@dataclass(frozen=True)
class Principal:
    """The caller of a request: a token's name, role and allowed artifact types."""

    name: str
    role: str
    #: artifact types it may act on; empty: every type
    types: tuple[str, ...] = ()

    def allows_role(self, role: str) -> bool:
        return ROLES.index(self.role) >= ROLES.index(role)

    def allows_type(self, type_name: str) -> bool:
        return not self.types or type_name in self.types

    def can_read(self, artifact: Artifact) -> bool:
        """Reviewers and admins read every artifact of their types; a submitter only the
        ones it created."""
        if not self.allows_type(artifact.type):
            return False
        return self.allows_role("reviewer") or artifact.created_by == self.name


#: who acts when the server runs with `--no-auth` (on a loopback address only)
LOCAL_PRINCIPAL = Principal(name="local", role="admin")


def get_application(request: Request) -> Application:
    application: Application = request.app.state.application
    return application


AppDep = Annotated[Application, Depends(get_application)]


async def authenticate(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The principal of this request; 401 without a valid token."""
    if not request.app.state.settings.auth:
        request.state.principal = LOCAL_PRINCIPAL
        return LOCAL_PRINCIPAL
    known = getattr(request.state, "verified_principal", None)
    if isinstance(known, Principal):  # verified already (the idempotency middleware)
        request.state.principal = known
        return known
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(
            401,
            "this needs an API token: send 'Authorization: Bearer <token>' (an admin "
            "creates one with 'rubricflow tokens create')",
            headers={"WWW-Authenticate": "Bearer"},
        )
    application: Application = request.app.state.application
    token = await application.store.tokens.verify(credentials.credentials)
    if token is None:
        raise HTTPException(
            401,
            "the API token is unknown, revoked or expired; ask an admin for a new one",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    principal = Principal(name=token.name, role=token.role, types=token.types)
    request.state.principal = principal
    return principal


def require_role(role: str) -> object:
    """A dependency giving the principal when its role is `role` or above; else 403."""

    async def dependency(principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
        if not principal.allows_role(role):
            raise HTTPException(
                403,
                f"this needs the {role} role; token {principal.name!r} is a {principal.role}",
            )
        return principal

    return Depends(dependency)


Submitter = Annotated[Principal, require_role("submitter")]
Reviewer = Annotated[Principal, require_role("reviewer")]
Admin = Annotated[Principal, require_role("admin")]
