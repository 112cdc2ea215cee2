"""rubricflow's HTTP API: `create_app(settings)` for your own ASGI stack, or
`rubricflow serve`. Needs the `server` extra (FastAPI, uvicorn)."""

from __future__ import annotations

from rubricflow.server.app import create_app, create_app_from_env
from rubricflow.server.settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "create_app_from_env"]
