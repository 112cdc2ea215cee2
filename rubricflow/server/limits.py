"""Request body limits, as ASGI middleware: a body over the limit is refused with 413
before the application reads it (by its Content-Length), or as soon as a streamed body
passes the limit."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rubricflow.server.problems import PROBLEM_JSON, REQUEST_ID

__all__ = ["BodyLimitMiddleware"]


class _TooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """Refuse request bodies over `max_bytes` with a 413 problem."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _refuse(self, scope: Scope, send: Send) -> None:
        body = json.dumps(
            {
                "type": "urn:rubricflow:problem:payload-too-large",
                "title": "Content Too Large",
                "status": 413,
                "detail": f"the request body is over this server's limit of {self.max_bytes} "
                "bytes (RUBRICFLOW_SERVER_MAX_BODY_BYTES); send less, e.g. split a batch",
                "instance": scope.get("path", ""),
                "request_id": REQUEST_ID.get(),
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", PROBLEM_JSON.encode()),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _declares_more_than(scope, self.max_bytes):
            await self._refuse(scope, send)
            return
        exchange = _Exchange(self, scope, receive, send)
        try:
            await self.app(scope, exchange.receive, exchange.send)
        except _TooLarge:
            if not exchange.started:
                await self._refuse(scope, send)
        except Exception as error:  # an error wrapping ours (an exception group)
            if _wraps_too_large(error) and not exchange.started:
                await self._refuse(scope, send)
            else:
                raise


class _Exchange:
    """One request passing through the limit: the body bytes received so far, and
    whether the answer has started or been replaced by the 413."""

    def __init__(
        self, limit: BodyLimitMiddleware, scope: Scope, receive: Receive, send: Send
    ) -> None:
        self._limit = limit
        self._scope = scope
        self._receive = receive
        self._send = send
        self.received = 0
        self.started = False
        self.exceeded = False  # the body passed the limit
        self.replaced = False  # the app's own answer is dropped for our 413

    async def receive(self) -> Message:
        """The app's `receive`: raises `_TooLarge` once the body passes the limit."""
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self._limit.max_bytes:
                self.exceeded = True
                raise _TooLarge
        return message

    async def send(self, message: Message) -> None:
        """The app's `send`: a body parser may turn our error into its own (FastAPI: 400
        "error parsing the body"): the answer to a body over the limit is 413 all the
        same."""
        if self.replaced:
            return
        if message["type"] == "http.response.start":
            if self.exceeded and not self.started:
                self.replaced = self.started = True
                await self._limit._refuse(self._scope, self._send)
                return
            self.started = True
        await self._send(message)


def _declares_more_than(scope: Scope, max_bytes: int) -> bool:
    """Whether a Content-Length header declares a body over `max_bytes`."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                declared = -1
            if declared > max_bytes:
                return True
    return False


def _wraps_too_large(error: BaseException) -> bool:
    inner: Any = getattr(error, "exceptions", None)
    if inner:
        return any(isinstance(e, _TooLarge) or _wraps_too_large(e) for e in inner)
    cause = error.__cause__ or error.__context__
    return isinstance(cause, _TooLarge)
