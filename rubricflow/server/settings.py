"""How a server runs: its store, whether it asks for tokens, its limits. Read from the
`rubricflow serve` options, or from the environment when uvicorn starts several worker
processes (each builds its app from `ServerSettings.from_env()`)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from rubricflow.errors import ConfigurationError
from rubricflow.settings import ServerVariables, Settings, current

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServerSettings", "is_loopback"]

DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024


def is_loopback(host: str) -> bool:
    """Whether `host` (an address to bind, or `localhost`) reaches this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerSettings:
    """The server's configuration. `auth=False` (`--no-auth`) is allowed only on a
    loopback address: then every request acts as the local admin."""

    db: str | None = None
    host: str = "127.0.0.1"
    auth: bool = True
    #: the biggest request body accepted, in bytes (RUBRICFLOW_SERVER_MAX_BODY_BYTES)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: review workers each server process runs for deferred submissions (0: none)
    review_workers: int = 1
    #: seconds a stopping server gives reviews in progress before handing them back
    grace_seconds: float = 10.0
    #: the judge for rubrics that need one (`provider:model@url`); the server's choice
    #: only, never a request's
    judge: str | None = None
    #: deliver webhooks from this process
    webhooks: bool = True
    #: seconds a request's Idempotency-Key and its stored response are kept
    idempotency_ttl_seconds: float = 86400.0
    #: seconds a retry waits for the request holding its Idempotency-Key (then 409)
    idempotency_wait_seconds: float = 10.0
    #: the most targets one scoring request (`/v1/evaluate`, `/batch-score`) may carry
    max_evaluate_targets: int = 1000
    #: targets one scoring request evaluates at once
    evaluate_concurrency: int = 8
    #: the registered rubric (`id` or `id@version`) `POST /get_reward` scores with when
    #: the request names none (`?rubric=`)
    reward_rubric: str | None = None
    #: seconds a review the embedded worker claims stays its own (a killed server's
    #: reviews are taken over by another worker after it)
    lease_seconds: float = 300.0
    #: serve /metrics without a token (otherwise it needs an admin's)
    public_metrics: bool = False
    #: write one JSON access-log line per request (logger `rubricflow.access`)
    access_log: bool = True
    #: serve MCP at /mcp when the `mcp` extra is installed (off: the SDK is never
    #: imported, and /mcp is the API's 404)
    mcp: bool = True
    #: the settings every part of the server uses (limits, checks, the judge's)
    base: Settings = field(default_factory=current, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.auth and not is_loopback(self.host):
            raise ConfigurationError(
                f"--no-auth serves without tokens, so it binds only to a loopback address, "
                f"not {self.host!r}; drop --no-auth (and create tokens with 'rubricflow "
                "tokens create') or bind to 127.0.0.1"
            )
        if self.max_body_bytes < 1024:
            raise ConfigurationError(
                f"max_body_bytes must be at least 1024, got {self.max_body_bytes}"
            )
        if self.review_workers < 0:
            raise ConfigurationError("review_workers must be 0 or more")
        if self.grace_seconds < 0:
            raise ConfigurationError("grace_seconds must be 0 or more")
        if self.idempotency_ttl_seconds < 60:
            raise ConfigurationError("idempotency_ttl_seconds must be at least 60")
        if self.idempotency_wait_seconds < 0:
            raise ConfigurationError("idempotency_wait_seconds must be 0 or more")
        if self.max_evaluate_targets < 1:
            raise ConfigurationError("max_evaluate_targets must be 1 or more")
        if self.evaluate_concurrency < 1:
            raise ConfigurationError("evaluate_concurrency must be 1 or more")
        if self.lease_seconds < 1:
            raise ConfigurationError("lease_seconds must be at least 1")

    def to_env(self) -> dict[str, str]:
        """These settings as environment variables, for worker processes to read."""
        values = {spec.name: getattr(self, spec.name) for spec in fields(self)}
        return ServerVariables.environment_of(values)

    @classmethod
    def from_settings(cls, settings: Settings) -> ServerSettings:
        """The server's settings on top of `settings`: its RUBRICFLOW_SERVER_* values
        (the database from RUBRICFLOW_DB when RUBRICFLOW_SERVER_DB is not set)."""
        values = settings.server.given()
        if "db" not in values and settings.db:
            values["db"] = settings.db
        return cls(**values, base=settings)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerSettings:
        """Settings from the environment (`environ`, default this process's)."""
        return cls.from_settings(Settings.from_environment(environ))
