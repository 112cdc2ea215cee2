"""Running a coroutine to completion from synchronous test code, even when the test
itself runs inside an event loop (an async test calling a sync helper)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """`asyncio.run(make())`, in a worker thread when this thread's loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()
