"""API tokens as the token store hands them back, without their secret (and once, with
it). Plain values: no database in here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

__all__ = ["ROLES", "ApiToken", "IssuedToken"]

#: the roles, each allowed what the one before it is, and more
ROLES = ("submitter", "reviewer", "admin")


def _as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class ApiToken:
    """A stored token, without its secret."""

    id: str
    name: str
    role: str
    #: the artifact types it may act on; empty: every type
    types: tuple[str, ...] = ()
    created_by: str = ""
    created_at: datetime | None = None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None

    def allows_role(self, role: str) -> bool:
        """Whether this token's role is `role` or above it."""
        return ROLES.index(self.role) >= ROLES.index(role)

    def allows_type(self, type_name: str) -> bool:
        return not self.types or type_name in self.types

    def active(self, now: datetime | None = None) -> bool:
        now = now or datetime.now(timezone.utc)
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or _as_utc(self.expires_at) > now


@dataclass(frozen=True)
class IssuedToken:
    """A token just created: the only time its secret is known."""

    token: ApiToken
    secret: str = field(repr=False)
