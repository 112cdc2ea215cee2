"""`OtlpJsonFileExporter`: an OpenTelemetry SDK span exporter that appends spans to a
file as OTLP JSON, one `ExportTraceServiceRequest` a line (the OpenTelemetry Collector's
file exporter's shape), which `rubricflow eval RUBRIC FILE --from otel` reads back.

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from rubricflow.telemetry.files import OtlpJsonFileExporter

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OtlpJsonFileExporter("spans.jsonl")))

Needs `opentelemetry-sdk` (yours; rubricflow's `otel` extra holds the API only).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = ["OtlpJsonFileExporter", "otlp_json"]


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes):
        return {"stringValue": value.decode("utf-8", "replace")}
    if isinstance(value, Sequence):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in (attributes or {}).items()]


def _span(span: ReadableSpan) -> dict[str, Any]:
    context = span.context
    found: dict[str, Any] = {
        "traceId": f"{context.trace_id:032x}" if context else "",
        "spanId": f"{context.span_id:016x}" if context else "",
        "name": span.name,
        "kind": span.kind.value + 1,  # OTLP counts from UNSPECIFIED = 0
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": _attributes(span.attributes),
        "events": [
            {
                "timeUnixNano": str(event.timestamp),
                "name": event.name,
                "attributes": _attributes(event.attributes),
            }
            for event in span.events
        ],
        "status": {"code": span.status.status_code.value},
    }
    if span.parent is not None:
        found["parentSpanId"] = f"{span.parent.span_id:016x}"
    if span.status.description:
        found["status"]["message"] = span.status.description
    return found


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """`spans` as one OTLP JSON `ExportTraceServiceRequest`, grouped by resource and
    instrumentation scope."""
    resources: dict[int, tuple[Any, dict[tuple[str, str], list[dict[str, Any]]]]] = {}
    for span in spans:
        resource = span.resource
        _, scopes = resources.setdefault(id(resource), (resource, {}))
        scope = span.instrumentation_scope
        key = (scope.name, scope.version or "") if scope is not None else ("", "")
        scopes.setdefault(key, []).append(_span(span))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(getattr(resource, "attributes", None))},
                "scopeSpans": [
                    {"scope": {"name": name, "version": version}, "spans": found}
                    for (name, version), found in scopes.items()
                ],
            }
            for resource, scopes in resources.values()
        ]
    }


class OtlpJsonFileExporter(SpanExporter):
    """Appends each exported batch of spans to `path` as one line of OTLP JSON."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        line = json.dumps(otlp_json(spans), ensure_ascii=False, separators=(",", ":"))
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
