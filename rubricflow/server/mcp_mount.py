"""MCP at `/mcp`: the streamable HTTP transport of `rubricflow.mcp`, behind the API's
tokens and roles, when the `mcp` extra is installed.

Each request is authenticated as every API request is (`auth.authenticate`: a bearer
token becomes a `Principal`; without one, or with a bad one, 401 problem+json); the
principal is the tools' caller, so a submitter reads and revises only its own
artifacts of its types, and the audit trail records the token's name. The MCP session
manager runs inside the app's lifespan.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.security import HTTPBearer
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from rubricflow.server.auth import authenticate
from rubricflow.server.judging import NO_JUDGE
from rubricflow.server.problems import problem_response
from rubricflow.server.settings import ServerSettings, is_loopback

if TYPE_CHECKING:
    from rubricflow.mcp import Caller, McpHttpEndpoint

__all__ = ["MCP_PATH", "mount_mcp"]

MCP_PATH = "/mcp"
_log = logging.getLogger("rubricflow.server")
_bearer = HTTPBearer(auto_error=False)


class _AuthenticatedMcp:
    """Authenticate, then hand the request to the MCP endpoint with its caller."""

    def __init__(
        self, endpoint: McpHttpEndpoint, bind_caller: Callable[[Scope, Caller], None]
    ) -> None:
        self.endpoint = endpoint
        self.bind_caller = bind_caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            principal = await authenticate(request, await _bearer(request))
        except HTTPException as error:
            response = problem_response(
                error.status_code, str(error.detail), instance=MCP_PATH, headers=error.headers
            )
            await response(scope, receive, send)
            return
        self.bind_caller(scope, principal)
        await self.endpoint(scope, receive, send)


def mount_mcp(
    app: FastAPI, settings: ServerSettings
) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """Route `/mcp` to the MCP endpoint; give what the lifespan runs it in. Without the
    `mcp` extra nothing is routed (a request is the API's 404) and the lifespan runs
    nothing."""
    try:
        from rubricflow.mcp import McpHttpEndpoint, bind_caller
    except ImportError as error:
        if (error.name or "").split(".")[0] != "mcp":
            raise
        _log.debug("no MCP endpoint: the mcp extra is not installed")
        return contextlib.nullcontext

    endpoint = McpHttpEndpoint(
        lambda: app.state.application,
        judge=settings.judge,
        no_judge=NO_JUDGE,
        loopback=is_loopback(settings.host),
        max_body_bytes=settings.max_body_bytes,
    )
    app.router.routes.append(Route(MCP_PATH, endpoint=_AuthenticatedMcp(endpoint, bind_caller)))
    return endpoint.running
