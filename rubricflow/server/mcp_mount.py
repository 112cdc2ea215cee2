"""MCP at `/mcp`: the streamable HTTP transport of `rubricflow.mcp`, behind the API's
tokens and roles, when the `mcp` extra is installed.

Each request is authenticated as every API request is (`auth.authenticate`: a bearer
token becomes a `Principal`; without one, or with a bad one, 401 problem+json); the
principal is the tools' caller, so a submitter reads and revises only its own
artifacts of its types, and the audit trail records the token's name.

The MCP SDK is imported, and its session manager started, on the first request to
`/mcp`: importing it costs about half a second of CPU, which a server whose clients never
use MCP should not pay at every start. The session manager then runs in a task of its
own until the app's lifespan ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
from collections.abc import AsyncIterator, Callable
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


class _LazyMcp:
    """Authenticate, then hand the request to the MCP endpoint with its caller; the
    endpoint is built, and its session manager started, on the first request."""

    def __init__(self, app: FastAPI, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        self.endpoint: tuple[McpHttpEndpoint, Callable[[Scope, Caller], None]] | None = None
        self._starting = asyncio.Lock()
        self._stop: asyncio.Event | None = None
        self._runner: asyncio.Task[None] | None = None

    async def _started(self) -> tuple[McpHttpEndpoint, Callable[[Scope, Caller], None]]:
        async with self._starting:
            if self.endpoint is not None:
                return self.endpoint
            from rubricflow.mcp import McpHttpEndpoint, bind_caller

            settings = self.settings
            endpoint = McpHttpEndpoint(
                lambda: self.app.state.application,
                judge=settings.judge,
                no_judge=NO_JUDGE,
                loopback=is_loopback(settings.host),
                max_body_bytes=settings.max_body_bytes,
            )
            ready = asyncio.Event()
            self._stop = asyncio.Event()
            stop = self._stop

            async def run() -> None:
                # the SDK's task group is entered and left in this one task
                async with endpoint.running():
                    ready.set()
                    await stop.wait()

            self._runner = asyncio.create_task(run(), name="rubricflow-mcp-sessions")
            waiting = asyncio.create_task(ready.wait())
            await asyncio.wait({waiting, self._runner}, return_when=asyncio.FIRST_COMPLETED)
            if not ready.is_set():
                waiting.cancel()
                self._runner.result()  # raises what stopped the session manager
            self.endpoint = (endpoint, bind_caller)
            return self.endpoint

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Stop the session manager, if a request started it, when the app stops."""
        try:
            yield
        finally:
            if self._stop is not None and self._runner is not None:
                self._stop.set()
                with contextlib.suppress(Exception):
                    await self._runner

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
        endpoint, bind_caller = await self._started()
        bind_caller(scope, principal)
        await endpoint(scope, receive, send)


def mount_mcp(
    app: FastAPI, settings: ServerSettings
) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """Route `/mcp` to the MCP endpoint; give what the lifespan runs it in. Without the
    `mcp` extra nothing is routed (a request is the API's 404) and the lifespan runs
    nothing."""
    if importlib.util.find_spec("mcp") is None:
        _log.debug("no MCP endpoint: the mcp extra is not installed")
        return contextlib.nullcontext
    endpoint = _LazyMcp(app, settings)
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint))
    return endpoint.lifespan
