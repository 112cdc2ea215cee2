"""Telemetry fixtures: an SDK tracer provider exporting to memory, instrumented into a
fresh plugin registry, and undone afterwards; the judge tests' clean LLM environment."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from llm.fixtures import clean_llm_env
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rubricflow.instrumentation as instrumentation
from rubricflow import telemetry
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.store import Store

__all__ = ["clean_llm_env"]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    yield memory
    memory.clear()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


@pytest.fixture
def traced_plugins(provider: TracerProvider) -> Iterator[PluginRegistry]:
    """A plugin registry whose reviews are traced, and every evaluation too."""
    registry = create_plugin_manager()
    telemetry.instrument(registry, tracer_provider=provider, capture_content=False)
    yield registry
    telemetry.uninstrument()
    instrumentation.reset()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'telemetry.db'}")
    yield opened
    await opened.close()


def exported_text(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> str:
    """Every exported span as the SDK writes it out (name, attributes, events, status)."""
    return "\n".join(span.to_json() for span in spans)


def events_named(span: ReadableSpan, name: str) -> list[dict[str, object]]:
    return [dict(event.attributes or {}) for event in span.events if event.name == name]


def one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, f"{len(found)} spans named {name!r} in {[s.name for s in spans]}"
    return found[0]


def dumps(value: object) -> str:
    return json.dumps(value)
