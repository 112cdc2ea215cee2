"""The `rubricflow_artifact_transition` hook: listeners hear every committed transition
(`kind` "artifact.transition"), in commit order, sync or async; one that raises is logged
and changes nothing."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from rubricflow.errors import ArtifactConflictError
from rubricflow.hookspecs import hookimpl
from rubricflow.plugins import create_plugin_manager
from rubricflow.review import ArtifactRegistry
from rubricflow.review.events import TRANSITION
from rubricflow.review.worker import Worker
from rubricflow.store import Store

from .checks_plugin import ReviewChecks
from .conftest import FAIL, PASS, AsyncRecorder, RaisingListener, Recorder, doc_types


async def _life(registry: ArtifactRegistry) -> str:
    """create, fail, revise, pass, wait for approval, approve, archive."""
    artifact = await registry.create("gated", FAIL, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot")
    await registry.revise(artifact.id, PASS, actor="bot", reason="fixed")
    await registry.submit_for_review(artifact.id, actor="bot")
    await registry.approve(artifact.id, actor="alice", reason="good")
    await registry.archive(artifact.id, actor="alice")
    return artifact.id


async def test_sync_and_async_listeners_hear_every_transition_in_commit_order(
    store: Store,
) -> None:
    sync, late = Recorder("sync-recorder"), AsyncRecorder("async-recorder")
    plugins = create_plugin_manager(plugins=[ReviewChecks(), sync, late], load_entry_points=False)
    registry = ArtifactRegistry(store, plugins=plugins)
    await doc_types(registry)
    artifact_id = await _life(registry)
    history = [event.to_dict() for event in await registry.history(artifact_id)]
    assert len(history) == 10
    assert sync.events == history
    assert late.events == history
    assert [e["seq"] for e in sync.events] == list(range(1, 11))
    event = sync.events[-3]
    assert set(event) >= {
        "artifact_id",
        "seq",
        "revision",
        "trigger",
        "source",
        "dest",
        "actor",
        "reason",
        "evaluation_ids",
        "created_at",
    }
    assert (event["trigger"], event["dest"], event["revision"]) == (
        "await_approval",
        "in_review",
        2,
    )
    assert event["evaluation_ids"]


async def test_a_listener_is_called_only_after_the_transition_committed(
    store: Store, db_url: str
) -> None:
    """Each listener call can already see the new state from another connection. An
    inline review's claim commits with its submit, so the submit's listeners see both."""
    observer = await Store.open(db_url)
    seen: list[tuple[str, str, int]] = []

    class Checker:
        __name__ = "commit-checker"

        @hookimpl
        async def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
            if event["kind"] != TRANSITION:
                return
            outside = ArtifactRegistry(observer)
            history = await outside.history(event["artifact_id"])
            current = await outside.get(event["artifact_id"])
            seen.append((event["trigger"], current.status, history[-1].seq - event["seq"]))

    plugins = create_plugin_manager(plugins=[ReviewChecks(), Checker()], load_entry_points=False)
    registry = ArtifactRegistry(store, plugins=plugins)
    try:
        await doc_types(registry)
        artifact = await registry.create("doc", PASS, actor="bot")
        await registry.submit_for_review(artifact.id, actor="bot")
    finally:
        await observer.close()
    assert seen == [
        ("create", "draft", 0),
        ("submit", "in_review", 1),
        ("start_review", "in_review", 0),
        ("approve", "approved", 0),
    ]


@pytest.mark.parametrize("failing", ["sync", "async"])
async def test_a_raising_listener_is_logged_and_neither_undoes_nor_blocks(
    store: Store, caplog: pytest.LogCaptureFixture, failing: str
) -> None:
    class AsyncRaising(RaisingListener):
        __name__ = "async-raising-listener"

        @hookimpl
        async def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:  # type: ignore[override]
            if event["kind"] != TRANSITION:
                return
            self.calls += 1
            raise RuntimeError(f"listener broke on {event['trigger']}")

    broken = RaisingListener() if failing == "sync" else AsyncRaising()
    after = Recorder("after")
    plugins = create_plugin_manager(
        plugins=[ReviewChecks(), broken, after], load_entry_points=False
    )
    registry = ArtifactRegistry(store, plugins=plugins)
    await doc_types(registry)
    with caplog.at_level(logging.ERROR, logger="rubricflow"):
        artifact_id = await _life(registry)
    history = await registry.history(artifact_id)
    assert (await registry.get(artifact_id)).status == "archived"
    assert broken.calls == len(history) == 10
    assert after.events == [e.to_dict() for e in history], "the next listener still hears"
    failures = [r for r in caplog.records if "listener" in r.getMessage()]
    assert len(failures) == 10
    assert broken.__name__ in failures[0].getMessage()
    assert "the transition stands" in failures[0].getMessage()
    assert failures[0].exc_info is not None


async def test_a_transition_that_lost_a_race_is_not_announced(
    registry: ArtifactRegistry, recorder: Recorder
) -> None:
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot", defer=True)
    claimed = await registry.claim(artifact.id, worker="w1")
    await registry.override(artifact.id, actor="alice", reason="urgent")
    heard = len(recorder.events)
    with pytest.raises(ArtifactConflictError):
        await registry.finish_review(claimed)
    assert len(recorder.events) == heard
    assert recorder.events[-1]["trigger"] == "override"


async def test_worker_transitions_are_announced_too(
    store: Store, recorder: Recorder, review_plugins: Any
) -> None:
    registry = ArtifactRegistry(store, plugins=review_plugins, lease_seconds=0.2)
    await doc_types(registry)
    artifact = await registry.create("doc", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot", defer=True)
    await registry.claim(artifact.id, worker="crashed")  # never finishes: its lease runs out
    await asyncio.sleep(0.3)
    await Worker(registry, name="rescuer", poll_interval=0.05).run(once=True)
    assert [(e["trigger"], e["actor"]) for e in recorder.events[-3:]] == [
        ("abort_review", "rubricflow"),
        ("start_review", "rescuer/0"),
        ("approve", "rubricflow"),
    ]
    assert "lease of crashed expired" in recorder.events[-3]["reason"]


class _Logged:
    """A sync listener writing `(its name, seq, trigger)` to a log shared with others."""

    def __init__(self, name: str, log: list[tuple[str, int, str]]) -> None:
        self.__name__ = name
        self.log = log

    @hookimpl
    def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
        if event["kind"] == TRANSITION:
            self.log.append((self.__name__, event["seq"], event["trigger"]))


class _AsyncLogged(_Logged):
    """The same, async, yielding to the event loop before and after it writes."""

    @hookimpl
    async def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        if event["kind"] == TRANSITION:
            self.log.append((self.__name__, event["seq"], event["trigger"]))
        await asyncio.sleep(0)


async def test_listeners_are_called_in_pluggys_order_for_every_event(
    store: Store,
) -> None:
    """docs/plugins.md: listeners run one after another in pluggy's call order, last
    registered first (`plugins=[...]` are registered in list order), each awaited before
    the next, so for every event the shared log holds third, second, first, whatever mix
    of sync and async they are."""
    log: list[tuple[str, int, str]] = []
    first, second, third = (
        _AsyncLogged("first", log),
        _Logged("second", log),
        _AsyncLogged("third", log),
    )
    plugins = create_plugin_manager(
        plugins=[ReviewChecks(), first, second, third], load_entry_points=False
    )
    registry = ArtifactRegistry(store, plugins=plugins)
    await doc_types(registry)
    artifact_id = await _life(registry)
    history = await registry.history(artifact_id)
    assert len(history) == 10
    assert log == [
        (name, event.seq, event.trigger)
        for event in history
        for name in ("third", "second", "first")
    ]


async def test_tryfirst_and_trylast_listeners_keep_pluggys_meaning(store: Store) -> None:
    log: list[tuple[str, int, str]] = []

    class Early(_Logged):
        @hookimpl(tryfirst=True)
        def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
            if event["kind"] == TRANSITION:
                self.log.append((self.__name__, event["seq"], event["trigger"]))

    class Late(_Logged):
        @hookimpl(trylast=True)
        def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
            if event["kind"] == TRANSITION:
                self.log.append((self.__name__, event["seq"], event["trigger"]))

    plugins = create_plugin_manager(
        plugins=[ReviewChecks(), Late("late", log), _Logged("plain", log), Early("early", log)],
        load_entry_points=False,
    )
    registry = ArtifactRegistry(store, plugins=plugins)
    await doc_types(registry)
    await registry.create("doc", PASS, actor="bot")
    assert [name for name, _, _ in log] == ["early", "plain", "late"]
