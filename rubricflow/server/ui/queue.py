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
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from fastapi.responses import StreamingResponse

from rubricflow.application import Application, QueueBucket, QueueCursor, QueueFilter
from rubricflow.errors import NotFoundError, RubricflowError
from rubricflow.review.lifecycle import DEAD_LETTERED
from rubricflow.server.auth import Principal
from rubricflow.server.ui.access import Viewer, posted_form
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.templating import render

__all__ = [
    "BUCKETS",
    "CLAIM_SECONDS",
    "PAGE_SIZE",
    "ClaimSignal",
    "claim_signal",
    "next_in_queue",
    "router",
    "state_of",
]

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
#: the queue's orders: by age (two directions), by score and by margin
ORDER_LABELS = {
    "newest": "Newest change first",
    "oldest": "Waiting longest first",
    "score": "Lowest score first",
    "margin": "Closest to the threshold first",
}
#: how long opening an artifact claims it; the open page renews the claim as it checks
#: the artifact's version (every few seconds), so a claim lapses soon after its tab closes
CLAIM_SECONDS = 120.0
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
    #: free text over titles, ids and last reasons
    q: str = ""
    submitter: str = ""
    #: the latest evaluation's score at least / at most (as typed: "0.5"), and a
    #: criterion it failed
    score_min: str = ""
    score_max: str = ""
    criterion: str = ""

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
    q: _Text = "",
    submitter: _Text = "",
    score_min: _Bucket = "",
    score_max: _Bucket = "",
    criterion: _Text = "",
) -> QueueQuery:
    """The page's query string as a `QueueQuery` (a dependency both queue routes share):
    unknown buckets, ages and orders, and scores that are no number in [0, 1], fall back
    to the defaults."""
    return QueueQuery(
        bucket=bucket if bucket in BUCKET_LABELS else "",
        type=type[:200],
        rubric=rubric[:200],
        age=age if age in AGES else "",
        order=order if order in ORDER_LABELS else "newest",
        after=after[:500],
        q=q.strip()[:200],
        submitter=submitter.strip()[:200],
        score_min=score_min.strip() if _score(score_min) is not None else "",
        score_max=score_max.strip() if _score(score_max) is not None else "",
        criterion=criterion.strip()[:200],
    )


def _score(text: str) -> float | None:
    """A score bound as typed, or None for none or anything but a number in [0, 1]."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


_Filters = Annotated[QueueQuery, Depends(_query)]


def state_of(status: str, awaiting_approval: bool, failed: bool) -> tuple[str, str]:
    """An artifact's state as the queue names it (its bucket), or its status for one
    that waits for nobody: one name per state on every page."""
    for bucket in BUCKETS:
        if bucket.holds(status, awaiting_approval, failed):
            return bucket.name, BUCKET_LABELS[bucket.name]
    return status, status.replace("_", " ").capitalize()


async def _visible_types(application: Application, principal: Principal) -> list[Any]:
    return [t for t in await application.artifacts.list_types() if principal.allows_type(t.name)]


async def _queue_filter(
    application: Application, principal: Principal, query: QueueQuery, types: list[Any]
) -> QueueFilter:
    """The store's filter for `query` as `principal` may see it."""
    chosen = [t.name for t in types]
    if query.type:
        chosen = [name for name in chosen if name == query.type]
    if query.rubric:
        binding = {t.name for t in types if any(b.rubric_id == query.rubric for b in t.rubrics)}
        chosen = [name for name in chosen if name in binding]
    restricted = bool(query.type or query.rubric or principal.types)
    age = AGES[query.age]
    submitter = query.submitter or None
    if not principal.allows_role("reviewer"):
        submitter = principal.name
    return QueueFilter(
        buckets=BUCKETS,
        bucket=query.bucket or None,
        types=tuple(chosen) if restricted else None,
        created_by=submitter,
        changed_before=datetime.now(timezone.utc) - age if age else None,
        search=query.q or None,
        score_min=_score(query.score_min),
        score_max=_score(query.score_max),
        failed_criterion=query.criterion or None,
        # a reviewer's queue skips what others are reviewing (their claims)
        claimant=principal.name if principal.allows_role("reviewer") else None,
    )


