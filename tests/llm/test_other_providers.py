"""Anthropic (forced tool use) and Ollama (/api/chat with `format`) against scripted
servers in their wire formats; a plain Python callable as the judge."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rubricflow import evaluate
from rubricflow.errors import UnsafeImportError
from rubricflow.llm import LLMSession, create_provider

from .fixtures import fast, rubric, session_for
from .scripted import Reply, ScriptedServer, anthropic_reply, ollama_reply, verdict

ONE = rubric({"id": "polite", "description": "The reply is polite."})
TARGET = {"id": "t", "content": "Thank you for writing!"}


async def test_anthropic_forces_the_answer_tool(server: ScriptedServer, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)  # the key goes only there
    server.queue(anthropic_reply(verdict("UNMET", "curt")))
    async with session_for(server, prefix="anthropic") as session:
        evaluation = await evaluate(ONE, TARGET, options={"llm": session})
    result = evaluation.criteria[0]
    assert result.status == "scored" and result.verdict == "UNMET" and result.reasoning == "curt"
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test-0123456789"
    assert request.headers["anthropic-version"] == "2023-06-01"
    body = request.json
    assert body["tool_choice"] == {"type": "tool", "name": "submit_answer"}
    assert body["tools"][0]["input_schema"]["properties"]["verdict"]["enum"] == ["MET", "UNMET"]
    assert "impartial" in body["system"]
    assert [m["role"] for m in body["messages"]] == ["user"]
    call = result.llm_calls[0]
    assert (call.provider, call.model, call.input_tokens, call.output_tokens) == (
        "anthropic",
        "claude-scripted",
        80,
        15,
    )


async def test_anthropic_overloaded_is_retried_and_text_answers_are_read(
    server: ScriptedServer,
) -> None:
    server.queue(
        Reply(529, {"type": "error", "error": {"type": "overloaded_error"}}),
        anthropic_reply('{"reasoning": "ok", "verdict": "MET"}'),
    )
    async with session_for(server, prefix="anthropic") as session:
        evaluation = await evaluate(ONE, TARGET, options={"llm": session})
    assert evaluation.criteria[0].verdict == "MET"
    assert [c.outcome for c in evaluation.criteria[0].llm_calls] == ["http_error", "ok"]


def test_anthropic_needs_a_key_for_its_own_api() -> None:
    with pytest.raises(Exception, match="ANTHROPIC_API_KEY is not set"):
        create_provider("anthropic:claude-3-5-haiku-latest")


async def test_ollama_sends_the_schema_as_format(server: ScriptedServer) -> None:
    server.queue(ollama_reply(verdict("MET")))
    async with session_for(server, prefix="ollama", max_tokens=99) as session:
        evaluation = await evaluate(ONE, TARGET, options={"llm": session})
    assert evaluation.criteria[0].verdict == "MET"
    request = server.requests[0]
    assert request.path == "/api/chat"
    body = request.json
    assert body["stream"] is False
    assert body["format"]["properties"]["verdict"]["enum"] == ["MET", "UNMET"]
    assert body["options"] == {"num_predict": 99, "temperature": 0.0}
    call = evaluation.criteria[0].llm_calls[0]
    assert (call.input_tokens, call.output_tokens) == (60, 12)


async def test_ollama_unknown_model_is_not_retried(server: ScriptedServer) -> None:
    server.queue(Reply(404, {"error": "model 'judge' not found, try pulling it first"}))
    async with session_for(server, prefix="ollama") as session:
        evaluation = await evaluate(ONE, TARGET, options={"llm": session})
    assert len(server.requests) == 1
    assert "try pulling it first" in evaluation.criteria[0].notes


def test_ollama_host_comes_from_the_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OLLAMA_HOST", "10.1.2.3:11500")
    provider = create_provider("ollama:llama3.2")
    assert provider.label == "ollama:llama3.2@http://10.1.2.3:11500"
    assert create_provider("ollama:qwen2.5:7b@http://h:1").label == "ollama:qwen2.5:7b@http://h:1"


async def test_an_async_callable_is_a_judge() -> None:
    seen: list[tuple[str, str]] = []

    async def generate(system_prompt: str, user_prompt: str) -> str:
        seen.append((system_prompt, user_prompt))
        return '{"reasoning": "it thanks the reader", "verdict": "MET"}'

    evaluation = await evaluate(ONE, TARGET, options={"llm": generate, "llm_cache": None})
    assert evaluation.criteria[0].verdict == "MET"
    assert "impartial" in seen[0][0] and "Thank you for writing!" in seen[0][1]
    assert evaluation.criteria[0].llm_calls[0].provider == "python"


async def test_a_sync_callable_runs_in_a_thread_and_reasks_include_the_history() -> None:
    answers = iter(["no idea", '{"reasoning": "fine", "verdict": "UNMET"}'])
    prompts: list[str] = []

    def generate(system_prompt: str, user_prompt: str) -> str:
        prompts.append(user_prompt)
        return next(answers)

    evaluation = await evaluate(ONE, TARGET, options={"llm": generate, "llm_cache": None})
    assert evaluation.criteria[0].verdict == "UNMET"
    assert "(your earlier answer)\nno idea" in prompts[1]
    assert "could not be used" in prompts[1]


async def test_a_failing_callable_is_retried_then_unable() -> None:
    calls = 0

    async def flaky(system_prompt: str, user_prompt: str) -> str:
        nonlocal calls
        calls += 1
        raise ConnectionError("network down")

    session = LLMSession(flaky, cache=None, settings=fast(max_attempts=3))
    evaluation = await evaluate(ONE, TARGET, options={"llm": session})
    assert calls == 3
    result = evaluation.criteria[0]
    assert result.status == "unable_to_evaluate"
    assert "ConnectionError: network down" in result.notes


def _module_judge(system_prompt: str, user_prompt: str) -> Any:
    async def answer() -> str:
        await asyncio.sleep(0)
        return '{"reasoning": "r", "verdict": "MET"}'

    return answer()


async def test_python_spec_imports_only_when_allowed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys
    import types

    module = types.ModuleType("rf_test_judges")
    module.judge = _module_judge  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rf_test_judges", module)
    with pytest.raises(UnsafeImportError, match="allow_import=True or --allow-import"):
        create_provider("python:rf_test_judges:judge")
    evaluation = await evaluate(
        ONE,
        TARGET,
        allow_import=True,
        options={"llm": "python:rf_test_judges:judge", "llm_cache": None},
    )
    assert evaluation.criteria[0].verdict == "MET"
    refused = await evaluate(
        ONE, TARGET, options={"llm": "python:rf_test_judges:judge", "llm_cache": None}
    )
    assert refused.criteria[0].status == "error"
    assert "--allow-import" in refused.criteria[0].notes
