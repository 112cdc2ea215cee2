"""API tokens in the store: created (the secret shown once), verified, listed, revoked.

A token reads `rf_<id>_<secret>`. The store keeps the id, and the SHA-256 of the secret:
the secret has 256 random bits, so a fast hash is as strong as a slow one here, and
verifying a request costs one indexed read. The token's *name* is the actor the audit
trail records for everything done with it; a client cannot claim another name.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from rubricflow.errors import ConfigurationError, NotFoundError
from rubricflow.identifiers import invisible_problem
from rubricflow.model import MAX_ID_LENGTH, MAX_NAME_LENGTH
from rubricflow.records.tokens import ROLES, ApiToken, IssuedToken
from rubricflow.store._sql import as_utc, utcnow
from rubricflow.store.artifact_models import SYSTEM_ACTOR
from rubricflow.store.database import Database
from rubricflow.store.tables import ApiTokenRow

__all__ = ["ROLES", "ApiToken", "IssuedToken", "TokenStore", "hash_secret"]

_PREFIX = "rf_"
_tokens = ApiTokenRow.__table__  # type: ignore[attr-defined]
# built once: every request verifies a token, so its statement is not rebuilt each time
_BY_ID = _tokens.select().where(_tokens.c.id == sa.bindparam("token_id"))


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _row(row: sa.Row) -> ApiToken:  # type: ignore[type-arg]
    return ApiToken(
        id=row.id,
        name=row.name,
        role=row.role,
        types=tuple(json.loads(row.types)),
        created_by=row.created_by,
        created_at=as_utc(row.created_at),
        expires_at=as_utc(row.expires_at) if row.expires_at else None,
        revoked_at=as_utc(row.revoked_at) if row.revoked_at else None,
    )


def _check_name(name: str, what: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH or "\x00" in name:
        raise ConfigurationError(
            f"token {what} must be 1 to {MAX_NAME_LENGTH} characters without NUL; got {name[:40]!r}"
        )
    invisible = invisible_problem(name, what=f"the token {what}")
    if invisible is not None:
        raise ConfigurationError(invisible)
    return name


class TokenStore:
    """The `api_tokens` table."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def create(
        self,
        name: str,
        *,
        role: str,
        types: Sequence[str] = (),
        expires_at: datetime | None = None,
        created_by: str,
    ) -> IssuedToken:
        """A new token named `name` (unique): the stored record and its secret, once."""
        name = _check_name(name, "name")
        if name == SYSTEM_ACTOR:
            raise ConfigurationError(
                f"the token name {SYSTEM_ACTOR!r} is reserved for rubricflow's own decisions "
                "(a token's name is the actor its decisions are recorded under); choose another"
            )
        if role not in ROLES:
            raise ConfigurationError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
        for type_name in types:
            if not type_name or len(type_name) > MAX_ID_LENGTH:
                raise ConfigurationError(
                    f"artifact type {type_name!r} in --types must be 1 to {MAX_ID_LENGTH} "
                    "characters"
                )
        if expires_at is not None and as_utc(expires_at) <= utcnow():
            raise ConfigurationError("the token's expiry is in the past; give a future time")
        token_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        now = utcnow()
        record = ApiToken(
            id=token_id,
            name=name,
            role=role,
            types=tuple(dict.fromkeys(types)),
            created_by=created_by,
            created_at=now,
            expires_at=as_utc(expires_at) if expires_at else None,
        )
        try:
            async with self.database.transaction() as connection:
                await connection.execute(
                    _tokens.insert().values(
                        id=record.id,
                        name=record.name,
                        role=record.role,
                        types=json.dumps(list(record.types)),
                        secret_hash=hash_secret(secret),
                        created_by=created_by,
                        created_at=now,
                        expires_at=record.expires_at,
                    )
                )
        except IntegrityError:
            raise ConfigurationError(
                f"a token named {name!r} exists; pick another name or revoke that one"
            ) from None
        return IssuedToken(record, f"{_PREFIX}{token_id}_{secret}")

    async def verify(self, presented: str) -> ApiToken | None:
        """The active token whose secret is `presented`, else None (unknown, wrong secret,
        revoked or expired: a caller learns nothing about which)."""
        if not presented.startswith(_PREFIX) or len(presented) > 200:
            return None
        token_id, _, secret = presented[len(_PREFIX) :].partition("_")
        if not token_id or not secret:
            return None
        async with self.database.read() as connection:
            row = (await connection.execute(_BY_ID, {"token_id": token_id})).first()
        if row is None or not hmac.compare_digest(row.secret_hash, hash_secret(secret)):
            return None
        token = _row(row)
        return token if token.active() else None

    async def session_key(self, token_id: str, purpose: str) -> tuple[ApiToken, bytes] | None:
        """The active token `token_id` and a key only the store can derive for it
        (HMAC-SHA256 of `purpose` keyed by the secret's stored hash), else None. A session
        signed with it names the token, never its secret, and ends when the token is
        revoked or expires (the dashboard's sign-in)."""
        if not token_id or len(token_id) > 64:
            return None
        async with self.database.read() as connection:
            row = (
                await connection.execute(_tokens.select().where(_tokens.c.id == token_id))
            ).first()
        if row is None:
            return None
        token = _row(row)
        if not token.active():
            return None
        key = hmac.new(row.secret_hash.encode(), purpose.encode(), hashlib.sha256).digest()
        return token, key

    async def list(self, *, include_revoked: bool = False) -> builtins.list[ApiToken]:
        query = _tokens.select().order_by(_tokens.c.created_at, _tokens.c.name)
        if not include_revoked:
            query = query.where(_tokens.c.revoked_at.is_(None))
        async with self.database.read() as connection:
            rows = (await connection.execute(query)).all()
        return [_row(row) for row in rows]

    async def get(self, name_or_id: str) -> ApiToken:
        query = _tokens.select().where(
            sa.or_(_tokens.c.name == name_or_id, _tokens.c.id == name_or_id)
        )
        async with self.database.read() as connection:
            row = (await connection.execute(query)).first()
        if row is None:
            raise NotFoundError(
                f"no token named {name_or_id!r}; 'rubricflow tokens list' shows them"
            )
        return _row(row)

    async def revoke(self, name_or_id: str) -> ApiToken:
        """Revoke a token (by name or id): it stops working at once."""
        token = await self.get(name_or_id)
        if token.revoked_at is None:
            async with self.database.transaction() as connection:
                await connection.execute(
                    _tokens.update().where(_tokens.c.id == token.id).values(revoked_at=utcnow())
                )
        return await self.get(token.id)
