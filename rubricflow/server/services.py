"""What a server process runs beside its requests: the embedded review worker (for
deferred submissions) and, once webhooks exist, their deliverer. Each runs until the
server stops, then finishes what ends within the grace period."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any

from rubricflow.application import Application
from rubricflow.server.settings import ServerSettings

__all__ = [
    "BackgroundService",
    "for_settings",
    "review_worker",
    "stop_on_signals",
    "webhook_deliverer",
]

_log = logging.getLogger("rubricflow.server")

#: a service that runs beside the requests until its `stop` event is set
BackgroundService = Callable[
    [Application, ServerSettings, asyncio.Event], Coroutine[Any, Any, None]
]


async def review_worker(
    application: Application, settings: ServerSettings, stop: asyncio.Event
) -> None:
    """Review deferred submissions until `stop`; then in-flight reviews get the grace
    period and the rest are handed back for another worker."""
    from rubricflow.review.worker import Worker

    worker = Worker(
        application.artifacts,
        concurrency=settings.review_workers,
        grace_seconds=settings.grace_seconds,
    )
    running = asyncio.create_task(worker.run())
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({running, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if not running.done():
        worker.stop()
    stopped.cancel()
    try:
        await running
    except Exception:
        _log.exception("the embedded review worker stopped with an error")


async def webhook_deliverer(
    application: Application, settings: ServerSettings, stop: asyncio.Event
) -> None:
    """Deliver webhooks until `stop`, woken by every transition that may announce an
    event; sends in flight at the stop are handed back for the next deliverer."""
    try:
        await application.webhooks.run_delivery_worker(stop)
    except Exception:
        _log.exception("the webhook deliverer stopped with an error")


def for_settings(settings: ServerSettings) -> list[BackgroundService]:
    """The background services `settings` asks for."""
    services: list[BackgroundService] = []
    if settings.review_workers > 0:
        services.append(review_worker)
    if settings.webhooks:
        services.append(webhook_deliverer)
    return services


def stop_on_signals(stop: asyncio.Event) -> Callable[[], None]:
    """Set `stop` the moment the process gets SIGTERM or SIGINT, then call the handler
    that was there (uvicorn's, which stops accepting and drains the connections). Without
    this the background services would hear of the stop only after every connection had
    closed, so the embedded worker would go on claiming reviews while the server drains
    and long polls and event streams would hold the drain up. Returns the function that
    puts the previous handlers back. Outside the main thread, or when nothing handles the
    signals in Python (a host server of its own), it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    loop = asyncio.get_running_loop()
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(stop.set)
        before = previous.get(signum)
        if callable(before):
            before(signum, frame)

    for signum in (signal.SIGTERM, signal.SIGINT):
        current = signal.getsignal(signum)
        if callable(current):
            previous[signum] = current
            signal.signal(signum, handler)

    def restore() -> None:
        for signum, before in previous.items():
            if signal.getsignal(signum) is handler:
                signal.signal(signum, before)
        previous.clear()

    return restore