def _sort(query: QueueQuery) -> dict[str, Any]:
    """`queue_page`'s order arguments for the query's order."""
    if query.order in ("score", "margin"):
        return {"sort": query.order}
    return {"newest_first": query.order == "newest"}


async def next_in_queue(
    application: Application, principal: Principal, params: str, after_id: str
) -> str | None:
    """The first artifact other than `after_id` of the queue `params` (a queue page's
    query string) shows `principal`: where a reviewer goes after a decision."""
    query = _query(**_params_of(params))
    types = await _visible_types(application, principal)
    queue = await _queue_filter(application, principal, query, types)
    page = await application.dashboard.queue_page(queue, limit=3, **_sort(query))
    return next((item.id for item in page.items if item.id != after_id), None)


async def _queue_view(request: Request, principal: Principal, query: QueueQuery) -> dict[str, Any]:
    application: Application = request.app.state.application
    types = await _visible_types(application, principal)
    rubrics = sorted({b.rubric_id for t in types for b in t.rubrics})
    queue = await _queue_filter(application, principal, query, types)
    reads = application.dashboard
    cursor = QueueCursor.decode(query.after) if query.after else None
    page = await reads.queue_page(queue, limit=PAGE_SIZE, after=cursor, **_sort(query))
    counts = await reads.queue_counts(queue)
    reviewer = principal.allows_role("reviewer")
    held = (
        await application.workbench.others_claims(principal.name, types=queue.types)
        if reviewer
        else []
    )
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
        "orders": ORDER_LABELS,
        "held": held,
        "live_params": query.params(),
        #: what an artifact link carries, so that a decision opens the next of this queue
        "from_params": urlencode({"queue": query.params(after="")})
        if query.params(after="")
        else "",
        "reviewer": principal.allows_role("reviewer"),
        "active": "queue",
        "message": "",
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


#: the decisions a bulk action takes, with the words its confirmation uses
BULK_ACTIONS = {"approve": "Approve", "reject": "Reject"}
#: the most items one bulk action decides (a page's worth)
MAX_BULK = PAGE_SIZE


@dataclass(frozen=True)
class BulkPick:
    """One selected row: the artifact and the version the reviewer saw."""

    id: str
    version: int


def _picks(text: str) -> list[BulkPick]:
    picks: list[BulkPick] = []
    for line in text.split("\n"):
        version, _, artifact_id = line.partition(" ")
        if version.isdigit() and artifact_id:
            picks.append(BulkPick(artifact_id[:200], int(version)))
    return picks[:MAX_BULK]


async def _bulk_apply(
    application: Application, principal: Principal, action: str, reason: str, picks: list[BulkPick]
) -> tuple[int, list[str]]:
    """Decide each pick; how many were recorded, and why the others were not."""
    done, refused = 0, []
    for pick in picks:
        try:
            artifact = await application.artifacts.get(pick.id)
            if not (principal.can_read(artifact) and principal.allows_type(artifact.type)):
                raise NotFoundError(f"no artifact {pick.id!r}")
            decision = getattr(application.artifacts, action)
            await decision(
                pick.id, actor=principal.name, reason=reason, expected_version=pick.version
            )
            done += 1
        except RubricflowError as error:
            refused.append(f"{pick.id}: {error}")
    return done, refused


