"""No content and no keys in telemetry unless content capture is on; never keys.

The content under review carries a sentinel, the judge's API key another; the scripted
judge quotes the content and echoes the credentials it received in its answer (as a
misbehaving gateway might). Every exported span, attribute and event is searched."""

from __future__ import annotations

import urllib.parse

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rubricflow.instrumentation as instrumentation
from rubricflow import telemetry
from rubricflow.plugins import create_plugin_manager
from rubricflow.review import ArtifactRegistry, ArtifactType
from rubricflow.store import Store
from rubricflow.store.artifacts import RubricBinding

from .conftest import exported_text
from .test_spans import RUBRIC

CONTENT = "Paris is the capital. CONTENT-SENTINEL-5d1e9"
KEY = "sk-KEY-SENTINEL-0123456789abcdef"


def quoting_and_echoing(request: Recorded) -> Reply:
    said = "CONTENT-SENTINEL-5d1e9" if "CONTENT-SENTINEL-5d1e9" in request.text else "?"
    auth = request.headers.get("authorization", "")
    return openai_reply(
        verdict("MET", reasoning=f"The reply says {said}. authorization={auth} {request.path}")
    )


@pytest.mark.parametrize("capture", [False, True], ids=["default", "capture-on"])
async def test_content_only_when_captured_and_keys_never(
    store: Store,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    capture: bool,
) -> None:
    if capture:  # the standard switch, as a user sets it
        monkeypatch.setenv(telemetry.STANDARD_CAPTURE_CONTENT_ENV, "true")
    plugins = create_plugin_manager()
    telemetry.instrument(plugins, tracer_provider=provider)
    try:
        with (
            ScriptedServer(quoting_and_echoing) as server,
            provider.get_tracer("t").start_as_current_span("turn"),
        ):
            spec = f"openai:judge@{server.url}/v1?key={urllib.parse.quote(KEY)}"
            options = {"options": {"llm": spec, "llm_cache": None}}
            async with ArtifactRegistry(
                store, plugins=plugins, evaluate_options=options
            ) as registry:
                await store.rubrics.register(RUBRIC)
                await registry.set_type(
                    ArtifactType(name="reply", rubrics=(RubricBinding(rubric_id=RUBRIC.id),))
                )
                artifact = await registry.create("reply", CONTENT, actor="bot")
                outcome = await registry.submit_for_review(artifact.id, actor="bot")
            # the judge did receive the key, and did echo it back
            assert any(
                KEY in r.headers.get("authorization", "") or KEY in r.path for r in server.requests
            )
    finally:
        telemetry.uninstrument()
        instrumentation.reset()
    assert outcome.approved
    text = exported_text(exporter.get_finished_spans())
    assert "chat judge" in text and "gen_ai.evaluation.result" in text
    for form in (KEY, urllib.parse.quote(KEY), KEY[3:]):
        assert form not in text
    if capture:
        assert "CONTENT-SENTINEL-5d1e9" in text
        for name in (
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.evaluation.explanation",
        ):
            assert name in text
    else:
        assert "CONTENT-SENTINEL-5d1e9" not in text
        assert "gen_ai.input.messages" not in text
