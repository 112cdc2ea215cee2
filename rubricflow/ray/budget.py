"""One judge budget for the whole cluster: a named Ray actor counting calls in flight.

Every evaluation actor enters the budget around each judge call (through
`rubricflow.llm.admission`), so sixteen actors on four machines never send more than
the budget's `limit` calls at once, whatever each actor's own concurrency. The actor is
named after the judge and the limit, so runs against the same judge at the same limit
share it while it lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import ray

from rubricflow.llm.admission import Admission

__all__ = ["JudgeBudget", "budget_actor", "budget_admission", "budget_name", "find_budget"]

NAMESPACE = "rubricflow"


class JudgeBudget:
    """The counter behind the budget (a Ray async actor: its methods run on one loop)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._slots = asyncio.Semaphore(limit)
        self._in_flight = 0
        self._peak = 0
        self._admitted = 0

    async def acquire(self) -> None:
        await self._slots.acquire()
        self._in_flight += 1
        self._admitted += 1
        self._peak = max(self._peak, self._in_flight)

    async def release(self) -> None:
        self._in_flight -= 1
        self._slots.release()

    async def figures(self) -> dict[str, int]:
        """The limit, calls in flight now, the most ever in flight, and calls admitted."""
        return {
            "limit": self.limit,
            "in_flight": self._in_flight,
            "peak": self._peak,
            "admitted": self._admitted,
        }


def budget_name(judge: str, limit: int) -> str:
    """The budget actor's name for the judge `judge` (its spec; no secret is kept in the
    name) at `limit` calls in flight."""
    digest = hashlib.sha256(judge.encode("utf-8")).hexdigest()[:16]
    return f"judge-budget-{digest}-{limit}"


#: the driver's handles on the budgets it made: a budget lives as long as its owner, so
#: the driver (which outlives every evaluation actor) owns it and keeps it referenced
_held: dict[str, Any] = {}


def budget_actor(judge: str, limit: int) -> Any:
    """The cluster's budget actor for `judge`, created with `limit` if it does not exist.
    Called by the driver before any evaluation actor starts (they find it by name)."""
    name = budget_name(judge, limit)
    remote: Any = ray.remote(JudgeBudget)
    actor = remote.options(
        name=name,
        namespace=NAMESPACE,
        get_if_exists=True,
        num_cpus=0,
        max_concurrency=max(1000, 4 * limit),
    ).remote(limit)
    ray.get(actor.figures.remote())  # registered before any evaluation actor looks it up
    _held[name] = actor
    return actor


def find_budget(judge: str, limit: int) -> Any:
    """The budget actor the driver made for `judge` at `limit` (on an evaluation actor)."""
    return ray.get_actor(budget_name(judge, limit), namespace=NAMESPACE)


def budget_admission(actor: Any) -> Admission:
    """An admission gate that holds one of `actor`'s slots for each judge call."""

    @contextlib.asynccontextmanager
    async def admitted() -> AsyncIterator[None]:
        await actor.acquire.remote()
        try:
            yield
        finally:
            # shielded: a cancelled call still gives its slot back
            await asyncio.shield(_release(actor))

    return admitted


async def _release(actor: Any) -> None:
    await actor.release.remote()
