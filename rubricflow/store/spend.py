"""Daily judge budgets per artifact type, in the store: every worker and server sharing
the store reserves from the same row. A reservation is one UPDATE that adds the amount
only while the total stays within the limit, atomic on PostgreSQL (the row's lock) and
on SQLite (the database's write lock), so processes racing for the last of a day's
budget cannot together pass it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from rubricflow.llm.base import Price
from rubricflow.llm.budget import BUDGET_REASON, CostBudget

__all__ = ["DailyBudget", "DailySpend", "utc_day"]

_ENSURE = sa.text(
    "INSERT INTO judge_spend_daily (artifact_type, day, spent) VALUES (:t, :d, 0) "
    "ON CONFLICT (artifact_type, day) DO NOTHING"
)
_RESERVE = sa.text(
    "UPDATE judge_spend_daily SET spent = spent + :amount "
    "WHERE artifact_type = :t AND day = :d AND spent + :amount <= :limit"
)
_SETTLE = sa.text(
    "UPDATE judge_spend_daily SET spent = spent + :delta WHERE artifact_type = :t AND day = :d"
)
_SPENT = sa.text("SELECT spent FROM judge_spend_daily WHERE artifact_type = :t AND day = :d")


def utc_day(now: datetime | None = None) -> str:
    return (now or datetime.now(timezone.utc)).astimezone(timezone.utc).date().isoformat()


class _Reservation(float):
    """An amount reserved, and the UTC day it was reserved from (settled against that day,
    however much later the call ends: a batched call may end on the next day)."""

    day: str

    def __new__(cls, amount: float, day: str) -> _Reservation:
        made = super().__new__(cls, amount)
        made.day = day
        return made


class DailySpend:
    """The `judge_spend_daily` rows of a store's database."""

    def __init__(self, database: Any) -> None:
        self.database = database

    async def reserve(self, artifact_type: str, day: str, amount: float, limit: float) -> bool:
        """Add `amount` to the type's spend on `day` if the total stays within `limit`."""
        values = {"t": artifact_type, "d": day}
        async with self.database.transaction() as connection:
            await connection.execute(_ENSURE, values)
            done = await connection.execute(_RESERVE, {**values, "amount": amount, "limit": limit})
            return bool(done.rowcount == 1)

    async def settle(self, artifact_type: str, day: str, delta: float) -> None:
        """Correct the day's spend by `delta` (a call's real cost minus its reservation)."""
        async with self.database.transaction() as connection:
            await connection.execute(_SETTLE, {"t": artifact_type, "d": day, "delta": delta})

    async def spent(self, artifact_type: str, day: str) -> float:
        async with self.database.read() as connection:
            value = (await connection.execute(_SPENT, {"t": artifact_type, "d": day})).scalar()
        return float(value or 0.0)


class DailyBudget(CostBudget):
    """A type's daily budget in the store, optionally inside a per-artifact cap (`inner`):
    a call is reserved from both, or from neither."""

    def __init__(
        self,
        spend: DailySpend,
        artifact_type: str,
        limit: float,
        inner: CostBudget | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(limit, f"type {artifact_type!r}'s daily budget")
        self.store = spend
        self.now = now or (lambda: datetime.now(timezone.utc))
        self.artifact_type = artifact_type
        self.inner = inner
        self._refused_by: CostBudget = self

    async def reserve(self, price: Price, input_tokens: int, max_tokens: int) -> float | None:
        expected = price.cost(input_tokens, self.expected_output_tokens(max_tokens)) or 0.0
        if self.inner is not None and not await self.inner.reserve_amount(expected):
            self._refused_by = self.inner
            return None
        day = utc_day(self.now())
        if not await self.store.reserve(self.artifact_type, day, expected, self.limit):
            if self.inner is not None:
                await self.inner.settle(expected, 0.0, None)
            self._refused_by, self.refused = self, self.refused + 1
            return None
        return _Reservation(expected, day)

    async def settle(self, reserved: float, cost: float, output_tokens: int | None) -> None:
        """The call's real cost replaces its reservation, on the day it was reserved."""
        day = reserved.day if isinstance(reserved, _Reservation) else utc_day(self.now())
        await self.store.settle(self.artifact_type, day, cost - reserved)
        if self.inner is not None:
            await self.inner.settle(reserved, cost, output_tokens)
        async with self._lock:
            self.spent += cost
            if output_tokens is not None:
                self._outputs.append(output_tokens)

    def refusal(self) -> str:
        if self._refused_by is not self:
            return self._refused_by.refusal()
        return (
            f"{BUDGET_REASON}: the judge call would pass {self.label} of {self.limit:g} "
            f"for {utc_day(self.now())} (UTC); raise it, or wait for the next day"
        )
