"""Who calls a tool: the identity and role each MCP request acts with.

Over stdio the caller is the local user, who owns the store (an admin). Over HTTP the
host (`rubricflow serve`) verifies the bearer token and hands its principal in the ASGI
scope under `CALLER_SCOPE_KEY`; any object with the `Caller` protocol fits, so the
server's `Principal` is used as it is and its rules stay in one place.
"""

from __future__ import annotations

from typing import Any

from rubricflow.errors import RubricflowError
from rubricflow.tools.callers import Caller, LocalCaller

__all__ = ["CALLER_SCOPE_KEY", "Caller", "LocalCaller", "caller_of"]

#: where an HTTP host puts the request's verified caller in the ASGI scope
CALLER_SCOPE_KEY = "rubricflow.mcp.caller"


def caller_of(request: Any, default: Caller | None) -> Caller:
    """The caller of one MCP request: the one the HTTP host verified (found in the
    request's ASGI scope), else `default` (stdio's local user)."""
    scope = getattr(request, "scope", None)
    found: Caller | None = scope.get(CALLER_SCOPE_KEY) if isinstance(scope, dict) else None
    if found is not None:
        return found
    if default is None:
        # an HTTP host that mounted the endpoint without authenticating the request
        raise RubricflowError("this request carries no verified caller; send an API token")
    return default
