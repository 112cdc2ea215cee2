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
    "SlotLeases",
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

    async def acquire_many(self, holder: str, want: int) -> int:
        """At least one slot (waiting its turn, as `acquire`), and up to `want` in all of
        those free now: an actor asks once for the calls it has waiting. How many."""
        await self.acquire(holder)
        got = 1
        if self.rpm is None:  # paced starts are admitted one by one
            while got < want and not self._slots.locked():  # free now, nobody queued
                await self.acquire(holder)
                got += 1
        return got

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
        admitted (slots granted: without an rpm a leased slot serves several calls of one
        actor in turn), and (with an rpm) the closest two starts ever came, in seconds."""
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
        except Exception:  # dead, or made in a cluster this driver has left since
            del _held[name]
    remote: Any = ray.remote(JudgeBudget)
    actor = remote.options(
        name=name,
        namespace=NAMESPACE,
        get_if_exists=True,
        num_cpus=0,
        max_concurrency=max(1000, 4 * limit),
    ).remote(limit, rpm)
    # not waited for: Ray registers a named actor's name before `.remote()` returns, so
    # evaluation actors find it at once, and its process starts beside theirs (waiting
    # here put a worker process's start, over a second, before the run's own)
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
    takes them back.

    Slots are leased (`SlotLeases`): a slot a finished call frees goes straight to a call
    of this actor that waits, for up to `LEASE_SECONDS` after the budget granted it, and
    waiting calls are granted together; so a busy actor pays the budget's round trip
    about once a lease, not twice a call, and the budget still bounds every call in
    flight across the cluster. Under an rpm limit every call is granted on its own."""
    holder = holder_id(run)
    ray.get(actor.reclaim.remote(holder))
    # with a requests-per-minute limit every call's start is the budget's to pace: no
    # slot passes from one call to the next
    paced = ray.get(actor.figures.remote())["rpm"] is not None
    leases = SlotLeases(actor, holder, lease_seconds=0.0 if paced else LEASE_SECONDS)

    @contextlib.asynccontextmanager
    async def admitted() -> AsyncIterator[None]:
        granted = await leases.take()
        try:
            yield
        finally:
            leases.give_back(granted)

    return admitted


#: how long a slot the budget granted may pass from one call of an actor to the next
#: before it goes back to the budget's queue (so actors that want more than the budget
#: holds take turns)
LEASE_SECONDS = 1.0
#: event-loop turns a leased slot no call waits for is kept for the actor's next call
#: before it goes back to the budget. A call gives its budget slot back, then frees its
#: provider slot, whose next call asks for a budget slot in the next loop turn: kept that
#: long, the slot passes on at once, where going back cost two round trips to the budget
#: actor per judge call (2-4 ms of each call's provider slot on a busy machine). Turns,
#: not a timer: a loop that stops runs its pending turns on the way out, never a timer
SPARE_TURNS = 3


class SlotLeases:
    """One actor's slots of the cluster budget: calls wait here in order, a fetcher asks
    the budget for as many slots as calls wait (`JudgeBudget.acquire_many`), and a slot
    a call gives back is handed to the next waiting call while its lease lasts (or kept
    `SPARE_TURNS` loop turns for the next call to come), else released to the budget
    (sent, not awaited: a call's answer is not held back by one more round trip, and a
    cancelled call gives its slot back all the same)."""

    def __init__(
        self,
        actor: Any,
        holder: str,
        lease_seconds: float = LEASE_SECONDS,
        spare_turns: int = SPARE_TURNS,
    ) -> None:
        self._actor = actor
        self._holder = holder
        self._lease_seconds = lease_seconds
        self._spare_turns = spare_turns
        self._waiting: collections.deque[asyncio.Future[float]] = collections.deque()
        self._fetcher: asyncio.Task[None] | None = None
        #: leased slots no call holds: (granted, the turn they were kept in)
        self._spare: list[tuple[float, int]] = []
        self._turn = 0
        #: the loop whose turns sweep the kept slots (None when nothing is kept)
        self._sweeper: asyncio.AbstractEventLoop | None = None

    @property
    def spare(self) -> int:
        """Leased slots kept for the next call."""
        return len(self._spare)

    async def take(self) -> float:
        """Wait for a slot; when the budget granted it (the lease's start)."""
        now = time.monotonic()
        while self._spare:
            granted, _ = self._spare.pop()
            if now - granted < self._lease_seconds:
                return granted
            self._release()
        waiter: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        if self._fetcher is None or self._fetcher.done():
            self._fetcher = asyncio.create_task(self._fetch())
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.give_back(waiter.result())  # handed a slot as it was cancelled
            raise

    def give_back(self, granted: float) -> None:
        """A call is done with the slot granted at `granted`."""
        if time.monotonic() - granted < self._lease_seconds:
            if self._hand_over(granted):
                return
            if self._spare_turns > 0:
                self._keep(granted)
                return
        self._release()

    def _release(self) -> None:
        self._actor.release.remote(self._holder)

    def _keep(self, granted: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop to sweep it: back to the budget now
            self._release()
            return
        self._spare.append((granted, self._turn))
        if self._sweeper is not loop:  # none yet, or a loop that stopped before its sweep
            self._sweeper = loop
            loop.call_soon(self._sweep)

    def _sweep(self) -> None:
        """Once a loop turn while slots are kept: release those kept `SPARE_TURNS` turns
        ago that no call took."""
        self._turn += 1
        due = self._turn - self._spare_turns
        kept = [(granted, turn) for granted, turn in self._spare if turn > due]
        for _ in range(len(self._spare) - len(kept)):
            self._release()
        self._spare = kept
        if kept:
            asyncio.get_running_loop().call_soon(self._sweep)
        else:
            self._sweeper = None

    def _hand_over(self, granted: float) -> bool:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled waiter is passed over
                waiter.set_result(granted)
                return True
        return False

    async def _fetch(self) -> None:
        try:
            while any(not waiter.done() for waiter in self._waiting):
                want = sum(1 for waiter in self._waiting if not waiter.done())
                got = await self._actor.acquire_many.remote(self._holder, want)
                now = time.monotonic()
                for _ in range(got):
                    if not self._hand_over(now):  # handed a freed slot meanwhile
                        self.give_back(now)  # kept for the next call, or released
        except BaseException as error:  # the budget is gone: every waiting call hears it
            while self._waiting:
                waiter = self._waiting.popleft()
                if not waiter.done():
                    waiter.set_exception(error)
            if isinstance(error, asyncio.CancelledError):
                raise
