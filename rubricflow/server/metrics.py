"""Prometheus metrics of a server: requests, latencies, reviews by outcome, judge calls,
and at scrape time the review queue and the webhook backlog.

Request figures are recorded by the operations middleware (`rubricflow.server.access_log`);
reviews, transitions and judge calls come from the one event bus (`EventBus` of the
application's plugins: this process's committed transitions and stored evaluations), so
nothing hooks the review service on its own. Gauges of the store (artifacts waiting for
review, webhook deliveries pending) are read from the database when `/metrics` is scraped,
so every process reports the same, current figure.

With several server processes (`rubricflow serve --workers N`) prometheus-client's
multiprocess mode is on: `rubricflow serve` makes a temporary folder and names it in
PROMETHEUS_MULTIPROC_DIR before the processes start, each process writes its counters
there, and a scrape of any of them sums all processes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from rubricflow.application import Application
from rubricflow.review.events import EVALUATION_STORED, TRANSITION, EventBus
from rubricflow.server.auth import authenticate
from rubricflow.server.problems import PROBLEM_RESPONSES

__all__ = [
    "MULTIPROC_ENV",
    "REGISTRY",
    "attach_event_metrics",
    "observe_request",
    "router",
]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

#: this process's metrics (in multiprocess mode their values live in the shared folder)
REGISTRY = CollectorRegistry(auto_describe=True)

_REQUESTS = Counter(
    "rubricflow_http_requests",
    "HTTP requests answered, by route template, method and status",
    ["route", "method", "status"],
    registry=REGISTRY,
)
_LATENCY = Histogram(
    "rubricflow_http_request_duration_seconds",
    "Time from a request's arrival to the end of its response, by route template and method",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    registry=REGISTRY,
)
_REVIEWS = Counter(
    "rubricflow_reviews",
    "Reviews finished by this server's processes, by outcome (approved, needs_revision, "
    "rejected, awaiting_approval, dead_lettered, handed_back)",
    ["outcome"],
    registry=REGISTRY,
)
_TRANSITIONS = Counter(
    "rubricflow_transitions",
    "Committed artifact transitions made by this server's processes, by trigger",
    ["trigger"],
    registry=REGISTRY,
)
_EVALUATIONS = Counter(
    "rubricflow_evaluations_stored",
    "Evaluations reviews stored",
    registry=REGISTRY,
)
_JUDGE_CALLS = Counter(
    "rubricflow_judge_calls",
    "Calls to an LLM judge made for stored evaluations (answers from the cache excluded)",
    registry=REGISTRY,
)

# a review's last transition (from in_review) -> its outcome
_REVIEW_OUTCOMES = {
    "approve": "approved",
    "request_revision": "needs_revision",
    "reject": "rejected",
    "await_approval": "awaiting_approval",
    "dead_letter": "dead_lettered",
    "abort_review": "handed_back",
}
# triggers only a review fires; approve and reject from in_review are a review's when they
# carry its evaluations (a person's approve after await_approval carries none)
_REVIEW_ONLY = frozenset({"request_revision", "await_approval", "dead_letter", "abort_review"})


def observe_request(route: str, method: str, status: int, seconds: float) -> None:
    """Count one answered request and its duration."""
    _REQUESTS.labels(route, method, str(status)).inc()
    _LATENCY.labels(route, method).observe(seconds)


def _heard(event: Mapping[str, Any]) -> None:
    kind = event.get("kind")
    if kind == TRANSITION:
        trigger = str(event.get("trigger", ""))
        _TRANSITIONS.labels(trigger).inc()
        outcome = _REVIEW_OUTCOMES.get(trigger)
        if (
            outcome is not None
            and event.get("source") == "in_review"
            and (trigger in _REVIEW_ONLY or event.get("evaluation_ids"))
        ):
            _REVIEWS.labels(outcome).inc()
    elif kind == EVALUATION_STORED:
        _EVALUATIONS.inc()
        calls = event.get("judge_calls")
        if isinstance(calls, int) and calls > 0:
            _JUDGE_CALLS.inc(calls)


def attach_event_metrics(application: Application) -> Callable[[], None]:
    """Count what the application's event bus publishes from now on; returns the function
    that stops counting."""
    bus = EventBus.of(application.plugins)
    bus.add_callback(_heard)
    return lambda: bus.remove_callback(_heard)


class _Snapshot:
    """A collector giving metric families read beforehand (the store's gauges)."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self.families


async def _store_gauges(application: Application) -> list[Metric]:
    repository = application.artifacts.repository
    queue = GaugeMetricFamily(
        "rubricflow_review_queue_depth", "Artifacts waiting for a review (pending_review)"
    )
    queue.add_metric([], await repository.count(status="pending_review"))
    running = GaugeMetricFamily(
        "rubricflow_reviews_in_progress", "Artifacts being reviewed now (in_review)"
    )
    running.add_metric([], await repository.count(status="in_review"))
    dead = GaugeMetricFamily(
        "rubricflow_dead_lettered", "Artifacts whose reviews kept failing (dead_lettered)"
    )
    dead.add_metric([], await repository.count(status="dead_lettered"))
    counts = await application.webhooks.backlog()
    backlog = GaugeMetricFamily(
        "rubricflow_webhook_backlog", "Webhook deliveries waiting to be sent (pending)"
    )
    backlog.add_metric([], counts.get("pending", 0))
    failed = GaugeMetricFamily(
        "rubricflow_webhook_deliveries_failed", "Webhook deliveries that gave up (failed)"
    )
    failed.add_metric([], counts.get("failed", 0))
    return [queue, running, dead, backlog, failed]


def exposition(store_gauges: list[Metric]) -> bytes:
    """The text exposition of every process's metrics and the store's gauges."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        counters = generate_latest(registry)
    else:
        counters = generate_latest(REGISTRY)
    snapshot = CollectorRegistry()
    snapshot.register(_Snapshot(store_gauges))
    return counters + generate_latest(snapshot)


router = APIRouter(tags=["operations"])
_bearer = HTTPBearer(auto_error=False, description="An admin's API token")


@router.get(
    "/metrics",
    summary="Prometheus metrics (admin token unless the server runs with --public-metrics)",
    response_class=Response,
    responses={
        200: {
            "description": "The Prometheus text exposition format",
            "content": {CONTENT_TYPE_LATEST.split(";")[0]: {"schema": {"type": "string"}}},
        },
        **{k: PROBLEM_RESPONSES[k] for k in (401, 403)},
    },
)
async def metrics(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Response:
    settings = request.app.state.settings
    if not settings.public_metrics:
        principal = await authenticate(request, credentials)
        if not principal.allows_role("admin"):
            raise HTTPException(
                403,
                f"metrics need the admin role; token {principal.name!r} is a "
                f"{principal.role} (or run the server with --public-metrics)",
            )
    application: Application = request.app.state.application
    body = exposition(await _store_gauges(application))
    return Response(body, media_type=CONTENT_TYPE_LATEST)
