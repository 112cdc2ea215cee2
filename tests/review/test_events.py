"""The one event bus (issue 17, item 8): every committed transition and every evaluation a
review stores reaches the listener hook exactly once, after its commit, in an order that
makes sense (an evaluation before the decision citing it); in-process subscribers get them
from the `EventBus`, itself a listener on that hook."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from rubricflow.errors import ArtifactConflictError, ReviewError
from rubricflow.hookspecs import hookimpl
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.review import ArtifactRegistry
from rubricflow.review.events import (
    EVALUATION_STORED,
    TRANSITION,
    EventBus,
    evaluation_event,
    transition_event,
)

from .checks_plugin import ExplodingScorer, ReviewChecks
from .conftest import FAIL, PASS, Recorder, check, define, make_rubric, score_rubric


async def _types(registry: ArtifactRegistry) -> None:
    """`doc`: one rubric (its evaluation is stored with the decision); `pair`: two
    rubrics (each evaluation is stored as soon as it is made); `boom`: a check that
    raises (an incomplete evaluation, stored, then the review is released)."""
    scored = score_rubric()
    await define(registry, "doc", scored)
    await define(registry, "pair", scored, make_rubric("filled"))
    await define(registry, "boom", make_rubric("boom", check("boom", "explodes")))


async def test_every_transition_and_stored_evaluation_is_published_once(
    registry: ArtifactRegistry, recorder: Recorder
) -> None:
    await _types(registry)
    ids = []
    for type_name, content in [("doc", PASS), ("doc", FAIL), ("pair", PASS), ("boom", PASS)]:
        artifact = await registry.create(type_name, content, actor="bot")
        await registry.submit_for_review(artifact.id, actor="bot")
        ids.append(artifact.id)
    # a revision reviewed again; then a review overtaken by a human: its evaluation is
    # committed (and announced), its decision is not
    await registry.revise(ids[1], PASS, actor="bot", reason="fixed")
    await registry.submit_for_review(ids[1], actor="bot")
    late = await registry.create("doc", PASS, actor="bot")
    await registry.submit_for_review(late.id, actor="bot", defer=True)
    claimed = await registry.claim(late.id, worker="w1")
    await registry.override(late.id, actor="alice", reason="urgent")
    with pytest.raises(ArtifactConflictError):
        await registry.finish_review(claimed)
    ids.append(late.id)

    kinds = Counter(event["kind"] for event in recorder.heard)
    assert set(kinds) == {TRANSITION, EVALUATION_STORED}
    transitions = [e for e in recorder.heard if e["kind"] == TRANSITION]
    histories = {aid: await registry.history(aid) for aid in ids}
    assert len(transitions) == sum(len(h) for h in histories.values())
    for aid, history in histories.items():
        heard = [e for e in transitions if e["artifact_id"] == aid]
        assert heard == [transition_event(event) for event in history], aid

    announced = [e for e in recorder.heard if e["kind"] == EVALUATION_STORED]
    stored = {aid: await registry.evaluations(aid) for aid in ids}
    assert sorted(e["evaluation_id"] for e in announced) == sorted(
        evaluation.id for evaluations in stored.values() for evaluation in evaluations
    ), "each stored evaluation announced once, and nothing else"
    assert len(stored[ids[2]]) == 2  # the pair: two rubrics, stored one by one
    assert len(stored[late.id]) == 1  # the overtaken review's evaluation stands
    by_id = {e.id: (aid, e) for aid, evaluations in stored.items() for e in evaluations}
    for event in announced:
        aid, evaluation = by_id[event["evaluation_id"]]
        revision = event["revision"]
        assert event == evaluation_event(evaluation, artifact_id=aid, revision=revision)
    # an evaluation is announced before the transition that cites it
    position = {e.get("evaluation_id"): i for i, e in enumerate(recorder.heard)}
    for index, event in enumerate(recorder.heard):
        if event["kind"] == TRANSITION:
            assert all(position[eid] < index for eid in event["evaluation_ids"]), event


async def test_a_review_reusing_a_stored_evaluation_announces_it_no_more(
    registry: ArtifactRegistry, recorder: Recorder
) -> None:
    """A review overtaken after it stored its evaluations (its claim was handed back),
    then done by another worker, reuses them: announced when stored, not again."""
    await _types(registry)
    artifact = await registry.create("pair", PASS, actor="bot")
    await registry.submit_for_review(artifact.id, actor="bot", defer=True)
    claimed = await registry.claim(artifact.id, worker="w1")
    await registry.abandon_review(claimed, reason="stopping")
    with pytest.raises(ArtifactConflictError):  # w1 stores both, its decision is refused
        await registry.finish_review(claimed)
    await registry.review(artifact.id, worker="w2")
    assert (await registry.get(artifact.id)).status == "approved"
    announced = [e["evaluation_id"] for e in recorder.heard if e["kind"] == EVALUATION_STORED]
    assert len(announced) == len(set(announced)) == 2


async def test_the_bus_is_one_listener_on_the_hook_and_fans_out_to_subscribers(
    registry: ArtifactRegistry, review_plugins: PluginRegistry, recorder: Recorder
) -> None:
    await _types(registry)
    bus = EventBus.of(review_plugins)
    assert EventBus.of(review_plugins) is bus, "one bus per plugin registry"
    everything = bus.subscribe()
    decisions = bus.subscribe([TRANSITION])
    artifact = await registry.create("doc", PASS, actor="bot")
    other = await registry.create("doc", PASS, actor="bot")
    mine = bus.subscribe(artifact_id=artifact.id)
    await registry.submit_for_review(artifact.id, actor="bot")
    await registry.submit_for_review(other.id, actor="bot")
    everything.close()
    heard = []
    while not decisions._queue.empty():
        heard.append(await decisions.get())
    assert heard == [e for e in recorder.heard if e["kind"] == TRANSITION]
    assert len(everything._queue._queue) == len(recorder.heard)  # type: ignore[attr-defined]
    got = [await mine.get() for _ in range(4)]
    assert [e.get("trigger") for e in got] == [
        "submit",
        "start_review",
        None,  # the evaluation
        "approve",
    ]
    assert {e["artifact_id"] for e in got} == {artifact.id}
    with pytest.raises(ReviewError, match=r"no event kind 'artifact\.changed'"):
        bus.subscribe(["artifact.changed"])


async def test_a_subscriber_that_falls_behind_is_told_not_left_to_grow(
    registry: ArtifactRegistry, review_plugins: PluginRegistry
) -> None:
    await _types(registry)
    slow = EventBus.of(review_plugins).subscribe([TRANSITION], backlog=2)
    async with slow:
        artifact = await registry.create("doc", PASS, actor="bot")
        await registry.submit_for_review(artifact.id, actor="bot")  # 4 more transitions
        assert (await slow.get())["trigger"] == "create"
        assert (await slow.get())["trigger"] == "submit"
        with pytest.raises(ReviewError, match=r"fell more than 2 events behind and missed 2"):
            await slow.get()


async def test_a_slow_listener_delays_no_subscriber(store: Any) -> None:
    """The bus listens first (tryfirst): a subscriber hears an event before a slow
    listener registered earlier has finished with it."""
    gate = asyncio.Event()

    class Slow:
        __name__ = "slow-listener"

        @hookimpl
        async def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
            await gate.wait()

    plugins = create_plugin_manager(plugins=[ReviewChecks(), Slow()], load_entry_points=False)
    registry = ArtifactRegistry(store, plugins=plugins)
    await define(registry, "doc", score_rubric())
    subscription = EventBus.of(plugins).subscribe()
    creating = asyncio.create_task(registry.create("doc", PASS, actor="bot"))
    event = await asyncio.wait_for(subscription.get(), 10)
    assert event["trigger"] == "create"
    assert not creating.done()
    gate.set()
    await creating


async def test_a_listener_failing_on_an_evaluation_event_is_logged_with_its_kind(
    store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    class Strict:
        __name__ = "strict-listener"

        @hookimpl
        def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
            if event["kind"] == EVALUATION_STORED:
                raise RuntimeError("evaluations not expected")

    plugins = create_plugin_manager(
        plugins=[ReviewChecks(), ExplodingScorer(), Strict()], load_entry_points=False
    )
    registry = ArtifactRegistry(store, plugins=plugins)
    await define(registry, "doc", score_rubric())
    artifact = await registry.create("doc", PASS, actor="bot")
    outcome = await registry.submit_for_review(artifact.id, actor="bot")
    assert outcome.approved
    failures = [r.getMessage() for r in caplog.records if "strict-listener" in r.getMessage()]
    assert len(failures) == 1
    assert EVALUATION_STORED in failures[0]
