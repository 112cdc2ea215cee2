"""What a generation or ranking cost: calls, cache hits, tokens, money."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rubricflow.results import LLMCall

__all__ = ["call_usage"]


def call_usage(calls: Sequence[LLMCall]) -> dict[str, Any]:
    """`llm_calls` (requests sent, not cached), `cache_hits`, token totals and `cost`
    (None when no call had a price)."""
    sent = [c for c in calls if c.outcome != "cached"]
    costs = [c.cost for c in sent if c.cost is not None]
    return {
        "llm_calls": len(sent),
        "cache_hits": len(calls) - len(sent),
        "input_tokens": sum(c.input_tokens or 0 for c in sent),
        "output_tokens": sum(c.output_tokens or 0 for c in sent),
        "cost": sum(costs) if costs else None,
    }
