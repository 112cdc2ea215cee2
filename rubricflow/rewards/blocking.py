"""Run a coroutine to completion from synchronous code, even inside a running event loop.

Trainers call reward functions synchronously; a notebook (Jupyter) already runs an event
loop in the calling thread, where `asyncio.run` refuses to start. There the coroutine runs
on a private loop in a worker thread while the caller waits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


def run_blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    """`coroutine`'s result, waited for from synchronous code."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rubricflow-reward") as pool:
        return pool.submit(asyncio.run, coroutine).result()
