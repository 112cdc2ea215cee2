"""One event bus: what the review service publishes, for every consumer in this process and
(as wake-ups) in every other process on the same store.

Everything goes through the lifecycle's listener hook, `rubricflow_artifact_transition`
(`PluginRegistry.notify`), after the transaction that wrote it committed, once per event:

- `artifact.transition`: a committed transition (the audit trail's event row);
- `evaluation.stored`: an evaluation a review stored (once: an evaluation another
  reviewer had already stored for the same revision and rubric version is not announced
  again).

Their shapes (`transition_event`, `evaluation_event`) are in docs/plugins.md. Consumers
(webhooks, the server's live status, metrics, tracing) either implement the hook as a
plugin or take an in-process subscription from the `EventBus` (`EventBus.of(plugins)
.subscribe(...)`), which is itself a listener on that hook; none hooks the service on its
own.

`LiveStatus` joins the bus to the store's change feed (`rubricflow.store.changes`): it
waits for an artifact's next change (`wait_for_change`, for long polls), streams its
events replaying the missed ones first (`events`, for Server-Sent Events), and wakes idle
workers (`watch`), seeing changes committed by other processes within milliseconds on
PostgreSQL (LISTEN/NOTIFY) and within the short poll on SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Collection, Iterable, Mapping
from typing import Any

from rubricflow.errors import ReviewError
from rubricflow.hookspecs import hookimpl
from rubricflow.plugins import PluginRegistry
from rubricflow.results import Evaluation
from rubricflow.store.artifact_models import ArtifactEvent
from rubricflow.store.changes import (
    ChangeFeed,
    ChangeNotice,
    Watch,
    events_after,
    require_artifact,
)
from rubricflow.store.database import Database

__all__ = [
    "EVALUATION_STORED",
    "EVENT_KINDS",
    "TRANSITION",
    "EventBus",
    "EventSubscription",
    "LiveStatus",
    "evaluation_event",
    "transition_event",
]

TRANSITION = "artifact.transition"
EVALUATION_STORED = "evaluation.stored"
EVENT_KINDS = (TRANSITION, EVALUATION_STORED)
#: events a subscriber may fall behind by before its subscription is ended
DEFAULT_BACKLOG = 10_000


def transition_event(event: ArtifactEvent) -> dict[str, Any]:
    """What listeners hear of a committed transition: `kind` plus the audit trail's event
    (artifact_id, seq, revision, trigger, source, dest, actor, reason, evaluation_ids,
    created_at)."""
    return {"kind": TRANSITION, **event.to_dict()}


def evaluation_event(evaluation: Evaluation, *, artifact_id: str, revision: int) -> dict[str, Any]:
    """What listeners hear of an evaluation a review stored: the summary, not the
    evidence (read that with `evaluations.get(evaluation_id)`), and how many judge calls
    it made (answers from the cache excluded)."""
    return {
        "kind": EVALUATION_STORED,
        "evaluation_id": evaluation.id,
        "artifact_id": artifact_id,
        "revision": revision,
        "rubric_id": evaluation.rubric_id,
        "rubric_version": evaluation.rubric_version,
        "verdict": evaluation.verdict,
        "passed": evaluation.passed,
        "score": evaluation.score,
        "coverage": evaluation.coverage,
        "created_at": evaluation.created_at,
        "judge_calls": sum(call.outcome != "cached" for call in evaluation.llm_calls),
    }


class EventSubscription:
    """Events of the kinds asked for (about one artifact, or all), in publication order,
    from when it was made until it is closed. Iterate it with `async for`; close it (or use
    `async with`). A subscriber that falls `backlog` events behind is ended with a
    `ReviewError` rather than letting its queue grow without bound."""

    def __init__(
        self,
        bus: EventBus,
        kinds: Collection[str] | None,
        artifact_id: str | None,
        backlog: int,
    ) -> None:
        self._bus = bus
        self.kinds = frozenset(kinds) if kinds is not None else None
        self.artifact_id = artifact_id
        self._queue: asyncio.Queue[Mapping[str, Any]] = asyncio.Queue(maxsize=backlog)
        self.dropped = 0

    def offer(self, event: Mapping[str, Any]) -> None:
        if self.kinds is not None and event.get("kind") not in self.kinds:
            return
        if self.artifact_id is not None and event.get("artifact_id") != self.artifact_id:
            return
        if self.dropped:
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped = 1

    async def get(self) -> Mapping[str, Any]:
        """The next event (waiting for it)."""
        if self.dropped and self._queue.empty():
            raise ReviewError(
                f"an event subscriber fell more than {self._queue.maxsize} events behind and "
                f"missed {self.dropped}; subscribe again and read what it missed from the "
                "store (an artifact's history)"
            )
        return await self._queue.get()

    def __aiter__(self) -> EventSubscription:
        return self

    async def __anext__(self) -> Mapping[str, Any]:
        return await self.get()

    def close(self) -> None:
        self._bus._subscriptions.discard(self)

    async def __aenter__(self) -> EventSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class EventBus:
    """In-process fan-out of what the listener hook publishes: registered on a plugin
    registry as a listener (first in line, so a slow listener delays no subscriber), it
    hands every event to its subscriptions and callbacks. One per plugin registry:
    `EventBus.of(plugins)`."""

    PLUGIN_NAME = "rubricflow-event-bus"

    def __init__(self) -> None:
        self._subscriptions: set[EventSubscription] = set()
        self._callbacks: list[Callable[[Mapping[str, Any]], None]] = []

    @classmethod
    def of(cls, plugins: PluginRegistry) -> EventBus:
        """The bus of `plugins`, registered as a listener on first use."""
        found = plugins.manager.get_plugin(cls.PLUGIN_NAME)
        if isinstance(found, EventBus):
            return found
        bus = cls()
        plugins.manager.register(bus, name=cls.PLUGIN_NAME)
        return bus

    def subscribe(
        self,
        kinds: Collection[str] | None = None,
        *,
        artifact_id: str | None = None,
        backlog: int = DEFAULT_BACKLOG,
    ) -> EventSubscription:
        """A subscription to the events of `kinds` (default all: `EVENT_KINDS`), about
        `artifact_id` when given, from now on."""
        unknown = set(kinds or ()) - set(EVENT_KINDS)
        if unknown:
            raise ReviewError(
                f"no event kind {sorted(unknown)[0]!r}; the kinds are {', '.join(EVENT_KINDS)}"
            )
        subscription = EventSubscription(self, kinds, artifact_id, max(1, backlog))
        self._subscriptions.add(subscription)
        return subscription

    def add_callback(self, callback: Callable[[Mapping[str, Any]], None]) -> None:
        """Call `callback(event)` for every event (synchronously: it must not block)."""
        self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[Mapping[str, Any]], None]) -> None:
        with contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    @hookimpl(tryfirst=True)
    def rubricflow_artifact_transition(self, event: Mapping[str, Any]) -> None:
        for callback in list(self._callbacks):
            callback(event)
        for subscription in list(self._subscriptions):
            subscription.offer(event)


class LiveStatus:
    """Live status of artifacts in one store: waits, streams and wake-ups, from the event
    bus (this process's changes, at once) and the store's change feed (every process's)."""

    def __init__(
        self,
        database: Database,
        plugins: PluginRegistry,
        *,
        poll_interval: float | None = None,
    ) -> None:
        self.database = database
        self.feed = ChangeFeed(database, poll_interval=poll_interval)
        self.bus = EventBus.of(plugins)
        self.bus.add_callback(self._heard)

    def _heard(self, event: Mapping[str, Any]) -> None:
        if event.get("kind") == TRANSITION:
            self.feed.wake(
                ChangeNotice(
                    str(event["artifact_id"]),
                    int(event["seq"]),
                    str(event["trigger"]),
                    str(event["dest"]),
                )
            )

    def watch(self, artifact_id: str | None = None, *, dest: Iterable[str] | None = None) -> Watch:
        """A `Watch` woken by changes to `artifact_id` (or to any artifact), optionally only
        by transitions into one of the states `dest` (a worker watches its queue)."""
        states = frozenset(dest) if dest is not None else None
        match = (lambda notice: notice.dest in states) if states is not None else None
        return self.feed.watch(artifact_id, match=match)

    async def wait_for_change(
        self, artifact_id: str, *, after: int, timeout: float
    ) -> ArtifactEvent | None:
        """The artifact's first event numbered above `after` (an event's `seq`, which is
        the artifact's `version` after it: pass the version you hold), waiting up to
        `timeout` seconds for it; None when nothing changed in time. `NotFoundError` when
        there is no such artifact."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        checked = False
        with self.feed.watch(artifact_id) as watch:
            while True:
                watch.clear()
                found = await events_after(self.database, artifact_id, after, limit=1)
                if found:
                    return found[0]
                if not checked:
                    await require_artifact(self.database, artifact_id)
                    checked = True
                remaining = deadline - loop.time()
                if remaining <= 0 or not await watch.wait(remaining) or self.feed.closed:
                    return None

    async def events(
        self, artifact_id: str, *, after_seq: int = 0
    ) -> AsyncGenerator[ArtifactEvent, None]:
        """The artifact's events numbered above `after_seq`, oldest first: first those
        already stored (so a client reconnecting with the last seq it saw misses nothing),
        then each new one as it commits, without end; no event twice. `NotFoundError`
        when there is no such artifact."""
        last = after_seq
        checked = False
        with self.feed.watch(artifact_id) as watch:
            while True:
                watch.clear()
                batch = await events_after(self.database, artifact_id, last, limit=100)
                if not batch and not checked:
                    await require_artifact(self.database, artifact_id)
                checked = True
                for event in batch:
                    last = event.seq
                    yield event
                if len(batch) < 100:
                    await watch.wait()
                if self.feed.closed:
                    return

    async def aclose(self) -> None:
        self.bus.remove_callback(self._heard)
        await self.feed.close()
