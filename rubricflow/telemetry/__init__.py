"""OpenTelemetry for rubricflow (the `otel` extra): spans for evaluations, criteria and
judge calls (GenAI semantic conventions), a `gen_ai.evaluation.result` event per
criterion, and review transitions as span events. See docs/telemetry.md.

Nothing here imports `opentelemetry` until telemetry is turned on:
`rubricflow.telemetry.instrument(app)`, `RUBRICFLOW_OTEL=1`, or automatically on the first
evaluation when the program configured an SDK tracer provider.
"""

from __future__ import annotations

from rubricflow.telemetry.content import RUBRICFLOW_ENV as CAPTURE_CONTENT_ENV
from rubricflow.telemetry.content import STANDARD_ENV as STANDARD_CAPTURE_CONTENT_ENV
from rubricflow.telemetry.content import capture_content
from rubricflow.telemetry.setup import (
    api_installed,
    attach,
    automatic,
    instrument,
    sdk_configured,
    uninstrument,
)

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "STANDARD_CAPTURE_CONTENT_ENV",
    "api_installed",
    "attach",
    "automatic",
    "capture_content",
    "instrument",
    "sdk_configured",
    "uninstrument",
]
