"""Bind the server's `Settings` around every request and the lifespan, so the code below
the routes (limits, checks, the judge) reads the settings the app was built with, not the
environment: two apps in one process can hold different settings."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from rubricflow.settings import Settings, use

__all__ = ["SettingsMiddleware"]


class SettingsMiddleware:
    """Pure ASGI middleware: `use(settings)` for each call (tasks started inside, such as
    the lifespan's background services, inherit them)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with use(self.settings):
            await self.app(scope, receive, send)
