"""Spans for evaluations, criteria and judge calls, plugged into the engine's
instrumentation seam (`rubricflow.instrumentation`).

An evaluation span (`evaluate <rubric>`) is current while its criteria are scored, so
each criterion span (`criterion <id>`, or `criteria <scorer>` for criteria a scorer
judges together) is its child, and each judge call (`chat <model>`, kind CLIENT, GenAI
semantic conventions) the child of the criterion that asked. A criterion's result is a
`gen_ai.evaluation.result` span event on its span; the evaluation's own result is one on
the evaluation span. Nothing is built for a span that does not record.

Imported only when telemetry is wanted: it imports `opentelemetry`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from rubricflow.instrumentation import Instrumentation, JudgeCall, Probe
from rubricflow.telemetry import conventions as names

if TYPE_CHECKING:
    from rubricflow.model import Criterion, Rubric
    from rubricflow.results import CriterionResult, Evaluation, Target

__all__ = ["SpanInstrumentation", "evaluation_label"]


def evaluation_label(result: CriterionResult) -> str:
    """A criterion result's `gen_ai.evaluation.score.label`: `pass` or `fail` when it was
    scored, else its status (`error`, `unable_to_evaluate`)."""
    if result.status != "scored":
        return result.status
    return "pass" if result.passed else "fail"


class _SpanProbe(Probe):
    """A span made current for the block; `finish` records the outcome on it."""

    __slots__ = ("_owner", "_span", "_token")

    def __init__(self, owner: SpanInstrumentation, span: Span) -> None:
        self._owner = owner
        self._span = span
        self._token: object | None = None

    def __enter__(self) -> _SpanProbe:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(self, *exc: object) -> None:
        kind = exc[0] if exc else None
        try:
            if isinstance(kind, type) and self._span.is_recording():
                # the type only: an exception's message may quote the content
                self._span.set_attribute(names.ERROR_TYPE, kind.__qualname__)
                self._span.set_status(Status(StatusCode.ERROR, kind.__qualname__))
        finally:
            if self._token is not None:
                otel_context.detach(self._token)  # type: ignore[arg-type]
            self._span.end()


class _EvaluationProbe(_SpanProbe):
    __slots__ = ()

    def finish(self, outcome: Any) -> None:
        if self._span.is_recording():
            self._owner.record_evaluation(self._span, outcome)


class _CriteriaProbe(_SpanProbe):
    __slots__ = ()

    def finish(self, outcome: Any) -> None:
        if self._span.is_recording():
            self._owner.record_criteria(self._span, outcome)


class SpanInstrumentation(Instrumentation):
    """OpenTelemetry spans from `tracer`; content on them only when `capture_content`."""

    enabled = True

    def __init__(self, tracer: Tracer, *, capture_content: bool = False) -> None:
        self.tracer = tracer
        self.capture_content = capture_content

    # -- evaluations and criteria -----------------------------------------------------

    def evaluation(self, rubric: Rubric, target: Target) -> Probe:
        span = self.tracer.start_span(f"evaluate {rubric.id}")
        if span.is_recording():
            span.set_attribute(names.RUBRIC_ID, rubric.id)
            span.set_attribute(names.RUBRIC_VERSION, rubric.version)
            if target.id is not None:
                span.set_attribute(names.TARGET_ID, target.id)
        return _EvaluationProbe(self, span)

    def criteria(self, criteria: Sequence[Criterion], method: str) -> Probe:
        name = f"criterion {criteria[0].id}" if len(criteria) == 1 else f"criteria {method}"
        span = self.tracer.start_span(name)
        if span.is_recording():
            span.set_attribute(names.SCORER, method)
            if len(criteria) == 1:
                span.set_attribute(names.CRITERION_ID, criteria[0].id)
            else:
                span.set_attribute(names.CRITERION_IDS, [c.id for c in criteria])
        return _CriteriaProbe(self, span)

    def record_evaluation(self, span: Span, evaluation: Evaluation) -> None:
        span.set_attributes(
            {
                names.VERDICT: evaluation.verdict,
                names.PASSED: evaluation.passed,
                names.SCORE: evaluation.score,
                names.COVERAGE: evaluation.coverage,
            }
        )
        event: dict[str, Any] = {
            names.EVALUATION_NAME: evaluation.rubric_id,
            names.SCORE_VALUE: evaluation.score,
            names.SCORE_LABEL: evaluation.verdict,
        }
        if self.capture_content and evaluation.feedback:
            event[names.EXPLANATION] = evaluation.feedback
        span.add_event(names.EVALUATION_RESULT, event)

    def record_criteria(self, span: Span, results: Sequence[CriterionResult]) -> None:
        failed: str | None = None
        cached = 0
        for result in results:
            cached += sum(call.outcome == "cached" for call in result.llm_calls)
            event: dict[str, Any] = {
                names.EVALUATION_NAME: result.criterion_id,
                names.SCORE_LABEL: evaluation_label(result),
            }
            if result.score is not None:
                event[names.SCORE_VALUE] = result.score
            if result.status != "scored":
                event[names.ERROR_TYPE] = result.status
                failed = failed or result.status
            explanation = result.reasoning or result.notes
            if self.capture_content and explanation:
                event[names.EXPLANATION] = explanation
            span.add_event(names.EVALUATION_RESULT, event)
        if len(results) == 1:
            span.set_attribute(names.CRITERION_STATUS, results[0].status)
        if cached:
            span.set_attribute(names.CACHED_CALLS, cached)
        if failed is not None:
            span.set_attribute(names.ERROR_TYPE, failed)
            span.set_status(Status(StatusCode.ERROR, failed))

    # -- judge calls ------------------------------------------------------------------

    def judge_call(self, report: JudgeCall) -> None:
        """A span for a call that just ended, timed by the session: it started
        `latency_ms` ago. Its parent is the span current where the judge was asked."""
        call = report.call
        ended = time.time_ns()
        started = ended - int(call.latency_ms * 1_000_000)
        span = self.tracer.start_span(
            f"{names.CHAT} {report.request_model}".strip(),
            kind=SpanKind.CLIENT,
            start_time=started,
        )
        if span.is_recording():
            span.set_attributes(self._call_attributes(report))
            if call.outcome != "ok":
                span.set_attribute(names.ERROR_TYPE, call.outcome)
                why = call.error if self.capture_content and call.error else call.outcome
                span.set_status(Status(StatusCode.ERROR, why))
        span.end(end_time=ended)

    def _call_attributes(self, report: JudgeCall) -> dict[str, Any]:
        call = report.call
        attributes: dict[str, Any] = {
            names.OPERATION_NAME: names.CHAT,
            names.PROVIDER_NAME: report.provider,
            names.SYSTEM: report.provider,
            names.REQUEST_MODEL: report.request_model,
            names.ATTEMPT: call.attempt,
            names.OUTCOME: call.outcome,
        }
        if call.response_hash is not None:  # an answer came back
            attributes[names.RESPONSE_MODEL] = call.model
        if call.input_tokens is not None:
            attributes[names.INPUT_TOKENS] = call.input_tokens
        if call.output_tokens is not None:
            attributes[names.OUTPUT_TOKENS] = call.output_tokens
        attributes.update(_server(report.endpoint))
        if self.capture_content:
            attributes.update(_content(report.messages, report.answer))
        return attributes


def _server(endpoint: str) -> dict[str, Any]:
    """`server.address` and `server.port` of an endpoint URL (never its credentials)."""
    if not endpoint:
        return {}
    try:
        parts = urlsplit(endpoint if "//" in endpoint else f"//{endpoint}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return {}
    found: dict[str, Any] = {}
    if host:
        found[names.SERVER_ADDRESS] = host
    if port:
        found[names.SERVER_PORT] = port
    return found


def _parts(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "content": text}]


def _content(messages: Sequence[Mapping[str, str]], answer: str | None) -> dict[str, str]:
    """The GenAI content attributes (JSON text, in the conventions' message shape)."""
    system = [m["content"] for m in messages if m.get("role") == "system"]
    chat = [
        {"role": m.get("role", "user"), "parts": _parts(m.get("content", ""))}
        for m in messages
        if m.get("role") != "system"
    ]
    found = {names.INPUT_MESSAGES: json.dumps(chat, ensure_ascii=False)}
    if system:
        found[names.SYSTEM_INSTRUCTIONS] = json.dumps(
            [part for text in system for part in _parts(text)], ensure_ascii=False
        )
    if answer is not None:
        found[names.OUTPUT_MESSAGES] = json.dumps(
            [{"role": "assistant", "parts": _parts(answer)}], ensure_ascii=False
        )
    return found
