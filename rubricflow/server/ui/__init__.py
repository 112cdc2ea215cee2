"""The review dashboard, served under `/ui` by `rubricflow serve`: server-rendered pages
(Jinja2, autoescaped), htmx for partial updates and its SSE extension for live ones, all
vendored (no CDN, no build step), under a strict Content-Security-Policy. See
docs/dashboard.md.

`router()` is the dashboard's router (every page, its static files and its event
stream); the app includes it like the API's routers. Pages call the application core,
never the API over HTTP.
"""

from __future__ import annotations

from fastapi import APIRouter

__all__ = ["router"]


def router() -> APIRouter:
    """The dashboard's routes under /ui (left out of the OpenAPI document: they answer
    HTML, not the API's JSON)."""
    from rubricflow.server.ui import (
        agreement,
        artifact,
        queue,
        reviewers,
        rubrics,
        runs,
        signin,
        static,
        workbench,
    )

    combined = APIRouter(prefix="/ui", include_in_schema=False)
    for part in (
        signin.router,
        queue.router,
        artifact.router,
        rubrics.router,
        runs.router,
        agreement.router,
        reviewers.router,
        workbench.router,
        static.router,
    ):
        combined.include_router(part)
    return combined
