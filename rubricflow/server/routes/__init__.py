"""The API's routers, one module per resource; `routers()` lists them in the order the
OpenAPI document shows them."""

from __future__ import annotations

from fastapi import APIRouter

__all__ = ["routers"]


def routers() -> list[APIRouter]:
    from rubricflow.server.routes import (
        api_docs,
        artifacts,
        evaluate,
        health,
        live,
        openrubricrl,
        rewards,
        rubrics,
        runs,
        tokens,
        trust,
        types,
        webhooks,
        workbench,
    )
    from rubricflow.server.ui import router as ui_router

    return [
        health.router,
        api_docs.router,
        tokens.router,
        types.router,
        artifacts.router,
        workbench.router,
        webhooks.router,
        live.router,
        trust.router,  # before rubrics': its /{reference:path} would take these paths
        rubrics.router,
        runs.router,
        evaluate.router,
        openrubricrl.router,
        rewards.router,
        ui_router(),  # the dashboard, under /ui (rubricflow.server.ui)
    ]
