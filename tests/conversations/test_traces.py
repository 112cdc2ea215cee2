"""Traces as targets: OTel GenAI spans (OTLP JSON) and chat-completion logs read into
conversations and trajectories.

The round trip runs rubricflow's own telemetry (judge call spans, content captured) and an
agent's GenAI spans through rubricflow's own `OtlpJsonFileExporter` into a file, then reads
it back with `rubricflow eval RUBRIC FILE --from otel` and `read_otel`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm.fixtures import clean_llm_env
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind
from typer.testing import CliRunner

import rubricflow.instrumentation as instrumentation
from rubricflow import evaluate_sync, parse_rubric, telemetry
from rubricflow.cli import app
from rubricflow.conversation import read_conversation
from rubricflow.plugins import create_plugin_manager
from rubricflow.targets import TargetInputError
from rubricflow.telemetry.files import OtlpJsonFileExporter
from rubricflow.traces import chat_log_targets, otel_targets, read_openai_chat, read_otel

__all__ = ["clean_llm_env"]

AGENT_RUBRIC = """
id: agent
criteria:
  - id: searched_then_booked
    description: search, then book
    scoring:
      method: deterministic
      function: trajectory.tool_sequence
      config: {expected: [search_flights, book_flight], mode: strict}
  - id: booking_args
    description: books TP123
    scoring:
      method: deterministic
      function: trajectory.tool_args
      config: {name: book_flight, partial: {flight: TP123}}
  - id: answers_last
    description: answers after the tools
    scoring: {method: deterministic, function: trajectory.final_answer_follows_tools}
