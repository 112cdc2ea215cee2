"""MCP over streamable HTTP, for a host to mount (`rubricflow serve` mounts it at `/mcp`).

`McpHttpEndpoint` is an ASGI app. It serves only requests its host has authenticated:
the host verifies the bearer token and calls `bind_caller(scope, caller)` before passing
the request on; a request without a caller is refused. The endpoint is stateless (each
request is one JSON answer, no session to keep), so every server process answers every
request. The session manager runs inside the host's lifespan (`async with
endpoint.running():`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from rubricflow.mcp.callers import CALLER_SCOPE_KEY, Caller
from rubricflow.mcp.server import build_server

if TYPE_CHECKING:
    from rubricflow.application import Application

__all__ = ["McpHttpEndpoint", "bind_caller"]


def bind_caller(scope: Scope, caller: Caller) -> None:
    """Mark an HTTP request as made by `caller` (verified by the host). The SDK sees the
    caller's name as the request's user, never the token itself."""
    scope[CALLER_SCOPE_KEY] = caller
    scope["user"] = AuthenticatedUser(
        AccessToken(token="", client_id=caller.name, scopes=[caller.role])
    )


class McpHttpEndpoint:
    """The streamable HTTP transport over rubricflow's MCP server."""

    def __init__(
        self,
        application: Callable[[], Application],
        *,
        judge: str | None = None,
        no_judge: str | None = None,
        loopback: bool = False,
        max_body_bytes: int | None = None,
    ) -> None:
        """`application()` gives the host's open application; `judge` scores
        evaluate_text's LLM criteria (`no_judge` tells how to give the host one); a host
        bound to a `loopback` address refuses requests whose Host or Origin is not a
        loopback name (DNS rebinding)."""
        security = None
        if loopback:
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
        options: dict[str, Any] = {}
        if max_body_bytes is not None:
            options["max_request_body_size"] = max_body_bytes
        self.server = build_server(application, caller=None, judge=judge, no_judge=no_judge)
        # stateless: every request stands alone (authenticated on its own), so any process
        # of `rubricflow serve --workers N` answers any request and a restart loses no
        # session; the tools never call back to the client, which is all a session adds
        self._sessions = StreamableHTTPSessionManager(
            app=self.server,
            security_settings=security,
            stateless=True,
            json_response=True,
            **options,
        )

    def running(self) -> AbstractAsyncContextManager[None]:
        """Run the session manager (once, for the host's life)."""
        return self._sessions.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get(CALLER_SCOPE_KEY) is None:
            raise RuntimeError("McpHttpEndpoint serves authenticated requests only")
        await self._sessions.handle_request(scope, receive, send)
