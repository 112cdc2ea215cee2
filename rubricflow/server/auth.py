"""Who is asking: a bearer token, verified against the store, becomes a `Principal`.

Roles are ordered: a submitter creates, submits, revises and reads its own artifacts of
the types its token allows; a reviewer also decides (approve, reject, override) on any
artifact of those types; an admin also manages rubrics, types, tokens and webhooks. The
principal's name (the token's name) is the actor the audit trail records: a client
cannot send another.

A verified token is remembered for `TOKEN_CACHE_SECONDS` (keyed by a hash of it, never
the token itself), so a busy client does not cost a store read per request. A token
revoked through this server process stops working at once (the revoke empties the
cache); one revoked elsewhere (the CLI, another server process) within that bound, and
an expiring token never outlives its expiry.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rubricflow.application import Application, Artifact, TokenStore
from rubricflow.records.tokens import ROLES

__all__ = [
    "LOCAL_PRINCIPAL",
    "TOKEN_CACHE_SECONDS",
    "Admin",
    "AppDep",
    "Principal",
    "Reviewer",
    "Submitter",
    "TokenCache",
    "authenticate",
    "get_application",
    "require_role",
    "token_cache",
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

#: seconds a verified token is trusted without reading the store again
TOKEN_CACHE_SECONDS = 1.0
_CACHE_SIZE = 4096


class TokenCache:
    """Principals of recently verified tokens, by the SHA-256 of the token, each for
    `seconds` at most (and never past its token's expiry). Unknown tokens are not
    remembered: each is looked up again."""

    def __init__(self, seconds: float = TOKEN_CACHE_SECONDS, size: int = _CACHE_SIZE) -> None:
        self.seconds = seconds
        self.size = size
        self._entries: OrderedDict[bytes, tuple[Principal, float]] = OrderedDict()

    async def principal(self, tokens: TokenStore, presented: str) -> Principal | None:
        """The principal of the token `presented`, else None (unknown, revoked, expired)."""
        key = hashlib.sha256(presented.encode("utf-8", "replace")).digest()
        now = time.monotonic()
        found = self._entries.get(key)
        if found is not None:
            if found[1] > now:
                return found[0]
            del self._entries[key]
        token = await tokens.verify(presented)
        if token is None:
            return None
        until = now + self.seconds
        if token.expires_at is not None:
            left = (token.expires_at - datetime.now(timezone.utc)).total_seconds()
            until = min(until, now + left)
        principal = Principal(name=token.name, role=token.role, types=token.types)
        self._entries[key] = (principal, until)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return principal

    def forget(self) -> None:
        """Trust no remembered token (one was revoked)."""
        self._entries.clear()


def token_cache(app: Any) -> TokenCache:
    """The app's token cache (made on first use)."""
    cache = getattr(app.state, "token_cache", None)
    if not isinstance(cache, TokenCache):
        cache = TokenCache()
        app.state.token_cache = cache
    return cache


async def get_application(request: Request) -> Application:
    """The app's `Application` (async: FastAPI runs a plain function in a thread)."""
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
    principal = await token_cache(request.app).principal(
        application.tokens, credentials.credentials
    )
    if principal is None:
        raise HTTPException(
            401,
            "the API token is unknown, revoked or expired; ask an admin for a new one",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    request.state.principal = principal
    return principal


def require_role(role: str) -> object:
    """A dependency giving the principal when its role is `role` or above; else 403."""

    async def dependency(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Principal:
        # `authenticate` called here, not as a dependency of its own: one level fewer
        # for FastAPI to solve on every request
        principal = await authenticate(request, credentials)
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