"""


def _genai(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages)


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}],
    }


def agent_run(provider: TracerProvider) -> None:
    """An agent's run as a GenAI-instrumented agent traces it: chat calls whose inputs
    repeat the history, and an execute_tool span per tool call."""
    tracer = provider.get_tracer("agent")
    user = _text("user", "Book me the morning flight to Lisbon.")
    first = _call("c1", "search_flights", {"to": "LIS"})
    found = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c1", "response": "TP123 at 09:40"}],
    }
    second = _call("c2", "book_flight", {"flight": "TP123", "passengers": 1})
    booked = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c2", "response": {"ref": "ABC"}}],
    }
    answer = _text("assistant", "Booked TP123 at 09:40, reference ABC.")
    with tracer.start_as_current_span("invoke_agent booker"):
        steps = [([user], first), ([user, first, found], second)]
        steps.append(([user, first, found, second, booked], answer))
        for number, (history, output) in enumerate(steps):
            with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT) as span:
                span.set_attribute("gen_ai.operation.name", "chat")
                span.set_attribute("gen_ai.input.messages", _genai(history))
                span.set_attribute("gen_ai.output.messages", _genai([output]))
            if number < 2:
                call = output["parts"][0]
                with tracer.start_as_current_span(f"execute_tool {call['name']}") as span:
                    span.set_attribute("gen_ai.operation.name", "execute_tool")
                    span.set_attribute("gen_ai.tool.name", call["name"])
                    span.set_attribute("gen_ai.tool.call.id", call["id"])


def met(request: Recorded) -> Reply:
    return openai_reply(verdict("MET", reasoning="It answers."), model="scripted-judge")


def test_our_own_spans_read_back_as_a_trajectory_and_a_conversation(tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(spans)))
    plugins = create_plugin_manager()
    telemetry.instrument(plugins, tracer_provider=provider, capture_content=True)
    judged = parse_rubric(
        {
            "id": "judged",
            "criteria": [{"id": "answers", "description": "answers", "scoring": {"method": "llm"}}],
        }
    )
    try:
        agent_run(provider)
        with ScriptedServer(met) as server:
            evaluation = evaluate_sync(
                judged,
                {"content": "Paris is the capital of France.", "query": "Capital of France?"},
                plugins=plugins,
                options={"llm": f"openai:judge@{server.url}/v1", "llm_cache": None},
            )
    finally:
        telemetry.uninstrument()
        instrumentation.reset()
        provider.shutdown()
    assert evaluation.passed
    lines = spans.read_text().splitlines()
    assert all("resourceSpans" in json.loads(line) for line in lines)

    run, judge = list(read_otel(spans))
    # the agent's trace: its history read once, the tools' calls and results in order
    assert [m["role"] for m in run.content] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    conversation = read_conversation(run.content)
    assert conversation is not None
    assert [call.name for _, call in conversation.tool_calls()] == [
        "search_flights",
        "book_flight",
    ]
    assert conversation.messages[4].tool_call_id == "c2"
    assert run.metadata["source"] == "otel" and run.metadata["spans"] == 6
    # rubricflow's own judge call: the prompt it sent and the answer it got
    roles = [m["role"] for m in judge.content]
    assert roles[-1] == "assistant" and "user" in roles
    said = json.dumps(judge.content)
    assert "Paris is the capital of France." in said and "It answers." in said

    rubric_file = tmp_path / "agent.yaml"
    rubric_file.write_text(AGENT_RUBRIC)
    result = CliRunner().invoke(
        app, ["eval", str(rubric_file), str(spans), "--from", "otel", "--json"]
    )
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    by_target = {line["target_id"]: line for line in lines}
    assert by_target[run.id]["verdict"] == "pass", result.stdout
    # the judge's trace has no tool calls: the sequence check fails there, saying why
    assert by_target[judge.id]["verdict"] == "fail"
    assert result.exit_code == 1


def test_the_older_conventions_and_openllmetry_attributes_are_read() -> None:
    document = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "aa",
                                "spanId": "1",
                                "startTimeUnixNano": "10",
                                "attributes": [
                                    {
                                        "key": "gen_ai.prompt.0.role",
                                        "value": {"stringValue": "user"},
                                    },
                                    {
                                        "key": "gen_ai.prompt.0.content",
                                        "value": {"stringValue": "Weather in Oslo?"},
                                    },
                                    {
                                        "key": "gen_ai.completion.0.tool_calls.0.name",
                                        "value": {"stringValue": "weather"},
                                    },
                                    {
                                        "key": "gen_ai.completion.0.tool_calls.0.arguments",
                                        "value": {"stringValue": '{"city": "Oslo"}'},
                                    },
                                ],
                            },
                            {
                                "traceId": "aa",
                                "spanId": "2",
                                "startTimeUnixNano": "20",
                                "events": [
                                    {
                                        "name": "gen_ai.tool.message",
                                        "attributes": [
                                            {"key": "content", "value": {"stringValue": "rain"}},
                                            {"key": "id", "value": {"stringValue": "t1"}},
                                        ],
                                    },
                                    {
                                        "name": "gen_ai.choice",
                                        "attributes": [
                                            {
                                                "key": "message",
                                                "value": {
                                                    "stringValue": '{"content": "It rains."}'
                                                },
                                            }
                                        ],
                                    },
                                ],
                            },
                        ]
                    }
                ]
            }
        ]
    }
    (target,) = list(otel_targets([document]))
    conversation = read_conversation(target.content)
    assert conversation is not None
    assert [m.role for m in conversation.messages] == ["user", "assistant", "tool", "assistant"]
    assert conversation.messages[1].tool_calls[0].arguments == {"city": "Oslo"}
    assert conversation.messages[3].text == "It rains."


def test_problems_name_the_file_the_line_and_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    span = {
        "traceId": "ab",
        "attributes": [{"key": "gen_ai.input.messages", "value": {"stringValue": "{oops"}}],
    }
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    bad.write_text("\n" + json.dumps(document) + "\n")
    with pytest.raises(TargetInputError) as raised:
        list(read_otel(bad))
    message = str(raised.value)
    assert "bad.jsonl line 2" in message and "spans[0]" in message
    assert "gen_ai.input.messages" in message and "not JSON" in message

    empty = tmp_path / "plain.jsonl"
    empty.write_text(
        json.dumps(
            {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "cd", "name": "GET /"}]}]}]}
        )
        + "\n"
    )
    with pytest.raises(TargetInputError, match="none of its 1 spans holds GenAI"):
        list(read_otel(empty))

    log = tmp_path / "log.jsonl"
    log.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n{"choices": []}\n')
    with pytest.raises(TargetInputError, match=r"log.jsonl line 2: no `messages`"):
        list(read_openai_chat(log))


def test_chat_completion_logs_are_read_with_their_answers(tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    rows = [
        {
            "id": "chatcmpl-1",
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": "Capital of France?"}],
            "choices": [{"message": {"role": "assistant", "content": "Paris."}}],
        },
        {
            "custom_id": "req-2",
            "body": {"model": "gpt-4o", "messages": [{"role": "user", "content": "2+2?"}]},
            "response": {"body": {"choices": [{"message": {"role": "assistant", "content": "4"}}]}},
        },
        {"request": {"messages": [{"role": "user", "content": "unanswered"}]}},
    ]
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    first, second, third = list(read_openai_chat(log))
    assert first.id == "chatcmpl-1" and first.content[-1]["content"] == "Paris."
    assert first.metadata == {"source": "openai-chat", "model": "gpt-4o"}
    assert second.id == "req-2" and second.content[-1] == {"role": "assistant", "content": "4"}
    assert third.id == "line-3" and len(third.content) == 1

    rubric_file = tmp_path / "r.yaml"
    rubric_file.write_text(
        "id: r\ncriteria:\n  - id: last\n    description: d\n    scope: last_turn\n"
        "    scoring: {method: deterministic, function: non_empty}\n"
    )
    result = CliRunner().invoke(
        app, ["eval", str(rubric_file), str(log), "--from", "openai-chat", "--json"]
    )
    verdicts = [json.loads(x)["verdict"] for x in result.stdout.splitlines() if x.startswith("{")]
    assert verdicts == ["pass", "pass", "incomplete"]  # no assistant turn: not judged
    bad = CliRunner().invoke(app, ["eval", str(rubric_file), str(log), "--from", "csv"])
    assert bad.exit_code == 2 and "not a trace format" in bad.output


# -- properties -----------------------------------------------------------------------------

_words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
_args = st.dictionaries(st.sampled_from(["a", "b", "to"]), st.integers() | _words, max_size=3)


@st.composite
def runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A run in GenAI messages: user, then turns of (tool call, tool result), an answer."""
    messages = [_text("user", draw(_words))]
    for number in range(draw(st.integers(0, 4))):
        call_id = f"c{number}"
        messages.append(_call(call_id, draw(st.sampled_from(["s", "b", "x"])), draw(_args)))
        response = draw(_words)
        messages.append(
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": call_id, "response": response}],
            }
        )
    messages.append(_text("assistant", draw(_words)))
    return messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs(), split=st.booleans())
