"""Telemetry end to end: a review on a real SQLite store, judged over real HTTP by the
scripted OpenAI-compatible server, traced by the OpenTelemetry SDK into memory.

What a user sees in their tracing backend: an evaluation span, a span per criterion with
a `gen_ai.evaluation.result` event, a `chat` span per judge call (GenAI conventions:
model, tokens, latency as the span's duration, errors), and the review's transitions as
events on the span current where the review ran."""

from __future__ import annotations

from typing import Any

import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from rubricflow import parse_rubric
from rubricflow.plugins import PluginRegistry
from rubricflow.review import ArtifactRegistry, ArtifactType
from rubricflow.store import Store
from rubricflow.store.artifacts import RubricBinding

from .conftest import events_named, one

RUBRIC = parse_rubric(
    {
        "id": "helpful",
        "version": "1.2.0",
        "pass_threshold": 0.5,
        "criteria": [
            {
                "id": "answers",
                "description": "The reply answers the question",
                "scoring": {"method": "llm_verdict"},
            },
            {
                "id": "filled",
                "description": "The reply is not empty",
                "scoring": {"method": "deterministic", "function": "non_empty"},
            },
        ],
    }
)


def met(request: Recorded) -> Reply:
    return openai_reply(verdict("MET"), model="scripted-judge-0613")


async def review(
    store: Store, plugins: PluginRegistry, server: ScriptedServer, content: str, **llm: Any
) -> Any:
    options: dict[str, Any] = {"llm": f"openai:judge@{server.url}/v1", "llm_cache": None}
    if llm:
        options["llm_settings"] = llm
    evaluate_options = {"options": options}
    async with ArtifactRegistry(
        store, plugins=plugins, evaluate_options=evaluate_options
    ) as registry:
        await store.rubrics.register(RUBRIC)
        await registry.set_type(
            ArtifactType(name="reply", rubrics=(RubricBinding(rubric_id=RUBRIC.id),))
        )
        artifact = await registry.create("reply", content, actor="bot")
        return await registry.submit_for_review(artifact.id, actor="bot")


async def test_a_judged_review_is_traced_with_the_genai_conventions(
    store: Store,
    traced_plugins: PluginRegistry,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
) -> None:
    tracer = provider.get_tracer("test")
    with ScriptedServer(met) as server, tracer.start_as_current_span("bot turn"):
        outcome = await review(store, traced_plugins, server, "Paris is the capital.")
    assert outcome.approved
    spans = list(exporter.get_finished_spans())
    evaluation = one(spans, "evaluate helpful")
    answers = one(spans, "criterion answers")
    filled = one(spans, "criterion filled")
    chat = one(spans, "chat judge")
    turn = one(spans, "bot turn")

    # one trace, nested as the work was: turn > evaluation > criterion > judge call
    assert {span.context.trace_id for span in spans} == {turn.context.trace_id}
    assert evaluation.parent is not None and evaluation.parent.span_id == turn.context.span_id
    assert answers.parent is not None and answers.parent.span_id == evaluation.context.span_id
    assert filled.parent is not None and filled.parent.span_id == evaluation.context.span_id
    assert chat.parent is not None and chat.parent.span_id == answers.context.span_id

    assert chat.kind is SpanKind.CLIENT
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == attributes["gen_ai.system"] == "openai"
    assert attributes["gen_ai.request.model"] == "judge"
    assert attributes["gen_ai.response.model"] == "scripted-judge-0613"
    assert attributes["gen_ai.usage.input_tokens"] == 100
    assert attributes["gen_ai.usage.output_tokens"] == 20
    assert attributes["server.address"] == "127.0.0.1"
    assert chat.status.status_code is StatusCode.UNSET
    # latency is the span's duration, as the session timed the call
    (call,) = outcome.evaluations[0].criteria[0].llm_calls
    assert chat.end_time is not None and chat.start_time is not None
    duration_ms = (chat.end_time - chat.start_time) / 1e6
    assert abs(duration_ms - call.latency_ms) < 1.0
    assert answers.start_time is not None and answers.end_time is not None
    assert answers.start_time <= chat.start_time and chat.end_time <= answers.end_time

    eval_attributes = dict(evaluation.attributes or {})
    assert eval_attributes["rubricflow.rubric.id"] == "helpful"
    assert eval_attributes["rubricflow.rubric.version"] == "1.2.0"
    assert eval_attributes["rubricflow.evaluation.verdict"] == "pass"
    assert eval_attributes["rubricflow.evaluation.score"] == 1.0
    assert events_named(evaluation, "gen_ai.evaluation.result") == [
        {
            "gen_ai.evaluation.name": "helpful",
            "gen_ai.evaluation.score.value": 1.0,
            "gen_ai.evaluation.score.label": "pass",
        }
    ]
    for span, criterion in ((answers, "answers"), (filled, "filled")):
        assert events_named(span, "gen_ai.evaluation.result") == [
            {
                "gen_ai.evaluation.name": criterion,
                "gen_ai.evaluation.score.label": "pass",
                "gen_ai.evaluation.score.value": 1.0,
            }
        ]
    assert dict(filled.attributes or {})["rubricflow.scorer"] == "deterministic"

    # the review's transitions, heard on the event bus, on the span current at the time
    transitions = events_named(turn, "rubricflow.artifact.transition")
    moves = [(t["rubricflow.transition.from"], t["rubricflow.transition.to"]) for t in transitions]
    assert moves[-1] == ("in_review", "approved"), moves
    assert all(t["rubricflow.transition.actor"] for t in transitions)
    assert {t["rubricflow.artifact.id"] for t in transitions} == {outcome.artifact.id}
    seqs = [int(str(t["rubricflow.transition.seq"])) for t in transitions]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    (stored,) = events_named(turn, "rubricflow.evaluation.stored")
    assert stored["rubricflow.evaluation.verdict"] == "pass"
    assert stored["rubricflow.evaluation.judge_calls"] == 1


FAILURES = {
    "http_error": (Reply(400, {"error": {"message": "bad request"}}), {}),
    "invalid_answer": (openai_reply("this is not JSON at all"), {}),
    "timeout": (Reply(delay=1.5), {"timeout": 0.3, "max_attempts": 1, "deadline": 5.0}),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_judge_failures_are_error_spans(
    store: Store,
    traced_plugins: PluginRegistry,
    exporter: InMemorySpanExporter,
    failure: str,
) -> None:
    reply, settings = FAILURES[failure]
    with ScriptedServer(lambda request: reply) as server:
        outcome = await review(store, traced_plugins, server, "Paris.", **settings)
    assert not outcome.approved
    spans = list(exporter.get_finished_spans())
    chats = [span for span in spans if span.name == "chat judge"]
    assert chats, [span.name for span in spans]
    for chat in chats:
        assert chat.status.status_code is StatusCode.ERROR
        assert dict(chat.attributes or {})["error.type"] == failure
        assert chat.status.description == failure  # the message only under content capture
    if failure != "invalid_answer":  # no answer came back, so no model answered
        assert all("gen_ai.response.model" not in dict(c.attributes or {}) for c in chats)

    answers = one(spans, "criterion answers")
    assert answers.status.status_code is StatusCode.ERROR
    (result,) = events_named(answers, "gen_ai.evaluation.result")
    assert result["gen_ai.evaluation.score.label"] == result["error.type"]
    assert result["error.type"] == "unable_to_evaluate"
    assert "gen_ai.evaluation.score.value" not in result
    evaluation = one(spans, "evaluate helpful")
    assert dict(evaluation.attributes or {})["rubricflow.evaluation.verdict"] == "incomplete"
