"""Review transitions and stored evaluations as span events, heard on the event bus
(`rubricflow.review.events.EventBus`): an event goes on the span current where the
review announced it (a request's, a worker's, the caller's own), or, when none is
recording, on a short span of its own (`artifact <trigger>`).

Imported only when telemetry is wanted: it imports `opentelemetry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Tracer

from rubricflow.review.events import EVALUATION_STORED, TRANSITION
from rubricflow.telemetry import conventions as names

__all__ = ["TransitionListener"]


class TransitionListener:
    """An event-bus callback (`EventBus.add_callback`) that records transitions and
    stored evaluations on spans; a transition's free-text `reason` only under content
    capture."""

    def __init__(self, tracer: Tracer, *, capture_content: bool = False) -> None:
        self.tracer = tracer
        self.capture_content = capture_content

    def __call__(self, event: Mapping[str, Any]) -> None:
        kind = event.get("kind")
        if kind == TRANSITION:
            self._record(f"artifact {event.get('trigger')}", names.TRANSITION_EVENT, event)
        elif kind == EVALUATION_STORED:
            self._record("evaluation stored", names.STORED_EVENT, event)

    def _record(self, span_name: str, event_name: str, event: Mapping[str, Any]) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event(event_name, self._attributes(event))
            return
        with self.tracer.start_as_current_span(span_name) as own:
            if own.is_recording():
                own.add_event(event_name, self._attributes(event))

    def _attributes(self, event: Mapping[str, Any]) -> dict[str, Any]:
        if event.get("kind") == TRANSITION:
            found = {
                names.ARTIFACT_ID: event.get("artifact_id"),
                names.TRANSITION_FROM: event.get("source"),
                names.TRANSITION_TO: event.get("dest"),
                names.TRANSITION_TRIGGER: event.get("trigger"),
                names.TRANSITION_ACTOR: event.get("actor"),
                names.TRANSITION_SEQ: event.get("seq"),
                names.REVISION: event.get("revision"),
            }
            if self.capture_content:
                found[names.TRANSITION_REASON] = event.get("reason")
        else:
            found = {
                names.ARTIFACT_ID: event.get("artifact_id"),
                names.REVISION: event.get("revision"),
                names.EVALUATION_ID: event.get("evaluation_id"),
                names.RUBRIC_ID: event.get("rubric_id"),
                names.RUBRIC_VERSION: event.get("rubric_version"),
                names.VERDICT: event.get("verdict"),
                names.PASSED: event.get("passed"),
                names.SCORE: event.get("score"),
                names.JUDGE_CALLS: event.get("judge_calls"),
            }
        # OpenTelemetry attributes hold no None
        return {key: value for key, value in found.items() if value is not None}
