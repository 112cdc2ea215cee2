"""`rubricflow` with an OpenTelemetry SDK tracer provider configured first, as a program
run under `opentelemetry-instrument` would have: every finished span is appended to the
JSON-lines file $RUBRICFLOW_TEST_SPANS (an exporter of this test's own: the SDK ships
none that writes a file a test can read back).

    python traced_serve.py serve --db URL ...
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class FileExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self.lock, open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps(json.loads(span.to_json())) + "\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(FileExporter(os.environ["RUBRICFLOW_TEST_SPANS"])))
trace.set_tracer_provider(provider)

if __name__ == "__main__":
    from rubricflow.cli import main

    sys.argv[0] = "rubricflow"
    raise SystemExit(main())
