"""A client of rubricflow's HTTP API (`rubricflow serve`): `AsyncClient`, and `Client`
for code without an event loop. Typed with the models the server declares
(`rubricflow.wire`); errors are the `RubricflowError` classes the same mistakes raise in
process. See docs/server.md, "Client"."""

from __future__ import annotations

from rubricflow.client.async_client import DECIDED, SERVER_URL_ENV, TOKEN_ENV, AsyncClient
from rubricflow.client.sync_client import Client
from rubricflow.client.transport import RetryPolicy

__all__ = ["DECIDED", "SERVER_URL_ENV", "TOKEN_ENV", "AsyncClient", "Client", "RetryPolicy"]
