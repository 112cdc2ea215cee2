"""Live status over HTTP: `GET /v1/artifacts/{artifact_id}/events`, a Server-Sent Events
stream of one artifact's transitions.

Each event is `id: <seq>` (the event's number, which is the artifact's version after it),
`event: artifact.transition` and `data:` the transition as JSON (the event bus's shape,
docs/plugins.md). A client that reconnects sends the last id it saw as `Last-Event-ID`
(browsers' `EventSource` does) and gets what it missed first, then the live events;
`?after=SEQ` does the same on a first connection. While nothing happens a comment
(`: keep-alive`) goes out every 15 s (`RUBRICFLOW_SSE_HEARTBEAT_SECONDS`) so that proxies
keep the connection open. The stream ends with `event: end` after an event into a state
nothing can follow (`archived`, `superseded`), and a request for such an artifact with
nothing left to send is answered 204 (which tells an `EventSource` to stop reconnecting);
when the server shuts down it ends with `event: shutdown`, and the client reconnects, to
another server process, with `Last-Event-ID`. Changes made by any process reach the stream
within milliseconds on PostgreSQL (LISTEN/NOTIFY) and within the change feed's short poll
on SQLite (`rubricflow.review.events.LiveStatus`).

A submitter streams only artifacts it created (another's is 404, as if it did not exist);
reviewers and admins any artifact of their token's types.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query, Request, Response
from fastapi.responses import StreamingResponse

from rubricflow.application import ArtifactEvent
from rubricflow.errors import NotFoundError
from rubricflow.review.events import TRANSITION, transition_event
from rubricflow.server.auth import AppDep, Submitter
from rubricflow.server.problems import PROBLEM_RESPONSES
from rubricflow.settings import current, env_name

__all__ = ["HEARTBEAT_ENV", "router"]

HEARTBEAT_ENV = env_name("sse_heartbeat_seconds")
DEFAULT_HEARTBEAT_SECONDS = 15.0
#: how long a browser waits before it reconnects (the stream's `retry:` field)
RECONNECT_MS = 1000
#: how often a quiet stream checks whether the server is shutting down
_STOP_CHECK_SECONDS = 0.25
_MAX_SEQ = 2**31 - 1
EVENT_STREAM = "text/event-stream"

router = APIRouter(tags=["artifacts"], responses={k: PROBLEM_RESPONSES[k] for k in (403, 404)})


def heartbeat_seconds() -> float:
    """Seconds between keep-alive comments: `Settings.sse_heartbeat_seconds` (15)."""
    return current().sse_heartbeat_seconds


@router.get(
    "/v1/artifacts/{artifact_id}/events",
    summary="Stream the artifact's transitions (Server-Sent Events)",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "A `text/event-stream`: each transition as `id: SEQ`, "
            "`event: artifact.transition`, `data: {...}` (JSON: artifact_id, seq, revision, "
            "trigger, source, dest, actor, reason, evaluation_ids, created_at); "
            "`: keep-alive` comments while quiet; `event: end` after a final state, "
            "`event: shutdown` when the server stops (reconnect with Last-Event-ID).",
            # one Server-Sent Event (what schemathesis and other SSE-aware tools check each
            # event against); `data` is the JSON text described above
            "content": {
                EVENT_STREAM: {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "event": {"type": "string"},
                            "data": {"type": "string"},
                            "id": {"type": "string"},
                            "retry": {"type": "integer"},
                        },
                    }
                }
            },
        },
        204: {"description": "The artifact is in a final state and nothing is left to send"},
        422: PROBLEM_RESPONSES[422],
    },
)
async def artifact_events(
    request: Request,
    application: AppDep,
    principal: Submitter,
    artifact_id: Annotated[str, Path(min_length=1, max_length=200)],
    after: Annotated[
        int | None,
        Query(ge=0, le=_MAX_SEQ, description="Start after this event number (seq)"),
    ] = None,
    last_event_id: Annotated[
        int | None,
        Header(
            alias="Last-Event-ID",
            ge=0,
            le=_MAX_SEQ,
            description="The last event id seen; a reconnecting EventSource sends it",
        ),
    ] = None,
) -> Response:
    artifacts = application.artifacts
    artifact = await artifacts.get(artifact_id)
    if not principal.can_read(artifact):
        raise NotFoundError(f"no artifact {artifact_id!r}; `rubricflow artifacts list` shows them")
    start = last_event_id if last_event_id is not None else (after or 0)

    def final(state: str) -> bool:
        return not artifacts.lifecycle.allowed_triggers(state)

    if final(artifact.status) and start >= artifact.version:
        return Response(status_code=204)
    stream = _stream(
        artifacts.events(artifact_id, after_seq=start),
        final=final,
        stopping=_stopping(request),
        heartbeat=heartbeat_seconds(),
    )
    return StreamingResponse(
        stream,
        media_type=EVENT_STREAM,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _stream(
    events: AsyncGenerator[ArtifactEvent, None],
    *,
    final: Callable[[str], bool],
    stopping: Callable[[], bool],
    heartbeat: float,
) -> AsyncIterator[str]:
    """The stream's text: events as they come, keep-alives while quiet, and its end."""
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[ArtifactEvent] | None = None
    quiet_since = loop.time()
    try:
        yield f"retry: {RECONNECT_MS}\n\n"
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(events))
            done, _ = await asyncio.wait({pending}, timeout=min(heartbeat, _STOP_CHECK_SECONDS))
            if stopping():
                yield "event: shutdown\ndata: {}\n\n"
                return
            if not done:
                if loop.time() - quiet_since >= heartbeat:
                    quiet_since = loop.time()
                    yield ": keep-alive\n\n"
                continue
            event = pending.result()
            pending = None
            quiet_since = loop.time()
            yield _format(event)
            if final(event.dest):
                yield "event: end\ndata: {}\n\n"
                return
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        with contextlib.suppress(RuntimeError):
            await events.aclose()


def _format(event: ArtifactEvent) -> str:
    data = json.dumps(transition_event(event), ensure_ascii=False, separators=(",", ":"))
    return f"id: {event.seq}\nevent: {TRANSITION}\ndata: {data}\n\n"


def _stopping(request: Request) -> Callable[[], bool]:
    """Whether the server is shutting down: the app's own stop (its lifespan ended), or
    uvicorn's exit flag, which is set at SIGTERM/SIGINT while it still waits for open
    responses such as this stream (found through its signal handler, uvicorn's server
    method; no other server is known, and then only the app's stop counts)."""
    stop = getattr(request.app.state, "stopping", None)
    server: Any = None
    with contextlib.suppress(ValueError, TypeError):  # not in the main thread
        server = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    if not hasattr(server, "should_exit"):
        server = None

    def stopping() -> bool:
        if stop is not None and stop.is_set():
            return True
        return bool(server is not None and server.should_exit)

    return stopping
