"""The app factory: `create_app(settings)` gives the FastAPI application of the API.

The app opens the application core (`Application`) over its store when it starts and
closes it when it stops; background services (the embedded review worker, the webhook
deliverer) run beside the requests and stop within the grace period. Users who mount
the API in their own ASGI stack call `create_app` themselves, optionally with an
`Application` they opened (then they close it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from importlib import metadata

from fastapi import Depends, FastAPI

from rubricflow.application import Application
from rubricflow.server.access_log import OperationsMiddleware
from rubricflow.server.idempotency import IdempotencyMiddleware
from rubricflow.server.judging import configure_reviews
from rubricflow.server.limits import BodyLimitMiddleware
from rubricflow.server.mcp_mount import mount_mcp
from rubricflow.server.metrics import attach_event_metrics
from rubricflow.server.metrics import router as metrics_router
from rubricflow.server.problems import PROBLEM_RESPONSES, install_problem_handlers
from rubricflow.server.routes import routers
from rubricflow.server.services import for_settings, stop_on_signals
from rubricflow.server.settings import ServerSettings
from rubricflow.server.settings_scope import SettingsMiddleware
from rubricflow.server.text_guard import refuse_unstorable_text
from rubricflow.telemetry import attach as attach_telemetry

__all__ = ["create_app", "create_app_from_env"]


_DESCRIPTION = """\
The rubricflow review gate over HTTP: submit artifacts, learn the decision, review
rubrics and runs, and score content without storing it.

Every endpoint but `/healthz`, `/readyz` and `/openapi.json` needs an API token
(`Authorization: Bearer <token>`; an admin creates one with `rubricflow tokens
create`). Errors are `application/problem+json` (RFC 9457).
"""


def create_app(
    settings: ServerSettings | None = None,
    *,
    application: Application | None = None,
) -> FastAPI:
    """The API as a FastAPI application. Give `application` to serve a store you opened
    (you close it); otherwise the app opens `settings.db` when it starts."""
    settings = settings or ServerSettings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        core = application or await Application.open(
            settings.db, lease_seconds=settings.lease_seconds, settings=settings.base
        )
        app.state.application = core
        if settings.auth:
            await _warn_without_tokens(core)
        configure_reviews(core, settings)  # the server's judge, for reviews too
        app.state.explain_refusal = core.artifacts.explain_refusal
        stop = asyncio.Event()
        app.state.stopping = stop
        detach_metrics = attach_event_metrics(core)
        detach_telemetry = attach_telemetry(core)  # transitions as span events, when tracing
        restore_signals = stop_on_signals(stop)
        tasks: list[asyncio.Task[None]] = [
            asyncio.create_task(
                service(core, settings, stop), name=getattr(service, "__name__", "service")
            )
            for service in for_settings(settings)
        ]
        try:
            async with run_mcp():  # the MCP session manager, when /mcp is mounted
                yield
        finally:
            stop.set()
            restore_signals()
            if tasks:
                _, pending = await asyncio.wait(tasks, timeout=settings.grace_seconds + 5)
                for task in pending:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            detach_metrics()
            detach_telemetry()
            if application is None:
                await core.close()

    app = FastAPI(
        title="rubricflow",
        version=metadata.version("rubricflow"),
        description=_DESCRIPTION,
        lifespan=lifespan,
        # /docs is Swagger UI served from the package (routes/api_docs.py), not a CDN
        docs_url=None,
        redoc_url=None,
        # any request may be malformed (400), too big (413) or refused (401, 422)
        responses={k: v for k, v in PROBLEM_RESPONSES.items() if k in (400, 401, 413, 422)},
        # text no store keeps (NUL in a path or query, a lone surrogate) is a 422 first
        dependencies=[Depends(refuse_unstorable_text)],
    )
    app.state.settings = settings
    install_problem_handlers(app)
    for router in routers():
        app.include_router(router)
    app.include_router(metrics_router)
    run_mcp = mount_mcp(app, settings)  # /mcp, with the mcp extra
    # inside the body limit: an Idempotency-Key's request body is read whole
    app.add_middleware(
        IdempotencyMiddleware,
        ttl_seconds=settings.idempotency_ttl_seconds,
        wait_seconds=settings.idempotency_wait_seconds,
    )
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    # outermost: the request id is set before anything answers, even a 413
    app.add_middleware(OperationsMiddleware, access_log=settings.access_log)
    # around all of it, the lifespan included: the app's settings, not the environment's
    app.add_middleware(SettingsMiddleware, settings=settings.base)
    return app


async def _warn_without_tokens(core: Application) -> None:
    """Say so at start when the store holds no usable token: every request but /healthz
    would be a 401 (say, a token made in another database than the one served)."""
    tokens = await core.tokens.list()
    if not any(token.active() for token in tokens):
        logging.getLogger("rubricflow.server").warning(
            "this store (%s) holds no active API token, so every request needing one will "
            "be refused (401); create one in the same store: rubricflow tokens create NAME "
            "--role admin --db %s",
            core.display_url,
            core.display_url,
        )


def create_app_from_env() -> FastAPI:
    """The app with settings from the environment (RUBRICFLOW_SERVER_* and the rest): what
    each uvicorn worker process of `rubricflow serve --workers N` builds."""
    return create_app(ServerSettings.from_env())
