"""One judge budget for the whole cluster: a named Ray actor counting calls in flight and,
when a requests-per-minute limit is set, spacing their starts.

Every evaluation actor enters the budget around each judge call (through
`rubricflow.llm.admission`), so sixteen actors on four machines never send more than
the budget's `limit` calls at once, nor start more than `rpm` a minute, whatever each
actor's own settings. The actor is named after the judge and its limits, so runs against
the same judge at the same limits share it while it lives.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator
from typing import Any

import ray

from rubricflow.llm.admission import Admission

__all__ = [
    "JudgeBudget",
    "budget_actor",
    "budget_admission",
    "budget_name",
    "close_run",
    "find_budget",
]

NAMESPACE = "rubricflow"


class JudgeBudget:
    """The counter behind the budget (a Ray async actor: its methods run on one loop):
    at most `limit` calls in flight and, with `rpm`, call starts at least 60/rpm seconds
    apart (a slot is taken first, then the start waits its turn, as a provider paces its
    own calls)."""

    def __init__(self, limit: int, rpm: float | None = None) -> None:
        self.limit = limit
        self.rpm = rpm
        self._slots = asyncio.Semaphore(limit)
        self._pacing = asyncio.Lock()
        self._next_start = 0.0
        self._last_start: float | None = None
        self._closest: float | None = None
        self._in_flight = 0
        self._peak = 0
        self._admitted = 0
        self._reclaimed = 0
        #: slots held, by holder (`RUN/ACTOR`): a holder that died holding slots gets
        #: them back when it restarts (`reclaim`), and a run's holders all give theirs
        #: back when the run ends (`close_run`), so neither a killed actor nor an
        #: interrupted run shrinks the budget for good
        self._held: dict[str, int] = {}
        #: runs ended: their late holders (actors not yet stopped) get no slot
        self._closed: collections.deque[str] = collections.deque(maxlen=1024)

    async def acquire(self, holder: str = "") -> None:
        await self._slots.acquire()
        try:
            if run_of(holder) in self._closed:
                raise RuntimeError(f"the run of {holder!r} has ended; its actors take no slot")
            await self._pace()
        except BaseException:
            self._slots.release()
            raise
        self._held[holder] = self._held.get(holder, 0) + 1
        self._in_flight += 1
        self._admitted += 1
        self._peak = max(self._peak, self._in_flight)

    async def release(self, holder: str = "") -> None:
        held = self._held.get(holder, 0)
        if held <= 0:  # reclaimed already (the holder restarted)
            return
        self._held[holder] = held - 1
        self._in_flight -= 1
        self._slots.release()

    async def reclaim(self, holder: str) -> int:
        """Give back every slot `holder` holds (it died and started again); how many."""
        held = self._held.pop(holder, 0)
        for _ in range(held):
            self._in_flight -= 1
            self._slots.release()
        self._reclaimed += held
        return held

    async def close_run(self, run: str) -> int:
        """The run `run` ended (finished, failed or interrupted): give back every slot its
        holders hold, and refuse them any more; how many were given back."""
        self._closed.append(run)
        given = 0
        for holder in [h for h in self._held if run_of(h) == run]:
            given += await self.reclaim(holder)
        return given

    async def _pace(self) -> None:
        if self.rpm is None:
            return
        interval = 60.0 / self.rpm
        async with self._pacing:  # held while waiting: starts at least `interval` apart
            wait = self._next_start - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            now = time.monotonic()
            if self._last_start is not None:
                gap = now - self._last_start
                self._closest = gap if self._closest is None else min(self._closest, gap)
            self._last_start = now
            self._next_start = now + interval

    async def figures(self) -> dict[str, float | None]:
        """The limit, the rpm, calls in flight now, the most ever in flight, calls
        admitted, and (with an rpm) the closest two starts ever came, in seconds."""
        return {
            "limit": self.limit,
            "rpm": self.rpm,
            "in_flight": self._in_flight,
            "peak": self._peak,
            "admitted": self._admitted,
            "closest_starts": self._closest,
            "reclaimed": self._reclaimed,
        }


def budget_name(judge: str, limit: int, rpm: float | None = None) -> str:
    """The budget actor's name for the judge `judge` (its spec; no secret is kept in the
    name) at `limit` calls in flight and `rpm` starts a minute."""
    digest = hashlib.sha256(judge.encode("utf-8")).hexdigest()[:16]
    name = f"judge-budget-{digest}-{limit}"
    return name if rpm is None else f"{name}-rpm{rpm:g}"


#: the driver's handles on the budgets it made: a budget lives as long as its owner, so
#: the driver (which outlives every evaluation actor) owns it and keeps it referenced
_held: dict[str, Any] = {}


def budget_actor(judge: str, limit: int, rpm: float | None = None) -> Any:
    """The cluster's budget actor for `judge`, created with `limit` (and `rpm`) if it does
    not exist. Called by the driver before any evaluation actor starts (they find it by
    name)."""
    name = budget_name(judge, limit, rpm)
    held = _held.get(name)
    if held is not None:
        # the handle that made it: dropping it (for one get_if_exists returns) would
        # leave the actor without its owner's reference, and Ray would end it
        try:
            ray.get(held.figures.remote())
            return held
        except ray.exceptions.RayActorError:
            del _held[name]
    remote: Any = ray.remote(JudgeBudget)
    actor = remote.options(
        name=name,
        namespace=NAMESPACE,
        get_if_exists=True,
        num_cpus=0,
        max_concurrency=max(1000, 4 * limit),
    ).remote(limit, rpm)
    ray.get(actor.figures.remote())  # registered before any evaluation actor looks it up
    _held[name] = actor
    return actor


def find_budget(judge: str, limit: int, rpm: float | None = None) -> Any:
    """The budget actor the driver made for `judge` at `limit` and `rpm` (on an
    evaluation actor)."""
    return ray.get_actor(budget_name(judge, limit, rpm), namespace=NAMESPACE)


def holder_id(run: str = "") -> str:
    """Who holds slots from here, for the run `run`: `RUN/ID`, where ID is this actor's
    id (the same after a restart), else this process's worker id."""
    context = ray.get_runtime_context()
    return f"{run}/{context.get_actor_id() or context.get_worker_id()}"


def run_of(holder: str) -> str:
    """The run a holder (`holder_id`) holds slots for."""
    return holder.partition("/")[0]


def close_run(budget: tuple[str, int, float | None], run: str, within: float = 10.0) -> None:
    """Tell the budget `budget` (judge, limit, rpm) that the driver's run `run` ended, so
    slots its actors held when they were stopped (an interrupted run) come back."""
    name = budget_name(*budget)
    actor = _held.get(name)
    if actor is None:
        return
    with contextlib.suppress(Exception):  # a budget gone with its cluster holds nothing
        ray.get(actor.close_run.remote(run), timeout=within)


def budget_admission(actor: Any, run: str = "") -> Admission:
    """An admission gate that holds one of `actor`'s slots for each judge call, for the
    run `run`. Made in an actor that may have died holding slots before (a restart), it
    takes them back."""
    holder = holder_id(run)
    ray.get(actor.reclaim.remote(holder))

    @contextlib.asynccontextmanager
    async def admitted() -> AsyncIterator[None]:
        await actor.acquire.remote(holder)
        try:
            yield
        finally:
            # sent, not awaited: the call's answer is not held back by one more round
            # trip, and a cancelled call gives its slot back all the same
            actor.release.remote(holder)

    return admitted
