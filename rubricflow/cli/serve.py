"""`rubricflow serve`: the HTTP API on uvicorn."""

from __future__ import annotations

import copy
import dataclasses
import errno
import os
import shutil
import socket
import tempfile
from typing import Annotated, Any

import typer

from rubricflow.cli.judging import PanelOption, judge_spec
from rubricflow.cli.shared import DbOption, err, fail
from rubricflow.settings import current

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
    access_log: Annotated[
        bool,
        typer.Option(
            "--access-log/--no-access-log",
            help="One JSON line per request on standard output (never a token or key).",
        ),
    ] = True,
    mcp: Annotated[
        bool | None,
        typer.Option(
            "--mcp/--no-mcp",
            help="Serve MCP at /mcp, behind the API's tokens (with the mcp extra; the "
            "default, env RUBRICFLOW_SERVER_MCP). --no-mcp leaves it out: the server "
            "starts without importing the MCP SDK.",
        ),
    ] = None,
    public_metrics: Annotated[
        bool,
        typer.Option(
            "--public-metrics",
            help="Serve /metrics without a token (it needs an admin's otherwise).",
        ),
    ] = False,
    lease: Annotated[
        float,
        typer.Option(
            "--lease",
            min=1.0,
            help="Seconds a review the embedded worker claims stays its own; a killed "
            "server's reviews are taken over after it.",
        ),
    ] = 300.0,
    llm: Annotated[
        list[str] | None,
        typer.Option(
            "--llm",
            metavar="SPEC",
            help="The judge for rubrics that need one: openai:MODEL[@URL], anthropic:MODEL, "
            "ollama:MODEL[@URL], local (default: $RUBRICFLOW_LLM). Requests never choose it. "
            "Once per judge, with --panel, for a judge panel.",
        ),
    ] = None,
    panel: PanelOption = None,
    idempotency_ttl: Annotated[
        float | None,
        typer.Option(
            "--idempotency-ttl",
            min=60.0,
            help="Seconds an Idempotency-Key and its stored response are kept (default "
            "86400; env RUBRICFLOW_SERVER_IDEMPOTENCY_TTL_SECONDS).",
        ),
    ] = None,
    idempotency_wait: Annotated[
        float | None,
        typer.Option(
            "--idempotency-wait",
            min=0.0,
            help="Seconds a retry waits for the request holding its Idempotency-Key, then "
            "409 (default 10; env RUBRICFLOW_SERVER_IDEMPOTENCY_WAIT_SECONDS).",
        ),
    ] = None,
    max_evaluate_targets: Annotated[
        int | None,
        typer.Option(
            "--max-evaluate-targets",
            min=1,
            help="The most targets one scoring request (/v1/evaluate, /batch-score) may "
            "carry (default 1000; env RUBRICFLOW_SERVER_MAX_EVALUATE_TARGETS).",
        ),
    ] = None,
    reward_rubric: Annotated[
        str | None,
        typer.Option(
            "--reward-rubric",
            metavar="ID[@VERSION]",
            help="The registered rubric POST /get_reward scores with when a request names "
            "none (env RUBRICFLOW_SERVER_REWARD_RUBRIC).",
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Serve the HTTP API (FastAPI on uvicorn): artifacts, rubrics, runs, scoring, tokens.

    Needs the `server` extra. Every endpoint but /healthz, /readyz and /openapi.json needs
    a token ('rubricflow tokens create'); the API's documentation is at /docs."""
    from rubricflow.application import Application
    from rubricflow.errors import ConfigurationError

    try:
        import uvicorn

        from rubricflow.server import ServerSettings
    except ImportError as error:
        fail(
            f"the server needs the 'server' extra ({error.name} is missing): "
            "python -m pip install -e '.[server]' in the rubricflow checkout"
        )
    if log_level not in {"critical", "error", "warning", "info", "debug"}:
        fail(f"--log-level {log_level!r}: use critical, error, warning, info or debug")
    judge = judge_spec(llm, panel) or current().llm
    if judge is not None:
        _check_judge(judge)
    # options given win over RUBRICFLOW_SERVER_*; those left out keep the environment's
    given: dict[str, Any] = {
        name: value
        for name, value in (
            ("idempotency_ttl_seconds", idempotency_ttl),
            ("idempotency_wait_seconds", idempotency_wait),
            ("max_evaluate_targets", max_evaluate_targets),
            ("reward_rubric", reward_rubric),
            ("mcp", mcp),
        )
        if value is not None
    }
    try:
        # the options win; settings without one keep their RUBRICFLOW_SERVER_* value
        settings = dataclasses.replace(
            ServerSettings.from_settings(current()),
            **given,
            db=Application.resolve_db(db),
            host=host,
            auth=not no_auth,
            max_body_bytes=max_body,
            review_workers=review_workers,
            grace_seconds=grace,
            judge=judge,
            lease_seconds=lease,
            public_metrics=public_metrics,
            access_log=access_log,
        )
    except ConfigurationError as error:
        fail(str(error))
    os.environ.update(settings.to_env())
    _check_address(host, port)
    err.print(
        f"serving rubricflow on http://{host}:{port} ({workers} process"
        f"{'es' * (workers != 1)}{', no auth' if no_auth else ''}); API docs at /docs"
    )
    metrics_dir = _multiprocess_metrics(workers)
    try:
        uvicorn.run(
            "rubricflow.server.app:create_app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level=log_level,
            log_config=_log_config(log_level),
            access_log=False,  # ours is the JSON line, with query credentials masked
            timeout_graceful_shutdown=int(grace) + 5,
            server_header=False,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _check_address(host: str, port: int) -> None:
    """Exit 2 when `host:port` cannot be listened on (a port in use, an address not of
    this machine), before anything announces that it is serving: uvicorn would say so
    only after our banner, in its own words, and exit 3. It binds as uvicorn does
    (SO_REUSEADDR, IPv6 for an address with a colon) and lets go at once."""
    if port == 0:
        return  # any free port: nothing can be in use
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                fail(
                    f"cannot serve on {where}: the port is already in use (another server "
                    f"is listening there); stop it, or choose another port with --port"
                )
            reason = error.strerror or str(error)
            fail(f"cannot serve on {where}: {reason}; check --host and --port")


def _multiprocess_metrics(workers: int) -> str | None:
    """With several processes, a fresh folder for prometheus-client's multiprocess mode
    (named in PROMETHEUS_MULTIPROC_DIR before they start), so a scrape of any process
    sees them all; removed when the server stops. A folder the environment already names
    is used as it is."""
    if workers == 1 or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return None
    folder = tempfile.mkdtemp(prefix="rubricflow-prometheus-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
    return folder


def _log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging, plus rubricflow's: the JSON access log (`rubricflow.access`) as
    bare lines on standard output, the server's messages on standard error."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["json_line"] = {"format": "%(message)s"}
    config["handlers"]["access_json"] = {
        "formatter": "json_line",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stdout",
    }
    config["loggers"]["rubricflow.access"] = {
        "handlers": ["access_json"],
        "level": "INFO",
        "propagate": False,
    }
    config["loggers"]["rubricflow"] = {
        "handlers": ["default"],
        "level": level.upper(),
        "propagate": False,
    }
    return dict(config)


def _check_judge(spec: str) -> None:
    """Exit 2 when `spec` cannot make a judge: the server's judge is set up front, not
    found broken by the first request that needs it. It imports no code (`python:`)."""
    from rubricflow.errors import RubricflowError
    from rubricflow.llm.session import LLMSession

    try:
        LLMSession(spec, allow_import=False, cache=None).provider_now()
    except RubricflowError as error:
        fail(f"--llm {spec}: {error}")