def test_a_run_spread_over_chat_spans_reads_back_whole(
    run: list[dict[str, Any]], split: bool
) -> None:
    """Each assistant output is one chat span whose input is the history before it (as an
    agent traces it); read back, the run is every message once, in order."""
    spans = []
    for index, message in enumerate(run):
        if message["role"] != "assistant":
            continue
        attributes = [
            {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(run[:index])}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps([message])}},
        ]
        spans.append({"traceId": "t", "startTimeUnixNano": str(index), "attributes": attributes})
    documents = [{"resourceSpans": [{"scopeSpans": [{"spans": [s]}]}]} for s in reversed(spans)]
    if not split:
        documents = [{"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}]
    (target,) = list(otel_targets(documents))
    back = read_conversation(target.content)
    assert back is not None
    assert [m.role for m in back.messages] == [m["role"] for m in run]
    calls = [p for m in run for p in m["parts"] if p["type"] == "tool_call"]
    assert [(c.name, c.arguments, c.id) for _, c in back.tool_calls()] == [
        (c["name"], c["arguments"], c["id"]) for c in calls
    ]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _words,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_words, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(value=_json)
def test_any_json_is_read_or_refused_with_a_target_input_error(value: Any) -> None:
    for reader in (otel_targets, chat_log_targets):
        try:
            list(reader([value]))
        except TargetInputError as error:
            assert str(error).startswith(("traces", "log"))
