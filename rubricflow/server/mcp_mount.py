"""MCP at `/mcp`: the streamable HTTP transport of `rubricflow.mcp`, behind the API's
tokens and roles, when the `mcp` extra is installed.

Each request is authenticated as every API request is (`auth.authenticate`: a bearer
token becomes a `Principal`; without one, or with a bad one, 401 problem+json); the
principal is the tools' caller, so a submitter reads and revises only its own
artifacts of its types, and the audit trail records the token's name.

The MCP SDK is imported (in a thread, off the event loop), and its session manager
started, while the app starts: the server listens only once `/mcp` is ready, so its first
client is answered at once. Imported on the first request instead, the SDK kept that
request waiting past the SDK client's timeout on a loaded machine. Building the app
(`create_app`) still imports nothing of it. A client that hangs up mid-request is logged
as one line, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.security import HTTPBearer
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

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


class _Mcp:
    """Authenticate, then hand the request to the MCP endpoint with its caller; the
    endpoint is built, and its session manager run, by the app's lifespan."""

    def __init__(self, app: FastAPI, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        self.endpoint: tuple[McpHttpEndpoint, Callable[[Scope, Caller], None]] | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Import the SDK and run the session manager for the app's life (the SDK's task
        group is entered and left in the lifespan's one task)."""
        module = await asyncio.to_thread(importlib.import_module, "rubricflow.mcp")
        settings = self.settings
        endpoint: McpHttpEndpoint = module.McpHttpEndpoint(
            lambda: self.app.state.application,
            judge=settings.judge,
            no_judge=NO_JUDGE,
            loopback=is_loopback(settings.host),
            max_body_bytes=settings.max_body_bytes,
        )
        async with endpoint.running():
            self.endpoint = (endpoint, module.bind_caller)
            try:
                yield
            finally:
                self.endpoint = None

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
        if self.endpoint is None:  # only outside the lifespan: a stopping app
            unavailable = problem_response(
                503, "the MCP endpoint is not running", instance=MCP_PATH
            )
            await unavailable(scope, receive, send)
            return
        # the body is read here, not by the SDK, which answers a client that hung up
        # with a logged traceback and a 500
        try:
            body = await request.body()
        except ClientDisconnect:
            _log.info("an MCP client hung up before its request was read (%s)", MCP_PATH)
            # never delivered: the access log and metrics say 499, "client closed request"
            await Response(status_code=499)(scope, receive, send)
            return
        endpoint, bind_caller = self.endpoint
        bind_caller(scope, principal)
        await endpoint(scope, _replaying(body, receive), send)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """`receive` for a request whose body was read already: the body once, then what
    the client sends next (its disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


def mount_mcp(
    app: FastAPI, settings: ServerSettings
) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """Route `/mcp` to the MCP endpoint; give what the lifespan runs it in. Without the
    `mcp` extra, or with MCP turned off (`--no-mcp`), nothing is routed (a request is
    the API's 404) and the lifespan runs nothing."""
    if not settings.mcp:
        _log.debug("no MCP endpoint: turned off (--no-mcp)")
        return contextlib.nullcontext
    if importlib.util.find_spec("mcp") is None:
        _log.debug("no MCP endpoint: the mcp extra is not installed")
        return contextlib.nullcontext
    endpoint = _Mcp(app, settings)
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint))
    return endpoint.lifespan
