"""Spec strings, environment defaults, provider plugins and settings."""

from __future__ import annotations

from typing import Any

import pytest

from rubricflow import create_plugin_manager, evaluate, hookimpl
from rubricflow.errors import ConfigurationError
from rubricflow.llm import (
    LLMProvider,
    LLMSession,
    Price,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    create_provider,
    parse_spec,
)

from .fixtures import rubric


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("openai:gpt-4o-mini", ("openai", "gpt-4o-mini", None)),
        ("openai:qwen@http://127.0.0.1:8000/v1", ("openai", "qwen", "http://127.0.0.1:8000/v1")),
        ("ollama:llama3.2:1b@http://h:11434", ("ollama", "llama3.2:1b", "http://h:11434")),
        ("local", ("local", "", None)),
        ("local:/models/m.gguf", ("local", "/models/m.gguf", None)),
        ("python:pkg.mod:judge", ("python", "pkg.mod:judge", None)),
        (" Anthropic:claude ", ("anthropic", "claude", None)),
    ],
)
def test_parse_spec(spec: str, parsed: tuple[str, str, str | None]) -> None:
    assert parse_spec(spec) == parsed


def test_openai_defaults_come_from_the_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY is not set"):
        create_provider("openai:gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-0123456789")
    assert create_provider("openai:gpt-4o-mini").label == (
        "openai:gpt-4o-mini@https://api.openai.com/v1"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://vllm.internal:8000/v1/")
    assert create_provider("openai:m").label == "openai:m@http://vllm.internal:8000/v1"
    assert create_provider("openai:m@127.0.0.1:9/v1").label == "openai:m@http://127.0.0.1:9/v1"


def test_a_local_server_needs_no_key() -> None:
    provider = create_provider("openai:gemma@http://127.0.0.1:8080/v1")
    assert provider.label == "openai:gemma@http://127.0.0.1:8080/v1"


def test_rubricflow_llm_is_the_default_spec(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigurationError, match="no LLM judge is configured"):
        create_provider()
    monkeypatch.setenv("RUBRICFLOW_LLM", "ollama:llama3.2")
    assert create_provider().label.startswith("ollama:llama3.2@")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bogus:model", "unknown LLM provider 'bogus'"),
        ("openai", "names no model"),
        ("ollama:", "names no model"),
        ("python:nomodule", "must name python:module:function"),
        ("", "empty"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        create_provider(spec)


def test_unknown_prefix_lists_the_known_ones() -> None:
    with pytest.raises(ConfigurationError) as caught:
        create_provider("bogus:x")
    assert "anthropic, local, ollama, openai, python" in str(caught.value)


def test_settings_come_from_the_environment_then_the_caller(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RUBRICFLOW_LLM_RPM", "30")
    monkeypatch.setenv("RUBRICFLOW_LLM_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("RUBRICFLOW_LLM_PRICE", "0.15,0.60")
    provider = create_provider("ollama:m", settings={"max_attempts": 5})
    assert provider.settings.rpm == 30
    assert provider.settings.max_attempts == 5
    assert provider.settings.price == Price(0.15, 0.60)
    explicit = ProviderSettings(timeout=3)
    assert create_provider("ollama:m", settings=explicit).settings is explicit
    monkeypatch.setenv("RUBRICFLOW_LLM_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match="RUBRICFLOW_LLM_TIMEOUT='soon' is not a number"):
        create_provider("ollama:m")


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="max_attempts=0"):
        ProviderSettings(max_attempts=0)
    with pytest.raises(ConfigurationError, match="INPUT,OUTPUT"):
        Price.parse("cheap")


def test_local_provider_defaults_suit_a_small_in_process_model() -> None:
    provider = create_provider("local:/nonexistent/model.gguf")
    assert provider.label == "local:model.gguf"
    assert provider.settings.max_concurrency == 1
    assert provider.settings.reasoning_max_chars is not None


class EchoProvider(LLMProvider):
    kind = "echo"
    structured_feature = "none"

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        return ProviderResponse('{"reasoning": "echo", "verdict": "MET"}', model=self.model)


class EchoPlugin:
    @hookimpl
    def rubricflow_llm_providers(self) -> dict[str, Any]:
        return {
            "echo": lambda spec: EchoProvider(
                spec.model or "default", settings=spec.resolve_settings()
            )
        }


async def test_a_third_party_provider_plugs_in_through_the_hook() -> None:
    plugins = create_plugin_manager(plugins=[EchoPlugin()], load_entry_points=False)
    assert "echo" in plugins.providers
    evaluation = await evaluate(
        rubric({"id": "a", "description": "anything"}),
        "content",
        plugins=plugins,
        options={"llm": "echo:v1", "llm_cache": None},
    )
    assert evaluation.criteria[0].verdict == "MET"
    assert evaluation.criteria[0].llm_calls[0].provider == "echo"
    assert evaluation.criteria[0].llm_calls[0].model == "v1"


async def test_no_judge_configured_is_an_error_result_not_a_verdict() -> None:
    evaluation = await evaluate(
        rubric({"id": "a", "description": "anything"}, {"id": "b", "weight": -1}),
        "content",
        options={"llm_cache": None},
    )
    assert [r.status for r in evaluation.criteria] == ["error", "error"]
    assert "no LLM judge is configured" in evaluation.criteria[0].notes
    assert evaluation.verdict == "incomplete"


async def test_a_provider_object_passed_in_is_not_closed_by_the_session() -> None:
    closed = []

    class Tracked(EchoProvider):
        async def _close(self) -> None:
            closed.append(True)

    provider = Tracked("m")
    async with LLMSession(provider, cache=None) as session:
        await evaluate(rubric({"id": "a"}), "x", options={"llm": session})
    assert closed == []
    await provider.aclose()
    assert closed == [True]
