"""Run in a fresh interpreter by test_activation.py: one evaluation under a given
OpenTelemetry situation, then a JSON line saying what happened.

argv[1]: `absent` (a meta-path finder makes `import opentelemetry` fail), `api` (the API
installed, no SDK configured), `sdk` (an SDK tracer provider set globally before the first
evaluation)."""

from __future__ import annotations

import asyncio
import importlib.abc
import json
import sys
from typing import Any


class NoOpenTelemetry(importlib.abc.MetaPathFinder):
    """As if opentelemetry were not installed."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def otel_modules() -> list[str]:
    return sorted(name for name in sys.modules if name.startswith("opentelemetry"))


async def main(mode: str) -> dict[str, Any]:
    if mode == "absent":
        sys.meta_path.insert(0, NoOpenTelemetry())
    exporter = None
    if mode == "sdk":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

    import rubricflow.instrumentation as instrumentation
    from rubricflow import evaluate, parse_rubric

    rubric = parse_rubric(
        {
            "id": "filled",
            "criteria": [
                {
                    "id": "filled",
                    "description": "not empty",
                    "scoring": {"method": "deterministic", "function": "non_empty"},
                }
            ],
        }
    )
    evaluation = await evaluate(rubric, "some text")
    found: dict[str, Any] = {
        "verdict": evaluation.verdict,
        "modules": otel_modules(),
        "instrumentation": type(instrumentation.current()).__name__,
        "enabled": instrumentation.current().enabled,
    }
    if exporter is not None:
        found["spans"] = [span.name for span in exporter.get_finished_spans()]
    if mode == "absent":
        from rubricflow import telemetry
        from rubricflow.errors import ConfigurationError

        try:
            telemetry.instrument()
        except ConfigurationError as error:
            found["instrument_error"] = str(error)
    if mode == "api":  # the program imports the API later, still with no SDK
        import opentelemetry.trace  # noqa: F401

        instrumentation.reset()
        await evaluate(rubric, "more text")
        found["after_import"] = type(instrumentation.current()).__name__
    return found


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
