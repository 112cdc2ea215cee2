"""A plain function as a judge: `async def generate(system_prompt, user_prompt) -> str`
(the `rubric` package's `generate_fn`). A synchronous function works too and runs in a
worker thread. It may also return a dict or a Pydantic model, as the package's 2.x
`generate_fn` returns `PerCriterionOutput`, `OneShotOutput` or `RubricAsJudgeOutput`
(`structured_answers`). It cannot enforce a schema, so its answers are validated like
any other."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from rubricflow.llm.base import (
    LLMProvider,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    TransportError,
)
from rubricflow.llm.providers.structured_answers import answer_text

__all__ = ["CallableProvider"]


class CallableProvider(LLMProvider):
    kind = "python"
    structured_feature = "none (answers are validated)"

    def __init__(
        self,
        function: Callable[[str, str], Any],
        *,
        name: str | None = None,
        settings: ProviderSettings | None = None,
    ) -> None:
        label = name or getattr(function, "__qualname__", None) or type(function).__name__
        super().__init__(str(label), settings=settings)
        self.function = function

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        user = "\n\n".join(
            m["content"] if m["role"] == "user" else f"(your earlier answer)\n{m['content']}"
            for m in request.conversation
        )
        try:
            if inspect.iscoroutinefunction(self.function) or inspect.iscoroutinefunction(
                getattr(self.function, "__call__", None)  # noqa: B004
            ):
                answer = await self.function(request.system, user)
            else:
                answer = await asyncio.to_thread(self.function, request.system, user)
                if inspect.isawaitable(answer):
                    answer = await answer
        except (asyncio.CancelledError, TransportError):
            raise
        except Exception as error:
            # a judge function usually wraps a network client: a failure may be transient
            raise TransportError(
                "error",
                f"judge function {self.model} raised {type(error).__name__}: {error}",
                retryable=True,
            ) from None
        text = answer_text(answer, request.schema)
        if text is None:
            raise TransportError(
                "error",
                f"judge function {self.model} returned {type(answer).__name__}: return "
                "text, a dict or a Pydantic model (the rubric package's PerCriterionOutput, "
                "OneShotOutput or RubricAsJudgeOutput)",
                retryable=False,
            )
        return ProviderResponse(text=text, model=self.model)
