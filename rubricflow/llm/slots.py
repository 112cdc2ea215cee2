"""A judge's concurrency slots, handed out oldest target first.

A provider allows `max_concurrency` calls at once. With a plain FIFO semaphore, targets
evaluated together share the slots call by call, so they progress in lockstep and finish
together: the judge then idles through the last calls' tail and the next targets'
start, once per group (a tenth of a busy judge for 50-turn conversations two at a time).
Served oldest target first, the earliest target takes every slot it can use and the
later ones fill the slots it leaves, so one target's tail overlaps the next one's work.

`evaluate_cases` ranks each target as it starts it (`ranked`, `next_rank`), from one
counter for the whole process, so two runs in one process (two batches on a Ray actor)
are served by their targets' start too; a call made outside any ranked target takes its
rank when it asks for a slot (first come, first served among such calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import itertools
from collections.abc import Iterator
from types import TracebackType

__all__ = ["OrderedSlots", "current_rank", "next_rank", "ranked"]

#: the rank of the target whose evaluation runs in this context (lower goes first);
#: tasks started inside inherit it
_rank: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "rubricflow_target_rank", default=None
)
_ranks = itertools.count()


def next_rank() -> int:
    """A rank after every rank handed out so far in this process."""
    return next(_ranks)


def current_rank() -> int | None:
    """The rank of the target evaluated here; None outside any ranked target."""
    return _rank.get()


@contextlib.contextmanager
def ranked(rank: int) -> Iterator[None]:
    """Calls made inside, and in tasks started inside, wait with `rank`: create a target's
    task within it (a task keeps the context it was created in)."""
    token = _rank.set(rank)
    try:
        yield
    finally:
        _rank.reset(token)


class OrderedSlots:
    """A semaphore whose waiters are woken by (rank, arrival), not by arrival alone."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"a judge needs at least one slot, got {slots}")
        self._free = slots
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def available(self) -> int:
        """Slots free now."""
        return self._free

    def locked(self) -> bool:
        """True when a call would wait for a slot (a freed slot goes straight to a
        waiter, so free slots and waiters never coexist)."""
        return self._free == 0

    async def acquire(self) -> None:
        if not self.locked():
            self._free -= 1
            return
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:  # as asyncio's own primitives refuse it
            raise RuntimeError(f"{self!r} is bound to a different event loop")
        waiter: asyncio.Future[None] = loop.create_future()
        rank = _rank.get()
        if rank is None:
            rank = next(_ranks)
        heapq.heappush(self._waiters, (rank, next(self._arrivals), waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot as it was cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, waiter = heapq.heappop(self._waiters)
            if not waiter.done():
                waiter.set_result(None)  # the slot passes straight to the waiter
                return
        self._free += 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.release()
