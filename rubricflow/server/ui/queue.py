"""The review queue: artifacts that wait for people, with the counts per bucket, filters
(bucket, type, rubric, age), keyset pages in SQL, and live updates.

The buckets, first match wins: awaiting approval (a passing review of a type that
requires a human), needs revision, dead-lettered (its reviews kept failing: a person
retries it), incomplete (a review that could not finish, waiting to be retried), and in
review (queued, or being reviewed). Reviewers and admins see every artifact of their
token's types; a submitter only its own.

Live: `/ui/queue/events` is a Server-Sent Events stream that says `queue-changed` when any
artifact changes (in this process or another: the store's change feed), at most every
half second; the page (htmx's SSE extension) then fetches its live region again. Without
JavaScript the page is a plain page with links.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse

from rubricflow.application import Application, QueueBucket, QueueCursor, QueueFilter
from rubricflow.review.lifecycle import DEAD_LETTERED
from rubricflow.server.auth import Principal
from rubricflow.server.ui.access import Viewer
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.templating import render

__all__ = ["BUCKETS", "PAGE_SIZE", "router"]

BUCKETS: tuple[QueueBucket, ...] = (
    QueueBucket("awaiting_approval", ("in_review",), awaiting_approval=True),
    QueueBucket("needs_revision", ("needs_revision",)),
    QueueBucket("dead_lettered", (DEAD_LETTERED,)),
    QueueBucket("incomplete", ("pending_review", "in_review"), failed=True),
    QueueBucket("in_review", ("pending_review", "in_review")),
)
BUCKET_LABELS = {
    "awaiting_approval": "Awaiting approval",
    "needs_revision": "Needs revision",
    "dead_lettered": "Dead-lettered",
    "incomplete": "Incomplete",
    "in_review": "In review",
}
AGES = {"": None, "1h": timedelta(hours=1), "1d": timedelta(days=1), "7d": timedelta(days=7)}
AGE_LABELS = {
    "": "Any age",
    "1h": "Waiting 1 hour or more",
    "1d": "1 day or more",
    "7d": "7 days or more",
}
PAGE_SIZE = 50
#: the shortest gap between two `queue-changed` events of one stream
MIN_EVENT_GAP_SECONDS = 0.5
HEARTBEAT_SECONDS = 15.0

router = APIRouter(route_class=UiRoute)


@dataclass(frozen=True)
class QueueQuery:
    """The queue's filters as the page's query string gives them."""

    bucket: str = ""
    type: str = ""
    rubric: str = ""
    age: str = ""
    order: str = "newest"
    after: str = ""

    def params(self, **changes: str) -> str:
        values = {**self.__dict__, **changes}
        return urlencode(
            {k: v for k, v in values.items() if v and not (k == "order" and v == "newest")}
        )


_Bucket = Annotated[str, Query(max_length=50)]
_Text = Annotated[str, Query(max_length=200)]
_Cursor = Annotated[str, Query(max_length=500)]


def _query(
    bucket: _Bucket = "",
    type: _Text = "",
    rubric: _Text = "",
    age: _Bucket = "",
    order: _Bucket = "newest",
    after: _Cursor = "",
) -> QueueQuery:
    """The page's query string as a `QueueQuery` (a dependency both queue routes share):
    unknown buckets, ages and orders fall back to the defaults."""
    return QueueQuery(
        bucket=bucket if bucket in BUCKET_LABELS else "",
        type=type[:200],
        rubric=rubric[:200],
        age=age if age in AGES else "",
        order="oldest" if order == "oldest" else "newest",
        after=after[:500],
    )


_Filters = Annotated[QueueQuery, Depends(_query)]


async def _visible_types(application: Application, principal: Principal) -> list[Any]:
    return [t for t in await application.artifacts.list_types() if principal.allows_type(t.name)]


async def _queue_view(request: Request, principal: Principal, query: QueueQuery) -> dict[str, Any]:
    application: Application = request.app.state.application
    types = await _visible_types(application, principal)
    rubrics = sorted({b.rubric_id for t in types for b in t.rubrics})
    chosen = [t.name for t in types]
    if query.type:
        chosen = [name for name in chosen if name == query.type]
    if query.rubric:
        binding = {t.name for t in types if any(b.rubric_id == query.rubric for b in t.rubrics)}
        chosen = [name for name in chosen if name in binding]
    restricted = bool(query.type or query.rubric or principal.types)
    age = AGES[query.age]
    queue = QueueFilter(
        buckets=BUCKETS,
        bucket=query.bucket or None,
        types=tuple(chosen) if restricted else None,
        created_by=None if principal.allows_role("reviewer") else principal.name,
        changed_before=datetime.now(timezone.utc) - age if age else None,
    )
    reads = application.dashboard
    cursor = QueueCursor.decode(query.after) if query.after else None
    page = await reads.queue_page(
        queue, limit=PAGE_SIZE, after=cursor, newest_first=query.order == "newest"
    )
    counts = await reads.queue_counts(queue)
    return {
        "query": query,
        "items": page.items,
        "next_params": query.params(after=page.next.encode()) if page.next else None,
        "first_params": query.params(after="") if cursor else None,
        "counts": [(name, BUCKET_LABELS[name], counts.get(name, 0)) for name in BUCKET_LABELS],
        "total": sum(counts.values()),
        "bucket_labels": BUCKET_LABELS,
        "types": [t.name for t in types],
        "rubrics": rubrics,
        "ages": AGE_LABELS,
        "live_params": query.params(),
        "active": "queue",
    }


@router.get("/", summary="The review queue")
@router.get("/queue", summary="The review queue")
async def queue_page(request: Request, viewer: Viewer, query: _Filters) -> Response:
    view = await _queue_view(request, viewer.principal, query)
    return render(request, "queue.html", view)


@router.get("/queue/fragment", summary="The queue's live region (htmx)")
async def queue_fragment(request: Request, viewer: Viewer, query: _Filters) -> Response:
    view = await _queue_view(request, viewer.principal, query)
    return render(request, "queue_live.html", view)


@router.get("/queue/events", summary="Queue changes (Server-Sent Events)")
async def queue_events(request: Request, viewer: Viewer) -> Response:
    application: Application = request.app.state.application
    stopping: asyncio.Event | None = getattr(request.app.state, "stopping", None)
    return StreamingResponse(
        _changes(application, stopping),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _changes(application: Application, stopping: asyncio.Event | None) -> AsyncIterator[str]:
    """`queue-changed` whenever an artifact changes, keep-alives while quiet; ends when
    the server stops (the browser reconnects, to another process if need be)."""
    loop = asyncio.get_running_loop()
    stop = stopping or asyncio.Event()
    stopped = asyncio.ensure_future(stop.wait())
    with application.artifacts.live.watch() as watch:
        try:
            yield "retry: 1000\n\n"
            last_sent = 0.0
            while not stop.is_set():
                woken = asyncio.ensure_future(watch.wait())
                done, _ = await asyncio.wait(
                    {woken, stopped},
                    timeout=HEARTBEAT_SECONDS,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if woken not in done:
                    woken.cancel()
                if stop.is_set():
                    break
                if woken not in done:
                    yield ": keep-alive\n\n"
                    continue
                gap = MIN_EVENT_GAP_SECONDS - (loop.time() - last_sent)
                if gap > 0:  # coalesce a burst of changes into one refresh
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(asyncio.shield(stopped), gap)
                watch.clear()
                last_sent = loop.time()
                yield "event: queue-changed\ndata: {}\n\n"
            yield "event: shutdown\ndata: {}\n\n"
        finally:
            stopped.cancel()
