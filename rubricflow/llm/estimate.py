"""What a run would cost before it judges anything (`eval --estimate`).

The targets are evaluated with an `EstimateSession`: the real judge session's provider,
cache and settings, except that a call the cache does not answer is never sent. Each such
call is answered with the smallest valid answer to its schema, and counted: its input
tokens estimated from its prompt (4 characters a token) and its output tokens from that
answer plus `reasoning_tokens` for the judge's reasoning. Cache hits are looked up as the
real run would look them up, and counted as hits (they cost nothing). Nothing is written
to the cache. Because the prompts are the run's own (the same strategies build them: one
call per criterion, one-shot, samples), the number of calls is the run's exactly when the
judge answers validly at the first try.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rubricflow.llm.base import LLMProvider, ProviderRequest, ProviderResponse
from rubricflow.llm.budget import expected_input_tokens
from rubricflow.llm.session import Answer, LLMSession, Question

__all__ = ["REASONING_TOKENS", "Estimate", "EstimateSession", "smallest_answer"]

#: output tokens allowed for a judge's reasoning in each estimated answer
REASONING_TOKENS = 60
_CHARS_PER_TOKEN = 4


@dataclass
class Estimate:
    """Expected calls, cache hits, tokens and cost (None without a price)."""

    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    def add(self, usage: dict[str, Any]) -> None:
        self.calls += int(usage["llm_calls"])
        self.cache_hits += int(usage["cache_hits"])
        self.input_tokens += int(usage["input_tokens"])
        self.output_tokens += int(usage["output_tokens"])
        if usage.get("cost") is not None:
            self.cost = (self.cost or 0.0) + float(usage["cost"])


def smallest_answer(schema: Any) -> Any:
    """A small value valid under `schema` (the JSON Schemas rubricflow's judges use)."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return smallest_answer(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    return _of_type(kind, schema)


def _of_type(kind: Any, schema: dict[str, Any]) -> Any:
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {name: smallest_answer(sub) for name, sub in properties.items()}
    if kind == "array":
        count = max(int(schema.get("minItems", 1)), 1)
        item = schema.get("items", {})
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            return [smallest_answer(sub) for sub in prefix]
        return [smallest_answer(item) for _ in range(count)]
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        return low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "estimate"


class EstimateSession(LLMSession):
    """A judge session that counts the calls it would send instead of sending them."""

    reasoning_tokens: int = REASONING_TOKENS

    @classmethod
    def mirror(cls, judge: LLMSession) -> EstimateSession:
        """This session over `judge`'s provider, cache and settings."""
        mirror = cls.__new__(cls)
        mirror.__dict__.update(judge.__dict__)
        mirror._owned = False  # the provider stays the judge's to close
        mirror._owns_cache = False
        mirror.budget = None
        return mirror

    async def _transport(
        self,
        provider: LLMProvider,
        request: ProviderRequest,
        question: Question,
        prompt_hash: str,
        answer: Answer,
        attempt: int,
        deadline: float,
    ) -> tuple[ProviderResponse, float, int] | None:
        text = json.dumps(smallest_answer(question.schema)) if question.schema else "MET"
        output = -(-len(text) // _CHARS_PER_TOKEN) + self.reasoning_tokens
        response = ProviderResponse(
            text=text,
            model=provider.model,
            input_tokens=expected_input_tokens(request.messages),
            output_tokens=output,
        )
        return response, 0.0, attempt + 1

    async def _store(self, *args: Any, **kwargs: Any) -> None:
        """An estimate writes nothing to the cache."""
