"""Admission to a judge beyond one process: a gate every provider call passes through.

A provider bounds its own calls in flight (`max_concurrency`), but that bound is per
process. Where many processes share one judge (Ray actors on several machines), the
caller binds an admission gate with `admit_with`: an async context manager factory that
every attempt enters after the provider's own semaphore and leaves when the answer (or
the failure) is in, e.g. one held by a cluster-wide counter (`rubricflow.ray`). Unbound,
calls go straight through.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar

__all__ = ["Admission", "admit_with", "admitted"]

#: enter before a call, leave after it
Admission = Callable[[], AbstractAsyncContextManager[None]]

_gate: ContextVar[Admission | None] = ContextVar("rubricflow_judge_admission", default=None)


@contextlib.asynccontextmanager
async def _open() -> AsyncIterator[None]:
    yield


def admitted() -> AbstractAsyncContextManager[None]:
    """The gate bound here (`admit_with`), entered around one provider call."""
    gate = _gate.get()
    return _open() if gate is None else gate()


@contextlib.contextmanager
def admit_with(gate: Admission | None) -> Iterator[None]:
    """Bind `gate` for the code run inside (tasks started inside inherit it)."""
    token = _gate.set(gate)
    try:
        yield
    finally:
        _gate.reset(token)
