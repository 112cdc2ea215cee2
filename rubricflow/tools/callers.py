"""Who calls a tool, and what that caller may reach: the same rules for the agent-tools
dispatcher and the MCP server (and the HTTP API's `Principal`, which fits `Caller`).

A caller sees only the artifacts it may read (anyone else's is "no artifact", as if it did
not exist) and submits only the artifact types it is allowed. A host that serves one user
on their own store uses `LocalCaller`, which may do everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rubricflow.errors import NotFoundError, PermissionDeniedError

if TYPE_CHECKING:
    from rubricflow.application import Application
    from rubricflow.records import Artifact

__all__ = ["Caller", "LocalCaller", "require_readable", "require_submittable"]


class Caller(Protocol):
    """What a tool needs to know of its caller: a name for the audit trail, its role,
    and which artifacts it may submit and see (every role may use every tool)."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...

    def allows_type(self, type_name: str) -> bool: ...

    def can_read(self, artifact: Artifact) -> bool: ...


@dataclass(frozen=True)
class LocalCaller:
    """The user who owns the store (a host serving one user): may do everything."""

    name: str
    role: str = "admin"

    def allows_type(self, type_name: str) -> bool:
        return True

    def can_read(self, artifact: Artifact) -> bool:
        return True


async def require_readable(application: Application, caller: Caller, artifact_id: str) -> None:
    """Refuse an artifact the caller may not see, as if it did not exist."""
    try:
        artifact = await application.artifacts.get(artifact_id)
    except NotFoundError:
        return  # the operation itself says it is unknown, with the fix
    if not caller.can_read(artifact):
        raise NotFoundError(
            f"artifact_id: no artifact {artifact_id!r}; use the id submit_for_review returned"
        )


def require_submittable(caller: Caller, artifact_type: str) -> None:
    """Refuse a submission of a type the caller may not submit."""
    if not caller.allows_type(artifact_type):
        raise PermissionDeniedError(
            f"artifact_type: {caller.name!r} may not submit artifacts of type "
            f"{artifact_type!r}; ask an admin for a token that allows it"
        )
