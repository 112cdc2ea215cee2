"""`Idempotency-Key` for every state-changing request, as ASGI middleware.

A POST, PUT, PATCH or DELETE that carries `Idempotency-Key: <key>` is recorded, per
principal (the token's name) and key, with a fingerprint of the request (SHA-256 of its
method, path, query and body bytes) before it runs; its response (status, headers, body)
is stored when it finishes. Then:

- a retry with the same key and the same request gets the stored response again, with
  `Idempotent-Replayed: true`, and nothing is done a second time;
- the same key with a different request is refused: 422 problem `idempotency-key-reused`;
- a retry that arrives while the first request still runs waits for its response (up to
  `ServerSettings.idempotency_wait_seconds`), then replays it; past the wait it gets 409
  problem `idempotency-in-progress` with `Retry-After`. So two clients racing with one key
  make one change and both see its response.

Responses with status 500 and above are not stored (the key is let go: a retry runs
again), nor are streamed ones (anything but JSON). Keys are forgotten after
`ServerSettings.idempotency_ttl_seconds` (24 h). A request whose key is held by a server
that died is taken over once the key's lock (`LOCK_SECONDS`) lapses.

The keys of concurrent requests are written together (`_KeyWriter`): the claims and
stored responses that arrive while one write is under way go in the next, one
transaction for all of them, instead of two transactions per request.
"""

from __future__ import annotations

import asyncio
import hashlib
import json

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rubricflow.application import (
    FinishedKey,
    IdempotencyStore,
    KeyClaim,
    KeyRequest,
    StoredResponse,
)
from rubricflow.server.auth import LOCAL_PRINCIPAL, Principal, token_cache
from rubricflow.server.problems import PROBLEM_JSON

__all__ = ["IDEMPOTENCY_HEADER", "LOCK_SECONDS", "IdempotencyMiddleware"]

IDEMPOTENCY_HEADER = "idempotency-key"
#: seconds a request may hold its key before a retry may take it over (the server that
#: ran it is then taken to be gone)
LOCK_SECONDS = 600.0
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_MAX_KEY = 255
_NOT_REPLAYED = frozenset({b"content-length", b"date", b"server", b"x-request-id"})


def _valid_key(key: str) -> bool:
    return 0 < len(key) <= _MAX_KEY and all(33 <= ord(c) <= 126 for c in key)


