"""OpenAI-compatible chat completions: OpenAI, vLLM, llama.cpp's server, LM Studio,
Ollama's /v1 and anything else that speaks `POST {base}/chat/completions`.

The answer schema is sent as `response_format: {"type": "json_schema", ...}`. Servers that
refuse it (llama-cpp-python's server accepts only `json_object` with a `schema`) are
adapted to once: `json_schema` -> `json_object` + schema -> no response_format; a refused
`temperature` or `max_tokens` is likewise dropped or renamed. The adaptation is remembered
for the provider, and the answer is validated either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

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

__all__ = ["DEFAULT_OPENAI_URL", "OpenAIProvider"]

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
StructuredMode = Literal["json_schema", "json_object", "none"]
_DOWNGRADE: dict[str, StructuredMode] = {"json_schema": "json_object", "json_object": "none"}


class OpenAIProvider(HTTPProvider):
    kind = "openai"
    accepts_images = True
    structured_feature = "response_format json_schema"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_OPENAI_URL,
        api_key: Secret | None = None,
        settings: ProviderSettings | None = None,
        structured: StructuredMode | Literal["auto"] = "auto",
        **kwargs: Any,
    ) -> None:
        super().__init__(model, base_url=base_url, api_key=api_key, settings=settings, **kwargs)
        self.mode: StructuredMode = "json_schema" if structured == "auto" else structured
        self._adapt = structured == "auto"
        self._send_temperature = True
        self._send_logprobs = True
        self._tokens_field = (
            "max_completion_tokens" if "api.openai.com" in self.base_url else "max_tokens"
        )

    @property
    def structured_output(self) -> str:
        return {
            "json_schema": "response_format json_schema",
            "json_object": "response_format json_object with schema",
            "none": "none (the server took no response_format; answers are validated)",
        }[self.mode]

    def _key_variable(self) -> str:
        return self.key_source or "OPENAI_API_KEY"

    def _headers(self) -> dict[str, str]:
        if self._api_key:
            return {"authorization": f"Bearer {self._api_key.reveal()}"}
        return {}

    def payload(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": with_images([dict(m) for m in request.messages], request.images, "openai"),
            self._tokens_field: request.max_tokens,
        }
        if request.temperature is not None and self._send_temperature:
            body["temperature"] = request.temperature
        if self.settings.logprobs and self._send_logprobs:
            # llama.cpp's (llama-cpp-python's) server returns them only with top_logprobs
            body["logprobs"] = True
            body["top_logprobs"] = 1
        schema = schema_with_reasoning_limit(request.schema, self.settings.reasoning_max_chars)
        if schema is not None and self.mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": schema, "strict": True},
            }
        elif schema is not None and self.mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        while True:
            try:
                data = await self.post_json("/chat/completions", self.payload(request), timeout)
            except TransportError as error:
                if self._adapted(error, request):
                    continue
                raise
            return self._parse(data, structured=request.schema is not None and self.mode != "none")

    def _adapted(self, error: TransportError, request: ProviderRequest) -> bool:
        """Whether a 400/422 names a parameter this server does not take, and it was dropped."""
        text = str(error).lower()
        if error.status in (400, 422):
            about_format = "response_format" in text or "schema" in text
        elif error.status is not None and error.status >= 500:
            # llama-cpp-python's server answers a refused response_format with HTTP 500
            about_format = "response_format" in text
            if not about_format:
                return False
        else:
            return False
        if self._adapt and request.schema is not None and self.mode in _DOWNGRADE and about_format:
            self.mode = _DOWNGRADE[self.mode]
            return True
        if self._send_logprobs and self.settings.logprobs and "logprobs" in text:
            self._send_logprobs = False  # the answer is judged without a confidence
            return True
        if self._send_temperature and "temperature" in text and request.temperature is not None:
            self._send_temperature = False
            return True
        if (
            self._tokens_field == "max_tokens"
            and "max_tokens" in text
            and ("max_completion_tokens" in text or "unsupported" in text)
        ):
            self._tokens_field = "max_completion_tokens"
            return True
        return False

    def _parse(self, data: Any, *, structured: bool) -> ProviderResponse:
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise TransportError(
                "error",
                f"{self.endpoint} answered without choices[0].message: {str(data)[:200]}",
                retryable=True,
            ) from None
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, str):
            refusal = message.get("refusal") if isinstance(message, Mapping) else None
            content = "" if refusal is None else f"(refused) {refusal}"
        usage = data.get("usage") if isinstance(data, Mapping) else None
        usage = usage if isinstance(usage, Mapping) else {}
        return ProviderResponse(
            text=content,
            model=data.get("model") if isinstance(data.get("model"), str) else self.model,
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
            structured=structured,
            logprobs=_logprobs(choice),
        )


def _logprobs(choice: Any) -> tuple[tuple[str, float], ...] | None:
    """`choices[0].logprobs.content` as (token, logprob) pairs (OpenAI's shape, which
    llama.cpp's and vLLM's servers share), or None."""
    found = choice.get("logprobs") if isinstance(choice, Mapping) else None
    content = found.get("content") if isinstance(found, Mapping) else None
    if not isinstance(content, list):
        return None
    pairs = []
    for item in content:
        if not isinstance(item, Mapping):
            return None
        token, logprob = item.get("token"), item.get("logprob")
        if not isinstance(token, str) or not isinstance(logprob, int | float):
            return None
        pairs.append((token, float(logprob)))
    return tuple(pairs)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
