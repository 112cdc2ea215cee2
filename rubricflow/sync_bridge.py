"""The one bridge from synchronous code to rubricflow's coroutines: `run_sync`.

Every synchronous convenience (`evaluate_sync`, the reward functions, the pytest plugin,
the tools, `generate_rubric_sync`, `rank_group_sync`) runs its coroutine through here.
Without a running event loop in the calling thread the coroutine runs under
`asyncio.run`. With one (a Jupyter notebook, an async web app, an async test) that
refuses, and blocking that loop on itself would deadlock, so the coroutine runs on a
private loop in a worker thread while the caller waits, as inspect_ai's `run_coroutine`
does. The caller's loop is blocked meanwhile: its other tasks wait until the call ends.

Either way the coroutine sees the caller's context variables (a copy: what it sets does
not flow back), its exception reaches the caller unchanged, and a KeyboardInterrupt in
the waiting caller cancels the coroutine and waits for it to wind down before it
propagates, so nothing is left running behind the caller's back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")
#: how often a caller waiting on the worker thread looks for a KeyboardInterrupt
_WAKE_SECONDS = 0.25


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """`coroutine`'s result, waited for from synchronous code, whether or not an event loop
    runs in this thread (see the module's docstring)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    return _Worker(coroutine).result()


class _Worker(Generic[T]):
    """One coroutine run to completion by `asyncio.run` in a thread of its own, started
    in a copy of the caller's context."""

    def __init__(self, coroutine: Coroutine[Any, Any, T]) -> None:
        self._coroutine = coroutine
        self._outcome: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False
        self._lock = threading.Lock()
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._work,), name="rubricflow-sync-bridge", daemon=True
        )

    def result(self) -> T:
        """Start the thread and wait for the coroutine's result or exception. A
        KeyboardInterrupt (or any other interruption) from the moment the thread starts,
        even before the coroutine begins, cancels the coroutine and waits for it first."""
        try:
            self._thread.start()
            # waits of a bounded length: a Ctrl-C that lands just as a wait begins would
            # otherwise go unnoticed until the coroutine ends (the lock wait does not wake)
            while not concurrent.futures.wait([self._outcome], timeout=_WAKE_SECONDS).done:
                pass
            return self._outcome.result()
        except BaseException:
            if not self._outcome.done():
                self._cancel()
            raise
        finally:
            if self._thread.ident is not None:  # started
                self._thread.join()

    def _work(self) -> None:
        try:
            value = asyncio.run(self._main())
        except BaseException as error:  # handed to the caller, whatever it is
            self._outcome.set_exception(error)
        else:
            self._outcome.set_result(value)

    async def _main(self) -> T:
        with self._lock:
            if self._cancelled:  # the caller gave up before the coroutine began
                self._coroutine.close()
                raise asyncio.CancelledError
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
        return await self._coroutine

    def _cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            loop, task = self._loop, self._task
        if loop is None or task is None:
            return  # not begun yet: `_main` sees the flag and does not begin
        with contextlib.suppress(RuntimeError):  # the loop closed: the coroutine has ended
            loop.call_soon_threadsafe(task.cancel)
