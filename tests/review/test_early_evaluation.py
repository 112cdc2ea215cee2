"""An inline review whose rubric has criteria in the check process pool begins its
evaluation as soon as the submission is written, so the pool scores while this process
commits the submission and the claim (issue 16: the gate with the pool on). What a user
sees: the evaluation is stamped between the `submit` and the `start_review` events (with
isolation off it follows the claim, as before), the outcome and the history are those of
any review, and a claim lost to another worker stops the early evaluation: nothing is
stored, no pool job is left running, and the next review works. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest

from rubricflow.hookspecs import hookimpl
from rubricflow.model import parse_rubric
from rubricflow.review import ArtifactRegistry
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
    registry: ArtifactRegistry, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", mode)
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
        if mode == "auto":  # begun once the submission was written, before the claim
            assert submitted <= made <= claimed
        else:  # in-process only: nothing to overlap, evaluated after the claim
            assert claimed <= made


class Rival:
    """Another worker that claims every artifact the moment its submission is announced,
    before the inline review's own claim."""

    def __init__(self) -> None:
        self.registry: ArtifactRegistry | None = None
        self.claimed: list[str] = []

    @hookimpl
    async def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
        if event.get("trigger") == "submit" and self.registry is not None:
            claimed = await self.registry.claim(event["artifact_id"], worker="rival")
            self.claimed.append(claimed.id)


def early_evaluations() -> list[asyncio.Task[Any]]:
    return [
        task
        for task in asyncio.all_tasks()
        if not task.done() and getattr(task.get_coro(), "__name__", "") == "_make"
    ]


async def test_a_lost_claim_stops_the_early_evaluation(
    store: Store, registry: ArtifactRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", "auto")
    rival = Rival()
    registry.plugins.manager.register(rival, name="rival")
    rival.registry = ArtifactRegistry(store, plugins=registry.plugins)
    await define(registry, "doc", pooled_rubric())
    artifact = await registry.create("doc", {"title": "ok"}, actor="bot")

    outcome = await registry.submit_for_review(artifact.id, actor="bot")

    assert outcome.queued and outcome.reason == "another worker took the review over"
    assert rival.claimed == [artifact.id]
    current = await registry.get(artifact.id)
    assert (current.status, current.lease_owner) == ("in_review", "rival")
    assert await registry.evaluations(artifact.id) == []  # the early one was not stored
    assert early_evaluations() == []  # stopped, not left running in the pool

    # the pool is still good: the rival finishes its review with it
    rival.registry = None
    finished = await registry.finish_review(current)
    assert finished.artifact.status == "approved"
    assert [e.id for e in await registry.evaluations(artifact.id)] == [finished.evaluations[0].id]