@router.post("/queue/bulk", summary="Approve or reject several artifacts at once")
async def bulk_decision(request: Request, viewer: Viewer) -> Response:
    """A bulk decision: the first post shows what it would do and asks to confirm (with
    the count); only the confirmed post records anything, with one reason for all."""
    form = await posted_form(request, viewer, multi=frozenset({"pick"}))
    principal = viewer.principal
    if not principal.allows_role("reviewer"):
        raise HTTPException(
            403, f"bulk decisions need the reviewer role; {principal.name!r} is a {principal.role}"
        )
    action = form.get("action", "")
    if action not in BULK_ACTIONS:
        raise HTTPException(422, f"unknown bulk decision {action[:40]!r}; use approve or reject")
    reason = form.get("reason", "").strip()
    picks = _picks(form.get("pick", ""))
    queue_params = form.get("queue", "")[:2000]
    problem = "" if reason else "A bulk decision needs a reason: write one and try again."
    if not picks:
        problem = "Select at least one item (tick its box, or press x on it) and try again."
    if problem or form.get("confirmed") != str(len(picks)):
        return render(
            request,
            "bulk_confirm.html",
            {
                "action": action,
                "label": BULK_ACTIONS[action],
                "reason": reason,
                "picks": picks,
                "queue": queue_params,
                "problem": problem,
                "active": "queue",
            },
            status_code=422 if problem else 200,
        )
    application: Application = request.app.state.application
    done, refused = await _bulk_apply(application, principal, action, reason, picks)
    query = _query(**_params_of(queue_params))
    view = await _queue_view(request, principal, query)
    verb = "approved" if action == "approve" else "rejected"
    view["message"] = f"{done:,} item{'' if done == 1 else 's'} {verb}." + (
        f" {len(refused):,} not: " + "; ".join(refused[:5]) if refused else ""
    )
    return render(request, "queue.html", view)


def _params_of(params: str) -> dict[str, str]:
    """A queue query string as `_query`'s keyword arguments."""
    values = {k: v[0] for k, v in parse_qs(params[:2000]).items() if v}
    names = (
        "bucket",
        "type",
        "rubric",
        "age",
        "order",
        "q",
        "submitter",
        "score_min",
        "score_max",
        "criterion",
    )
    return {k: values[k] for k in names if k in values}


class ClaimSignal:
    """Wake-ups for this process's queue streams when a reviewer takes a claim, so that
    the others' open queues drop the item at once (a claim is no transition: the change
    feed does not carry it; another server process's queues see it on their next
    refresh)."""

    def __init__(self) -> None:
        self._listeners: set[asyncio.Event] = set()

    def notify(self) -> None:
        for listener in list(self._listeners):
            listener.set()

    @contextlib.contextmanager
    def listen(self) -> Iterator[asyncio.Event]:
        heard = asyncio.Event()
        self._listeners.add(heard)
        try:
            yield heard
        finally:
            self._listeners.discard(heard)


def claim_signal(app: Any) -> ClaimSignal:
    """The app's `ClaimSignal` (made on first use)."""
    signal: ClaimSignal | None = getattr(app.state, "claim_signal", None)
    if signal is None:
        signal = ClaimSignal()
        app.state.claim_signal = signal
    return signal


@router.get("/queue/events", summary="Queue changes (Server-Sent Events)")
async def queue_events(request: Request, viewer: Viewer) -> Response:
    application: Application = request.app.state.application
    stopping: asyncio.Event | None = getattr(request.app.state, "stopping", None)
    return StreamingResponse(
        _changes(application, stopping, claim_signal(request.app)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _changes(
    application: Application, stopping: asyncio.Event | None, claims: ClaimSignal
) -> AsyncIterator[str]:
    """`queue-changed` whenever an artifact changes or a reviewer claims one, keep-alives
    while quiet; ends when the server stops (the browser reconnects, to another process
    if need be)."""
    loop = asyncio.get_running_loop()
    stop = stopping or asyncio.Event()
    stopped = asyncio.ensure_future(stop.wait())
    with application.artifacts.live.watch() as watch, claims.listen() as claimed:
        try:
            yield "retry: 1000\n\n"
            last_sent = 0.0
            while not stop.is_set():
                woken = asyncio.ensure_future(_either(watch.wait(), claimed.wait()))
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
                claimed.clear()
                last_sent = loop.time()
                yield "event: queue-changed\ndata: {}\n\n"
            yield "event: shutdown\ndata: {}\n\n"
        finally:
            stopped.cancel()


async def _either(*waits: Awaitable[Any]) -> None:
    """Until the first of `waits` is done (the others are cancelled)."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
