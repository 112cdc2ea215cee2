"""An inline review whose rubric has criteria in the check process pool begins its
evaluation as soon as the submission is written, so the pool scores while this process
writes the claim and commits both (issue 16: the gate with the pool on). The claim is
written in the submit's own transaction, so no worker can take the review in between.
What a user sees: the evaluation is stamped between the `submit` and the `start_review`
events (with isolation off it follows the claim, as before), the outcome and the history
are those of any review, a worker that hears the submit finds the review taken, and a
submission that fails after the evaluation began writes nothing and leaves no pool job
running. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
from datetime import datetime
from typing import Any

import pytest

from rubricflow.errors import IllegalTransitionError, StoreError
from rubricflow.hookspecs import hookimpl
from rubricflow.model import parse_rubric
from rubricflow.plugins import PluginRegistry
from rubricflow.review import ArtifactRegistry
from rubricflow.review.claims import ReviewClaims
from rubricflow.review.reviewing import Reviewer
from rubricflow.store import Store

from .conftest import assert_replays, check, define

SHAPE = {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}


def pooled_rubric() -> Any:
    """A schema criterion (it runs in the check pool under `auto`) beside a built-in check
    (in-process)."""
    return parse_rubric(
        {
            "id": "pooled",
            "name": "Pooled",
            "version": "1.0.0",
            "pass_threshold": 0.99,
            "criteria": [
                {
                    "id": "shape",
                    "description": "has a title",
                    "scoring": {"method": "schema", "schema": SHAPE},
                },
                check("filled", "non_empty"),
            ],
        }
    )


def stamp(value: str | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


@pytest.mark.parametrize("mode", ["auto", "off"])
async def test_the_pool_scores_while_the_claim_is_written(
    store: Store, review_plugins: PluginRegistry, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", mode)
    registry = ArtifactRegistry(store, plugins=review_plugins)  # reads the settings now
    await define(registry, "doc", pooled_rubric())
    passing = await registry.create("doc", {"title": "ok"}, actor="bot")
    failing = await registry.create("doc", {"body": "no title"}, actor="bot")

    approved = await registry.submit_for_review(passing.id, actor="bot")
    revise = await registry.submit_for_review(failing.id, actor="bot")

    assert approved.artifact.status == "approved"
    assert revise.artifact.status == "needs_revision"
    assert [r.status for r in revise.evaluations[0].criteria] == ["scored", "scored"]
    for outcome in (approved, revise):
        artifact_id = outcome.artifact.id
        events = await registry.history(artifact_id)
        assert_replays(events, status=outcome.artifact.status, revision=1)
        by_trigger = {event.trigger: event for event in events}
        (evaluation,) = await registry.evaluations(artifact_id)
        assert evaluation.id == outcome.evaluations[0].id
        made = stamp(evaluation.created_at)
        submitted = stamp(by_trigger["submit"].created_at)
        claimed = stamp(by_trigger["start_review"].created_at)
        if mode == "auto":  # begun before the submission and the claim were written
            assert made <= submitted <= claimed
        else:  # in-process only: nothing to overlap, evaluated after the claim
            assert claimed <= made


class Rival:
    """Another worker that tries to claim every artifact the moment its submission is
    announced."""

    def __init__(self) -> None:
        self.registry: ArtifactRegistry | None = None
        self.refused: list[str] = []

    @hookimpl
    async def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
        if event.get("trigger") == "submit" and self.registry is not None:
            try:
                await self.registry.claim(event["artifact_id"], worker="rival")
            except IllegalTransitionError as error:
                self.refused.append(str(error))


def early_evaluations() -> list[asyncio.Task[Any]]:
    return [
        task
        for task in asyncio.all_tasks()
        if not task.done() and getattr(task.get_coro(), "__name__", "") == "_make"
    ]


async def test_a_worker_that_hears_the_submit_finds_the_review_taken(
    store: Store, registry: ArtifactRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", "auto")
    rival = Rival()
    registry.plugins.manager.register(rival, name="rival")
    rival.registry = ArtifactRegistry(store, plugins=registry.plugins)
    await define(registry, "doc", pooled_rubric())
    artifact = await registry.create("doc", {"title": "ok"}, actor="bot")

    outcome = await registry.submit_for_review(artifact.id, actor="bot")

    assert outcome.artifact.status == "approved" and not outcome.queued
    # the rival never takes it: the review is decided in the submission's own
    # transaction (a rubric that asks no judge, evaluated within 0.25 s), or, when the
    # pool is slower than that (a loaded machine), claimed in it
    assert len(rival.refused) == 1
    assert "is approved" in rival.refused[0] or "is in_review" in rival.refused[0]
    events = await registry.history(artifact.id)
    assert [(e.trigger, e.actor) for e in events[1:]] == [
        ("submit", "bot"),
        ("start_review", f"inline-{os.getpid()}"),
        ("approve", "rubricflow"),
    ]
    assert [e.id for e in await registry.evaluations(artifact.id)] == [outcome.evaluations[0].id]
    assert early_evaluations() == []


async def test_a_submission_that_fails_after_its_evaluation_began_writes_nothing(
    registry: ArtifactRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", "auto")
    await define(registry, "doc", pooled_rubric())
    artifact = await registry.create("doc", {"title": "ok"}, actor="bot")
    began: list[asyncio.Task[Any]] = []
    start = ReviewClaims.start
    start_evaluating = Reviewer.start_evaluating

    def recorded(self: Reviewer, *args: Any) -> Any:
        task = start_evaluating(self, *args)
        began.extend([task] if task is not None else [])
        return task

    def failing_claim(self: ReviewClaims, claimed: Any, *, worker: str) -> Any:
        # the store refusing the claim's write (a disk error, a dropped connection)
        raise StoreError("the claim could not be written (simulated store failure)")

    monkeypatch.setattr(Reviewer, "start_evaluating", recorded)
    monkeypatch.setattr(ReviewClaims, "start", failing_claim)
    with pytest.raises(StoreError, match="simulated"):
        await registry.submit_for_review(artifact.id, actor="bot")

    assert began  # the evaluation had begun in the pool before the claim failed
    assert all(task.done() for task in began)
    assert early_evaluations() == []  # stopped, not left running in the pool
    current = await registry.get(artifact.id)
    assert (current.status, current.version) == ("draft", artifact.version)
    assert [e.trigger for e in await registry.history(artifact.id)] == ["create"]
    assert await registry.evaluations(artifact.id) == []

    # the pool and the store are still good: the next submission is reviewed
    monkeypatch.setattr(ReviewClaims, "start", start)
    finished = await registry.submit_for_review(artifact.id, actor="bot")
    assert finished.artifact.status == "approved"


async def test_an_incomplete_evaluation_is_not_decided_with_the_submission(
    registry: ArtifactRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rubric that asks no judge is decided in the submission's transaction only when
    its evaluation is complete: one with a check that raises commits the submission and
    the claim, and the review is released to be retried, as any incomplete review."""
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", "auto")
    rubric = parse_rubric(
        {
            "id": "pooled-boom",
            "version": "1.0.0",
            "criteria": [
                {
                    "id": "shape",
                    "description": "has a title",
                    "scoring": {"method": "schema", "schema": SHAPE},
                },
                check("boom", "explodes"),
            ],
        }
    )
    await define(registry, "doc", rubric)
    artifact = await registry.create("doc", {"title": "ok"}, actor="bot")

    outcome = await registry.submit_for_review(artifact.id, actor="bot")

    assert outcome.artifact.status == "pending_review"
    assert "incomplete" in (outcome.reason or "")
    events = await registry.history(artifact.id)
    triggers = [e.trigger for e in events[1:]]
    assert triggers[:2] == ["submit", "start_review"] and len(triggers) == 3
    assert events[-1].evaluation_ids == (outcome.evaluations[0].id,)
    assert_replays(events, status="pending_review", revision=outcome.artifact.revision)
