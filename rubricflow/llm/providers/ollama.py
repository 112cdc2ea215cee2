"""Ollama's native `POST /api/chat`; the answer schema goes in `format` (Ollama 0.5+
constrains generation to it). For Ollama's OpenAI-compatible endpoint use
`openai:MODEL@http://HOST:11434/v1` instead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rubricflow.llm.base import (
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    Secret,
    TransportError,
    schema_with_reasoning_limit,
)
from rubricflow.llm.http import HTTPProvider
from rubricflow.llm.providers.images import with_images
from rubricflow.settings import env_name

__all__ = ["DEFAULT_OLLAMA_URL", "OllamaProvider"]

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"


class OllamaProvider(HTTPProvider):
    kind = "ollama"
    accepts_images = True
    structured_feature = "format (JSON Schema)"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_OLLAMA_URL,
        api_key: Secret | None = None,
        settings: ProviderSettings | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, settings=settings, **kwargs)

    def _key_variable(self) -> str:
        return env_name("llm_api_key")

    def _headers(self) -> dict[str, str]:
        # Ollama itself takes no key; a gateway in front of it may want a bearer token
        if self._api_key:
            return {"authorization": f"Bearer {self._api_key.reveal()}"}
        return {}

    def payload(self, request: ProviderRequest) -> dict[str, Any]:
        options: dict[str, Any] = {"num_predict": request.max_tokens}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        body: dict[str, Any] = {
            "model": self.model,
            "messages": with_images([dict(m) for m in request.messages], request.images, "ollama"),
            "stream": False,
            "options": options,
        }
        schema = schema_with_reasoning_limit(request.schema, self.settings.reasoning_max_chars)
        if schema is not None:
            body["format"] = schema
        return body

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        data = await self.post_json("/api/chat", self.payload(request), timeout)
        message = data.get("message") if isinstance(data, Mapping) else None
        if not isinstance(message, Mapping) or not isinstance(message.get("content"), str):
            detail = data.get("error") if isinstance(data, Mapping) else None
            raise TransportError(
                "error",
                f"{self.endpoint} answered without message.content: {detail or str(data)[:200]}",
                retryable=detail is None,
            )
        model = data.get("model")
        return ProviderResponse(
            text=message["content"],
            model=model if isinstance(model, str) else self.model,
            input_tokens=_int(data.get("prompt_eval_count")),
            output_tokens=_int(data.get("eval_count")),
            structured=request.schema is not None,
        )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
