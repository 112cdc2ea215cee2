"""A spending cap for a judge session (`eval --max-cost USD`): a call that would take the
spend past the cap is not sent, and its criterion is `unable_to_evaluate` with the reason
"budget", so the verdict fails closed.

Before each call that the cache does not answer, the call's expected cost is reserved:
its input tokens estimated from the prompt (4 characters a token) and its output tokens
as the mean of the answers seen so far (the first call: `max_tokens`, up to 512). When the
spend so far plus what is reserved plus this call's expectation passes the cap, the call
is refused. After the call, its reservation is replaced by its real cost. Reservations
are taken under a lock, so concurrent criteria cannot together pass the cap on what they
expected.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rubricflow.llm.base import Price

__all__ = ["BUDGET_REASON", "CostBudget", "capped_session", "expected_input_tokens"]

BUDGET_REASON = "budget"
_CHARS_PER_TOKEN = 4
_FIRST_OUTPUT_TOKENS = 512


def expected_input_tokens(messages: Sequence[object]) -> int:
    """A prompt's input tokens, estimated from its characters (4 a token, rounded up)."""
    chars = 0
    for message in messages:
        content = message.get("content", "") if isinstance(message, dict) else message
        chars += len(content if isinstance(content, str) else str(content))
    return -(-chars // _CHARS_PER_TOKEN)


@dataclass
class CostBudget:
    """At most `limit` (in the price's currency) spent on judge calls; `label` names the
    budget in refusals (e.g. "the run's --max-cost")."""

    limit: float
    label: str = "the budget"
    spent: float = 0.0
    reserved: float = 0.0
    refused: int = 0
    _outputs: list[int] = field(default_factory=list)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def expected_output_tokens(self, max_tokens: int) -> int:
        if self._outputs:
            return -(-sum(self._outputs) // len(self._outputs))
        return min(max_tokens, _FIRST_OUTPUT_TOKENS)

    async def reserve(self, price: Price, input_tokens: int, max_tokens: int) -> float | None:
        """Reserve a call's expected cost; None (and counted as refused) when it would pass
        the limit."""
        expected = price.cost(input_tokens, self.expected_output_tokens(max_tokens)) or 0.0
        return expected if await self.reserve_amount(expected) else None

    async def reserve_amount(self, expected: float) -> bool:
        """Reserve `expected`; False (and counted as refused) when it would pass the limit."""
        async with self._lock:
            if self.spent + self.reserved + expected > self.limit:
                self.refused += 1
                return False
            self.reserved += expected
            return True

    async def settle(self, reserved: float, cost: float, output_tokens: int | None) -> None:
        """Replace a reservation with the call's real cost."""
        async with self._lock:
            self.reserved = max(0.0, self.reserved - reserved)
            self.spent += cost
            if output_tokens is not None:
                self._outputs.append(output_tokens)

    def refusal(self) -> str:
        """Why a call was not sent (the criterion's notes start with the reason)."""
        return (
            f"{BUDGET_REASON}: the judge call would pass {self.label} of {self.limit:g} "
            f"(spent {self.spent:.4g}); raise the limit, or judge fewer targets"
        )


def capped_session(session: Any, budget: CostBudget) -> Any:
    """A view of the judge session `session` (an `LLMSession`) whose calls count against
    `budget`: the same provider, HTTP pool and cache, closed with the original (the view
    owns nothing). A panel's judges are capped views too, under the same budget: every
    member's call counts."""
    view = object.__new__(type(session))
    view.__dict__.update(session.__dict__)
    view._owned = False
    view._owns_cache = False
    view.budget = budget
    if session.panel is not None:
        view._members = [capped_session(member, budget) for member in session.members()]
    return view
