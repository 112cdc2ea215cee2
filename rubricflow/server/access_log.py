"""What every request leaves behind: a request id, its metrics and one JSON access-log line.

`OperationsMiddleware` (pure ASGI, the outermost layer of the app) gives each request an
id (the client's `X-Request-Id` when it is a sane one, else a new one), echoes it in the
response's `X-Request-Id` header and in every problem document (`request_id`), counts
the request and its duration for `/metrics` by route template, and writes one line to the
`rubricflow.access` logger:

    {"time": "...", "request_id": "...", "method": "POST", "route": "/v1/artifacts/{artifact_id}",
     "path": "/v1/artifacts/a1", "status": 201, "duration_ms": 3.2, "principal": "ci-bot"}

The line never holds a secret: no header is logged, and query values whose names look
like credentials (`key`, `token`, `api_key`, `access_token`, `secret`, `password`,
`signature`...) are masked. An exception no handler answered becomes a 500 problem here,
so it too carries the request id.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rubricflow.server.metrics import observe_request
from rubricflow.server.problems import PROBLEM_JSON, REQUEST_ID

__all__ = [
    "ACCESS_LOGGER",
    "REQUEST_ID",
    "REQUEST_ID_HEADER",
    "OperationsMiddleware",
    "current_request_id",
    "masked_query",
]

ACCESS_LOGGER = "rubricflow.access"
REQUEST_ID_HEADER = "X-Request-Id"
_HEADER = REQUEST_ID_HEADER.lower().encode()
# a client's id is kept only when it is short and plain, so it cannot forge log lines
_SANE_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")
_SECRET_NAME = re.compile(
    r"(^|[_-])(key|apikey|token|secret|password|passwd|pwd|auth|authorization|"
    r"signature|sig|credential|credentials|session)([_-]|$)",
    re.IGNORECASE,
)
MASK = "***"

_access = logging.getLogger(ACCESS_LOGGER)
_log = logging.getLogger("rubricflow.server")


def current_request_id() -> str | None:
    """The id of the request being served, if any."""
    return REQUEST_ID.get()


def masked_query(query: str) -> str:
    """`query` with the values of credential-like parameters replaced by `***`."""
    if not query:
        return ""
    pairs = parse_qsl(query, keep_blank_values=True)
    return urlencode(
        [(name, MASK if _SECRET_NAME.search(name) else value) for name, value in pairs],
        safe="*{}/:,",
    )


class OperationsMiddleware:
    """Request ids, request metrics and the JSON access log, for every HTTP request."""

    def __init__(self, app: ASGIApp, *, access_log: bool = True) -> None:
        self.app = app
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope)
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500
        responded = False
        header = (_HEADER, request_id.encode())

        async def send_with_id(message: Message) -> None:
            nonlocal status, responded
            if message["type"] == "http.response.start":
                status = int(message["status"])
                responded = True
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as error:
            _log.exception(
                "internal error on %s %s (request %s)", scope["method"], scope["path"], request_id
            )
            if not responded:
                await _internal_error(scope, send_with_id, request_id, error)
        finally:
            seconds = time.perf_counter() - started
            route = _route_template(scope)
            observe_request(route, scope["method"], status, seconds)
            if self.access_log and _access.isEnabledFor(logging.INFO):
                _access.info(_line(scope, state, request_id, route, status, seconds))
            REQUEST_ID.reset(token)


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == _HEADER:
            text = value.decode("latin-1")
            if _SANE_ID.fullmatch(text):
                return str(text)
            break
    return uuid.uuid4().hex


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"


def _line(
    scope: Scope, state: dict[str, Any], request_id: str, route: str, status: int, seconds: float
) -> str:
    principal = state.get("principal")
    record: dict[str, Any] = {
        "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "request_id": request_id,
        "method": scope["method"],
        "route": route,
        "path": scope.get("path", ""),
        "status": status,
        "duration_ms": round(seconds * 1000, 3),
        "principal": getattr(principal, "name", None),
    }
    query = scope.get("query_string", b"")
    if query:
        record["query"] = masked_query(query.decode("latin-1"))
    client = scope.get("client")
    if client:
        record["client"] = client[0]
    return json.dumps(record, ensure_ascii=False)


async def _internal_error(scope: Scope, send: Send, request_id: str, error: Exception) -> None:
    body = json.dumps(
        {
            "type": "urn:rubricflow:problem:internal-error",
            "title": "Internal Server Error",
            "status": 500,
            "detail": f"internal error: {type(error).__name__}; the server's log has the "
            "details (search it for this request_id), please report it",
            "instance": scope.get("path", ""),
            "request_id": request_id,
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 500,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
