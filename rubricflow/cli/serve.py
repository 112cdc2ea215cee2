"""`rubricflow serve`: the HTTP API on uvicorn."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from rubricflow.cli.shared import DbOption, err, fail

__all__ = ["serve_command"]


def serve_command(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to bind.")] = 8000,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="Server processes.")] = 1,
    review_workers: Annotated[
        int,
        typer.Option(
            "--review-workers",
            min=0,
            max=256,
            help="Deferred reviews each server process runs at once (0: none; run "
            "'rubricflow worker' instead).",
        ),
    ] = 1,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            min=0.0,
            help="Seconds a stopping server gives reviews in flight; the rest are handed back.",
        ),
    ] = 10.0,
    max_body: Annotated[
        int,
        typer.Option("--max-body-bytes", min=1024, help="The biggest request body accepted."),
    ] = 10 * 1024 * 1024,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth",
            help="Serve without tokens, every request acting as the local admin (loopback "
            "addresses only).",
        ),
    ] = False,
    log_level: Annotated[
        str, typer.Option("--log-level", help="critical, error, warning, info or debug.")
    ] = "info",
    db: DbOption = None,
) -> None:
    """Serve the HTTP API (FastAPI on uvicorn): artifacts, rubrics, runs, scoring, tokens.

    Needs the `server` extra. Every endpoint but /healthz, /readyz and /openapi.json needs
    a token ('rubricflow tokens create'); the API's documentation is at /docs."""
    from rubricflow.errors import ConfigurationError
    from rubricflow.store import resolve_url

    try:
        import uvicorn

        from rubricflow.server import ServerSettings
    except ImportError as error:
        fail(
            f"the server needs the 'server' extra ({error.name} is missing): "
            "pip install 'rubricflow[server]'"
        )
    if log_level not in {"critical", "error", "warning", "info", "debug"}:
        fail(f"--log-level {log_level!r}: use critical, error, warning, info or debug")
    try:
        settings = ServerSettings(
            db=resolve_url(db),
            host=host,
            auth=not no_auth,
            max_body_bytes=max_body,
            review_workers=review_workers,
            grace_seconds=grace,
        )
    except ConfigurationError as error:
        fail(str(error))
    os.environ.update(settings.to_env())
    err.print(
        f"serving rubricflow on http://{host}:{port} ({workers} process"
        f"{'es' * (workers != 1)}{', no auth' if no_auth else ''}); API docs at /docs"
    )
    uvicorn.run(
        "rubricflow.server.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        timeout_graceful_shutdown=int(grace) + 5,
        server_header=False,
    )