async def verified_principal(scope: Scope) -> Principal | None:
    """The principal of this request's token (None without a valid one), verified once:
    kept in the request's state, where `auth.authenticate` finds it."""
    state = scope.setdefault("state", {})
    known = state.get("verified_principal")
    if isinstance(known, Principal):
        return known
    app = scope["app"]
    if not app.state.settings.auth:
        principal = LOCAL_PRINCIPAL
    else:
        scheme, _, secret = (Headers(scope=scope).get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return None
        found = await token_cache(app).principal(app.state.application.tokens, secret.strip())
        if found is None:
            return None
        principal = found
    state["verified_principal"] = principal
    return principal


class _KeyWriter:
    """Group commit for idempotency keys: `begin` and `finish` calls queue up, and one
    task writes each batch in one transaction (what arrives during a write goes in the
    next). A request never waits longer than its own write: a lone request is written at
    once."""

    def __init__(self, keys: IdempotencyStore, *, ttl_seconds: float) -> None:
        self.keys = keys
        self.ttl_seconds = ttl_seconds
        self._begins: list[tuple[KeyRequest, asyncio.Future[KeyClaim]]] = []
        self._finishes: list[tuple[FinishedKey, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self._releases: set[asyncio.Future[None]] = set()

    async def begin(self, request: KeyRequest) -> KeyClaim:
        future: asyncio.Future[KeyClaim] = asyncio.get_running_loop().create_future()
        self._begins.append((request, future))
        self._start()
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # the client left: a key this request came to hold is let go once written
            future.add_done_callback(lambda done: self._let_go(request, done))
            raise

    async def finish(self, request: KeyRequest, response: StoredResponse) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._finishes.append((FinishedKey(request, response), future))
        self._start()
        await asyncio.shield(future)

    def _let_go(self, request: KeyRequest, done: asyncio.Future[KeyClaim]) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        if done.result().outcome == "started":
            task = asyncio.ensure_future(self.keys.release(*_named(request)))
            self._releases.add(task)
            task.add_done_callback(self._releases.discard)

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._write())

    async def _write(self) -> None:
        while self._begins or self._finishes:
            begins, self._begins = self._begins, []
            finishes, self._finishes = self._finishes, []
            try:
                claims = await self.keys.write_batch(
                    [request for request, _ in begins],
                    [finished for finished, _ in finishes],
                    ttl_seconds=self.ttl_seconds,
                    lock_seconds=LOCK_SECONDS,
                )
            except BaseException as error:
                futures: list[asyncio.Future[KeyClaim] | asyncio.Future[None]] = [
                    future for _, future in begins
                ]
                futures.extend(future for _, future in finishes)
                for future in futures:
                    if not future.done():
                        future.set_exception(error)
                if isinstance(error, asyncio.CancelledError):
                    raise
                continue
            for (_, begun), claim in zip(begins, claims, strict=True):
                if not begun.done():
                    begun.set_result(claim)
            for _, finished in finishes:
                if not finished.done():
                    finished.set_result(None)


class IdempotencyMiddleware:
    """Replay the stored response of a state-changing request retried under its
    `Idempotency-Key`, instead of doing it again (see the module's docstring)."""

    def __init__(self, app: ASGIApp, *, ttl_seconds: float, wait_seconds: float) -> None:
        self.app = app
        self.ttl_seconds = ttl_seconds
        self.wait_seconds = wait_seconds
        self._writer: _KeyWriter | None = None

    def _keys(self, scope: Scope) -> _KeyWriter:
        keys: IdempotencyStore = scope["app"].state.application.idempotency_keys
        if self._writer is None or self._writer.keys is not keys:
            self._writer = _KeyWriter(keys, ttl_seconds=self.ttl_seconds)
        return self._writer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _UNSAFE:
            await self.app(scope, receive, send)
            return
        key = Headers(scope=scope).get(IDEMPOTENCY_HEADER)
        if key is None:
            await self.app(scope, receive, send)
            return
        if not _valid_key(key):
            await _problem(
                scope,
                send,
                400,
                "invalid-idempotency-key",
                f"the Idempotency-Key header must be 1 to {_MAX_KEY} visible ASCII characters "
                "(a UUID is a good key)",
            )
            return
        principal = await verified_principal(scope)
        if principal is None:  # the route answers 401; nothing to remember
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        fingerprint = _fingerprint(scope, body)
        writer = self._keys(scope)
        request = KeyRequest(principal.name, key, fingerprint)
        claim = await self._claim(scope, writer, request)
        if claim is None:
            return  # a problem was sent
        outcome, stored = claim
        if outcome == "replay":
            assert stored is not None
            await _replay(stored, send)
            return
        if outcome == "mismatch":
            await _problem(
                scope,
                send,
                422,
                "idempotency-key-reused",
                f"Idempotency-Key {key!r} was used for a different request (method, path or "
                "body); use a new key for a new request",
            )
            return
        if outcome == "in_progress":
            await _problem(
                scope,
                send,
                409,
                "idempotency-in-progress",
                f"a request with Idempotency-Key {key!r} is still running; retry later to "
                "get its response",
                headers={"Retry-After": "1"},
            )
            return
        await self._run(scope, _replaying(body, receive), send, writer, request)

    async def _claim(
        self, scope: Scope, writer: _KeyWriter, request: KeyRequest
    ) -> tuple[str, StoredResponse | None] | None:
        """Hold the key, or wait (up to the wait) for the request holding it to finish."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_seconds
        stopping: asyncio.Event | None = getattr(scope["app"].state, "stopping", None)
        pause = 0.02
        while True:
            claim = await writer.begin(request)
            if claim.outcome != "in_progress":
                return claim.outcome, claim.response
            remaining = deadline - loop.time()
            if remaining <= 0 or (stopping is not None and stopping.is_set()):
                return "in_progress", None
            await asyncio.sleep(min(pause, remaining))
            pause = min(pause * 2, 0.25)

    async def _run(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        writer: _KeyWriter,
        request: KeyRequest,
    ) -> None:
        """Run the request holding the key; store a JSON response under 500 before sending
        it, let go of the key otherwise."""
        start: Message | None = None
        parts: list[bytes] = []
        streaming = False
        settled = False

        async def capture(message: Message) -> None:
            nonlocal start, streaming, settled
            if streaming:
                await send(message)
                return
            if message["type"] == "http.response.start":
                start = message
                kind = Headers(raw=message.get("headers", [])).get("content-type", "")
                if not kind.startswith(("application/json", PROBLEM_JSON)):
                    streaming = True  # not replayable: let go of the key and stream it
                    settled = True
                    await writer.keys.release(*_named(request))
                    await send(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            parts.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            assert start is not None
            status = int(start["status"])
            if status < 500:
                headers = [
                    (name.decode("latin-1"), value.decode("latin-1"))
                    for name, value in start.get("headers", [])
                    if name.lower() not in _NOT_REPLAYED
                ]
                await writer.finish(request, StoredResponse(status, headers, b"".join(parts)))
            else:
                await writer.keys.release(*_named(request))
            settled = True
            await send(start)
            await send({"type": "http.response.body", "body": b"".join(parts)})

        try:
            await self.app(scope, receive, capture)
        finally:
            if not settled:  # the request failed, or its client went away
                await asyncio.shield(writer.keys.release(*_named(request)))


def _named(request: KeyRequest) -> tuple[str, str, str]:
    return request.principal, request.key, request.fingerprint


def _fingerprint(scope: Scope, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (scope["method"], scope["path"], scope.get("query_string", b"")):
        digest.update(part if isinstance(part, bytes) else part.encode("utf-8"))
        digest.update(b"\0")
    digest.update(body)
    return digest.hexdigest()


async def _read_body(receive: Receive) -> bytes:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app the body already read, then defers to the client."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _replay(stored: StoredResponse, send: Send) -> None:
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in stored.headers]
    headers.append((b"content-length", str(len(stored.body)).encode()))
    headers.append((b"idempotent-replayed", b"true"))
    await send({"type": "http.response.start", "status": stored.status, "headers": headers})
    await send({"type": "http.response.body", "body": stored.body})


async def _problem(
    scope: Scope,
    send: Send,
    status: int,
    kind: str,
    detail: str,
    *,
    headers: dict[str, str] | None = None,
) -> None:
    from http import HTTPStatus

    body = json.dumps(
        {
            "type": f"urn:rubricflow:problem:{kind}",
            "title": HTTPStatus(status).phrase,
            "status": status,
            "detail": detail,
            "instance": scope.get("path", ""),
        }
    ).encode()
    raw = [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    raw.extend((name.lower().encode(), value.encode()) for name, value in (headers or {}).items())
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
