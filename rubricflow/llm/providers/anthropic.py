"""Anthropic's Messages API. The answer schema is enforced by forced tool use: the judge
must call the `submit_answer` tool, whose `input_schema` is the answer schema, and the
tool input is the answer."""

from __future__ import annotations

import json
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

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_URL", "AnthropicProvider"]

DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
TOOL_NAME = "submit_answer"


class AnthropicProvider(HTTPProvider):
    kind = "anthropic"
    accepts_images = True
    structured_feature = "forced tool use"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_ANTHROPIC_URL,
        api_key: Secret | None = None,
        settings: ProviderSettings | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, settings=settings, **kwargs)

    def _key_variable(self) -> str:
        return self.key_source or "ANTHROPIC_API_KEY"

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key.reveal()
        return headers

    def payload(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": with_images(
                [dict(m) for m in request.conversation], request.images, "anthropic"
            ),
        }
        if request.system:
            body["system"] = request.system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        schema = schema_with_reasoning_limit(request.schema, self.settings.reasoning_max_chars)
        if schema is not None:
            body["tools"] = [
                {
                    "name": TOOL_NAME,
                    "description": "Submit your judgement. Put your reasoning first.",
                    "input_schema": schema,
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return body

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        data = await self.post_json("/v1/messages", self.payload(request), timeout)
        return self.parse(data)

    def parse(self, data: Any) -> ProviderResponse:
        """A Messages API answer (the body of `POST /v1/messages`, or a message batch's
        succeeded result) as the judge's answer."""
        if not isinstance(data, Mapping) or not isinstance(data.get("content"), list):
            raise TransportError(
                "error",
                f"{self.endpoint} answered without `content`: {str(data)[:200]}",
                retryable=True,
            )
        text = ""
        structured = False
        texts: list[str] = []
        for block in data["content"]:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
                text = json.dumps(block.get("input"), ensure_ascii=False)
                structured = True
                break
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
        if not structured:
            text = "".join(texts)
        usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
        assert isinstance(usage, Mapping)
        model = data.get("model")
        return ProviderResponse(
            text=text,
            model=model if isinstance(model, str) else self.model,
            input_tokens=_int(usage.get("input_tokens")),
            output_tokens=_int(usage.get("output_tokens")),
            structured=structured,
        )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
